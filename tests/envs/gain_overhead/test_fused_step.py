"""The single env's one-call step (allocation mode) and the compiled ``encode_unit`` against the
numpy formulas they replace: same bits, same errors, nothing changed by a refused action."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from schedgym.core.envbase import encode_unit
from schedgym.envs.gain_overhead import actions, dynamics
from tests.envs.gain_overhead.conftest import ENV_ID, SMALL


def _reference_step(inst, action, x):
    """validate + clip + decode ``(a + 1) / 2 * caps`` + the batched kernel, in numpy."""
    a = np.asarray(action, dtype=np.float64)
    clipped = np.clip(a, -1.0, 1.0)
    clip = float(np.max(np.abs(clipped - a)))
    z = 0.5 * (clipped + 1.0) * inst.edge_caps.reshape(-1)
    out = dynamics.score_batch(inst, z.reshape(1, *inst.edge_caps.shape), x[None])
    return out, clip


@pytest.mark.parametrize("scenario", [{}, {"scenario": "paper-default"}], ids=["small", "paper"])
def test_fused_step_equals_the_numpy_path(scenario):
    kw = scenario or SMALL
    env = gym.make(ENV_ID, **kw).unwrapped
    env.reset(seed=4)
    rng = np.random.default_rng(0)
    for _ in range(12):
        action = rng.uniform(-1.3, 1.3, env.action_space.shape).astype(np.float32)
        x = env.arrivals[env.t].copy()
        ref, clip = _reference_step(env.instance, action, x)
        _, r, _, _, info = env.step(action)
        np.testing.assert_array_equal(info["allocation"], ref.y[0])
        assert (r, info["gain"], info["penalty"]) == (ref.reward[0], ref.gain[0], ref.penalty[0])
        assert info["projection_distance"] == ref.distance[0] and clip > 0
        assert info["action_clip"] == clip
        assert info["mean_utilization"] == ref.utilization[0].sum() / (
            env.instance.capacities > 0).sum()


def test_decode_allocation_matches_the_affine_map():
    env = gym.make(ENV_ID, **SMALL).unwrapped
    a = np.random.default_rng(1).uniform(-1, 1, env.action_space.shape)
    caps = env.instance.edge_caps
    np.testing.assert_array_equal(actions.decode(env.instance, "allocation", a),
                                  0.5 * (a.reshape(caps.shape) + 1.0) * caps)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_fused_step_refuses_non_finite_without_changing_state(bad):
    env = gym.make(ENV_ID, **SMALL).unwrapped
    env.reset(seed=0)
    env.step(env.action_space.sample())
    t, util = env.t, env._util.copy()
    action = np.zeros(env.action_space.shape, dtype=np.float32)
    action[5] = bad
    with pytest.raises(ValueError, match=r"non-finite entry \(index 5: .*\): every entry"):
        env.step(action)
    assert env.t == t and np.array_equal(env._util, util)


def test_encode_unit_equals_the_numpy_formula():
    rng = np.random.default_rng(2)
    for n in (1, 7, 1890):
        upper = rng.uniform(0, 300, n)
        upper[rng.random(n) < 0.2] = 0.0
        value = rng.uniform(-10, 400, n)
        value[0] = np.nan
        safe = np.where(upper > 0, upper, 1.0)
        ref = np.clip(np.where(upper > 0, 2.0 * value / safe - 1.0, -1.0), -1.0, 1.0)
        got = encode_unit(value, upper)
        assert got.dtype == np.float32 and np.isnan(got[0])
        np.testing.assert_array_equal(got, ref.astype(np.float32))
    upper2, value2 = rng.uniform(0, 3, (4, 5)), rng.uniform(0, 3, 5)  # broadcasting
    np.testing.assert_array_equal(encode_unit(value2, upper2),
                                  np.clip(2.0 * value2 / upper2 - 1.0, -1, 1).astype(np.float32))
