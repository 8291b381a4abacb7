"""``Agent.predict``'s handling of ``episode_start`` and of the observation's keys, which the
per-decision path takes without numpy's broadcasting where it can: every accepted form gives the
actions of the broadcasting rule, every refused one the same error as before."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from schedgym import agents
from schedgym.envs.gain_overhead import ENV_ID

SMALL = {"n_types": 3, "n_instances": 4, "horizon": 6}


def _run(starts: list) -> list[np.ndarray]:
    """Actions of a fresh OgaSched over one episode, ``starts[t]`` passed as episode_start."""
    env = gym.make(ENV_ID, **SMALL)
    agent = agents.make("ogasched", env)
    obs, _ = env.reset(seed=2)
    out = []
    for start in starts:
        a, _ = agent.predict(obs, episode_start=start)
        out.append(a)
        obs, *_ = env.step(a)
    return out


@pytest.mark.parametrize("form", [
    lambda s: np.array([s]), lambda s: s, lambda s: [s], lambda s: np.array(s),
    lambda s: np.array([[s]]), lambda s: np.array([float(s)]),
], ids=["array", "bool", "list", "0-d", "2-d", "float"])
def test_every_form_of_episode_start_gives_the_same_actions(form):
    flags = [True, False, False, True, False, False]  # a restart in the middle
    want = _run([np.array([f]) for f in flags])
    got = _run([form(f) for f in flags])
    for a, b in zip(want, got, strict=True):
        np.testing.assert_array_equal(a, b, strict=True)
    # None: no restart after the first call
    none = _run([np.array([True])] + [None] * 5)
    plain = _run([np.array([True])] + [np.array([False])] * 5)
    for a, b in zip(none, plain, strict=True):
        np.testing.assert_array_equal(a, b, strict=True)


def test_episode_start_of_the_wrong_length_and_wrong_keys_are_refused():
    env = gym.make(ENV_ID, **SMALL)
    agent = agents.make("ogasched", env)
    obs, _ = env.reset(seed=0)
    with pytest.raises(ValueError, match="could not be broadcast"):
        agent.predict(obs, episode_start=np.array([True, False]))
    with pytest.raises(ValueError, match="could not be broadcast"):
        agent.predict(obs, episode_start=np.array([], dtype=bool))
    batch = {k: np.stack([v, v]) for k, v in obs.items()}
    acts, _ = agent.predict(batch, episode_start=True)  # one flag for the whole batch
    assert acts.shape == (2, *env.action_space.shape)
    with pytest.raises(ValueError, match=r"observation keys \['arrivals', 'progress'\] are "
                                         "invalid"):
        agent.predict({k: v for k, v in obs.items() if k != "utilization"})
    with pytest.raises(ValueError, match="observation keys"):
        agent.predict({**obs, "extra": np.zeros(1)})
