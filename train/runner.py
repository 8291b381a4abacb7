"""Run one episode of any schedgym env with any agent, collecting the env's declared metrics.

This is the single evaluation loop used by ``schedgym compare`` (and by the TensorBoard runner),
so classical and learned agents are measured by exactly the same code. Metrics come from the
env's ``episode_metrics`` class attribute: ``{info_key: "sum" | "mean" | "last"}``; the reward
is always summed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

import schedgym  # noqa: F401  (registers the env ids)
from schedgym.agents.registry import make
from schedgym.agents.spec import AgentSpec

StepCallback = Callable[[int, float, dict[str, Any]], None]


@dataclass
class EpisodeResult:
    """Outcome of one episode. ``metrics`` maps metric name -> aggregated value."""

    agent: str
    seed: int
    steps: int
    metrics: dict[str, float]
    curve: np.ndarray  # cumulative reward after each step, shape (steps,)
    decision_time: float  # mean seconds per agent.predict call after the episode's first
    wall_time: float
    extra: dict[str, Any] = field(default_factory=dict)
    instance_seed: int = 0


def make_env(env_id: str, scenario: str | None = None, instance_seed: int = 0,
             overrides: dict[str, Any] | None = None, **kwargs: Any) -> gym.Env:
    """``gym.make`` with schedgym's construction arguments. ``kwargs`` (e.g. a learned agent's own
    ``action_mode``/``instance_features`` from its ``run.json``) win over the run's ``overrides``
    where both name a parameter: the model can only play in the env it was trained on."""
    kw = {**(overrides or {}), **kwargs}
    if scenario is not None:
        kw["scenario"] = scenario
    return gym.make(env_id, instance_seed=instance_seed, **kw)


def run_episode(
    env: gym.Env,
    agent: Any,
    seed: int,
    label: str = "agent",
    deterministic: bool = True,
    step_callback: StepCallback | None = None,
    progress: Callable[[int], None] | None = None,
    progress_every: int = 200,
) -> EpisodeResult:
    """Play one episode with ``reset(seed=seed)``; returns the aggregated metrics.

    ``step_callback(step, reward, info)`` is called after every step (e.g. TensorBoard logging);
    ``progress(n)`` every ``progress_every`` steps with the number of new steps.
    """
    spec = getattr(env.unwrapped, "episode_metrics", {"reward": "sum"})
    sums: dict[str, float] = {k: 0.0 for k in spec}
    last: dict[str, float] = {}
    obs, _ = env.reset(seed=seed)
    if hasattr(agent, "seed_episode"):  # an agent that draws its actions: reproducible draws
        agent.seed_episode(seed)
    rewards: list[float] = []
    decide = first = 0.0
    t0 = time.perf_counter()
    start = True
    done = False
    steps = 0
    while not done:
        d0 = time.perf_counter()
        action, _ = agent.predict(obs, episode_start=np.array([start]), deterministic=deterministic)
        if start:  # the first call may compile or load kernels: kept out of decision_time
            first = time.perf_counter() - d0
        else:
            decide += time.perf_counter() - d0
        start = False
        obs, reward, terminated, truncated, info = env.step(action)
        if not np.isfinite(float(reward)):
            raise RuntimeError(f"{label}: non-finite reward {reward!r} at step {steps}")
        rewards.append(float(reward))
        for key in spec:
            if key == "reward":
                continue
            val = info.get(key)
            if val is not None and np.ndim(val) == 0:
                sums[key] += float(val)
                last[key] = float(val)
        steps += 1
        if step_callback is not None:
            step_callback(steps, float(reward), info)
        if progress is not None and steps % progress_every == 0:
            progress(progress_every)
        done = terminated or truncated
    if progress is not None and steps % progress_every:
        progress(steps % progress_every)
    curve = np.cumsum(rewards)
    metrics: dict[str, float] = {}
    for key, how in spec.items():
        if key == "reward":
            metrics["reward"] = float(curve[-1]) if steps else 0.0
        elif how == "sum":
            metrics[key] = sums[key]
        elif how == "mean":
            metrics[key] = sums[key] / max(steps, 1)
        else:
            metrics[key] = last.get(key, float("nan"))
    metrics["avg_reward"] = metrics["reward"] / max(steps, 1)
    per_decision = decide / (steps - 1) if steps > 1 else first
    return EpisodeResult(label, seed, steps, metrics, curve, per_decision,
                         time.perf_counter() - t0)


def build_agent(spec: str | AgentSpec, env: gym.Env) -> Any:
    """Build an agent from a command-line spec (``name``, ``name[k=v]`` or ``algo:path.zip``,
    or its :class:`~schedgym.agents.spec.AgentSpec`)."""
    return make(AgentSpec.parse(spec), env)
