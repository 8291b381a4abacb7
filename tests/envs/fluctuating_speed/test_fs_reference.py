"""The compiled slot of FluctuatingSpeed-v0 against its plain-numpy statement
(:mod:`schedgym.envs.fluctuating_speed.reference`), on random small instances, both action
modes and random actions: applied selection, counts and feedback exactly; reward, raw and
expected utility and the oracle value (the reference enumerates every selection) to ``1e-12``
relative (sums in another order); the next observation's pieces exactly (float32)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedgym.envs.fluctuating_speed import reference as ref

ENV_ID = "schedgym/FluctuatingSpeed-v0"
RTOL = 1e-12


def _expected_obs(inst, slot: ref.Slot, origin: np.ndarray, arrivals_next: np.ndarray,
                  t: int, T: int, cells: np.ndarray, n_cells: int) -> dict[str, np.ndarray]:
    f32 = np.float32
    fb, used = np.zeros(n_cells), np.zeros(n_cells)
    fb[cells], used[cells] = slot.feedback, slot.x
    return {"arrivals": arrivals_next.astype(f32) if t < T else np.zeros(inst.n_types, f32),
            "utilization": slot.utilization.astype(f32), "feedback": fb.astype(f32),
            "used": used.astype(f32),
            "waiting": (np.where(origin >= 0, t - origin, 0.0) / T).astype(f32),
            "progress": np.array([t / T], f32)}


@pytest.mark.parametrize("mode", ["selection", "scores"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), L=st.integers(1, 3), R=st.integers(1, 3), K=st.integers(1, 3),
       tight=st.booleans(), instance_seed=st.integers(0, 2**16), seed=st.integers(0, 2**32))
def test_slot_equals_reference(mode, data, L, R, K, tight, instance_seed, seed):
    T = 4
    env = gym.make(ENV_ID, action_mode=mode, n_types=L, n_instances=R, n_resources=K,
                   horizon=T, edge_prob=0.7, arrival_prob=0.7, instance_seed=instance_seed,
                   request_range=(0, 2) if tight else (1, 2),
                   capacity_scale=1 if tight else 3).unwrapped
    inst = env.instance
    obs, _ = env.reset(seed=seed)
    E = inst.n_edges
    cells = inst.cell_of_edge if mode == "scores" else np.arange(E)
    n_cells = L * R if mode == "scores" else E
    origin = np.where(env.arrivals[0] > 0, 0.0, -1.0)
    if mode == "scores":
        action_st = st.lists(st.floats(-1.5, 1.5, allow_nan=False, width=32), min_size=L * R,
                             max_size=L * R).map(lambda v: np.array(v, dtype=np.float32))
    else:
        action_st = st.lists(st.integers(0, 1), min_size=E, max_size=E).map(
            lambda v: np.array(v, dtype=np.int8))
    for t in range(T):
        action = data.draw(action_st)
        arr = np.asarray(env.arrivals[t])
        want = ref.step(inst, action, mode, arr, np.asarray(env.utilities[t]))
        obs, reward, _, truncated, info = env.step(action)
        np.testing.assert_array_equal(info["selection"], want.x)
        np.testing.assert_array_equal(info["slot_feedback"], want.feedback)
        for key in ("n_selected", "n_masked", "n_repaired"):
            assert info[key] == getattr(want, key), key
        assert reward == pytest.approx(want.reward, rel=RTOL, abs=1e-15)
        for key in ("raw_utility", "expected_reward"):
            assert info[key] == pytest.approx(getattr(want, key), rel=RTOL, abs=1e-15), key
        assert "reward" not in info  # the step returns it (info repeats no observation key)
        assert info["mean_utilization"] == pytest.approx(float(want.utilization.mean()), rel=RTOL)
        assert info["oracle_value"] == pytest.approx(ref.oracle_value(inst, arr), rel=RTOL,
                                                     abs=1e-15)
        nxt = np.asarray(env.arrivals[t + 1]) if t + 1 < T else None
        origin = ref.next_waits(inst, origin, want.x, nxt, t + 1)
        expect = _expected_obs(inst, want, origin, nxt if nxt is not None else arr, t + 1, T,
                               cells, n_cells)
        for key, value in expect.items():
            np.testing.assert_array_equal(obs[key], value, err_msg=f"slot {t}: {key}")
        assert truncated == (t == T - 1)


def test_reference_repair_by_hand(tiny):
    """The tiny instance (A = [[1,2,1,1],[1,1,1,2]], c = (3, 2)): selecting every edge overloads
    both types; the rule drops edge 3, then edge 2 (still 3 > 2 devices of type 1), and the
    rest fits (type 0: 3 <= 3, type 1: 2 <= 2)."""
    x, dropped = ref.repair(tiny, np.ones(4, dtype=np.int64))
    assert x.tolist() == [1, 1, 0, 0] and dropped == 2
