"""The ``compare``, ``reproduce`` and ``report`` subcommands as one small command line, for the
sweep tests (in process, and as a subprocess script: ``python tests/train/sweep_cli.py ...``).
It wires the same ``add_parser`` functions as ``schedgym.train.cli`` and prints a ``ValueError``
as one line, exit status 2, as the real command does."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    from schedgym.train import compare, report, reproduce

    parser = argparse.ArgumentParser(prog="schedgym")
    sub = parser.add_subparsers(dest="command", required=True)
    for mod in (compare, reproduce, report):
        mod.add_parser(sub)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except ValueError as exc:
        print(f"schedgym {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    # Ctrl-C as in a terminal even when the test runner was started in the background by a
    # non-interactive shell, which ignores SIGINT for `&` jobs (and children inherit that)
    import signal

    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.exit(main())
