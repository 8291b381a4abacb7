"""``schedgym compare``: agents head to head on common random numbers.

Every agent plays the same episodes: one per (instance seed, seed), each ``reset(seed=s)`` on an
env built with ``instance_seed=i`` (the same instance and the same pre-drawn arrivals for every
agent). Each agent plays in its own mode: a learned agent ``ppo:path/model.zip`` in the env built
with the mode kwargs (``action_mode``, ``instance_features``, ``arrivals``) of the ``run.json``
beside the model, classical agents in the default mode (or the mode their class names,
``fixed-price`` in the price modes: :func:`schedgym.agents.registry.play_kwargs`); the world
(scenario, overrides, seeds) is the run's for all. Episodes run in parallel worker processes
(``--workers``) or as Ray tasks (``--ray [ADDRESS]``), with the same records either way.

Nothing finished is lost. The run folder (``--out``, default
``results/compare/<env>-<scenario>-<overrides>-<hash>``) is created before the first episode
(an existing one is refused unless ``--resume`` or ``--overwrite``; an unwritable one stops the
command at once) and every finished episode is appended to its ``episodes.jsonl`` the moment it
ends. Ctrl-C stops within a second or two and prints the resume command; ``--resume RUN_DIR``
runs only the missing episodes. A failing episode is recorded with its error, the others go on,
and the command exits with status 1 and a summary. ``schedgym report RUN_DIR`` rebuilds the
table, ``episodes.csv``, ``summary.csv``, ``summary.json``, ``curves.npz`` and the plots
``compare.png``/``compare.svg`` from the store at any time (the command does so at its end).

The table fits the terminal (key columns; every column is in ``summary.csv``). Ratios are
agent / reference: to the best classical agent (or ``--reference``) and to the env's ceiling
(``myopic-opt`` when in the run on GainOverhead, the oracle on FluctuatingSpeed, the offline OPT
on DeadlineWelfare); with several instance seeds the spread of the per-instance means is shown.

``--tensorboard runs/`` also writes every agent's ``schedgym/*`` tags (the same tags as
``schedgym train``) to ``runs/<Env-vN>/<agent>/`` (a new numbered folder beside any existing
run, never deleting one). ``--record`` saves an image strip and a GIF of each agent's first
episode (``render_mode="rgb_array"``) into ``<out>/record/``.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from schedgym.agents.record import learned_env_kwargs  # noqa: F401  (re-exported)
from schedgym.agents.registry import mode_kwargs as agent_mode
from schedgym.agents.spec import AgentSpec
from schedgym.agents.spec import split_specs as split_agents
from schedgym.train.backend import EpisodeTask, execute, run_calls
from schedgym.train.cli_options import (
    add_env_options,
    add_parallel_options,
    add_run_folder_options,
    check_out_folder,
    parse_overrides,
)
from schedgym.train.runner import EpisodeResult, build_agent, make_env, run_episode
from schedgym.train.runspec import RunSpec, Setting
from schedgym.train.stats import parse_seeds
from schedgym.train.store import BENCHMARK, RunStore, run_folder_name


def check_agent_name(spec: str) -> None:
    """An agent spec whose name is no registered agent (nor ``ALGO:path.zip``) is a
    ``ValueError`` suggesting the closest name (``ogashed`` -> did you mean 'ogasched'?)."""
    import difflib

    from schedgym.agents import registry

    agent = AgentSpec.parse(spec)
    if agent.is_learned:
        return
    name = agent.name
    known = registry.names()
    if name in known:
        return
    close = difflib.get_close_matches(name.lower(), known, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise ValueError(f"agent={name!r} is invalid: {hint}must be one of {', '.join(known)}, or "
                     "ALGO:path.zip for a trained model (schedgym list shows each env's agents)")


def check_agents(specs: list[str]) -> None:
    """Unknown agent names (with a "did you mean") and duplicate agent specs (they would be
    pooled into one row) are errors."""
    for spec in specs:
        check_agent_name(spec)
    seen: set[str] = set()
    for spec in specs:
        if spec in seen:
            raise ValueError(f"agents={','.join(specs)!r} is invalid: {spec!r} is given twice; "
                             "give each agent once (options make distinct agents, e.g. "
                             "ogasched,ogasched[timing=lookahead])")
        seen.add(spec)


def validate(env_id: str, scenario: str | None, instance_seed: int, overrides: dict[str, Any],
             specs: list[str], play: dict[str, dict[str, Any]]) -> None:
    """Fail fast, in this process, on a bad env id, scenario, override or agent (each agent
    built once, in its own mode, on the first instance)."""
    check_agents(specs)
    env = make_env(env_id, scenario, instance_seed, overrides)
    env.close()
    with compile_notice():
        for spec in specs:
            env = make_env(env_id, scenario, instance_seed, overrides, **play.get(spec, {}))
            warm_up(env, build_agent(spec, env))
            env.close()


#: Seconds the warm-up may take before the command says it is compiling.
NOTICE_AFTER_S = 3.0


@contextlib.contextmanager
def compile_notice(after_s: float = NOTICE_AFTER_S) -> Iterator[None]:
    """Say on stderr that the kernels are compiling when the enclosed warm-up takes over
    ``after_s`` seconds (first use after an install or a kernel change), and how long it took.

    On an interactive terminal only, like the package's own first-compile notice
    (:mod:`schedgym._compile_notice`, which this one stands in for here): piped and captured
    stderr carries only what the command reports, whether the kernel cache is cold or warm."""
    if not (sys.stderr is not None and sys.stderr.isatty()):
        yield
        return
    from schedgym._compile_notice import LISTENER

    LISTENER.said = True  # one notice, this one
    shown = threading.Event()

    def notice() -> None:
        shown.set()
        print("preparing the agents: the first use compiles the kernels (once per install or "
              "kernel change; later runs load them from the cache)...", file=sys.stderr,
              flush=True)

    timer = threading.Timer(after_s, notice)
    timer.daemon = True
    t0 = time.perf_counter()
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
    if shown.is_set():
        print(f"ready after {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)


def warm_up(env: Any, agent: Any, steps: int = 2) -> None:
    """Play the first ``steps`` decisions of ``agent`` in this process, before any timed episode:
    the env's and the agent's kernels compile here (then the on-disk kernel cache serves every
    worker), so the ``ms/decision`` column never includes a compile."""
    obs, _ = env.reset(seed=0)
    for k in range(steps):
        action, _ = agent.predict(obs, episode_start=np.array([k == 0]), deterministic=True)
        obs, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            break


def compare_spec(env_id: str, specs: list[str], seeds: list[int], scenario: str | None = None,
                 instance_seeds: list[int] | None = None,
                 overrides: dict[str, Any] | None = None, benchmarks: bool = True,
                 reference: str | None = None, record_steps: bool = False) -> RunSpec:
    """The run description of a compare (``meta.json``; see :mod:`schedgym.train.sweep`):
    one setting, named ``""``, with the run's ``overrides``; every agent in its own mode."""
    return RunSpec(
        command="compare", env_id=env_id, scenario=scenario, overrides=dict(overrides or {}),
        agents=tuple(specs),
        agent_env_kwargs={s: kw for s in specs if (kw := agent_mode(s, env_id))},
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
    from schedgym.train.sweep import plan

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


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare",
        help="run agents head to head on common random numbers and print a table",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("env_id", nargs="?", default=None,
                   help="e.g. schedgym/GainOverhead-v0 (omit with --resume)")
    p.add_argument("--agents", default=None,
                   help="comma-separated agents: a name, name[key=value,...] for options, or "
                   "ALGO:path.zip for a saved SB3 model (its policy's mode; "
                   "ALGO:path.zip[deterministic=false] plays its sampled actions, seeded by the "
                   "episode seed), e.g. "
                   "ogasched,ogasched[timing=lookahead],fairness,ppo:runs/model.zip")
    p.add_argument("--seeds", default=None, help="episode seeds, e.g. 0-4 or 0,3,7 (default 0-2)")
    p.add_argument("--episodes", type=int, default=None,
                   help="number of episodes = seeds 0..N-1 (alternative to --seeds)")
    add_env_options(p, env_id=False, instance_seed_default=None)
    p.add_argument("--instance-seeds", default=None,
                   help="several instances, e.g. 1000-1009: every agent plays every seed on "
                   "each; the table aggregates over all and shows the spread over instances")
    p.add_argument("--reference", default=None,
                   help="agent the agent/reference ratios are taken to (default: the best "
                   "classical agent)")
    add_parallel_options(p)
    p.add_argument("--no-benchmarks", action="store_true",
                   help="skip the offline benchmark (hindsight optimum / oracle / OPT)")
    add_run_folder_options(p, "results/compare/<env>-<scenario>-<overrides>-<hash>")
    p.add_argument("--plots", action=argparse.BooleanOptionalAction, default=True,
                   help="write compare.png/.svg beside the CSV (default on; --no-plots)")
    p.add_argument("--tensorboard", default=None, metavar="DIR",
                   help="also write every agent's schedgym/* TensorBoard tags to "
                   "DIR/<Env-vN>/<agent>/ (same tags as schedgym train), e.g. runs/")
    p.add_argument("--log-every", type=int, default=1000,
                   help="TensorBoard window in env steps (default 1000, as schedgym train)")
    p.add_argument("--record", action="store_true",
                   help="save an image strip (PNG) and GIF of each agent's first episode to "
                   "<out>/record/")
    p.add_argument("--record-frames", type=int, default=8,
                   help="frames in the --record strip (default 8)")
    p.set_defaults(func=main)


def _seeds(args: argparse.Namespace) -> list[int]:
    if args.seeds is not None and args.episodes is not None:
        raise ValueError("give either --seeds or --episodes, not both")
    if args.episodes is not None:
        if args.episodes < 1:
            raise ValueError(f"episodes={args.episodes} is invalid: must be >= 1")
        return list(range(args.episodes))
    return parse_seeds(args.seeds or "0-2")


def _instance_seeds(args: argparse.Namespace) -> list[int]:
    if args.instance_seed is not None and args.instance_seeds is not None:
        raise ValueError("give either --instance-seed or --instance-seeds, not both")
    if args.instance_seeds is not None:
        return parse_seeds(args.instance_seeds)
    return [args.instance_seed or 0]


def open_store(args: argparse.Namespace) -> RunStore:
    """The run folder of this invocation: the resumed one, or a new one (validated first)."""
    if args.resume:
        if args.overwrite:
            raise ValueError("give either --resume or --overwrite, not both")
        store = RunStore.open(args.resume)
        if args.env_id is not None and args.env_id != store.spec.env_id:
            store.close()
            raise ValueError(f"env_id={args.env_id!r} is invalid with --resume "
                             f"{args.resume}: that run is of {store.spec.env_id!r}")
        flags = {"agents": "--agents", "seeds": "--seeds", "episodes": "--episodes",
                 "scenario": "--scenario", "instance_seed": "--instance-seed",
                 "instance_seeds": "--instance-seeds", "overrides": "--set"}
        given = [flag for k, flag in flags.items() if getattr(args, k, None) is not None]
        if given:
            store.close()
            raise ValueError(f"{', '.join(given)} cannot be given with --resume: the run keeps "
                             f"its own configuration ({args.resume}/meta.json)")
        return store
    if args.env_id is None or args.agents is None:
        raise ValueError("give ENV_ID and --agents (or --resume RUN_DIR)")
    specs = split_agents(args.agents)
    overrides = parse_overrides(args.overrides)
    inst = _instance_seeds(args)
    run = compare_spec(args.env_id, specs, _seeds(args), args.scenario, inst, overrides,
                       not args.no_benchmarks, args.reference,
                       record_steps=args.tensorboard is not None)
    if args.out is not None:
        check_out_folder(args.out)  # before the warm-up: a bad --out costs nothing
    validate(args.env_id, args.scenario, inst[0], overrides, specs, run.agent_env_kwargs)
    if args.reference is not None and args.reference not in specs:
        raise ValueError(f"reference={args.reference!r} is invalid: must be one of {specs}")
    if args.out is not None:
        out = check_out_folder(args.out)
    else:  # the default folder: a repeated command gets NAME-2, ... (never overwrites)
        out = Path("results/compare") / run_folder_name(
            args.env_id, args.scenario, overrides, run.to_json())
        if not args.overwrite:  # the next free name, also when another run takes one first
            return RunStore.create_free(check_out_folder(out), run)
    return RunStore.create(out, run, overwrite=args.overwrite)


def main(args: argparse.Namespace) -> int:
    from schedgym.train.report import report_compare
    from schedgym.train.sweep import finish_message, plan, run_sweep

    t0 = time.perf_counter()
    store = open_store(args)
    run = store.spec
    try:
        print(f"run folder: {store.path}")
        outcome = run_sweep(store, plan(run), args.workers, args.ray, not args.quiet,
                            f"{run.env_id.split('/')[-1]}: {len(run.agents)} agents")
    finally:
        store.close()
    if not outcome.interrupted:
        report_compare(store, plots=args.plots)
        print(f"({time.perf_counter() - t0:.1f} s)")
        _extras(args, store)
    return finish_message("compare", store, outcome)


def _extras(args: argparse.Namespace, store: RunStore) -> None:
    """``--tensorboard`` and ``--record`` after a complete run."""
    from schedgym.train.report import load
    from schedgym.train.sweep import tuples

    run = store.spec
    if args.tensorboard is not None:
        results, _ = load(store)
        for r, rec in zip(results, _step_records(store), strict=True):
            r.extra["steps"] = store.steps(rec)
        for d in write_tensorboard(args.tensorboard, run.env_id, results, run.scenario,
                                   run.instance_seeds[0], tuples(run.overrides),
                                   args.log_every):
            print(f"tensorboard run: {d}")
    if args.record:
        for spec in run.agents:
            paths = record_episode(run.env_id, spec, run.seeds[0], store.path / "record",
                                   run.scenario, run.instance_seeds[0], tuples(run.overrides),
                                   args.record_frames, run.agent_env_kwargs.get(spec))
            print("wrote " + ", ".join(str(p) for p in paths))


def _step_records(store: RunStore) -> list[dict[str, Any]]:
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
    from schedgym.train.tensorboard import env_folder, log_classical, metric_spec, run_name

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
    from schedgym.train.tensorboard import run_name

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
