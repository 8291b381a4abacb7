"""FluctuatingSpeed-v0's ``alibaba-gpu-2023`` scenario: named splits, time windows, every node
of the trace, and a locality graph that grows with the nodes.

The arrivals of an episode are checked against an independent count: the trace tasks created in
each of the episode's slots, from their raw creation times, never from the env's own tables.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import schedgym  # noqa: F401  (registers the envs)
from schedgym.core import rng as rngs
from schedgym.data import load_sample
from schedgym.data.trace_mapping import build_trace_problem, slot_window, split_boundary
from schedgym.envs.fluctuating_speed import ENV_ID
from tests.data.test_trace_mapping import ten_row_trace  # noqa: F401  (fixture)

SAMPLE = load_sample()
BOUNDARY = split_boundary(SAMPLE)
DT = 600.0


def _make(**kw):
    return gym.make(ENV_ID, scenario="alibaba-gpu-2023", compute_oracle=False, **kw).unwrapped


def _expected_arrivals(problem, first: int, horizon: int, wrap: bool) -> np.ndarray:
    """Indicators ``(horizon, L)`` of the typed tasks created in slots ``first..`` of the
    problem's window, counted from the trace's raw creation times."""
    times, kinds, w = np.asarray(SAMPLE.task_time), problem.task_type, problem.window
    out = np.zeros((horizon, problem.n_types))
    for i in range(horizon):
        slot = (first + i) % w.n_slots if wrap else first + i
        lo = w.start + slot * w.slot_seconds
        in_slot = (times >= lo) & (times < lo + w.slot_seconds) & (kinds >= 0)
        out[i, np.unique(kinds[in_slot])] = 1.0
    return out


@settings(max_examples=30, deadline=None)
@given(split=st.sampled_from(["train", "test"]), seed=st.integers(0, 2**32 - 1),
       horizon=st.integers(1, 400))
def test_an_episode_never_sees_a_slot_of_the_other_split(split, seed, horizon):
    env = _make(split=split, horizon=horizon, arrival_prob=1.0)
    env.reset(seed=seed)
    tp = build_trace_problem(n_instances=40, n_types=8, slot_seconds=DT, seed=0, split=split,
                             degree_cap=4)
    first = tp.window.start_slot(rngs.stream(seed, "arrivals"), horizon, wrap=True)
    lo, hi = tp.window.start + first * DT, tp.window.start + (first + horizon) * DT
    if split == "train":
        assert hi <= BOUNDARY
    else:
        assert lo >= BOUNDARY
    np.testing.assert_array_equal(env.arrivals, _expected_arrivals(tp, first, horizon, False))


def test_default_horizon_is_the_papers_or_the_whole_split():
    assert _make().horizon == 2000
    assert _make(split="train").horizon == 2000
    test_slots = slot_window(SAMPLE, DT, split="test").n_slots
    assert test_slots == 1489 and _make(split="test").horizon == test_slots
    assert _make(split="test", horizon=100).horizon == 100


def test_time_window_arrivals_come_from_the_window():
    t0, t1 = 86_400.0, 4 * 86_400.0
    env = _make(time_window=(t0, t1), horizon=600, arrival_prob=1.0)
    env.reset(seed=7)
    tp = build_trace_problem(n_instances=40, n_types=8, slot_seconds=DT, seed=0,
                             time_window=(t0, t1), degree_cap=4)
    assert tp.window.start == t0 and tp.n_slots == int((t1 - t0) // DT) + 1
    first = tp.window.start_slot(rngs.stream(7, "arrivals"), 600, wrap=True)
    np.testing.assert_array_equal(env.arrivals, _expected_arrivals(tp, first, 600, True))


def test_split_errors_are_one_line():
    with pytest.raises(ValueError, match=r"^split='train' and time_window=\(0, 5000\) exclude "
                                         r"each other[^\n]*$"):
        _make(split="train", time_window=(0, 5000))
    with pytest.raises(ValueError, match=r"^horizon=1490 is invalid with split='test': the "
                                         r"split has 1489 slots[^\n]*$"):
        _make(split="test", horizon=1490)
    with pytest.raises(ValueError, match=r"^split='future' is invalid: must be one of"):
        _make(split="future")
    with pytest.raises(ValueError, match=r"^degree_cap='dense' is invalid: must be 'auto'"):
        _make(degree_cap="dense")
    with pytest.raises(ValueError, match=r"^n_instances='every' is invalid: must be 'all'"):
        _make(n_instances="every")


def test_all_nodes_of_a_hand_made_trace(ten_row_trace):  # noqa: F811
    # the ten-row trace has 4 nodes; 'all' takes them all, sorted by trace row
    env = _make(trace=ten_row_trace, n_instances="all", n_types=3, slot_seconds=100.0,
                degree_cap=None, horizon=5)
    inst = env.instance
    assert inst.n_instances == 4 and inst.n_types == 3
    tp = build_trace_problem(n_instances="all", n_types=3, slot_seconds=100.0, seed=0,
                             trace=ten_row_trace)
    np.testing.assert_array_equal(tp.node_index, [0, 1, 2, 3])
    np.testing.assert_array_equal(inst.edges, tp.edges)  # every allowed node of each type
    # 'auto' keeps edge_prob x R nodes per type: round(0.5 * 4) = 2 (0.1 * 4 rounds to 0 -> 1)
    for edge_prob, cap in ((0.5, 2), (0.1, 1)):
        inst = _make(trace=ten_row_trace, n_instances="all", n_types=3, slot_seconds=100.0,
                     edge_prob=edge_prob, horizon=5).instance
        np.testing.assert_array_equal(inst.mask.sum(axis=1), np.minimum(cap, tp.mask.sum(1)))
    env.reset(seed=0)
    assert env.arrivals.shape == (5, 3)


def test_the_graph_grows_with_the_nodes():
    small = _make(horizon=10).instance  # 'auto' at R = 40: round(0.1 * 40) = 4, as before
    before = build_trace_problem(n_instances=40, n_types=8, slot_seconds=DT, seed=0,
                                 degree_cap=4)
    np.testing.assert_array_equal(small.edges, before.edges)
    whole = _make(n_instances="all", horizon=10).instance
    allowed = build_trace_problem(n_instances="all", n_types=8, slot_seconds=DT, seed=0).mask
    assert whole.n_instances == SAMPLE.n_nodes == 1523
    cap = round(0.1 * 1523)  # 152 nodes per type
    np.testing.assert_array_equal(whole.mask.sum(axis=1), np.minimum(cap, allowed.sum(axis=1)))
    assert whole.n_edges > 30 * small.n_edges
    assert np.all(whole.mask <= allowed)  # only nodes the type's GPU models allow
    full = _make(n_instances="all", horizon=10, degree_cap=None).instance
    np.testing.assert_array_equal(full.mask, allowed)
