"""Backends: a local Ray gives the same records as the local process pool; task failures (an
exception, a dead worker) are recorded, never fatal. CI has 2 CPUs: Ray runs with 2."""

from __future__ import annotations

import os

import numpy as np
import pytest

from schedgym.envs.gain_overhead import ENV_ID as GO
from schedgym.train.backend import EpisodeTask, execute, run_calls
from schedgym.train.runspec import RunSpec
from schedgym.train.store import RunStore
from schedgym.train.sweep import plan, run_sweep

ray = pytest.importorskip("ray")

SMALL = {"n_types": 3, "n_instances": 3, "horizon": 12}
TIMING = ("decision_ms", "wall_s", "curve")


@pytest.fixture(scope="module")
def local_ray():
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _meta():
    return RunSpec.from_json({
        "command": "compare", "env_id": GO, "scenario": None, "overrides": SMALL,
        "agents": ["drf", "ogasched", "random"], "seeds": [0, 1], "instance_seeds": [0, 5],
        "benchmarks": True, "settings": [{"name": "", "overrides": SMALL}]})


def _records(store: RunStore) -> dict:
    out = {}
    for rec in store.records():
        curve = store.curve(rec) if "curve" in rec else None
        out[tuple(rec["key"])] = ({k: v for k, v in rec.items() if k not in TIMING}, curve)
    return out


def test_local_ray_gives_the_same_records_as_the_process_pool(tmp_path, local_ray):
    pool = RunStore.create(tmp_path / "pool", _meta())
    assert not run_sweep(pool, plan(pool.spec), workers=2, show_progress=False).failed
    viaray = RunStore.create(tmp_path / "ray", _meta())
    assert not run_sweep(viaray, plan(viaray.spec), ray="", show_progress=False).failed
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


@pytest.mark.slow  # ~80 s on 2 loaded cores: six tiny training runs in fresh processes
def test_multiseed_training_pool_equals_ray_and_failures_are_reported(tmp_path, local_ray):
    import dataclasses
    import zipfile

    from schedgym.train.multiseed import train_seeds
    from schedgym.train.training import TrainConfig

    base = TrainConfig("a2c", GO, timesteps=32, overrides=dict(SMALL), eval_freq=0,
                       checkpoint_freq=0, progress=False)
    pool = [dataclasses.replace(base, seed=s, out=str(tmp_path / "pool")) for s in (0, 1)]
    viaray = [dataclasses.replace(c, out=str(tmp_path / "ray")) for c in pool]
    a = train_seeds(pool, workers=2)
    b = train_seeds(viaray, ray="")
    assert [p.name for p in a] == [p.name for p in b] and len(set(a)) == 2

    def params(folder):
        with zipfile.ZipFile(folder / "model.zip") as z:
            return z.read("policy.pth")

    assert [params(p) for p in a] == [params(p) for p in b]
    bad = dataclasses.replace(pool[0], seed=7, out=str(tmp_path / "bad"),
                              overrides={**SMALL, "horizon": -5})
    good = dataclasses.replace(pool[0], seed=8, out=str(tmp_path / "bad"))
    with pytest.raises(ValueError, match=r"1 of 2 training runs failed \(seed 7: .*horizon"):
        train_seeds([bad, good], workers=2)
    assert (tmp_path / "bad").is_dir() and list((tmp_path / "bad").rglob("model.zip"))
