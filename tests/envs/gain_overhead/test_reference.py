"""The compiled step of GainOverhead-v0 (env and native vector env) against the plain-numpy
statement of the step, :mod:`schedgym.envs.gain_overhead.reference`, on random instances
(every utility family, capacities from scarce to ample, groups of 1 to 20 channels: the
solver's per-size, general and sorting paths), every action mode and arrivals protocol, and
actions inside and outside the box.

Tolerance: the two compute the same quantities in different orders (and the projection's theta
by different searches), so they agree to rounding only: ``rtol = 1e-9`` with an absolute floor
of ``1e-9`` times the instance's largest cap (an entry that is 0 in one may be a rounding
residue in the other).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedgym.core.utilities import FAMILIES
from schedgym.envs.gain_overhead import ENV_ID, GainOverheadInstance, reference
from schedgym.envs.gain_overhead.actions import ACTION_MODES

RTOL = 1e-9

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def instances(draw: st.DrawFn) -> GainOverheadInstance:
    """A random instance: ``L`` up to 20 types (dense graphs give groups above the solver's
    small-group size), 1-4 resources, zero capacities, mixed utilities."""
    L = draw(st.integers(1, 20))
    R = draw(st.integers(1, 5))
    K = draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    density = draw(st.sampled_from([0.3, 0.7, 1.0]))
    mask = rng.random((L, R)) < density
    mask[np.arange(L), rng.integers(0, R, L)] = True  # every type has a channel
    edges = np.argwhere(mask)
    family = draw(st.sampled_from([*FAMILIES, "mixed"]))
    utility = (rng.choice(FAMILIES, (R, K)) if family == "mixed" else np.full((R, K), family))
    scale = draw(st.sampled_from([0.05, 1.0, 20.0]))  # capacities scarce to ample
    caps = rng.uniform(0.0, 4.0, (R, K)) * scale * (rng.random((R, K)) > 0.1)
    return GainOverheadInstance(
        edges=edges, requests=rng.uniform(0.0, 3.0, (L, K)) * (rng.random((L, K)) > 0.1),
        capacities=caps, alpha=rng.uniform(0.5, 1.5, (R, K)),
        beta=rng.uniform(0.0, 1.0, K), utility=utility,
        reciprocal_scale=draw(st.sampled_from([1.0, 3.0])))


def _action(draw: st.DrawFn, n: int, seed: int) -> np.ndarray:
    """Inside the box, outside it, or on its faces (-1, 0, 1 exactly)."""
    rng = np.random.default_rng(seed)
    kind = draw(st.sampled_from(["inside", "outside", "faces"]))
    if kind == "inside":
        return rng.uniform(-1.0, 1.0, n)
    if kind == "outside":
        return rng.uniform(-3.0, 3.0, n)
    return rng.choice([-1.0, 0.0, 1.0, -2.0, 2.0], n)


def _close(got: np.ndarray | float, want: np.ndarray | float, scale: float, what: str) -> None:
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=RTOL * max(scale, 1.0), err_msg=what)


def _check(inst: GainOverheadInstance, mode: str, protocol: str, a: np.ndarray,
           arrivals: np.ndarray, t: int, reward: float, info: dict, obs: dict,
           truncated: bool) -> None:
    want = reference.step(inst, mode, a, arrivals, t, protocol)
    top = float(max(np.max(inst.requests), 1.0))
    value = float(np.sum(np.abs(inst.alpha))) * top * inst.n_types + 1.0  # reward's scale
    _close(info["allocation"], want.allocation, top, "allocation")
    _close(reward, want.reward, value, "reward")
    _close(info["gain"], want.gain, value, "gain")
    _close(info["penalty"], want.penalty, value, "penalty")
    _close(info["projection_distance"], want.projection_distance, top, "projection distance")
    _close(info["action_clip"], want.action_clip, 1.0, "action clip")
    _close(info["mean_utilization"], want.utilization_mean, 1.0, "mean utilization")
    np.testing.assert_allclose(obs["utilization"], want.utilization.ravel().astype(np.float32),
                               rtol=1e-6, atol=1e-6, err_msg="observed utilization")
    np.testing.assert_array_equal(obs["arrivals"], want.next_arrivals.astype(np.float32))
    assert truncated == want.truncated


@pytest.mark.parametrize("mode", ACTION_MODES)
@SETTINGS
@given(inst=instances(), data=st.data())
def test_env_step_equals_the_reference(mode, inst, data):
    protocol = data.draw(st.sampled_from(["revealed", "hidden"]))
    env = gym.make(ENV_ID, instance=inst, action_mode=mode, arrivals=protocol, horizon=3)
    env.reset(seed=data.draw(st.integers(0, 1000)))
    arrivals = env.unwrapped.arrivals
    n = env.action_space.shape[0]
    for t in range(3):
        a = _action(data.draw, n, data.draw(st.integers(0, 2**32 - 1)))
        obs, reward, _, truncated, info = env.step(a)
        _check(inst, mode, protocol, a, arrivals, t, reward, info, obs, truncated)


@pytest.mark.parametrize("mode", ACTION_MODES)
@SETTINGS
@given(inst=instances(), data=st.data())
def test_vector_env_step_equals_the_reference(mode, inst, data):
    """The native vector env's batch step, copy by copy (float32 actions, as SB3 emits)."""
    N = 3
    venv = gym.make_vec(ENV_ID, num_envs=N, vectorization_mode="vector_entry_point",
                        instance=inst, action_mode=mode, horizon=4)
    venv.reset(seed=data.draw(st.integers(0, 1000)))
    arrivals = [e.arrivals for e in venv.unwrapped._envs]
    n = venv.single_action_space.shape[0]
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a = rng.uniform(-1.5, 1.5, (N, n)).astype(np.float32)
    obs, reward, _, truncated, info = venv.step(a)
    for i in range(N):
        info_i = {key: info[key][i] for key in ("allocation", "gain", "penalty",
                                                 "projection_distance", "action_clip",
                                                 "mean_utilization")}
        obs_i = {key: obs[key][i] for key in ("arrivals", "utilization")}
        _check(inst, mode, "revealed", a[i].astype(np.float64), arrivals[i], 0, reward[i],
               info_i, obs_i, truncated[i])


