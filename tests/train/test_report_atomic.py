"""The report's outputs are written whole or not at all: a full disk while ``summary.csv`` or
``curves.npz`` is written leaves the previous file (or none), never a partial one."""

from __future__ import annotations

import errno
import os

import numpy as np

from schedgym.envs.gain_overhead import ENV_ID as GO
from schedgym.train import summary as summary_mod
from schedgym.train.cli import main as schedgym_cli

from .sweep_cli import main as cli

SMALL = ["--set", "n_types=3", "--set", "n_instances=3", "--set", "horizon=12"]


def test_a_full_disk_leaves_no_partial_report_file(tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    assert cli(["compare", GO, "--agents", "drf,random", "--seeds", "0-1", *SMALL, "--out",
                str(run), "--workers", "1", "--quiet", "--no-plots", "--no-benchmarks"]) == 0
    out = tmp_path / "report"
    assert cli(["report", str(run), "--out", str(out), "--no-plots"]) == 0
    before = (out / "curves.npz").read_bytes()

    def savez(fh, *a, **k):  # half a zip written (to a path or a file), then the disk is full
        if isinstance(fh, str | os.PathLike):
            fh = open(fh, "wb")  # noqa: SIM115 - left open and partial, as a failing write would
        fh.write(b"PK\x03\x04" + b"\0" * 64)
        fh.flush()
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(summary_mod.np, "savez_compressed", savez)
    rc = schedgym_cli(["report", str(run), "--out", str(out), "--no-plots"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc != 0 and len(err) == 1 and "No space left on device" in err[0], err
    assert (out / "curves.npz").read_bytes() == before  # the old file, whole
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]
    with np.load(out / "curves.npz") as z:
        assert len(z.files) == 4
