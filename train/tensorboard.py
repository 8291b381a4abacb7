"""TensorBoard tags shared by learned and classical agents.

The vocabulary (documented in ``docs/tensorboard.md``) is derived from the env's
``episode_metrics`` class attribute ``{info_key: "sum" | "mean" | "last"}``, so every env,
including one added later, gets its tags with no change here:

- ``schedgym/step/<key>``: mean per-step value over the logging window (``reward`` and every
  scalar info key of ``episode_metrics``);
- ``schedgym/episode/<key>``: the episode aggregate (sum / mean / last as declared; ``reward``
  is the return), averaged over the episodes that ended in the window; plus
  ``schedgym/episode/avg_reward`` (return / length) and ``schedgym/episode/length``.

The x axis is the number of env steps taken so far (training: ``model.num_timesteps`` over all
parallel envs; classical runner: steps played, episodes one after another in seed order). A
classical agent played beside a learner (``schedgym train --beside``) is drawn instead as flat
reference lines across the learner's step range, at its mean over the episodes played.

:class:`MetricTracker` does the bookkeeping for both writers, so the SB3 callback
(:mod:`schedgym.train.callbacks`) and :func:`log_classical` write exactly the same tags with the
same aggregation as :func:`schedgym.train.runner.run_episode` (``schedgym compare``'s table).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

STEP = "schedgym/step/"
EPISODE = "schedgym/episode/"
DEFAULT_SPEC = {"reward": "sum"}


def metric_spec(env: Any) -> dict[str, str]:
    """The env's ``episode_metrics`` (``reward`` always first and summed)."""
    spec = dict(getattr(getattr(env, "unwrapped", env), "episode_metrics", DEFAULT_SPEC))
    spec.pop("reward", None)
    return {"reward": "sum", **spec}


def step_tags(spec: dict[str, str]) -> list[str]:
    """``schedgym/step/<key>`` for every key of ``spec``."""
    return [STEP + k for k in spec]


def episode_tags(spec: dict[str, str]) -> list[str]:
    """``schedgym/episode/<key>`` for every key of ``spec``, plus ``avg_reward`` and ``length``."""
    return [EPISODE + k for k in spec] + [EPISODE + "avg_reward", EPISODE + "length"]


def documented_tags(spec: dict[str, str]) -> list[str]:
    """Every ``schedgym/`` tag written for an env with this ``episode_metrics``."""
    return step_tags(spec) + episode_tags(spec)


def scalar_info(spec: dict[str, str], info: dict[str, Any]) -> dict[str, float]:
    """The scalar entries of ``info`` named in ``spec`` (``reward`` excluded), as floats."""
    out = {}
    for key in spec:
        if key == "reward":
            continue
        val = info.get(key)
        if val is not None and np.ndim(val) == 0:
            out[key] = float(val)
    return out


class _Episode:
    __slots__ = ("ret", "sums", "last", "steps")

    def __init__(self) -> None:
        self.ret = 0.0
        self.sums: dict[str, float] = {}
        self.last: dict[str, float] = {}
        self.steps = 0


