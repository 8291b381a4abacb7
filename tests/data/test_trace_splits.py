"""Named splits, time windows and ``n_instances="all"`` of the trace mapping.

Hand-computed on the ten-row trace of ``test_trace_mapping`` (tasks created at 0 ... 1500 s, so
the split boundary is b = 0 + 0.7 * 1500 = 1050 s), and checked as a property on the shipped
sample: an episode of one split never sees a task of the other.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedgym.data import load_sample
from schedgym.data.trace_mapping import (
    SPLITS,
    TRAIN_FRACTION,
    build_trace_problem,
    resolve_n_instances,
    slot_window,
    split_boundary,
)
from tests.data.test_trace_mapping import ten_row_trace  # noqa: F401  (fixture)


def test_boundary_and_windows_by_hand(ten_row_trace):  # noqa: F811
    tr = ten_row_trace
    assert TRAIN_FRACTION == 0.7 and SPLITS == ("train", "test")
    assert split_boundary(tr) == pytest.approx(1050.0)
    train = slot_window(tr, 100.0, split="train")
    # whole slots before b: [0, 1000); tasks a(0) d(100) h(200) e(650) b(700) i(900) i2(950)
    assert (train.start, train.n_slots, train.stop) == (0.0, 10, 1000.0)
    assert sorted(np.asarray(tr.task_time)[train.tasks]) == [0, 100, 200, 650, 700, 900, 950]
    test = slot_window(tr, 100.0, split="test")
    # from b = 1050 to the slot holding the last task (1500): 5 slots; tasks g(1250) f(1300) j(1500)
    assert (test.start, test.n_slots) == (1050.0, 5)
    assert sorted(np.asarray(tr.task_time)[test.tasks]) == [1250, 1300, 1500]
    assert not np.any(train.tasks & test.tasks)
    whole = slot_window(tr, 100.0)
    assert (whole.start, whole.n_slots, whole.split) == (0.0, 16, None) and whole.tasks.all()
    win = slot_window(tr, 100.0, time_window=(600, 1300))
    assert (win.start, win.n_slots) == (600.0, 8)
    assert sorted(np.asarray(tr.task_time)[win.tasks]) == [650, 700, 900, 950, 1250, 1300]


def test_split_problem_arrivals_by_hand(ten_row_trace):  # noqa: F811
    train = build_trace_problem(n_instances=4, n_types=3, slot_seconds=100.0, seed=0,
                                trace=ten_row_trace, split="train")
    assert train.split == "train" and train.n_slots == 10
    # every training task counted once, in the slot floor(time / 100)
    per_slot = train.arrival_counts.sum(axis=1)
    expect = np.zeros(10, dtype=np.int64)
    for t in (0, 100, 200, 650, 700, 900, 950):
        expect[t // 100] += int(train.task_type[list(ten_row_trace.task_time).index(t)] >= 0)
    np.testing.assert_array_equal(per_slot, expect)
    assert np.all(train.task_type[np.asarray(ten_row_trace.task_time) >= 1000] == -1)
    test = build_trace_problem(n_instances=4, n_types=2, slot_seconds=100.0, seed=0,
                               trace=ten_row_trace, split="test")
    assert test.split == "test" and test.n_slots == 5
    assert np.all(test.task_type[np.asarray(ten_row_trace.task_time) < 1050] == -1)


def test_split_errors_are_one_line(ten_row_trace):  # noqa: F811
    with pytest.raises(ValueError, match=r"split='past' is invalid: must be one of 'train'"):
        slot_window(ten_row_trace, 100.0, split="past")
    with pytest.raises(ValueError, match=r"exclude each other"):
        build_trace_problem(n_instances=4, n_types=2, slot_seconds=100.0, trace=ten_row_trace,
                            split="train", time_window=(0, 500))
    with pytest.raises(ValueError, match=r"split='train' is invalid .* less than one slot"):
        slot_window(ten_row_trace, 2000.0, split="train")
    tp = build_trace_problem(n_instances=4, n_types=2, slot_seconds=100.0, trace=ten_row_trace,
                             split="test")
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"horizon=6 is invalid with split='test': the split "
                                         r"has 5 slots .* integer in \[1, 5\]"):
        tp.sample_arrivals(rng, 6)
    with pytest.raises(ValueError, match=r"horizon=6 is invalid with split='test'"):
        tp.sample_arrivals(rng, 6, start=0)
    with pytest.raises(ValueError, match=r"start=3 is invalid"):
        tp.sample_arrivals(rng, 3, start=3)  # would run past the split's end
    assert tp.sample_arrivals(rng, 3, start=2).shape == (3, tp.n_types)


def test_start_slot_rules(ten_row_trace):  # noqa: F811
    whole = slot_window(ten_row_trace, 100.0)
    train = slot_window(ten_row_trace, 100.0, split="train")
    draws = {(w, wrap): {w.start_slot(np.random.default_rng(s), 7, wrap=wrap)
                         for s in range(300)}
             for w in (whole, train) for wrap in (True, False)}
    assert draws[whole, True] == set(range(16))  # wraps: any slot
    assert draws[whole, False] == set(range(10))  # 16 - 7 + 1 starts
    assert draws[train, True] == draws[train, False] == set(range(4))  # 10 - 7 + 1, never wraps
    assert whole.start_slot(np.random.default_rng(0), 40, wrap=False) == 0  # longer: slot 0
    # without a split the draw is the one every scenario made before splits existed
    for s in range(20):
        assert whole.start_slot(np.random.default_rng(s), 7, wrap=True) == \
            int(np.random.default_rng(s).integers(0, 16))


def test_all_nodes(ten_row_trace):  # noqa: F811
    tp = build_trace_problem(n_instances="all", n_types=3, slot_seconds=100.0, seed=5,
                             trace=ten_row_trace)
    assert tp.n_instances == 4
    np.testing.assert_array_equal(tp.node_index, [0, 1, 2, 3])
    np.testing.assert_allclose(tp.capacities, ten_row_trace.node_resources)
    assert resolve_n_instances("all", ten_row_trace) == 4
    assert resolve_n_instances("all") == 1523  # the shipped sample
    assert resolve_n_instances(3, ten_row_trace) == 3
    with pytest.raises(ValueError, match=r"n_instances='every' is invalid: must be 'all' .* "
                                         r"integer in \[1, 4\]"):
        resolve_n_instances("every", ten_row_trace)
    with pytest.raises(ValueError, match=r"n_instances=5 is invalid: must be 'all' or an integer "
                                         r"in \[1, 4\] \(the trace has 4 nodes\)"):
        build_trace_problem(n_instances=5, n_types=2, slot_seconds=100.0, trace=ten_row_trace)


SAMPLE = load_sample()
BOUNDARY = split_boundary(SAMPLE)


@settings(max_examples=40, deadline=None)
@given(split=st.sampled_from(SPLITS), seed=st.integers(0, 2**32 - 1),
       slot=st.sampled_from([600.0, 1800.0, 3600.0]), horizon=st.integers(1, 400))
def test_an_episode_never_sees_the_other_split(split, seed, slot, horizon):
    """Property: the slots of an episode of one split lie inside it, and its arrivals are the
    split's own tasks, counted independently from the raw creation times."""
    win = slot_window(SAMPLE, slot, split=split)
    horizon = min(horizon, win.n_slots)
    first = win.start_slot(np.random.default_rng(seed), horizon, wrap=True)
    lo, hi = win.start + first * slot, win.start + (first + horizon) * slot
    if split == "train":
        assert hi <= BOUNDARY
    else:
        assert lo >= BOUNDARY
    times = np.asarray(SAMPLE.task_time)
    seen = (times >= lo) & (times < hi)
    assert np.all(win.tasks[seen])  # every task the episode covers belongs to its split


