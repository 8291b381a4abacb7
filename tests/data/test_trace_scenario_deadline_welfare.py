"""DeadlineWelfare-v0 scenario 'alibaba-gpu-2023': real nodes, arrivals and locality; the
train/test splits, time windows and every node of a trace."""

from __future__ import annotations

import warnings
from dataclasses import replace

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import schedgym.envs.deadline_welfare.trace as dw_trace  # registers the scenario
from schedgym.data import load_sample
from schedgym.data.alibaba import Trace
from schedgym.data.trace_mapping import class_allowed_nodes, split_boundary, task_classes
from schedgym.envs.deadline_welfare import ENV_ID as ID
from tests.data.test_trace_mapping import ten_row_trace  # noqa: F401  (fixture)

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


# ------------------------------------------------------------------ splits and every node
_SPLIT_ENVS = {split: _make(split=split, n_jobs=None) for split in ("train", "test")}
_BOUNDARY = split_boundary(load_sample())


@settings(max_examples=60, deadline=None)
@given(split=st.sampled_from(["train", "test"]), seed=st.integers(0, 2**63 - 2),
       horizon=st.integers(1, 10**6))
def test_splits_are_disjoint(split, seed, horizon):
    """Any episode seed, any horizon that fits: an episode's window lies inside its split and
    it never draws a task of the other split."""
    sampler = _SPLIT_ENVS[split]._sample_jobs
    w = sampler.window
    T = 1 + horizon % w.n_slots  # every horizon that fits the split
    start, idx = replace(sampler, params={**sampler.params, "horizon": T})._window(seed)
    times = sampler.times[idx]
    if split == "train":
        assert start + T * w.slot_seconds <= _BOUNDARY and (times < _BOUNDARY).all()
    else:
        assert start >= _BOUNDARY and (times >= _BOUNDARY).all()
    assert ((times >= start) & (times < start + T * w.slot_seconds)).all()


@pytest.mark.parametrize("split", ["train", "test"])
def test_split_episodes_through_the_env(split):
    """The env's episodes are the sampler's: its jobs' arrival slots are its window's tasks."""
    env = _SPLIT_ENVS[split]
    sampler, dt = env._sample_jobs, 3600.0
    for seed in range(4):
        env.reset(seed=seed)
        start, idx = sampler._window(seed)
        np.testing.assert_array_equal(env.jobs.arrival,
                                      np.floor((sampler.times[idx] - start) / dt))
        assert env.jobs.n_jobs == idx.size > 0


def test_split_horizon_defaults_and_errors():
    test = _SPLIT_ENVS["test"]
    assert test.instance.horizon == 24 and test._sample_jobs.window.n_slots == 249
    assert _make(split="test", horizon=249).instance.horizon == 249  # the whole split
    with pytest.raises(ValueError, match=r"horizon=250 is invalid with split='test': the "
                                         r"split has 249 slots"):
        _make(split="test", horizon=250)
    with pytest.raises(ValueError, match="exclude each other"):
        _make(split="test", time_window=(0.0, 86400.0))
    with pytest.raises(ValueError, match="split='valid' is invalid"):
        _make(split="valid")


def test_no_split_draws_are_unchanged():
    """Without a split the window start is drawn as before the splits existed: uniform over
    ``[0, n_slots - T]`` of the whole trace from stream ``trace_window``."""
    from schedgym.core import rng as rngs

    sampler = _make(n_jobs=None)._sample_jobs
    t = sampler.times
    n_start = max(1, int(np.floor((t.max() - t.min()) / 3600.0)) - 24 + 2)
    for seed in (0, 3, 2**40):
        start, _ = sampler._window(seed)
        k = int(rngs.stream(seed, "trace_window").integers(0, n_start))
        assert start == t.min() + 3600.0 * k


def test_time_window_is_in_trace_seconds_inclusive():
    env = _make(time_window=(86400.0, 4 * 86400.0 - 1.0), n_jobs=None)
    w = env._sample_jobs.window
    assert w.start == 86400.0 and w.n_slots == 72 and w.split is None
    for seed in range(5):
        start, idx = env._sample_jobs._window(seed)
        assert (env._sample_jobs.times[idx] >= 86400.0).all()
        assert (env._sample_jobs.times[idx] <= 4 * 86400.0 - 1.0).all()


def _tiny_trace() -> Trace:
    """5 nodes (two T4, one V100, two without GPUs) and 14 tasks over three days."""
    hours = np.array([1, 2, 5, 9, 20, 26, 30, 33, 47, 50, 55, 60, 66, 70], float) * 3600.0
    gpu = np.array([0, 1, 0.5, 0, 1, 1, 0, 2, 1, 0, 0.25, 1, 0, 1])
    spec = ["", "", "T4", "", "V100", "", "", "T4", "", "", "", "V100", "", "T4"]
    return Trace(node_cpu=[32.0, 32.0, 64.0, 16.0, 8.0], node_mem=[128.0, 128.0, 256.0, 64.0, 32.0],
                 node_gpu=[2.0, 2.0, 8.0, 0.0, 0.0], node_model=["T4", "T4", "V100", "", ""],
                 task_time=hours, task_cpu=np.full(14, 4.0), task_mem=np.full(14, 8.0),
                 task_gpu=gpu, task_gpu_spec=spec, task_duration=np.full(14, 7200.0),
                 source="hand-made")