class MetricTracker:
    """Aggregates per-step rewards and info scalars of ``n_envs`` parallel envs.

    ``step(i, reward, info, done)`` after every env step of env ``i``; ``pop_scalars()`` returns
    ``{tag: value}`` for the window since the last pop (step means, and episode aggregates of the
    episodes that ended in it) and starts a new window.
    """

    def __init__(self, spec: dict[str, str], n_envs: int = 1) -> None:
        self.spec = {"reward": "sum", **{k: v for k, v in spec.items() if k != "reward"}}
        self._eps = [_Episode() for _ in range(n_envs)]
        self._win_sum: dict[str, float] = {}
        self._win_n: dict[str, int] = {}
        self.window_steps = 0
        self._finished: list[dict[str, float]] = []
        self.total_steps = 0

    def step(self, i: int, reward: float, info: dict[str, Any] | None,
             done: bool = False) -> dict[str, float] | None:
        """Record one step of env ``i``; returns the episode's metrics if ``done``."""
        vals = {"reward": float(reward), **scalar_info(self.spec, info or {})}
        return self.step_values(i, vals, done)

    def step_values(self, i: int, vals: dict[str, float], done: bool = False
                    ) -> dict[str, float] | None:
        """Like :meth:`step` with the scalars already extracted (``vals["reward"]`` required)."""
        ep = self._eps[i]
        ep.ret += vals["reward"]
        ep.steps += 1
        for k, v in vals.items():
            self._win_sum[k] = self._win_sum.get(k, 0.0) + v
            self._win_n[k] = self._win_n.get(k, 0) + 1
            if k != "reward":
                ep.sums[k] = ep.sums.get(k, 0.0) + v
                ep.last[k] = v
        self.window_steps += 1
        self.total_steps += 1
        return self.end_episode(i) if done else None

    def end_episode(self, i: int = 0) -> dict[str, float]:
        """Close env ``i``'s episode; returns its metrics (same rules as ``run_episode``)."""
        ep = self._eps[i]
        m: dict[str, float] = {}
        for key, how in self.spec.items():
            if key == "reward":
                m["reward"] = ep.ret
            elif how == "sum":
                m[key] = ep.sums.get(key, 0.0)
            elif how == "mean":
                m[key] = ep.sums.get(key, 0.0) / max(ep.steps, 1)
            else:
                m[key] = ep.last.get(key, float("nan"))
        m["avg_reward"] = ep.ret / max(ep.steps, 1)
        m["length"] = float(ep.steps)
        self._finished.append(m)
        self._eps[i] = _Episode()
        return m

    def pop_scalars(self) -> dict[str, float]:
        """``{tag: value}`` of the current window; starts a new window."""
        out = {STEP + k: self._win_sum[k] / self._win_n[k] for k in self.spec if k in self._win_n}
        if self._finished:
            for key in self._finished[0]:
                vals = [m[key] for m in self._finished if np.isfinite(m[key])]
                if vals:
                    out[EPISODE + key] = float(np.mean(vals))
        self._win_sum.clear()
        self._win_n.clear()
        self._finished.clear()
        self.window_steps = 0
        return out


def write_scalars(writer: Any, scalars: dict[str, float], step: int) -> None:
    """``writer.add_scalar(tag, value, step)`` for every entry (a torch ``SummaryWriter``)."""
    for tag, val in scalars.items():
        writer.add_scalar(tag, val, step)


class StepRecorder:
    """``run_episode`` step callback keeping ``{"reward": r, **scalar info}`` of every step.

    Picklable, so worker processes can return it (``EpisodeResult.extra["steps"]``).
    """

    def __init__(self, spec: dict[str, str]) -> None:
        self.spec = spec
        self.steps: list[dict[str, float]] = []

    def __call__(self, step: int, reward: float, info: dict[str, Any]) -> None:
        self.steps.append({"reward": float(reward), **scalar_info(self.spec, info)})


def run_name(label: str) -> str:
    """A file-system-safe run folder name for an agent label (``ppo:runs/x/model.zip`` ->
    ``ppo-runs-x-model``)."""
    label = re.sub(r"\.zip$", "", label)
    return re.sub(r"[^A-Za-z0-9_.=\-]+", "-", label).strip("-") or "agent"


def env_folder(env_id: str) -> str:
    """``schedgym/GainOverhead-v0`` -> ``GainOverhead-v0``."""
    return env_id.split("/")[-1]


def has_events(folder: str | Path) -> bool:
    """True if ``folder`` holds a TensorBoard event file."""
    return any(Path(folder).glob("events.out.tfevents.*"))


def fresh_run_folder(logdir: str | Path) -> Path:
    """``logdir`` if it holds no event file yet, else the first free ``logdir-2``, ``-3``, ...

    Two producers (``schedgym train --beside``, ``schedgym compare --tensorboard``, a re-run)
    never write into, or delete, each other's event files: TensorBoard would draw two runs as one
    zig-zag curve, and deleting would lose a run.
    """
    logdir = Path(logdir)
    cand, k = logdir, 1
    while has_events(cand):
        k += 1
        cand = logdir.with_name(f"{logdir.name}-{k}")
    return cand


#: Points of a reference line (:func:`log_classical` with ``span``): enough for TensorBoard's
#: smoothing and hover to show a flat line anywhere along the learner's x range.
REFERENCE_POINTS = 21


