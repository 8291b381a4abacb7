"""The compiled step on instances whose types have many channels, spread over every block of
the projection plan: the step scores the projected allocation in the channels' own row-major
order (not in the plan's block layout) and works in per-instance scratch arrays
(``step_scratch``) shared by every env of the instance.

Checked bit for bit against sums written out in plain Python in the order the step documents
(a channel's gain over ``k``, a type's over its channels, ``Y_l^k`` over the type's channels, the
squared distance over the entries in ``(e, k)`` order, gain and penalty over the types), on the
allocation of :func:`.dynamics.project` (the same projection kernel, whose result per group does
not depend on the layout) and the utilities of :func:`schedgym.core.utilities.value`; against
the plain-numpy :mod:`.reference` step to rounding; and envs sharing an instance (and so its
scratch arrays) stepped interleaved against each alone.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from schedgym.core import utilities
from schedgym.envs.gain_overhead import GainOverheadInstance, dynamics, reference
from schedgym.envs.gain_overhead.generator import DEFAULTS, generate
from tests.envs.gain_overhead.conftest import ENV_ID

#: 3 types on 400 instances of 1 to 3 channels: every type has about 260 channels, met in every
#: block (and every row of it) of the projection plan.
WIDE = {**DEFAULTS, "n_types": 3, "n_instances": 400, "n_resources": 4, "horizon": 8,
        "degree_choices": [1, 2, 3], "contention": 40.0}


def _wide(utility: str, seed: int = 0) -> GainOverheadInstance:
    return generate({**WIDE, "utility": utility}, seed)


def _sums_in_order(inst: GainOverheadInstance, x: np.ndarray, y: np.ndarray, z: np.ndarray
                   ) -> tuple[float, float, float]:
    """``(gain, penalty, squared distance)`` of ``y`` against the target ``z`` (both ``(E,
    K)``) and arrivals ``x``, summed one float at a time in the documented order."""
    K = inst.n_resources
    f = utilities.value(inst.edge_codes, inst.edge_alpha, y, inst.reciprocal_scale)
    ends = [*inst.type_starts.tolist()[1:], inst.n_edges]
    gain = penalty = dist = 0.0
    for l, (lo, hi) in enumerate(zip(inst.type_starts.tolist(), ends, strict=True)):
        type_gain, tot = 0.0, [0.0] * K
        for e in range(lo, hi):
            channel_gain = 0.0
            for k in range(K):
                v = float(y[e, k])
                tot[k] += v
                diff = v - float(z[e, k])
                dist += diff * diff
                channel_gain += float(f[e, k])
            type_gain += channel_gain
        weighted = [t * float(b) for t, b in zip(tot, inst.beta, strict=True)]
        gain += float(x[l]) * type_gain
        penalty += float(x[l]) * max(weighted)
    return gain, penalty, dist


@pytest.mark.parametrize("utility", ["linear", "mixed"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_step_has_the_bits_of_the_sums_in_channel_order(utility, dtype):
    inst = _wide(utility)
    rng = np.random.default_rng(1)
    caps = inst.edge_caps
    assert min(np.diff([*inst.type_starts, inst.n_edges])) > 200
    for scale in (0.8, 1.0, 2.5):  # inside the box, on it, mostly outside (clipped)
        a = rng.uniform(-scale, scale, caps.size).astype(dtype)
        x = (rng.random(inst.n_types) < 0.8).astype(np.float64)
        bad, y, util, util32, stats = dynamics.step_one(inst, a, x, True)
        clipped = np.clip(a.astype(np.float64), -1.0, 1.0)
        z = (0.5 * (clipped + 1.0) * caps.reshape(-1)).reshape(caps.shape)
        want_y = dynamics.project(inst, z)
        gain, penalty, dist = _sums_in_order(inst, x, want_y, z)
        assert bad == -1
        assert y.tobytes() == want_y.tobytes()
        assert stats[dynamics.STAT_GAIN] == gain and stats[dynamics.STAT_PENALTY] == penalty
        assert stats[dynamics.STAT_DISTANCE] == np.sqrt(dist)
        assert stats[dynamics.STAT_CLIP] == np.max(np.abs(clipped - a.astype(np.float64)))
        want_util = dynamics.utilization(inst, want_y).reshape(-1)
        assert util.tobytes() == want_util.tobytes()
        assert util32.tobytes() == want_util.astype(np.float32).tobytes()
        parts = dynamics.reward_parts(inst, x, want_y)  # the same formula outside the step
        assert (parts.gain, parts.penalty) == (gain, penalty)


def test_step_agrees_with_the_numpy_reference_on_wide_types():
    inst = _wide("mixed", seed=2)
    rng = np.random.default_rng(3)
    arrivals = (rng.random((2, inst.n_types)) < 0.9).astype(np.float64)
    a = rng.uniform(-1.5, 1.5, inst.edge_caps.size)
    want = reference.step(inst, "allocation", a, arrivals, 0)
    _, y, util, _, stats = dynamics.step_one(inst, a, arrivals[0], True)
    top = float(inst.requests.max())
    np.testing.assert_allclose(y, want.allocation, rtol=1e-9, atol=1e-9 * top)
    np.testing.assert_allclose(util, want.utilization.reshape(-1), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(stats[[dynamics.STAT_GAIN, dynamics.STAT_PENALTY,
                                      dynamics.STAT_DISTANCE]],
                               [want.gain, want.penalty, want.projection_distance], rtol=1e-9)


def _play(env: gym.Env, actions: list[np.ndarray]) -> list[bytes]:
    """Rewards, allocations and utilizations of ``actions`` played from ``reset(seed=5)``."""
    out = []
    for a in actions:
        _, r, _, _, info = env.step(a)
        out += [np.float64(r).tobytes(), info["allocation"].tobytes(),
                env.unwrapped._util.tobytes()]
    return out


def _vec_step(vec: gym.vector.VectorEnv, a: np.ndarray) -> bytes:
    """Rewards, allocations and utilization observations of one step of ``vec``."""
    obs, r, _, _, info = vec.step(a)
    return r.tobytes() + info["allocation"].tobytes() + obs["utilization"].tobytes()


def test_envs_sharing_an_instance_step_as_each_alone():
    """Two envs and a vector env on one instance, and the instance's projection and OgaSched
    update in between, all use the instance's scratch arrays: interleaved, each gives the bits
    it gives alone."""
    inst = _wide("mixed", seed=4)
    rng = np.random.default_rng(6)
    acts = [[rng.uniform(-1.2, 1.2, inst.edge_caps.size).astype(np.float32) for _ in range(4)]
            for _ in range(2)]
    vec_acts = [rng.uniform(-1.2, 1.2, (2, inst.edge_caps.size)) for _ in range(4)]

    def envs() -> tuple[gym.Env, gym.Env, gym.vector.VectorEnv]:
        one, two = (gym.make(ENV_ID, instance=inst, horizon=8) for _ in range(2))
        vec = gym.make_vec(ENV_ID, num_envs=2, vectorization_mode="vector_entry_point",
                           instance=inst, horizon=8)
        for env in (one, two, vec):
            env.reset(seed=5)
        return one, two, vec

    one, two, vec = envs()
    alone = _play(one, acts[0]), _play(two, acts[1])
    alone_vec = [_vec_step(vec, a) for a in vec_acts]
    one, two, vec = envs()
    mixed: tuple[list[bytes], list[bytes]] = ([], [])
    mixed_vec = []
    x, z = np.ones(inst.n_types), inst.edge_caps * 3.0
    for t in range(4):
        mixed[0].extend(_play(one, [acts[0][t]]))
        dynamics.ascent_step(inst, x, dynamics.project(inst, z), 0.5)
        mixed_vec.append(_vec_step(vec, vec_acts[t]))
        mixed[1].extend(_play(two, [acts[1][t]]))
    assert mixed == alone and mixed_vec == alone_vec
