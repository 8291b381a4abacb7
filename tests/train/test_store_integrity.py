"""The run store under damage: a torn last line, lines that are not records, records of another
run, a damaged meta.json, a full disk. Each case ends in one clear line and a store whose
records are all readable; none in a traceback or a silently changed table."""

from __future__ import annotations

import errno
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from schedgym.envs.gain_overhead import ENV_ID as GO
from schedgym.train import store as store_mod
from schedgym.train.store import RECORDS, RunStore, read_records

from .sweep_cli import main as cli

SMALL = ["--set", "n_types=3", "--set", "n_instances=3", "--set", "horizon=12"]
KEYS = {("", a, 0, s) for a in ("drf", "random", "@benchmark") for s in (0, 1)}


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A finished compare run (drf, random; seeds 0-1; with benchmarks): 6 records."""
    out = tmp_path_factory.mktemp("finished") / "run"
    assert cli(["compare", GO, "--agents", "drf,random", "--seeds", "0-1", *SMALL, "--out",
                str(out), "--workers", "1", "--quiet", "--no-plots"]) == 0
    return out


@pytest.fixture
def run(finished, tmp_path) -> Path:
    """A copy of the finished run, to damage."""
    return Path(shutil.copytree(finished, tmp_path / "run"))


def _lines(run: Path) -> list[str]:
    return (run / RECORDS).read_text().splitlines()


def _all_lines_are_records(run: Path) -> None:
    for line in _lines(run):
        rec = json.loads(line)  # every line is whole JSON
        assert isinstance(rec, dict) and len(rec["key"]) == 4


def _drf_reward(run: Path) -> str:
    rows = (run / "summary.csv").read_text().splitlines()
    head = rows[0].split(",")
    row = next(r.split(",") for r in rows[1:] if r.startswith("drf,"))
    return row[head.index("reward")]


def test_resume_after_a_torn_last_line_never_appends_onto_it(run, capsys):
    lines = _lines(run)
    torn_key = tuple(json.loads(lines[-1])["key"])
    # the run was killed while writing its last record: half a line, no newline
    (run / RECORDS).write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:40])
    assert cli(["compare", "--resume", str(run), "--workers", "1", "--quiet",
                "--no-plots"]) == 0
    err = capsys.readouterr().err
    assert "cut mid-write" in err and str(run / RECORDS) in err
    _all_lines_are_records(run)
    assert len(_lines(run)) == 6
    recs = dict(read_records(run))
    assert set(recs) == KEYS and torn_key in recs
    assert all(r["status"] == "ok" for r in recs.values())
    # a whole last record without its newline is kept, and the next one starts a new line
    text = (run / RECORDS).read_text()
    (run / RECORDS).write_text(text[:-1])
    store = RunStore.open(run)
    assert store.done() == KEYS
    store.add(dict(recs[torn_key]))
    store.close()
    _all_lines_are_records(run)


@pytest.mark.parametrize("command", ["report", "resume"])
def test_lines_that_are_not_records_give_one_warning_line(run, capsys, command):
    lines = _lines(run)
    junk = ["[1, 2]", "null", '{"k": 1}', "not json at all", '"text"', "3"]
    (run / RECORDS).write_text("\n".join(lines[:2] + junk + lines[2:]) + "\n")
    capsys.readouterr()
    argv = (["report", str(run), "--no-plots"] if command == "report" else
            ["compare", "--resume", str(run), "--workers", "1", "--quiet", "--no-plots"])
    assert cli(argv) == 0
    err = [e for e in capsys.readouterr().err.splitlines() if e.strip()]
    assert len(err) == 1, err
    assert str(run / RECORDS) in err[0] and "ignored 6 lines" in err[0]
    assert "line 3" in err[0]
    assert set(dict(read_records(run))) == KEYS


def test_records_of_another_run_are_ignored_never_mixed_in(run, finished, capsys):
    before = _drf_reward(finished)
    rec = json.loads(next(line for line in _lines(run) if '"drf"' in line))
    # the same key from another configuration, with an absurd total; an agent the run never
    # had; a seed, an instance seed and a setting it never had; an ok record without a curve
    other = dict(rec, overrides={**rec["overrides"], "horizon": 999},
                 metrics={**rec["metrics"], "reward": 2.5e11})
    stranger = dict(rec, key=["", "ogasched", 0, 0])
    seeds = [dict(rec, key=["", "drf", 0, 7]), dict(rec, key=["", "drf", 3, 0]),
             dict(rec, key=["x", "drf", 0, 0])]
    no_curve = dict(rec, curve="curves/0000000000000000.npy")
    other_env = dict(rec, env_id="schedgym/FluctuatingSpeed-v0")
    with open(run / RECORDS, "a") as fh:
        for r in (other, stranger, *seeds, no_curve, other_env):
            fh.write(json.dumps(r) + "\n")
    capsys.readouterr()
    assert cli(["report", str(run), "--no-plots"]) == 0
    out, err = capsys.readouterr()
    assert "ogasched" not in out
    err_lines = [e for e in err.splitlines() if e.strip()]
    assert len(err_lines) == 1 and "ignored 7 lines" in err_lines[0], err_lines
    assert str(run / RECORDS) in err_lines[0] and "another configuration" in err_lines[0]
    assert _drf_reward(run) == before
    # --resume takes the same view: nothing to run again, the same table
    assert cli(["compare", "--resume", str(run), "--workers", "1", "--quiet",
                "--no-plots"]) == 0
    assert _drf_reward(run) == before


@pytest.mark.parametrize("text", ["[]", "{}", "null", '{"command": "compare", "env_id": ',
                                  '{"command": "compare", "env_id": "x", "agents": "drf", '
                                  '"seeds": [0], "instance_seeds": [0], "settings": []}',
                                  "\xff\xfe"])
@pytest.mark.parametrize("command", ["report", "resume"])
def test_a_damaged_meta_json_is_one_line_naming_it(run, capsys, text, command):
    (run / "meta.json").write_bytes(text.encode("latin-1"))
    argv = (["report", str(run), "--no-plots"] if command == "report" else
            ["compare", "--resume", str(run), "--workers", "1", "--quiet", "--no-plots"])
    capsys.readouterr()
    assert cli(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert str(run / "meta.json") in err[0] and "is damaged" in err[0]
    assert not (run / ".lock").exists()


def _enospc(*_a, **_k):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_disk_full_mid_run_is_one_line_keeps_everything_and_leaves_no_partial_file(
        tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    real_save = np.save
    calls = {"n": 0}

    def save(fh, arr, *a, **k):  # the third curve: half written, then the disk is full
        calls["n"] += 1
        if calls["n"] == 3:
            fh.write(b"\x93NUMPY" + b"\0" * 100)
            _enospc()
        return real_save(fh, arr, *a, **k)

    monkeypatch.setattr(store_mod.np, "save", save)
    rc = cli(["compare", GO, "--agents", "drf,random", "--seeds", "0-1", *SMALL, "--out",
              str(out), "--workers", "1", "--quiet", "--no-plots", "--no-benchmarks"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1, err
    assert "No space left on device" in err[0] and f"--resume {out}" in err[0]
    kept = dict(read_records(out))
    assert len(kept) == 2 and all(r["status"] == "ok" for r in kept.values())
    files = sorted(p.name for p in (out / "curves").iterdir())
    assert files == sorted(Path(r["curve"]).name for r in kept.values())  # no partial file
    for r in kept.values():
        assert len(np.load(out / r["curve"])) == 12
    monkeypatch.setattr(store_mod.np, "save", real_save)
    assert cli(["compare", "--resume", str(out), "--workers", "1", "--quiet",
                "--no-plots"]) == 0
    assert len(dict(read_records(out))) == 4


def test_disk_full_while_writing_a_record_leaves_no_partial_line(tmp_path, monkeypatch):
    from .test_store import _meta, _rec

    store = RunStore.create(tmp_path / "run", _meta())
    store.add(_rec(0), curve=np.array([1.0]))
    real_write = os.write
    records = str(tmp_path / "run" / RECORDS)

    def write(fd, data):
        if os.path.realpath(f"/proc/self/fd/{fd}") == os.path.realpath(records):
            real_write(fd, bytes(data)[:10])
            _enospc()
        return real_write(fd, data)

    monkeypatch.setattr(store_mod.os, "write", write)
    with pytest.raises(store_mod.StoreWriteError, match="No space left on device"):
        store.add(_rec(1), curve=np.array([1.0]))
    monkeypatch.setattr(store_mod.os, "write", real_write)
    store.add(_rec(2), curve=np.array([1.0]))
    store.close()
    _all_lines_are_records(tmp_path / "run")
    assert RunStore.open(tmp_path / "run", lock=False).done() == {("", "a", 0, 0),
                                                                  ("", "a", 0, 2)}
