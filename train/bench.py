"""``schedgym bench``: run the repository's benchmark scripts (``benchmarks/bench_*.py``)."""

from __future__ import annotations

import argparse
import runpy
import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parents[1] / "benchmarks"


def available() -> dict[str, Path]:
    """``{name: path}`` of every ``benchmarks/bench_<name>.py`` in the checkout."""
    return {p.stem.removeprefix("bench_"): p for p in sorted(BENCH_DIR.glob("bench_*.py"))}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="print performance figures (env steps/s, decision times)",
                       description=__doc__)
    p.add_argument("names", nargs="*", help="benchmarks to run (default: all); e.g. gain_overhead")
    p.add_argument("--list", action="store_true", help="list the available benchmarks")
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
    for name in args.names or list(found):
        print(f"==> {name}", flush=True)
        argv, sys.argv = sys.argv, [str(found[name])]
        try:
            runpy.run_path(str(found[name]), run_name="__main__")
        finally:
            sys.argv = argv
    return 0
