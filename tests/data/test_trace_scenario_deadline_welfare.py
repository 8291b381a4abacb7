"""DeadlineWelfare-v0 scenario 'alibaba-gpu-2023': real nodes, arrivals and locality."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest

import schedgym.envs.deadline_welfare.trace as dw_trace  # registers the scenario
from schedgym.data import load_sample
from schedgym.data.trace_mapping import class_allowed_nodes, task_classes
from schedgym.envs.deadline_welfare import ENV_ID as ID

SC = "alibaba-gpu-2023"


def _make(**kw):
    return gym.make(ID, scenario=SC, **kw).unwrapped


def test_capacities_follow_node_sizes():
    env = _make(instance_seed=2)
    tp = dw_trace.trace_problem({**env.params, **dw_trace.EXTRA}, 2)
    cap = env.instance.capacity
    assert cap.shape == (10, 24) and (cap > 0).all()
    assert (cap == cap[:, :1]).all()  # constant over slots
    c = tp.capacities
    size = (c / c.mean(axis=0)).mean(axis=1)  # all three resources present in this sample
    np.testing.assert_allclose(cap[:, 0], 20.0 * size, rtol=1e-6)
    np.testing.assert_allclose(cap[:, 0].mean(), 20.0, rtol=1e-6)


def test_jobs_are_real_tasks_of_one_window():
    env = _make(instance_seed=0, n_jobs=None, deadline="trace")
    tp = dw_trace.trace_problem({**env.params, **dw_trace.EXTRA}, 0)
    tr = load_sample()
    env.reset(seed=4)
    jobs = env.jobs
    assert jobs.n_jobs > 50  # one day of the trace holds hundreds of tasks
    # the arrivals match the trace's tasks over 24 consecutive hours, for some window start
    counts = np.bincount(jobs.arrival, minlength=24)
    cls = task_classes(tr)
    runnable = np.array([class_allowed_nodes(tr, c)[tp.node_index].any() for c in cls])
    t0 = tr.task_time.min()
    found = False
    for k in range(int((tr.task_time.max() - t0) // 3600) + 1):
        start = t0 + 3600 * k
        sel = runnable & (tr.task_time >= start) & (tr.task_time < start + 24 * 3600)
        if sel.sum() == jobs.n_jobs and np.array_equal(
                np.bincount(((tr.task_time[sel] - start) // 3600).astype(int), minlength=24),
                counts):
            found = True
            durations = np.sort(tr.task_duration[sel])
            break
    assert found
    # deadline="trace": window length = floor(run time / 1 h), clipped at the horizon
    span = jobs.deadline - jobs.arrival
    assert (span >= 0).all() and (jobs.deadline <= 23).all()
    assert np.mean(span == 0) == pytest.approx(np.mean(durations < 3600), abs=1e-12)


def test_locality_and_sampling():
    env = _make(instance_seed=1)
    env.reset(seed=0)
    jobs = env.jobs
    assert jobs.n_jobs == 20 and np.all(np.diff(jobs.arrival) >= 0)
    assert jobs.allowed.any(axis=1).all()
    n_nodes = env.instance.capacity.shape[0]
    assert jobs.allowed.shape == (20, n_nodes)
    again = _make(instance_seed=1)
    again.reset(seed=0)
    np.testing.assert_array_equal(again.jobs.arrival, jobs.arrival)
    np.testing.assert_array_equal(again.jobs.workload, jobs.workload)


def test_bad_values():
    with pytest.raises(ValueError, match="deadline"):
        _make(deadline="soon")
    with pytest.raises(ValueError, match="slot_seconds"):
        _make(slot_seconds=0)


def test_env_checkers_pass():
    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env = gym.make(ID, scenario=SC)
        check_env(env.unwrapped, skip_render_check=True)
        sb3_check(gym.make(ID, scenario=SC), warn=True)
    obs, _ = env.reset(seed=4)
    assert env.observation_space.contains(obs)


def test_sampler_pickles_and_capacity_bounds_hold_for_every_node_sample():
    import pickle

    env = _make()
    sampler = pickle.loads(pickle.dumps(env._sample_jobs))
    np.testing.assert_array_equal(sampler(9).arrival, env._sample_jobs(9).arrival)
    for seed in range(6):
        inst = _make(instance_seed=seed).instance
        lo, hi = inst.capacity_bounds
        assert lo <= inst.capacity.min() and inst.capacity.max() <= hi
