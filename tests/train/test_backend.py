"""Backends: a local Ray gives the same records as the local process pool; task failures (an
exception, a dead worker) are recorded, never fatal. CI has 2 CPUs: Ray runs with 2."""

from __future__ import annotations

import os

import numpy as np
import pytest

from schedgym.envs.gain_overhead import ENV_ID as GO
from schedgym.train.backend import EpisodeTask, execute, run_calls
from schedgym.train.store import RunStore
from schedgym.train.sweep import plan, run_sweep

ray = pytest.importorskip("ray")

SMALL = {"n_types": 3, "n_instances": 3, "horizon": 12}
TIMING = ("decision_ms", "wall_s", "curve")


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _meta():
    return {"command": "compare", "env_id": GO, "scenario": None, "overrides": SMALL,
            "agents": ["drf", "ogasched", "random"], "seeds": [0, 1], "instance_seeds": [0, 5],
            "benchmarks": True, "settings": [{"name": "", "overrides": SMALL}]}


def _records(store: RunStore) -> dict:
    out = {}
    for rec in store.records():
        curve = store.curve(rec) if "curve" in rec else None
        out[tuple(rec["key"])] = ({k: v for k, v in rec.items() if k not in TIMING}, curve)
    return out


def test_local_ray_gives_the_same_records_as_the_process_pool(tmp_path, local_ray):
    pool = RunStore.create(tmp_path / "pool", _meta())
    assert not run_sweep(pool, plan(pool.meta), workers=2, show_progress=False).failed
    viaray = RunStore.create(tmp_path / "ray", _meta())
    assert not run_sweep(viaray, plan(viaray.meta), ray="", show_progress=False).failed
    a, b = _records(pool), _records(viaray)
    assert set(a) == set(b) and len(a) == 3 * 2 * 2 + 2 * 2
    for key, (rec, curve) in a.items():
        assert rec == b[key][0], key
        if curve is not None:
            np.testing.assert_array_equal(curve, b[key][1])


def test_a_ray_task_failure_is_recorded_not_fatal(tmp_path, local_ray):
    good = EpisodeTask("", "drf", 0, 0, GO, None, SMALL)
    bad = EpisodeTask("", "drf", 0, 1, GO, "no-such-scenario", SMALL)
    store = RunStore.create(tmp_path / "run", _meta())
    out = run_sweep(store, [good, bad], ray="", show_progress=False)
    assert out.ran == 2 and [r["key"] for r in out.failed] == [["", "drf", 0, 1]]
    assert "scenario='no-such-scenario' is invalid" in out.failed[0]["error"]
    assert store.done() == {("", "drf", 0, 0)}
    # a worker that dies is reported through the callback like any other failure
    seen: dict = {}

    def crash(job: int) -> int:
        if job == 1:
            os._exit(3)
        return job * 10

    def on_done(job, res, exc):
        seen[job] = (res, type(exc).__name__ if exc else None)

    run_calls(crash, [1, 2], on_done, ray="")
    assert seen[2] == (20, None)
    assert seen[1][0] is None and seen[1][1] is not None


def test_execute_never_raises():
    out = execute(EpisodeTask("", "no-such-agent", 0, 0, GO, None, SMALL))
    assert out["record"]["status"] == "error"
    assert "agent='no-such-agent' is invalid" in out["record"]["error"]
