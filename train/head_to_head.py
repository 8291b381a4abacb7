"""Agents head to head on common random numbers: the library behind ``schedgym compare``.

Every agent plays the same episodes: one per (instance seed, seed), each ``reset(seed=s)`` on an
env built with ``instance_seed=i``, each agent in its own mode
(:func:`~schedgym.agents.registry.mode_kwargs`). :func:`compare_spec` describes such a run
(its ``meta.json``), :func:`validate` fails fast on a bad env or agent (and compiles the
kernels, :mod:`schedgym.train.preflight`), :func:`run_compare` plays it in memory (the command
line plays it into a run folder, :mod:`schedgym.train.sweep`). :func:`write_tensorboard` and
:func:`record_episode` are compare's ``--tensorboard`` and ``--record``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from schedgym.agents.registry import mode_kwargs
from schedgym.train import preflight
from schedgym.train.backend import execute, run_calls
from schedgym.train.runner import EpisodeResult, build_agent, make_env, run_episode
from schedgym.train.runspec import RunSpec, Setting
from schedgym.train.store import RunStore
from schedgym.train.tasks import BENCHMARK, EpisodeTask, plan
from schedgym.train.tensorboard import env_folder, log_classical, metric_spec, run_name


def validate(env_id: str, scenario: str | None, instance_seed: int, overrides: dict[str, Any],
             specs: list[str], play: dict[str, dict[str, Any]]) -> None:
    """Fail fast, in this process, on a bad env id, scenario, override or agent (each agent
    built once, in its own mode, on the first instance). An agent that declines the size
    (:class:`~schedgym.core.limits.NotComputed`, e.g. ESDP's dynamic program beyond its memory)
    is not a mistake: its episodes are recorded as not played and the others run."""
    from schedgym.core.limits import NotComputed

    preflight.check_agents(specs)
    env = make_env(env_id, scenario, instance_seed, overrides)
    env.close()
    with preflight.compile_notice():
        for spec in specs:
            env = make_env(env_id, scenario, instance_seed, overrides, **play.get(spec, {}))
            try:
                preflight.warm_up(env, build_agent(spec, env))
            except NotComputed:
                pass  # said once per episode as "not played" (schedgym.train.summary)
            finally:
                env.close()


def compare_spec(env_id: str, specs: list[str], seeds: list[int], scenario: str | None = None,
                 instance_seeds: list[int] | None = None,
                 overrides: dict[str, Any] | None = None, benchmarks: bool = True,
                 reference: str | None = None, record_steps: bool = False) -> RunSpec:
    """The run description of a compare (``meta.json``; see :mod:`schedgym.train.sweep`):
    one setting, named ``""``, with the run's ``overrides``; every agent in its own mode
    (:func:`~schedgym.agents.registry.mode_kwargs`)."""
    return RunSpec(
        command="compare", env_id=env_id, scenario=scenario, overrides=dict(overrides or {}),
        agents=tuple(specs),
        agent_env_kwargs={s: kw for s in specs if (kw := mode_kwargs(s, env_id))},
        seeds=tuple(seeds), instance_seeds=tuple(instance_seeds or [0]),
        benchmarks=benchmarks, reference=reference, record_steps=record_steps,
        settings=(Setting("", dict(overrides or {})),))


def run_compare(
    env_id: str,
    agent_specs: list[str],
    seeds: list[int],
    scenario: str | None = None,
    instance_seed: int | list[int] = 0,
    overrides: dict[str, Any] | None = None,
    workers: int | None = None,
    benchmarks: bool = True,
    show_progress: bool = True,
    record_steps: bool = False,
    ray: str | None = None,
) -> tuple[list[EpisodeResult], dict[tuple[int, int], dict[str, float]]]:
    """Run every (agent, instance seed, seed) episode in memory (no run folder; the command
    line uses a store instead). Returns the results and the offline benchmark values keyed by
    ``(instance_seed, seed)``. A failing episode raises ``RuntimeError`` naming it."""
    inst = [instance_seed] if isinstance(instance_seed, int) else list(instance_seed)
    run = compare_spec(env_id, agent_specs, seeds, scenario, inst, overrides, benchmarks,
                       record_steps=record_steps)
    validate(env_id, scenario, inst[0], dict(overrides or {}), agent_specs,
             run.agent_env_kwargs)
    results: list[EpisodeResult] = []
    bench: dict[tuple[int, int], dict[str, float]] = {}

    def on_done(task: EpisodeTask, res: Any, exc: BaseException | None) -> None:
        rec: dict[str, Any] = (res["record"] if exc is None
                               else {"status": "error", "error": str(exc)})
        if rec["status"] != "ok":
            raise RuntimeError(f"{task.agent} instance_seed={task.instance_seed} "
                               f"seed={task.seed}: {rec['error']}")
        if task.agent == BENCHMARK:
            bench[(task.instance_seed, task.seed)] = rec["metrics"]
            return
        r = EpisodeResult(task.agent, task.seed, rec["steps"], rec["metrics"], res["curve"],
                          rec["decision_ms"] / 1e3, rec["wall_s"],
                          instance_seed=task.instance_seed)
        if res.get("steps") is not None:
            cols = res["steps"]
            n = len(next(iter(cols.values()))) if cols else 0
            r.extra["steps"] = [{k: float(v[i]) for k, v in cols.items()} for i in range(n)]
        results.append(r)

    run_calls(execute, plan(run), on_done, workers, ray)
    order = {spec: i for i, spec in enumerate(agent_specs)}
    results.sort(key=lambda r: (order[r.agent], r.instance_seed, r.seed))
    return results, bench


def step_records(store: RunStore) -> list[dict[str, Any]]:
    """The ``ok`` episode records of the run's agents, in table order (agent, instance seed,
    seed): the order :func:`~schedgym.train.summary.load` gives the results in."""
    order = {a: i for i, a in enumerate(store.spec.agents)}
    recs = [r for r in store.records() if r.get("status") == "ok" and r["key"][1] != BENCHMARK]
    return sorted(recs, key=lambda r: (order.get(r["key"][1], len(order)), r["key"][2],
                                       r["key"][3]))


def write_tensorboard(logdir: str | Path, env_id: str, results: list[EpisodeResult],
                      scenario: str | None, instance_seed: int, overrides: dict[str, Any],
                      log_every: int = 1000) -> list[Path]:
    """One TensorBoard run per agent, ``logdir/<Env-vN>/<agent>``, episodes in (instance seed,
    seed) order. A folder that already holds event files (an earlier compare, or ``train
    --beside``) is never touched: the run goes to ``<agent>-2``, ``<agent>-3``, ... instead."""
    env = make_env(env_id, scenario, instance_seed, overrides)
    spec = metric_spec(env)
    env.close()
    dirs = []
    for agent in dict.fromkeys(r.agent for r in results):
        eps = [r.extra["steps"] for r in sorted(results, key=lambda r: (r.instance_seed, r.seed))
               if r.agent == agent]
        base = Path(logdir) / env_folder(env_id) / run_name(agent)
        d, n = base, 1
        while d.exists() and any(d.glob("events.out.tfevents.*")):
            n += 1
            d = base.with_name(f"{base.name}-{n}")
        dirs.append(log_classical(d, spec, eps, log_every))
    return dirs


def record_episode(env_id: str, spec: str, seed: int, folder: str | Path,
                   scenario: str | None = None, instance_seed: int = 0,
                   overrides: dict[str, Any] | None = None, n_frames: int = 8,
                   env_kwargs: dict[str, Any] | None = None) -> list[Path]:
    """Play one episode with ``render_mode="rgb_array"`` (in the agent's mode ``env_kwargs``)
    and save about ``n_frames`` evenly spaced frames as ``<folder>/<agent>-seed<seed>.png``
    (strip) and ``.gif``."""
    from schedgym.train.plots import FrameSampler, save_strip

    env = make_env(env_id, scenario, instance_seed, overrides, render_mode="rgb_array",
                   **(env_kwargs or {}))
    agent = build_agent(spec, env)
    sampler = FrameSampler(n_frames)

    def frame() -> np.ndarray:
        return np.asarray(env.render())

    def grab(step: int, reward: float, info: dict) -> None:
        if sampler.wants(step):
            sampler.add(step, frame())

    res = run_episode(env, agent, seed, label=spec, step_callback=grab)
    frames = sampler.result(last=(res.steps, frame()))
    env.close()
    return save_strip(frames, Path(folder) / f"{run_name(spec)}-seed{seed}.png",
                      f"{env_id} {spec} seed {seed}")