def test_reference_projection_is_the_euclidean_one():
    """The reference's own projection against a brute-force check of its optimality
    conditions: feasible, and no feasible direction lowers ``||y - z||``: with ``theta`` the
    capacity multiplier, entries strictly inside the box have ``y = z - theta``."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 8))
        z, a = rng.uniform(-1.0, 3.0, n), rng.uniform(0.0, 2.0, n)
        c = float(rng.uniform(0.0, 4.0))
        v = reference.project_group(z, a, c)
        assert np.all(v >= 0) and np.all(v <= a) and v.sum() <= c + 1e-12
        inside = (v > 1e-12) & (v < a - 1e-12)
        theta = z[inside] - v[inside]
        if inside.any():
            np.testing.assert_allclose(theta, theta[0], atol=1e-9)
            assert theta[0] >= -1e-9
            if theta[0] > 1e-9:  # the capacity binds
                assert v.sum() == pytest.approx(c, abs=1e-9)


@SETTINGS
@given(inst=instances(), seed=st.integers(0, 2**32 - 1))
def test_reward_parts_and_projection_equal_the_reference(inst, seed):
    """:func:`.dynamics.reward_parts` (per-type gain, penalty, ``k*``) and
    :func:`.dynamics.project` on points inside, outside and above the box."""
    from schedgym.envs.gain_overhead import dynamics

    rng = np.random.default_rng(seed)
    caps = inst.edge_caps
    top = float(max(np.max(inst.requests), 1.0))
    for z in (rng.uniform(0, 1, caps.shape) * caps, rng.normal(0.5, 2.0, caps.shape) * top,
              caps * rng.uniform(1.0, 3.0, caps.shape)):
        y = dynamics.project(inst, z)
        _close(y, reference.project(inst, z), top, "projection")
        x = rng.integers(0, 3, inst.n_types).astype(np.float64)
        got, want = dynamics.reward_parts(inst, x, y), reference.reward_parts(inst, x, y)
        scale = float(np.sum(inst.alpha)) * top * inst.n_types + 1.0
        _close(got.type_gain, want.type_gain, scale, "type gain")
        _close(got.type_penalty, want.type_penalty, scale, "type penalty")
        np.testing.assert_array_equal(got.k_star, want.k_star)
        _close(got.reward, want.reward, scale, "reward")
