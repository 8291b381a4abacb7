"""GainOverhead-v0 scenario 'alibaba-gpu-2023': valid instance, reproducible, real arrivals."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest

import schedgym  # noqa: F401  (registers the env ids)
from schedgym.data import load_sample
from schedgym.envs.gain_overhead import ENV_ID as ID
from schedgym.envs.gain_overhead.trace import trace_problem

SC = "alibaba-gpu-2023"


def _make(**kw):
    return gym.make(ID, scenario=SC, **kw).unwrapped


def test_instance_valid_and_locality_respected():
    env = _make(instance_seed=2)
    inst = env.instance
    assert (inst.n_types, inst.n_instances, inst.n_resources) == (10, 64, 6)
    assert inst.mask.any(axis=1).all()  # every type reachable
    assert (inst.capacities[:, :2] > 0).all() and (inst.capacities >= 0).all()
    tp = trace_problem({**env.params.as_dict(), "slot_seconds": 1800.0, "constraints": True,
                        "degree_cap": None, "time_window": None}, 2)
    np.testing.assert_array_equal(inst.mask, tp.mask)
    np.testing.assert_allclose(inst.capacities[:, :3], tp.capacities)
    np.testing.assert_allclose(inst.requests[:, :3], tp.requests)  # contention 1
    tr = load_sample()
    for l, r in inst.edges:
        cls = tp.type_class[l]
        if cls != "any":
            assert inst.capacities[r, 2] > 0
        if cls.startswith("gpu:"):
            assert tr.node_model[tp.node_index[r]] in cls[4:].split("|")


def test_same_seed_same_instance_other_seed_other_nodes():
    a, b, c = _make(instance_seed=1), _make(instance_seed=1), _make(instance_seed=4)
    for name in ("edges", "requests", "capacities", "alpha", "beta"):
        np.testing.assert_array_equal(getattr(a.instance, name), getattr(b.instance, name))
    assert not np.array_equal(a.instance.capacities, c.instance.capacities)
    a.reset(seed=7)
    b.reset(seed=7)
    np.testing.assert_array_equal(a.arrivals, b.arrivals)


def test_arrivals_are_a_window_of_the_trace():
    env = _make(instance_seed=0, horizon=300, slot_seconds=3600.0)
    tp = trace_problem({**env.params.as_dict(), "slot_seconds": 3600.0, "constraints": True,
                        "degree_cap": None, "time_window": None}, 0)
    ind = tp.arrival_indicators
    env.reset(seed=3)
    x = env.arrivals
    starts = [s for s in range(tp.n_slots)
              if np.array_equal(x, ind[(s + np.arange(300)) % tp.n_slots])]
    assert starts  # the episode is 300 consecutive real slots
    thinned = _make(instance_seed=0, horizon=300, slot_seconds=3600.0, arrival_prob=0.5)
    thinned.reset(seed=3)
    assert thinned.arrivals.sum() < x.sum()


def test_overrides_and_bad_values():
    env = _make(n_instances=16, n_types=4, n_resources=3, slot_seconds=900, degree_cap=3)
    inst = env.instance
    assert (inst.n_types, inst.n_instances, inst.n_resources) == (4, 16, 3)
    assert inst.mask.sum(axis=1).max() <= 3
    with pytest.raises(ValueError, match="slot_seconds"):
        _make(slot_seconds=-1)
    with pytest.raises(ValueError, match="n_instances"):
        _make(n_instances=5000)
    with pytest.raises(ValueError, match="unknown parameter 'slot_length'"):
        _make(slot_length=60)


def test_env_checkers_pass():
    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(gym.make(ID, scenario=SC, horizon=20).unwrapped, skip_render_check=True)
        sb3_check(gym.make(ID, scenario=SC, horizon=20), warn=True)


def test_users_own_trace_without_gpus(tmp_path):
    # a v2018-style trace (no GPUs): every type is CPU-only and may run on every node
    from schedgym.data import load_v2018

    (tmp_path / "machine_meta.csv").write_text(
        "".join(f"m_{i},0,1,a,{32 + 32 * (i % 3)},{50 + 10 * (i % 4)},USING\n" for i in range(12)))
    (tmp_path / "batch_task.csv").write_text(
        "".join(f"M{i},1,j_{i},1,Terminated,{60 * i},{60 * i + 30},{100 * (1 + i % 4)},"
                f"{0.5 * (1 + i % 3)}\n" for i in range(40)))
    tr = load_v2018(tmp_path / "machine_meta.csv", tmp_path / "batch_task.csv")
    env = _make(trace=tr, n_instances=8, n_types=3, slot_seconds=120.0, horizon=10)
    inst = env.instance
    assert (inst.n_types, inst.n_instances) == (3, 8)
    assert inst.mask.all()  # CPU-only types: every node
    np.testing.assert_array_equal(inst.capacities[:, 2], 0.0)  # no GPUs in v2018
    env.reset(seed=0)
    assert env.arrivals.shape == (10, 3)
    with pytest.raises(ValueError, match="trace is invalid"):
        _make(trace="batch_task.csv")
