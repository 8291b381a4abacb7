"""``schedgym bench``: run the repository's benchmark scripts (``benchmarks/bench_*.py``).

``schedgym bench scale`` (the growth with the size of the world: every env and classical agent
at 1x-64x the paper-default size and at the whole cluster, with the fitted exponents) takes its
own options: --envs, --agents, --sizes, --steps, --max-seconds, --case-timeout, --write-doc,
--json (schedgym.train.bench_scale)."""

from __future__ import annotations

import argparse
import runpy
import sys
from pathlib import Path

from schedgym.train import bench_scale

BENCH_DIR = Path(__file__).resolve().parents[1] / "benchmarks"


def available() -> dict[str, Path]:
    """``{name: path}`` of every ``benchmarks/bench_<name>.py`` in the checkout."""
    return {p.stem.removeprefix("bench_"): p for p in sorted(BENCH_DIR.glob("bench_*.py"))}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="print performance figures (env steps/s, decision times)",
                       description=__doc__)
    p.add_argument("names", nargs="*", help="benchmarks to run (default: all); e.g. gain_overhead")
    p.add_argument("--list", action="store_true", help="list the available benchmarks")
    bench_scale.add_arguments(p.add_argument_group("scale (schedgym bench scale only)"))
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    found = available()
    if not found:
        raise ValueError(f"no benchmark scripts found in {BENCH_DIR} (run from a source checkout)")
    if args.list:
        print("\n".join(found))
        return 0
    for name in args.names:
        if name not in found:
            raise ValueError(f"benchmark {name!r} is invalid: must be one of {', '.join(found)}")
    given = [f"--{k.replace('_', '-')}" for k in ("envs", "agents", "sizes", "steps",
                                                   "max_seconds", "case_timeout", "write_doc",
                                                   "json") if getattr(args, k, None) is not None]
    if given and "scale" not in args.names:
        raise ValueError(f"{', '.join(given)} is invalid here: only for schedgym bench scale")
    for name in args.names or list(found):
        print(f"==> {name}", flush=True)
        if name == "scale":
            bench_scale.run(bench_scale.options(args), echo=lambda s: print(s, flush=True))
            continue
        argv, sys.argv = sys.argv, [str(found[name])]
        try:
            runpy.run_path(str(found[name]), run_name="__main__")
        finally:
            sys.argv = argv
    return 0
