"""Pure dynamics of FluctuatingSpeed-v0: closed-form mean, repair, validation, waiting times."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedgym.envs.fluctuating_speed import dynamics
from schedgym.envs.fluctuating_speed.generator import generate
from schedgym.envs.fluctuating_speed.types import DEFAULTS, clipped_normal_mean


def test_theta_closed_form_matches_hand_value():
    # mu = 0.5, C = 0.15, std 0.25 -> theta = 0.3588 (docs/envs/fluctuating-speed.md)
    assert clipped_normal_mean(0.5 - 0.15, 0.25) == pytest.approx(0.3588, abs=1e-4)


@pytest.mark.parametrize("mu,cost", [(0.1, 0.15), (0.5, 0.15), (0.95, 0.1), (1.0, 0.0)])
def test_theta_closed_form_vs_monte_carlo(mu, cost):
    rng = np.random.default_rng(7)
    z = rng.normal(mu, mu / 2, size=2_000_000)
    mc = np.clip(z - cost, 0.0, 1.0).mean()
    assert clipped_normal_mean(mu - cost, mu / 2) == pytest.approx(mc, abs=1e-3)


def test_theta_zero_std_is_clipped_mean():
    assert clipped_normal_mean(np.array([-0.2, 0.4, 1.3]), np.zeros(3)).tolist() == [0, 0.4, 1]


def test_instance_theta_uses_closed_form(tiny):
    np.testing.assert_allclose(tiny.theta, clipped_normal_mean(tiny.mean - tiny.cost, tiny.std))


def test_validate_selection():
    assert dynamics.validate_selection([True, 0, 1.0], 3).tolist() == [1, 0, 1]
    with pytest.raises(ValueError, match=r"shape \(2,\): must have shape \(3,\)"):
        dynamics.validate_selection([1, 0], 3)
    with pytest.raises(ValueError, match="non-binary entry"):
        dynamics.validate_selection([1, 2, 0], 3)
    with pytest.raises(ValueError, match="non-binary entry"):
        dynamics.validate_selection([0.5, 0, 0], 3)
    with pytest.raises(ValueError, match="non-binary entry"):
        dynamics.validate_selection([np.nan, 0, 0], 3)
    with pytest.raises(ValueError, match="0/1 array"):
        dynamics.validate_selection(["a", None, 0], 3)


def test_repair_hand_computed(tiny):
    # all four edges: load (5, 5) > (3, 2). Drop highest-index edges using an overloaded type:
    # drop 3 -> (4, 3); drop 2 -> (3, 2) feasible.
    x, n = dynamics.repair(tiny, np.ones(4, dtype=np.int8))
    assert x.tolist() == [1, 1, 0, 0] and n == 2
    x, n = dynamics.repair(tiny, np.array([1, 0, 1, 0], dtype=np.int8))
    assert x.tolist() == [1, 0, 1, 0] and n == 0


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(0, 2**20))
def test_repair_is_feasible_subset_and_minimal_suffix(seed, bits):
    inst = generate({**DEFAULTS, "n_types": 3, "n_instances": 4, "edge_prob": 0.5,
                     "capacity_scale": 1}, seed)
    E = inst.n_edges
    x = np.array([(bits >> i) & 1 for i in range(E)], dtype=np.int8)
    y, n = dynamics.repair(inst, x)
    assert dynamics.is_feasible(inst, y)
    assert np.all(y <= x) and n == int(x.sum() - y.sum())
    if dynamics.is_feasible(inst, x):
        assert n == 0
    else:  # the last dropped edge was needed: adding it back breaks capacity
        last = int(np.flatnonzero(x - y)[0])
        z = y.copy()
        z[last] = 1
        assert not dynamics.is_feasible(inst, z)


def test_net_utility_and_utilization(tiny):
    np.testing.assert_allclose(dynamics.net_utility([0.05, 0.5, 2.0, 0.3], tiny.cost),
                               [0.0, 0.3, 1.0, 0.25])
    x = np.array([1, 0, 0, 1])
    assert dynamics.load(tiny, x).tolist() == [2, 3]
    np.testing.assert_allclose(dynamics.utilization(tiny, np.array([1, 0, 1, 0])), [2 / 3, 1])


def test_waiting_time_bookkeeping(tiny):
    o = -np.ones(2)
    o = dynamics.open_waits(o, [1, 0], 0)  # port 0 gets a job at t = 0
    assert dynamics.waiting_times(o, 0).tolist() == [0, 0]
    o = dynamics.close_waits(tiny, o, np.zeros(4))  # not served
    o = dynamics.open_waits(o, [1, 1], 1)
    assert dynamics.waiting_times(o, 1).tolist() == [1, 0]
    o = dynamics.close_waits(tiny, o, np.array([0, 0, 1, 0]))  # port 1 served
    o = dynamics.open_waits(o, [0, 0], 2)
    assert dynamics.waiting_times(o, 2).tolist() == [2, 0]
    o = dynamics.close_waits(tiny, o, np.array([0, 1, 0, 0]))  # port 0 served
    assert dynamics.waiting_times(o, 3).tolist() == [0, 0]


def test_edge_mask(tiny):
    assert dynamics.edge_mask(tiny, [0, 1]).tolist() == [0, 0, 1, 1]


def test_brute_force_helper_sanity(tiny):
    # number of capacity-feasible selections of the tiny instance, by hand: A=[[1,2,1,1],[1,1,1,2]],
    # c=(3,2): {}, 4 singles, pairs {0,1},{0,2},{1,2} (gpu 2), {0,3}? gpu 3 no -> 8 sets
    feas = [x for x in itertools.product([0, 1], repeat=4)
            if dynamics.is_feasible(tiny, np.array(x))]
    assert len(feas) == 8
