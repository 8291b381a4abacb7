"""Tables, files and plots of a run, rebuilt from its result store at any time.

``schedgym report RUN_DIR`` reprints the table of a ``compare`` or ``reproduce`` run folder
(finished, interrupted or still running) and rewrites its summary files and plots from
``episodes.jsonl`` alone. ``compare`` and ``reproduce`` call the same code at their end, so the
table of a resumed run is the table of an uninterrupted one. ``--out DIR`` writes the files into
``DIR`` instead and leaves the run folder untouched (a run folder that is read-only, shared, or
still being written by its run); ``DIR`` is created, and an existing one is refused unless it
holds an earlier report of the same run (its ``report-source.json`` names the run).

Ratios all run the same way, **agent / reference** (1.0 = as good as the reference), the
files' ``<benchmark>_ratio`` columns included (agent / benchmark; the competitive ratio
OPT / ALG is its inverse). GainOverhead's benchmark ``hindsight_optimum`` is the *best fixed
allocation in hindsight* (the regret benchmark), not the best schedule: an agent that adapts
slot by slot can beat it (ratio above 1, negative gap). The reference is the best classical
agent (highest mean return; learned agents, clairvoyant agents and the ceiling are never it)
unless ``--reference`` names one; the *ceiling* is the best any online policy can do where the
env has one: the ``myopic-opt`` agent (GainOverhead, when it is in the run), the ``oracle``
(FluctuatingSpeed, realised on the same draws) or the offline optimum ``OPT``
(DeadlineWelfare).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from schedgym.train.experiment_report import report_reproduce
from schedgym.train.store import RunStore
from schedgym.train.summary import CEILING_AGENTS, report_compare

#: Names of the report library kept importable from here (the command's own module).
__all__ = ["CEILING_AGENTS", "SOURCE", "add_parser", "main", "prepare_out"]


#: the file that marks a ``report --out`` folder and names the run it reports
SOURCE = "report-source.json"


def prepare_out(run_dir: Path, out: str | Path) -> Path:
    """The folder ``out`` for a report of the run folder ``run_dir``, created if missing.

    Raises ``ValueError`` (one line) if ``out`` is the run folder itself (omit ``--out`` for
    that), is a file, is a non-empty folder that is not an earlier report of this run (so that
    nothing a user made is overwritten), or cannot be created."""
    out, run = Path(out), Path(run_dir).resolve()
    if out.resolve() == run:
        raise ValueError(f"out={str(out)!r} is invalid: it is the run folder itself; omit "
                         "--out to rewrite the run folder's files")
    if out.exists() and not out.is_dir():
        raise ValueError(f"out={str(out)!r} is invalid: it is a file, not a folder")
    if out.is_dir() and any(out.iterdir()):
        try:
            source = json.loads((out / SOURCE).read_text())["run"]
        except (OSError, ValueError, KeyError, TypeError):
            source = None
        if source != str(run):
            raise ValueError(f"out={str(out)!r} is invalid: the folder exists and is not an "
                             f"earlier report of {str(run)!r} (no matching {SOURCE}); choose "
                             "another --out")
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / SOURCE).write_text(json.dumps({"run": str(run)}) + "\n")
    except OSError as exc:
        raise ValueError(f"out={str(out)!r} is not writable: {exc.strerror or exc}") from None
    return out


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="rebuild the table, CSV/JSON and plots of a compare or "
                       "reproduce run folder from its stored episodes",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run_dir", help="a run folder written by schedgym compare or reproduce")
    p.add_argument("--plots", action=argparse.BooleanOptionalAction, default=True,
                   help="rewrite the plots too (default on)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="write the files into DIR instead of the run folder (which is then "
                   "left untouched); refused if DIR exists and is not an earlier report of "
                   "this run")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    store = RunStore.open(args.run_dir, lock=False)
    out = None if args.out is None else prepare_out(store.path, args.out)
    if store.spec.is_reproduce:
        report_reproduce(store, out=out)
        return 0
    report_compare(store, plots=args.plots, out=out)
    return 0


if __name__ == "__main__":  # python -m schedgym.train.report RUN_DIR
    import sys

    _parser = argparse.ArgumentParser(prog="schedgym")
    add_parser(_parser.add_subparsers(dest="command", required=True))
    _args = _parser.parse_args(["report", *sys.argv[1:]])
    try:
        sys.exit(main(_args))
    except ValueError as _exc:
        print(f"schedgym report: error: {_exc}", file=sys.stderr)
        sys.exit(2)
