"""``feedback_stats=True``: each channel's running mean of the observed net utility and its
observation count / T, per edge or on the (port, server) grid, single env == native batch."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

from schedgym.envs.fluctuating_speed import ENV_ID

SELECTIONS = [[1, 0, 1, 0], [1, 1, 0, 0], [0, 0, 1, 1], [1, 1, 1, 1], [0, 1, 0, 1]]


def _hand_stats(z, cost, played, horizon):
    """Running mean and count / T per edge, with plain Python loops over the played slots."""
    n_edges = len(cost)
    mean, count = [0.0] * n_edges, [0.0] * n_edges
    for e in range(n_edges):
        total, n = 0.0, 0
        for t, sel in enumerate(played):
            if sel[e]:
                total += min(max(z[t][e] - cost[e], 0.0), 1.0)
                n += 1
        mean[e] = total / n if n else 0.0
        count[e] = n / horizon
    return mean, count


def test_running_means_hand_computed(tiny):
    env = gym.make(ENV_ID, instance=tiny, horizon=5, arrival_prob=0.7, feedback_stats=True)
    obs, _ = env.reset(seed=3)
    assert obs["feedback_mean"].tolist() == [0.0] * 4
    assert obs["feedback_count"].tolist() == [0.0] * 4
    z = env.unwrapped.utilities.tolist()
    played = []
    for sel in SELECTIONS:
        obs, _, _, _, info = env.step(np.array(sel, dtype=np.int8))
        played.append(info["selection"].tolist())
        mean, count = _hand_stats(z, tiny.cost.tolist(), played, 5)
        np.testing.assert_allclose(obs["feedback_mean"], mean, rtol=1e-6, atol=0)
        np.testing.assert_allclose(obs["feedback_count"], count, rtol=1e-6, atol=0)
    assert sum(map(sum, played)) > 3  # several channels were observed more than once
    assert max(obs["feedback_count"]) >= 0.4


def test_scores_mode_puts_the_stats_on_the_grid(tiny):
    env = gym.make(ENV_ID, instance=tiny, horizon=4, action_mode="scores",
                   feedback_stats=True)
    ref = gym.make(ENV_ID, instance=tiny, horizon=4, feedback_stats=True)
    env.reset(seed=1)
    ref.reset(seed=1)
    rng = np.random.default_rng(0)
    for _ in range(4):
        obs, _, _, _, info = env.step(rng.uniform(-1, 1, 6).astype(np.float32))
        want = ref.step(info["selection"])[0]
        for key in ("feedback_mean", "feedback_count"):
            grid = np.zeros(6, dtype=np.float32)
            grid[tiny.cell_of_edge] = want[key]
            np.testing.assert_array_equal(obs[key], grid)


def test_spaces_do_not_depend_on_the_instance_seed_in_scores_mode():
    spaces_ = {str(gym.make(ENV_ID, instance_seed=s, action_mode="scores", feedback_stats=True,
                            instance_features=True).observation_space) for s in range(3)}
    assert len(spaces_) == 1 and "feedback_mean" in spaces_.pop()


@pytest.mark.parametrize("mode", ["selection", "scores"])
def test_checkers_pass(mode):
    env = gym.make(ENV_ID, horizon=20, action_mode=mode, feedback_stats=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)
        sb3_check_env(env, warn=True)


def test_bad_flag_is_refused():
    with pytest.raises(ValueError, match="feedback_stats"):
        gym.make(ENV_ID, feedback_stats="yes")