def reference_steps(span: int, points: int = REFERENCE_POINTS) -> list[int]:
    """Evenly spaced integer steps ``0 .. span`` (both ends, no duplicates)."""
    return sorted({int(round(x)) for x in np.linspace(0, max(int(span), 1), points)})


def log_classical(logdir: str | Path, spec: dict[str, str],
                  episodes: Sequence[Iterable[dict[str, float]]], log_every: int = 1000,
                  span: int | None = None) -> Path:
    """Write the tags of already-played episodes (``StepRecorder.steps`` lists, in order) into a
    new run folder. The folder is ``logdir``, or ``fresh_run_folder(logdir)`` if ``logdir``
    already holds a run (never deleted). Returns the folder written.

    ``span=None``: windows of ``log_every`` steps as in training, at the steps played.
    ``span=N`` (a learner's step count, ``schedgym train --beside``): every tag as a flat
    reference line across ``0..N`` (:data:`REFERENCE_POINTS` points), its value the mean over
    all the agent's steps (``step/*``) or episodes (``episode/*``): a classical agent does not
    learn, so its few hundred steps would otherwise be a dot at the left edge of the learner's
    curve."""
    from torch.utils.tensorboard import SummaryWriter

    logdir = fresh_run_folder(logdir)
    logdir.mkdir(parents=True, exist_ok=True)
    tracker = MetricTracker(spec, 1)
    writer = SummaryWriter(log_dir=str(logdir))
    try:
        for steps in episodes:
            steps = list(steps)
            for j, vals in enumerate(steps):
                tracker.step_values(0, vals, done=j == len(steps) - 1)
                if span is None and tracker.window_steps >= log_every:
                    write_scalars(writer, tracker.pop_scalars(), tracker.total_steps)
        if span is not None:
            means = tracker.pop_scalars()  # one window: every step and every episode
            for step in reference_steps(span):
                write_scalars(writer, means, step)
        elif tracker.window_steps:
            write_scalars(writer, tracker.pop_scalars(), tracker.total_steps)
    finally:
        writer.close()
    return logdir


def make_agent_env(env_id: str, agent_spec: str, scenario: str | None = None,
                   instance_seed: int = 0, overrides: dict[str, Any] | None = None) -> Any:
    """The env ``agent_spec`` plays in, as in compare: the world of ``overrides`` with their
    mode keys (:data:`~schedgym.agents.record.PLAY_KEYS`, e.g. a learner's ``obs_mode``) left
    out, in the agent's own mode (:func:`~schedgym.agents.registry.mode_kwargs`)."""
    from schedgym.agents.record import PLAY_KEYS
    from schedgym.agents.registry import mode_kwargs
    from schedgym.train.runner import make_env

    world = {k: v for k, v in (overrides or {}).items() if k not in PLAY_KEYS}
    return make_env(env_id, scenario, instance_seed, world, **mode_kwargs(agent_spec, env_id))


def run_classical(env_id: str, agent_spec: str, seeds: Sequence[int], logdir: str | Path,
                  scenario: str | None = None, instance_seed: int = 0,
                  overrides: dict[str, Any] | None = None, log_every: int = 1000,
                  span: int | None = None) -> Path:
    """Play ``agent_spec`` (any agent, classical or ``ppo:model.zip``, each in the action and
    observation mode it plays in, whatever ``overrides`` says of them) on ``seeds`` one after
    another and write the shared tags to ``logdir`` (e.g. ``runs/GainOverhead-v0/ogasched``, or
    ``ogasched-2`` if that one already holds a run); returns the folder written. ``span``: as
    reference lines across a learner's ``0..span`` steps (:func:`log_classical`)."""
    from schedgym.train.runner import build_agent, run_episode

    env = make_agent_env(env_id, agent_spec, scenario, instance_seed, overrides)
    agent = build_agent(agent_spec, env)
    spec = metric_spec(env)
    episodes = []
    for s in seeds:
        rec = StepRecorder(spec)
        run_episode(env, agent, s, label=agent_spec, step_callback=rec)
        episodes.append(rec.steps)
    env.close()
    return log_classical(logdir, spec, episodes, log_every, span)


def read_scalars(logdir: str | Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar in a run folder's event files: ``{tag: [(step, value), ...]}``."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(logdir), size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)]
            for tag in acc.Tags()["scalars"]}