@settings(max_examples=15, deadline=None)
@given(split=st.sampled_from(SPLITS), seed=st.integers(0, 2**32 - 1),
       horizon=st.integers(1, 300))
def test_split_arrivals_are_the_splits_own_slots(split, seed, horizon):
    tp = _problem(split)
    horizon = min(horizon, tp.n_slots)
    x = tp.sample_arrivals(np.random.default_rng(seed), horizon)
    first = tp.window.start_slot(np.random.default_rng(seed), horizon, wrap=True)
    times, kinds = np.asarray(SAMPLE.task_time), tp.task_type
    expect = np.zeros((horizon, tp.n_types))
    for i in range(horizon):  # independent count: the raw tasks created in each slot
        lo = tp.window.start + (first + i) * tp.slot_seconds
        in_slot = (times >= lo) & (times < lo + tp.slot_seconds) & (kinds >= 0)
        expect[i, np.unique(kinds[in_slot])] = 1.0
    np.testing.assert_array_equal(x, expect)


_PROBLEMS: dict[str, object] = {}


def _problem(split: str):
    if split not in _PROBLEMS:
        _PROBLEMS[split] = build_trace_problem(n_instances=64, n_types=10, slot_seconds=1800.0,
                                               seed=0, split=split)
    return _PROBLEMS[split]


def test_no_split_keeps_the_old_window():
    tp = build_trace_problem(n_instances=64, n_types=10, slot_seconds=1800.0, seed=0)
    assert tp.split is None and tp.n_slots == int(np.floor(SAMPLE.task_time.max() / 1800.0)) + 1
    old = (int(np.random.default_rng(3).integers(0, tp.n_slots)) + np.arange(2000)) % tp.n_slots
    np.testing.assert_array_equal(tp.sample_arrivals(np.random.default_rng(3), 2000),
                                  (tp.arrival_counts[old] > 0).astype(float))