def test_every_node_of_a_hand_made_trace():
    tr = _tiny_trace()
    env = _make(trace=tr, n_instances="all", n_jobs=None, horizon=72)
    assert env.instance.n_instances == 5 and env.params["n_instances"] == 5
    env.reset(seed=0)
    jobs, sampler = env.jobs, env._sample_jobs
    assert jobs.n_jobs == 14  # one window of 72 h holds every task
    nodes = sampler.class_nodes[sampler.task_class]  # in the sampled node order
    tp = dw_trace.trace_problem({**env.params, **dw_trace.EXTRA, "trace": tr,
                                 "n_instances": "all"}, 0)
    assert sorted(tp.node_index.tolist()) == [0, 1, 2, 3, 4]
    model = np.asarray(tr.node_model)[tp.node_index]
    gpus = np.asarray(tr.node_gpu)[tp.node_index]
    for n in range(14):
        want = np.ones(5, bool) if tr.task_gpu[n] == 0 else gpus > 0
        if tr.task_gpu_spec[n]:
            want = want & (model == tr.task_gpu_spec[n])
        np.testing.assert_array_equal(jobs.allowed[n], want)
        np.testing.assert_array_equal(nodes[n], want)
    # a split of the same trace: its boundary 70 % of its 69 h = 48.3 h after the first task
    train = _make(trace=tr, n_instances="all", n_jobs=None, split="train")
    assert train._sample_jobs.window.n_slots == 48 and train.instance.horizon == 24
    test = _make(trace=tr, n_instances="all", n_jobs=None, split="test", horizon=21)
    test.reset(seed=1)
    start, idx = test._sample_jobs._window(1)
    assert start == split_boundary(tr) and (tr.task_time[idx] >= start).all()
    with pytest.raises(ValueError, match=r"n_instances=6 is invalid: .*\[1, 5\]"):
        _make(trace=tr, n_instances=6)


# ------------------------------------------- the expected later demand sees only the past
def _tiny(trace, split=None, **kw):
    return _make(trace=trace, n_instances=4, slot_seconds=100.0, split=split, n_jobs=None,
                 **kw)


def _table_by_hand(sampler, window, seeds, R, T):
    """Row s: mean over the episodes (one per seed) on ``window`` of every job arriving after
    slot s spread evenly over its units, summed job by job over the whole mesh."""
    from schedgym.envs.deadline_welfare.demand import job_shares

    sample = replace(sampler, window=window)
    table = np.zeros((T + 1, R * T))
    for seed in seeds:
        jobs = sample(seed)
        shares = job_shares(jobs).reshape(jobs.n_jobs, R * T)
        for s in range(T + 1):
            table[s] += shares[jobs.arrival > s].sum(axis=0)
    return table / len(seeds)


def test_test_split_estimates_later_demand_from_the_training_split(ten_row_trace):  # noqa: F811
    """On split="test" the table is estimated from training-split days (the trace's past) and
    not from other test-split days; same shape as before."""
    from schedgym.data.trace_mapping import slot_window
    from schedgym.envs.deadline_welfare.demand import future_seeds

    env = _tiny(ten_row_trace, split="test", horizon=3)
    sampler, R, T = env._sample_jobs, 4, 3
    seeds = future_seeds(env.instance_seed, 5)
    train_w = slot_window(ten_row_trace, 100.0, split="train")
    past = _table_by_hand(sampler, train_w, seeds, R, T)
    future = _table_by_hand(sampler, sampler.window, seeds, R, T)
    got = env.expected_later_demand(5)
    assert got.shape == (T + 1, R * T) and past.any() and future.any()
    np.testing.assert_allclose(got, past, rtol=1e-12, atol=1e-12)
    assert not np.allclose(got, future)
    # every estimate episode lies before the boundary (b = 1050 s), the test split after it
    est = sampler.estimate_sampler()
    assert est.window is not sampler.window and est.window.split == "train"
    import pickle  # the past travels with the sampler (async vector envs pickle it)

    again = pickle.loads(pickle.dumps(sampler)).estimate_sampler()
    assert (again.window.start, again.window.n_slots) == (0.0, 10)
    b = split_boundary(ten_row_trace)
    for seed in seeds:
        start, idx = est._window(seed)
        assert start + T * 100.0 <= b and (est.times[idx] < b).all()
    # the episodes played are still the test split's
    env.reset(seed=0)
    start, _ = sampler._window(0)
    assert start >= b


@pytest.mark.parametrize("kw", [{"split": "train"}, {"time_window": (0.0, 1500.0)}, {}])
def test_other_windows_estimate_from_their_own_episodes(ten_row_trace, kw):  # noqa: F811
    """split="train", a time window and the whole trace: the estimate is drawn from the
    scenario's own window, as before the test split's change."""
    from schedgym.envs.deadline_welfare.demand import future_seeds

    env = _tiny(ten_row_trace, horizon=3, **kw)
    sampler = env._sample_jobs
    assert sampler.estimate_sampler() is sampler and sampler.past_window is None
    want = _table_by_hand(sampler, sampler.window, future_seeds(env.instance_seed, 5), 4, 3)
    np.testing.assert_allclose(env.expected_later_demand(5), want, rtol=1e-12, atol=1e-12)


def test_test_split_without_a_past_refuses_the_estimate(ten_row_trace):  # noqa: F811
    """Slots of 1500 s: the training split (1050 s) holds no whole slot, so there is no past
    to estimate from; the env plays, the estimate is refused in one line."""
    env = _make(trace=ten_row_trace, n_instances=4, slot_seconds=1500.0, split="test",
                n_jobs=None, horizon=1)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"^split='test': the expected later demand is "
                                         r"estimated from the training split, which this "
                                         r"trace cannot give \(split='train' is invalid"):
        env.expected_later_demand()
