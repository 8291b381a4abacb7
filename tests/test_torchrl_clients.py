"""TorchRL's ``GymEnv`` builds and steps every env, in both observation modes, and batched.

TorchRL writes the observation, the reward and every info key of a step into one TensorDict, so
an info key that repeats an observation key or ``reward`` breaks it, and so does an info key
present at reset but absent from a step. ``num_envs=2`` runs gymnasium's ``AsyncVectorEnv``
with TorchRL's spawn start method, so the workers reach schedgym through the module-prefixed id.
"""

from __future__ import annotations

import pytest

torchrl_gym = pytest.importorskip("torchrl.envs.libs.gym",
                                  reason="TorchRL is not installed (the test extra pins it)")

#: Three steps per episode.
SHORT: dict[str, dict[str, int]] = {"GainOverhead-v0": {"horizon": 3},
                                    "FluctuatingSpeed-v0": {"horizon": 3},
                                    "DeadlineWelfare-v0": {"n_jobs": 3}}
ENTITY_ACTION_MODE = {"GainOverhead-v0": "prices", "FluctuatingSpeed-v0": "scores",
                      "DeadlineWelfare-v0": "pricing"}


def _rollout(env_id: str, steps: int, **kwargs: object) -> None:
    """Reset and ``steps`` random steps; every info key stays apart from the observation keys."""
    env = torchrl_gym.GymEnv(env_id, **kwargs)
    try:
        env.set_seed(0)
        rollout = env.rollout(steps, break_when_any_done=False)
        assert rollout["next", "reward"].isfinite().all()
        obs_keys = set(env.observation_spec.keys())
        assert obs_keys <= set(rollout["next"].keys())
    finally:
        env.close()


@pytest.mark.parametrize("env_name", sorted(ENTITY_ACTION_MODE))
def test_torchrl_gym_env_with_two_workers(env_name: str) -> None:
    """``num_envs=2``: gymnasium's AsyncVectorEnv with TorchRL's spawn start method, the workers
    reaching schedgym through the module-prefixed id; the flat observation, past an episode's
    end (an autoreset step carries the reset info, which must hold only keys a step has)."""
    _rollout(f"schedgym:schedgym/{env_name}", 8, num_envs=2, **SHORT[env_name])


@pytest.mark.parametrize("obs_mode", ["flat", "entities"])
@pytest.mark.parametrize("env_name", sorted(ENTITY_ACTION_MODE))
def test_torchrl_gym_env_in_both_observation_modes(env_name: str, obs_mode: str) -> None:
    """Both observation modes, in this process (the key checks are TorchRL's, whatever the
    number of workers)."""
    import schedgym  # noqa: F401

    kwargs: dict[str, object] = {"obs_mode": obs_mode, "horizon": 6}
    if obs_mode == "entities":
        kwargs["action_mode"] = ENTITY_ACTION_MODE[env_name]
    _rollout(f"schedgym/{env_name}", 4, **kwargs)


@pytest.mark.parametrize("env_name", sorted(ENTITY_ACTION_MODE))
def test_the_entity_action_mode_is_declared_and_accepted(env_name: str) -> None:
    import gymnasium as gym

    import schedgym  # noqa: F401

    env = gym.make(f"schedgym/{env_name}")
    mode = env.unwrapped.metadata["entity_action_mode"]
    assert mode == ENTITY_ACTION_MODE[env_name]
    assert mode in env.unwrapped.metadata["action_modes"]
    gym.make(f"schedgym/{env_name}", obs_mode="entities", action_mode=mode).reset(seed=0)
