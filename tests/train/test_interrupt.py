"""Ctrl-C during a compare: it stops within seconds (workers too), every finished episode is on
disk, the resume command is printed, and ``--resume`` gives the table of an uninterrupted run."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from schedgym.envs.gain_overhead import ENV_ID as GO
from schedgym.train.store import RECORDS, read_records

from .sweep_cli import main as cli

HELPER = str(Path(__file__).with_name("sweep_cli.py"))
ARGS = [GO, "--agents", "ogasched,drf,random", "--seeds", "0-5", "--set", "n_types=3",
        "--set", "n_instances=3", "--set", "horizon=800", "--quiet", "--no-plots"]
TIMING = {"decision_ms", "wall_s"}


def _table(path: Path, name: str) -> list[dict[str, str]]:
    with open(path / name) as fh:
        return [{k: v for k, v in row.items() if k not in TIMING and not
                 k.startswith("decision_ms")} for row in csv.DictReader(fh)]


def _wait_for_records(path: Path, n: int, proc: subprocess.Popen, timeout: float) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if (path / RECORDS).is_file() and len((path / RECORDS).read_text().splitlines()) >= n:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    raise AssertionError(f"no {n} records after {timeout} s")


def test_sigint_keeps_finished_episodes_and_resume_gives_the_same_table(tmp_path):
    run = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, HELPER, "compare", *ARGS, "--out", str(run),
                             "--workers", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=Path(__file__).parents[2], start_new_session=True)
    _wait_for_records(run, 3, proc, timeout=240)
    t0 = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole group
    _, err = proc.communicate(timeout=60)
    stopped = time.monotonic() - t0
    assert proc.returncode == 130, err
    assert stopped < 10, f"took {stopped:.1f} s to stop"
    print(f"stopped {stopped:.2f} s after SIGINT")
    assert f"resume with: schedgym compare --resume {run}" in err
    kept = [r for _, r in read_records(run) if r["status"] == "ok"]
    assert len(kept) >= 3 and all((run / r["curve"]).is_file() for r in kept if "curve" in r)
    assert len(kept) < 6 * 4, "the run was meant to be interrupted"

    assert cli(["compare", "--resume", str(run), "--workers", "1", "--quiet",
                "--no-plots"]) == 0
    full = tmp_path / "full"
    assert cli(["compare", *ARGS, "--out", str(full), "--workers", "1"]) == 0
    assert _table(run, "summary.csv") == _table(full, "summary.csv")
    assert _table(run, "episodes.csv") == _table(full, "episodes.csv")
