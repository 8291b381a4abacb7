"""The local process pool: a worker that dies costs only its own task (run once more alone,
then recorded as failed), never the others'; and no worker outlives a ``kill -9`` of the
command that started it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from schedgym.envs.gain_overhead import ENV_ID as GO
from schedgym.train import sweep
from schedgym.train.backend import EpisodeTask, WorkerDiedError, execute, run_calls
from schedgym.train.runspec import RunSpec
from schedgym.train.store import RunStore

from .test_store import _meta_json

SMALL = {"n_types": 3, "n_instances": 3, "horizon": 12}
HELPER = str(Path(__file__).with_name("sweep_cli.py"))


def _job(job: tuple[int, str]) -> int:
    """Job ``(i, marker)`` (in a pool worker): ``i == 3`` kills its worker, always or (with a
    marker path) only the first time; every job takes a moment, so others are in flight."""
    i, marker = job
    time.sleep(0.05)
    if i == 3 and (not marker or not os.path.exists(marker)):
        if marker:
            open(marker, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    return i * 10


def _collect(jobs: list) -> dict:
    seen: dict = {}

    def on_done(job, res, exc):
        assert job[0] not in seen, f"job {job[0]} reported twice"
        seen[job[0]] = (res, exc)

    run_calls(_job, jobs, on_done, workers=2)
    return seen


def test_a_killed_worker_costs_only_its_own_task(tmp_path):
    seen = _collect([(i, "") for i in range(10)])
    assert sorted(seen) == list(range(10))
    assert {i: r for i, (r, e) in seen.items() if e is None} == {
        i: i * 10 for i in range(10) if i != 3}
    res, exc = seen[3]
    assert res is None and isinstance(exc, WorkerDiedError)
    assert "killed by signal 9" in str(exc)


def test_a_worker_killed_once_is_retried_alone_and_succeeds(tmp_path):
    seen = _collect([(i, str(tmp_path / "once")) for i in range(10)])
    assert {i: r for i, (r, e) in seen.items()} == {i: i * 10 for i in range(10)}
    assert all(e is None for _, e in seen.values())


def _execute_killing_drf_seed_1(task: EpisodeTask) -> dict:
    """``execute`` in a pool worker, except that drf's seed-1 episode kills its worker."""
    if task.agent == "drf" and task.seed == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    return execute(task)


def test_a_sweep_records_the_killed_workers_episode_and_finishes_the_others(
        tmp_path, monkeypatch):
    meta = RunSpec.from_json(dict(
        _meta_json(), agents=["drf", "random"], seeds=[0, 1, 2], overrides=SMALL,
        settings=[{"name": "", "overrides": SMALL}]))
    store = RunStore.create(tmp_path / "run", meta)
    monkeypatch.setattr(sweep, "execute", _execute_killing_drf_seed_1)
    out = sweep.run_sweep(store, sweep.plan(meta), workers=2, show_progress=False)
    store.close()
    assert out.ran == 6 and [r["key"] for r in out.failed] == [["", "drf", 0, 1]]
    assert out.failed[0]["error"].startswith("WorkerDiedError: its worker process died")
    assert store.done() == {("", a, 0, s) for a in ("drf", "random") for s in (0, 1, 2)
                            } - {("", "drf", 0, 1)}


def _children(pid: int) -> list[int]:
    kids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            kids.append(int(stat.parent.name))
    return kids


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_no_pool_worker_outlives_a_kill_9_of_compare(tmp_path):
    if not Path("/proc/self/stat").exists():  # pragma: no cover - Linux's /proc only
        import pytest

        pytest.skip("needs /proc")
    out = tmp_path / "run"
    # episodes of several seconds each, so that a worker is in the middle of one
    cmd = [sys.executable, HELPER, "compare", GO, "--agents", "drf", "--seeds", "0-5",
           "--set", "n_types=3", "--set", "n_instances=3", "--set", "horizon=400000",
           "--out", str(out), "--workers", "2", "--quiet", "--no-plots", "--no-benchmarks"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            cwd=Path(__file__).parents[2])
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            workers = [k for k in _children(proc.pid)
                       if b"spawn_main" in Path(f"/proc/{k}/cmdline").read_bytes()]
            if len(workers) >= 2:
                break
            time.sleep(0.1)
        assert len(workers) >= 2, "the pool never started"
        time.sleep(2.0)  # the workers start their first episode
        everyone = _children(proc.pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_alive(p) for p in everyone):
            time.sleep(0.1)
        assert not [p for p in everyone if _alive(p)], "processes of compare outlived it"
    finally:
        for p in workers:  # never leave a process behind, whatever happened
            if _alive(p):
                os.kill(p, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()


def test_no_local_ray_process_outlives_a_kill_9_of_compare(tmp_path):
    import pytest

    pytest.importorskip("ray")
    if not Path("/proc/self/stat").exists():  # pragma: no cover - Linux's /proc only
        pytest.skip("needs /proc")
    from schedgym.train.reaper import _table, descendants

    cmd = [sys.executable, HELPER, "compare", GO, "--agents", "drf", "--seeds", "0-5",
           "--set", "n_types=3", "--set", "n_instances=3", "--set", "horizon=400000",
           "--out", str(tmp_path / "run"), "--ray", "--workers", "2", "--quiet",
           "--no-plots", "--no-benchmarks"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            cwd=Path(__file__).parents[2])
    seen: dict[int, int] = {}

    def agents_up() -> bool:
        names = [Path(f"/proc/{p}/cmdline").read_bytes() for p in seen if _alive(p)]
        return sum(b"ray::" in n for n in names) >= 3  # two agents and a task

    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            seen.update(descendants(proc.pid, _table()))
            try:
                if agents_up():
                    break
            except OSError:
                pass
            time.sleep(0.2)
        assert agents_up(), "the local Ray never started"
        time.sleep(1.0)
        seen.update(descendants(proc.pid, _table()))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(_alive(p) for p in seen):
            time.sleep(0.2)
        left = [Path(f"/proc/{p}/cmdline").read_bytes()[:60] for p in seen if _alive(p)]
        assert not left, f"processes of compare --ray outlived it: {left}"
    finally:
        table = _table()
        for p, started in seen.items():  # never leave a process behind, whatever happened
            if table.get(p, (0, -1))[1] == started:
                os.kill(p, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
