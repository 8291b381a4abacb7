"""The native batched GainOverhead-v0 gives the same results as N single envs."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from tests.envs.gain_overhead.conftest import ENV_ID, SMALL


def _vec(n, **kw):
    return gym.make_vec(ENV_ID, num_envs=n, vectorization_mode="vector_entry_point",
                        **{**SMALL, **kw})


@pytest.mark.parametrize("utility", ["linear", "mixed"])
def test_vector_equals_single_envs_across_autoreset(utility):
    n, horizon = 3, 6
    venv = _vec(n, horizon=horizon, utility=utility)
    singles = [gym.make(ENV_ID, **{**SMALL, "horizon": horizon, "utility": utility})
               for _ in range(n)]
    obs_v, _ = venv.reset(seed=10)
    obs_s = [e.reset(seed=10 + i)[0] for i, e in enumerate(singles)]
    rng = np.random.default_rng(0)
    pending = np.zeros(n, dtype=bool)  # single env i must be reset at this step (NEXT_STEP)
    for _ in range(3 * horizon + 2):  # crosses two autoresets
        for k in obs_v:
            np.testing.assert_allclose(obs_v[k], np.stack([o[k] for o in obs_s]), rtol=1e-6,
                                       atol=1e-6)
        acts = rng.uniform(-1.2, 1.2, venv.action_space.shape).astype(np.float32)
        obs_v, r_v, term_v, trunc_v, info_v = venv.step(acts)
        for i, e in enumerate(singles):
            if pending[i]:
                obs_s[i], _ = e.reset()
                assert r_v[i] == 0.0 and not trunc_v[i] and not term_v[i]
                pending[i] = False
                continue
            obs_s[i], r, term, trunc, info = e.step(acts[i])
            assert r_v[i] == pytest.approx(r, rel=1e-9, abs=1e-6)
            assert trunc_v[i] == trunc and term_v[i] == term
            np.testing.assert_allclose(info_v["allocation"][i], info["allocation"], atol=1e-9)
            assert info_v["gain"][i] == pytest.approx(info["gain"], rel=1e-9)
            assert info_v["projection_distance"][i] == pytest.approx(
                info["projection_distance"], rel=1e-7, abs=1e-9)
            pending[i] = trunc or term


def test_vector_rejects_bad_actions_and_config():
    venv = _vec(2)
    venv.reset(seed=0)
    n = venv.single_action_space.shape[0]
    with pytest.raises(ValueError, match="actions has shape"):
        venv.step(np.zeros((3, n)))
    bad = np.zeros((2, n))
    bad[1, 4] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        venv.step(bad)
    with pytest.raises(ValueError, match="num_envs"):
        _vec(0)
    with pytest.raises(ValueError, match="arrival_prob"):
        _vec(2, arrival_prob=2.0)
