"""``schedgym reproduce EXPERIMENT``: re-run a paper figure or table from ``configs/experiments``.

An experiment YAML names the env, scenario, agents, seeds, the metric and optionally parameter
sweeps with the paper's numbers. Every setting runs as a ``schedgym compare`` (common random
numbers across agents), and the command writes, into its run folder
``results/reproduce/NAME-<overrides>-<hash>/`` (``--out`` to choose another):

- ``rows.csv``: one row per (setting, agent) with our mean ± 95% CI, the reference agent's
  improvement over it ``(Q_ref / Q_agent - 1) * 100`` (per seed, then averaged), and the paper's
  value and improvement where the YAML gives them;
- ``report.md``: the same as Markdown tables, our numbers beside the paper's;
- ``plot.png``: the metric against each swept parameter (or, without sweeps, the running average
  reward against time and the reference's ratio to each agent, as the paper's Fig. 2).

Nothing is tuned to match: the paper's numbers are only printed beside ours.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from schedgym.train.cli_options import (
    add_parallel_options,
    add_run_folder_options,
    add_set_option,
    check_out_folder,
    parse_overrides,
)
from schedgym.train.experiment_report import report_reproduce
from schedgym.train.experiments import (
    CONFIG_DIR,
    experiment_spec,
    find_experiment,
    load_experiment,
    swept_keys,
    validate_experiment,
)
from schedgym.train.stats import parse_seeds
from schedgym.train.store import RunStore, run_folder_name
from schedgym.train.sweep import finish_message, plan, run_sweep


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("reproduce", help="re-run a paper experiment from configs/experiments",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("experiment", nargs="?", help="experiment name (e.g. ogasched-table3) or a "
                   "YAML path; omit with --list or --resume")
    p.add_argument("--list", action="store_true", help="list the available experiments")
    p.add_argument("--seeds", default=None, help="override the experiment's seeds, e.g. 0-1")
    p.add_argument("--instance-seeds", default=None,
                   help="override the experiment's instance seeds, e.g. 0-9")
    add_set_option(p, "override a scenario parameter in every setting (e.g. horizon=500); "
                   "a parameter the experiment sweeps cannot be set")
    add_parallel_options(p)
    add_run_folder_options(p, "results/reproduce/NAME-<overrides>-<hash>")
    p.set_defaults(func=main)


def _new_store(args: argparse.Namespace) -> RunStore:
    cfg = load_experiment(find_experiment(args.experiment))
    seeds = parse_seeds(args.seeds or str(cfg["seeds"]), "--seeds" if args.seeds else "seeds")
    inst = parse_seeds(args.instance_seeds or str(cfg["instance_seeds"]),
                      "--instance-seeds" if args.instance_seeds else "instance_seeds")
    overrides = parse_overrides(args.overrides)
    clash = sorted(set(overrides) & swept_keys(cfg))
    if clash:
        raise ValueError(f"--set {clash[0]}={overrides[clash[0]]!r} is invalid: experiment "
                         f"{cfg['name']!r} sweeps {clash[0]}, so the value would be ignored; "
                         "edit the sweep in a copy of the YAML instead")
    if args.out is not None:
        check_out_folder(args.out)  # before the warm-up: a bad --out costs nothing
    validate_experiment(cfg, overrides, inst[0])
    cmd = " ".join(["schedgym reproduce", args.experiment]
                   + ([f"--seeds {args.seeds}"] if args.seeds else [])
                   + ([f"--instance-seeds {args.instance_seeds}"] if args.instance_seeds else [])
                   + [f"--set {o}" for o in args.overrides or []])
    spec = experiment_spec(cfg, seeds, overrides, inst, cmd)
    if args.out is not None:
        out = check_out_folder(args.out)
    else:  # the default folder: a repeated command gets NAME-2, ... (never overwrites)
        out = Path("results/reproduce") / run_folder_name(
            cfg["name"], None, overrides, spec.to_json()).replace("-paper-default", "", 1)
        if not args.overwrite:  # the next free name, also when another run takes one first
            return RunStore.create_free(check_out_folder(out), spec)
    return RunStore.create(out, spec, overwrite=args.overwrite)


def main(args: argparse.Namespace) -> int:
    if args.resume:
        if args.overwrite:
            raise ValueError("give either --resume or --overwrite, not both")
        store = RunStore.open(args.resume)
    elif args.list or not args.experiment:
        for q in sorted(CONFIG_DIR.glob("*.yml")):
            cfg = load_experiment(q)
            print(f"{q.stem:28s} {cfg.get('paper', '')}")
        return 0
    else:
        store = _new_store(args)
    t0 = time.perf_counter()
    try:
        print(f"run folder: {store.path}")
        outcome = run_sweep(store, plan(store.spec), args.workers, args.ray, not args.quiet,
                            store.spec.experiment["name"])
    finally:
        store.close()
    if not outcome.interrupted:
        report_reproduce(store)
        print(f"({time.perf_counter() - t0:.1f} s)")
    return finish_message("reproduce", store, outcome)
