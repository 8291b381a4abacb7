"""``schedgym compare``: agents head to head on common random numbers.

Every agent plays the same episodes: one per (instance seed, seed), each ``reset(seed=s)`` on an
env built with ``instance_seed=i`` (the same instance and the same pre-drawn arrivals for every
agent). Each agent plays in its own mode: a learned agent ``ppo:path/model.zip`` in the env built
with the mode kwargs (``action_mode``, ``instance_features``, ``arrivals``) of the ``run.json``
beside the model, classical agents in the default mode (or the mode their class names,
``fixed-price`` in the price modes: :func:`schedgym.agents.registry.play_kwargs`); the world
(scenario, overrides, seeds) is the run's for all. Episodes run in parallel worker processes
(``--workers``) or as Ray tasks (``--ray [ADDRESS]``), with the same records either way.

Nothing finished is lost. The run folder is created before the first episode (an unwritable
one stops the command at once) and every finished episode is appended to its
``episodes.jsonl`` the moment it ends. The default folder is
``results/compare/<env>-<scenario>-<overrides>-<hash>``; when a run is already there, the
command moves on to ``NAME-2``, ``NAME-3``, ... (a repeated command never overwrites a run). A
given ``--out`` that exists is refused unless ``--resume`` or ``--overwrite``. Ctrl-C stops
within a second or two and prints the resume command; ``--resume RUN_DIR`` runs only the
missing episodes. A failing episode is recorded with its error, the others go on, and the
command exits with status 1 and a summary. ``schedgym report RUN_DIR`` rebuilds the
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
import time
from pathlib import Path

from schedgym.agents.record import learned_env_kwargs
from schedgym.agents.spec import split_specs as split_agents
from schedgym.train.cli_options import (
    add_env_options,
    add_parallel_options,
    add_run_folder_options,
    check_out_folder,
    parse_overrides,
)
from schedgym.train.head_to_head import (
    compare_spec,
    record_episode,
    run_compare,
    step_records,
    validate,
    write_tensorboard,
)
from schedgym.train.stats import parse_seeds
from schedgym.train.store import RunStore, run_folder_name
from schedgym.train.summary import load, report_compare
from schedgym.train.sweep import finish_message, plan, run_sweep
from schedgym.train.tasks import tuples

#: Names of the compare library kept importable from here (the command's own module).
__all__ = ["add_parser", "compare_spec", "learned_env_kwargs", "main", "open_store",
           "run_compare", "split_agents"]


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
    return parse_seeds(args.seeds or "0-2", "--seeds")


def _instance_seeds(args: argparse.Namespace) -> list[int]:
    if args.instance_seed is not None and args.instance_seeds is not None:
        raise ValueError("give either --instance-seed or --instance-seeds, not both")
    if args.instance_seeds is not None:
        return parse_seeds(args.instance_seeds, "--instance-seeds")
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
    run = store.spec
    if args.tensorboard is not None:
        results, _ = load(store)
        for r, rec in zip(results, step_records(store), strict=True):
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
