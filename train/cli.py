"""The ``schedgym`` command line: ``schedgym {compare,train,reproduce,bench} ...``.

Each subcommand lives in its own module and exposes ``add_parser(subparsers)`` which registers its
arguments and sets ``func``; this file only wires them together.
"""

from __future__ import annotations

import argparse
import importlib
import sys

#: subcommand -> module providing ``add_parser(subparsers)``
SUBCOMMANDS = {
    "compare": "train.compare",
    "train": "train.training",
    "reproduce": "train.reproduce",
    "bench": "train.bench",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="schedgym",
        description="Gymnasium environments for online multi-server job scheduling: compare "
        "classical and learned agents, train SB3 learners, reproduce the papers.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for _name, mod in SUBCOMMANDS.items():
        try:
            module = importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name == mod:
                continue  # subcommand not available in this version
            raise
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except ValueError as exc:
        print(f"schedgym {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
