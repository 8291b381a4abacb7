"""Taking a run folder is atomic: of many concurrent openers (threads or processes) exactly one
gets it, also when the folder holds the stale ``.lock`` of a run killed with ``kill -9``."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from schedgym.train.store import LOCK, RunStore

from .test_store import _meta

ROOT = Path(__file__).parents[2]


def _stale_run(tmp_path: Path) -> Path:
    """A run folder whose writer was killed with ``kill -9`` while it held the folder."""
    run = tmp_path / "run"
    code = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from schedgym.train.store import RunStore
        from tests.train.test_store import _meta
        RunStore.create({str(run)!r}, _meta())
        print("ready", flush=True)
        time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert (run / LOCK).read_text().strip() == str(proc.pid)  # the stale lock
    return run


def test_a_stale_lock_never_blocks_and_concurrent_threads_get_it_once(tmp_path):
    run = _stale_run(tmp_path)
    n = 12
    barrier = threading.Barrier(n)
    won: list[RunStore] = []
    lost: list[str] = []

    def opener() -> None:
        barrier.wait()
        try:
            won.append(RunStore.open(run))
        except ValueError as exc:
            lost.append(str(exc))

    threads = [threading.Thread(target=opener) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(won) == 1 and len(lost) == n - 1, (len(won), lost[:2])
    assert all("is in use by another schedgym process" in m for m in lost)
    # while it is held, neither open, --overwrite nor a second handle gets it
    with pytest.raises(ValueError, match="in use by another schedgym process"):
        RunStore.open(run)
    with pytest.raises(ValueError, match="in use by another schedgym process"):
        RunStore.create(run, _meta(), overwrite=True)
    won[0].close()
    assert not (run / LOCK).exists()
    RunStore.open(run).close()


OPENER = """
import os, sys, time
sys.path.insert(0, {root!r})
from schedgym.train.store import RunStore
open({ready!r} + str(os.getpid()), "w").close()
while not os.path.exists({go!r}):
    time.sleep(0.0005)
try:
    store = RunStore.open({run!r})
except ValueError as exc:
    print("lost", exc, flush=True)
else:
    print("won", flush=True)
    time.sleep(3)
    store.close()
"""


#: Processes racing for one stale lock: enough that two of them reach the lock at once on a
#: 2-core machine (each waits on the same "go" file), few enough to start quickly under load.
CONTENDERS = 4


def test_concurrent_processes_with_a_stale_lock_exactly_one_wins(tmp_path):
    run = _stale_run(tmp_path)
    for attempt in range(2):
        go, ready = tmp_path / f"go{attempt}", tmp_path / f"ready{attempt}"
        ready.mkdir()
        code = OPENER.format(root=str(ROOT), ready=f"{ready}/", go=str(go), run=str(run))
        procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(CONTENDERS)]
        deadline = time.monotonic() + 120
        while len(list(ready.iterdir())) < len(procs) and time.monotonic() < deadline:
            time.sleep(0.05)
        go.touch()
        outs = [p.communicate(timeout=120) for p in procs]
        verdicts = [o[0].split()[0] if o[0] else o[1] for o in outs]
        assert sorted(verdicts) == ["lost"] * (CONTENDERS - 1) + ["won"], outs
        assert all("in use by another schedgym process" in o[0]
                   for o in outs if o[0].startswith("lost"))
