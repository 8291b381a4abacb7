"""The SchedEnv base: spec.max_episode_steps, step-before-reset refusal, render dispatch."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from schedgym.core.envbase import SchedEnv


@dataclass(frozen=True)
class _State:
    t: int


_VIEWER = SimpleNamespace(
    render_ansi=lambda state: f"t={state.t}\n",
    render_rgb=lambda state: np.full((2, 2, 3), state.t, dtype=np.uint8),
)


class _Tiny(SchedEnv[np.ndarray]):
    viewer = _VIEWER  # type: ignore[assignment]

    def __init__(self, horizon: int = 3, render_mode: str | None = None) -> None:
        self.render_mode = render_mode
        self.horizon = horizon
        self._needs_reset = True
        self.observation_space = spaces.Dict({"t": spaces.Box(0, 10, (1,), np.float32)})
        self.action_space = spaces.Box(-1, 1, (1,), np.float32)
        self._t = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self._needs_reset, self._t = False, 0
        return {"t": np.zeros(1, np.float32)}, {}

    def step(self, action: np.ndarray):
        self._check_reset()
        self._t += 1
        return ({"t": np.full(1, self._t, np.float32)}, 0.0, False, self._t >= self.horizon, {})

    def render_state(self) -> _State:
        return _State(self._t)


def test_spec_reports_the_env_horizon_without_a_time_limit_wrapper():
    gym.register("schedgym-test/Tiny-v0", entry_point=_Tiny)
    try:
        env = gym.make("schedgym-test/Tiny-v0", horizon=7)
        assert env.spec is not None and env.spec.max_episode_steps == 7
        assert env.unwrapped.spec.max_episode_steps == 7
        wrappers = []
        e = env
        while isinstance(e, gym.Wrapper):
            wrappers.append(type(e).__name__)
            e = e.env
        assert "TimeLimit" not in wrappers
        env.reset(seed=0)
        steps, done = 0, False
        while not done:
            _, _, term, trunc, _ = env.step(env.action_space.sample())
            steps, done = steps + 1, term or trunc
        assert steps == 7
    finally:
        gym.registry.pop("schedgym-test/Tiny-v0")


def test_step_before_reset_raises_on_the_unwrapped_env():
    env = _Tiny()
    with pytest.raises(gym.error.ResetNeeded, match="before reset"):
        env.step(np.zeros(1, np.float32))
    env.reset()
    env.step(np.zeros(1, np.float32))


@pytest.mark.parametrize(("mode", "expected"), [("ansi", "t=1\n"), ("rgb_array", 1), (None, None)])
def test_render_draws_the_viewer_snapshot(mode, expected):
    env = _Tiny(render_mode=mode)
    env.reset()
    env.step(np.zeros(1, np.float32))
    out = env.render()
    if mode == "rgb_array":
        assert out.shape == (2, 2, 3) and int(out.max()) == expected
    else:
        assert out == expected
