"""GainOverhead-v0 scenario 'alibaba-gpu-2023': named splits, time windows and every node.

The property: an episode of one split only ever sees slots of that split (any episode seed, any
horizon that fits), its arrivals counted again here from the raw task creation times. Every node
is checked on the ten-row hand-made trace of ``tests/data/test_trace_mapping``.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import schedgym  # noqa: F401  (registers the env ids)
from schedgym.core import rng as rngs
from schedgym.data import load_sample
from schedgym.data.trace_mapping import split_boundary
from schedgym.envs.gain_overhead import ENV_ID
from schedgym.envs.gain_overhead.trace import EXTRA, PARAMS, build
from schedgym.envs.gain_overhead.types import GainOverheadParams
from tests.data.test_trace_mapping import ten_row_trace  # noqa: F401  (fixture)

SC = "alibaba-gpu-2023"
SAMPLE = load_sample()
BOUNDARY = split_boundary(SAMPLE)
SLOT = 1800.0


def _params(**kw):
    return {**GainOverheadParams().as_dict(), **PARAMS, **EXTRA, "n_instances": 16, **kw}


#: The scenario's (instance, arrival sampler) of each split, built once (16 nodes).
_BUILT = {split: build(_params(split=split), 0) for split in ("train", "test")}


@settings(max_examples=40, deadline=None)
@given(split=st.sampled_from(["train", "test"]), seed=st.integers(0, 2**63 - 2),
       horizon=st.integers(1, 10**6))
def test_an_episode_never_sees_a_slot_of_the_other_split(split, seed, horizon):
    _, sampler = _BUILT[split]
    tp = sampler.problem
    T = 1 + horizon % tp.window.n_slots  # every horizon that fits the split
    x = sampler(rngs.stream(seed, "arrivals"), T)
    first = tp.window.start_slot(rngs.stream(seed, "arrivals"), T, wrap=True)
    lo = tp.window.start + first * SLOT
    hi = lo + T * SLOT
    if split == "train":
        assert hi <= BOUNDARY
    else:
        assert lo >= BOUNDARY
    # the arrivals again, from the raw creation times of the tasks the mapping typed
    times = np.asarray(SAMPLE.task_time)
    expect = np.zeros((T, tp.n_types))
    used = (tp.task_type >= 0) & (times >= lo) & (times < hi)
    expect[np.floor((times[used] - lo) / SLOT).astype(np.int64), tp.task_type[used]] = 1.0
    np.testing.assert_array_equal(x, expect)
    assert np.all(tp.window.tasks[(times >= lo) & (times < hi)])  # no task of the other split


@pytest.mark.parametrize("split", ["train", "test"])
def test_split_through_the_env(split):
    """The env's arrivals are the sampler's for the same seed; the whole split fits."""
    n = _BUILT[split][1].problem.n_slots
    env = gym.make(ENV_ID, scenario=SC, n_instances=16, split=split, horizon=n).unwrapped
    assert n == {"train": 1157, "test": 497}[split]  # the shipped sample at 30-minute slots
    for seed in (0, 5):
        env.reset(seed=seed)
        np.testing.assert_array_equal(env.arrivals, _BUILT[split][1].problem.arrival_indicators)
    short = gym.make(ENV_ID, scenario=SC, n_instances=16, split=split, horizon=48).unwrapped
    short.reset(seed=3)
    np.testing.assert_array_equal(short.arrivals,
                                  _BUILT[split][1](rngs.stream(3, "arrivals"), 48))


def test_split_horizon_default_and_errors():
    """The default horizon is 30 days, or the whole split when shorter; an explicit horizon
    longer than the split, a split with a time window, a bad split: one line each."""
    assert gym.make(ENV_ID, scenario=SC, n_instances=16).unwrapped.horizon == 1440
    for split, n in (("train", 1157), ("test", 497)):
        assert gym.make(ENV_ID, scenario=SC, n_instances=16, split=split).unwrapped.horizon == n
    with pytest.raises(ValueError, match=r"^horizon=1440 is invalid with split='train': the "
                                         r"split has 1157 slots of 1800 s, so horizon must be an "
                                         r"integer in \[1, 1157\]") as err:
        gym.make(ENV_ID, scenario=SC, split="train", horizon=1440)
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match=r"^split='test' and time_window=\(0.0, 86400.0\) "
                                         r"exclude each other"):
        gym.make(ENV_ID, scenario=SC, split="test", horizon=10, time_window=(0.0, 86400.0))
    with pytest.raises(ValueError, match=r"^split='future' is invalid: must be one of 'train', "
                                         r"'test' or None"):
        gym.make(ENV_ID, scenario=SC, split="future", horizon=10)
    with pytest.raises(ValueError, match=r"^n_instances='every' is invalid: must be 'all'"):
        gym.make(ENV_ID, scenario=SC, n_instances="every", horizon=10)


def test_time_window_is_in_seconds():
    """``time_window`` (trace seconds) starts slot 0 at ``t0``; without a split it wraps."""
    env = gym.make(ENV_ID, scenario=SC, n_instances=16, horizon=20, slot_seconds=3600.0,
                   time_window=(86400.0, 3 * 86400.0)).unwrapped
    tp = build(_params(horizon=20, slot_seconds=3600.0, time_window=(86400.0, 3 * 86400.0)),
               0)[1].problem
    assert tp.window.start == 86400.0 and tp.n_slots == 49
    env.reset(seed=2)
    first = tp.window.start_slot(rngs.stream(2, "arrivals"), 20, wrap=True)
    np.testing.assert_array_equal(
        env.arrivals, tp.arrival_indicators[(first + np.arange(20)) % tp.n_slots])


def test_every_node_of_a_hand_made_trace(ten_row_trace):  # noqa: F811
    tr = ten_row_trace
    env = gym.make(ENV_ID, scenario=SC, trace=tr, n_instances="all", n_types=3,
                   slot_seconds=100.0, horizon=5).unwrapped
    inst = env.instance
    assert inst.n_instances == 4  # every node of the four-node trace
    np.testing.assert_allclose(inst.capacities[:, :3], tr.node_resources)
    env.reset(seed=0)
    assert env.arrivals.shape == (5, 3)
    same = gym.make(ENV_ID, scenario=SC, trace=tr, n_instances=4, n_types=3, slot_seconds=100.0,
                    horizon=5, instance_seed=9).unwrapped
    np.testing.assert_array_equal(same.instance.edges, inst.edges)  # every node: no draw left
    train = gym.make(ENV_ID, scenario=SC, trace=tr, n_instances="all", n_types=2,
                     slot_seconds=100.0, split="train", horizon=10).unwrapped
    assert train.instance.n_instances == 4
    with pytest.raises(ValueError, match=r"n_instances=5 is invalid: must be 'all' or an "
                                         r"integer in \[1, 4\] \(the trace has 4 nodes\)"):
        gym.make(ENV_ID, scenario=SC, trace=tr, n_instances=5, n_types=2, slot_seconds=100.0)


def test_every_node_of_the_shipped_sample():
    env = gym.make(ENV_ID, scenario=SC, n_instances="all", split="test", horizon=4).unwrapped
    assert env.instance.n_instances == 1523
    assert env.action_space.shape == (env.instance.n_edges * env.instance.n_resources,)
    env.reset(seed=0)
    _, r, _, _, info = env.step(env.action_space.sample())
    assert np.isfinite(r) and info["slot"] == 0
