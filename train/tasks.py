"""The tasks of a sweep: what one task is (:class:`EpisodeTask`) and every task a run plans.

One *task* is one episode of one agent (or the offline benchmark of one episode, agent
:data:`BENCHMARK`) on one ``(instance_seed, seed)`` of one setting. :func:`plan` turns a run's
:class:`~schedgym.train.runspec.RunSpec` into its tasks, in a stable order; the store checks
every record it reads against them (:func:`task_config`), the backend plays them
(:mod:`schedgym.train.backend`) and the sweep runs the ones not yet stored
(:mod:`schedgym.train.sweep`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from schedgym.train.runspec import RunSpec

#: The agent name of an offline benchmark task (hindsight optimum, oracle, OPT).
BENCHMARK = "@benchmark"


@dataclass(frozen=True)
class EpisodeTask:
    """One episode (``agent`` a spec) or one offline benchmark (``agent == "@benchmark"``).

    ``env_kwargs``: extra ``gym.make`` kwargs for this agent only (a learned agent's mode);
    ``record_steps``: also return every step's reward and scalar info (``--tensorboard``)."""

    setting: str
    agent: str
    instance_seed: int
    seed: int
    env_id: str
    scenario: str | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    record_steps: bool = False

    @property
    def key(self) -> tuple[str, str, int, int]:
        return self.setting, self.agent, self.instance_seed, self.seed


def task_config(task: EpisodeTask) -> dict[str, Any]:
    """The env configuration a task's record carries (``env_id``, ``scenario``,
    ``overrides``, ``env_kwargs``): the store checks every record read against it."""
    return {"env_id": task.env_id, "scenario": task.scenario, "overrides": task.overrides,
            "env_kwargs": task.env_kwargs}


def tuples(obj: Any) -> Any:
    """JSON lists back to the tuples the command line parsed (``beta_range=(0.4, 0.6)``)."""
    if isinstance(obj, dict):
        return {k: tuples(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return tuple(tuples(v) for v in obj)
    return obj


def plan(spec: RunSpec) -> list[EpisodeTask]:
    """Every task of a run, in a stable order: setting, instance seed, seed, agent (the offline
    benchmark of an episode last, if ``spec.benchmarks``)."""
    tasks = []
    for setting in spec.settings:
        ov = tuples(setting.overrides)
        for inst in spec.instance_seeds:
            for seed in spec.seeds:
                for agent in spec.agents:
                    tasks.append(EpisodeTask(setting.name, agent, inst, seed, spec.env_id,
                                             spec.scenario, ov,
                                             tuples(spec.agent_env_kwargs.get(agent) or {}),
                                             spec.record_steps))
                if spec.benchmarks:
                    tasks.append(EpisodeTask(setting.name, BENCHMARK, inst, seed, spec.env_id,
                                             spec.scenario, ov))
    return tasks
