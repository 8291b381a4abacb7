"""The ``schedgym`` command line: ``schedgym {list,compare,train,reproduce,report,bench} ...``.

Each subcommand lives in its own module and exposes ``add_parser(subparsers)`` which registers its
arguments and sets ``func``; this file wires them together, adds ``schedgym list`` and
``--version``, and decides how errors reach the user:

- a mistake of the user's (:func:`user_errors`: ``ValueError`` and its subclasses such as
  ``TraceFormatError``, any ``OSError``: a missing/unreadable/misplaced file or folder, a full
  disk; an unknown Gymnasium env id) prints one line ``schedgym CMD: error: MESSAGE`` and exits
  with status 2, like argparse's own usage errors;
- Ctrl-C exits with status 130 (after the subcommand saved what it had);
- a usage error (an unknown algorithm, a missing argument) is one line too, with the
  ``--help`` to see, exit status 2;
- anything else is a bug of ours and keeps its traceback (please report it).
  ``SCHEDGYM_TRACEBACK=1`` shows the traceback of user errors too.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
import traceback
from typing import NoReturn

#: subcommand -> module providing ``add_parser(subparsers)``
SUBCOMMANDS = {
    "list": "schedgym.train.cli",
    "compare": "schedgym.train.compare",
    "train": "schedgym.train.training",
    "reproduce": "schedgym.train.reproduce",
    "report": "schedgym.train.report",
    "bench": "schedgym.train.bench",
}


#: how an unknown keyword is said for Python's and TorchRL's sake ("unexpected keyword argument
#: 'X' (an unknown parameter 'X')"), said once on the command line
_UNKNOWN_KEYWORD = re.compile(r" got an unexpected keyword argument ('[^']*') "
                              r"\(an unknown parameter \1\)")

#: what ``gym.make`` appends to an env constructor's error message
_GYM_CREATOR_SUFFIX = re.compile(r" was raised from the environment creator for \S+ with kwargs "
                                 r"\(.*\)$")


def user_errors() -> tuple[type[BaseException], ...]:
    """Exceptions reported as one line with exit status 2 (see the module docstring)."""
    import gymnasium.error as gym_error

    return (ValueError, OSError, gym_error.Error)  # OSError: a full disk, a missing file, ...


def version() -> str:
    """``schedgym X.Y.Z`` with the installed distribution's version."""
    import schedgym

    return f"schedgym {schedgym.__version__}"


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line, ``PROG: error: MESSAGE (see PROG
    --help)``, exit status 2, instead of the usage block (16 lines for ``schedgym train``)
    above the message."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``schedgym`` parser with every subcommand."""
    parser = OneLineParser(
        prog="schedgym",
        description="Gymnasium environments for online multi-server job scheduling: compare "
        "classical and learned agents, train SB3 learners, reproduce the papers.",
    )
    parser.add_argument("--version", action="version", version=version())
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                parser_class=OneLineParser)
    for name, mod in SUBCOMMANDS.items():
        if name == "list":
            add_parser(sub)
            continue
        importlib.import_module(mod).add_parser(sub)
    for sub_parser in sub.choices.values():
        _plain_help(sub_parser)
    return parser


def plain_text(text: str) -> str:
    """Docstring text as a terminal shows it: reST roles (``:mod:`x``` -> ``x``) and inline-literal
    backquotes removed."""
    text = re.sub(r":[a-z]+:`~?([^`]+)`", r"\1", text)
    return text.replace("``", "")


def _plain_help(parser: argparse.ArgumentParser) -> None:
    """Strip reST markup from a parser's description and its options' help texts (module
    docstrings double as help texts)."""
    if parser.description:
        parser.description = plain_text(parser.description)
    for action in parser._actions:
        if action.help:
            action.help = plain_text(action.help)


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``schedgym list``."""
    p = sub.add_parser("list", help="list the envs with their agents, scenarios and action modes",
                       description="List every env id with its agents, scenarios and action "
                       "modes (the first mode is the default).")
    p.add_argument("env_id", nargs="?", default=None, help="only this env")
    p.set_defaults(func=list_main)


def env_summary(env_id: str) -> dict[str, list[str]]:
    """``{"agents": [...], "scenarios": [...], "action_modes": [...]}`` of a registered env id
    (read from the env's class and package, without building an env)."""
    import gymnasium as gym

    from schedgym.agents import registry

    spec = gym.spec(env_id)
    entry = spec.entry_point if isinstance(spec.entry_point, str) else ""
    mod_name, _, cls_name = entry.partition(":")
    cls = getattr(importlib.import_module(mod_name), cls_name) if cls_name else None
    package = importlib.import_module(mod_name.rpartition(".")[0]) if mod_name else None
    scen = getattr(package, "SCENARIOS", None)
    modes = getattr(cls, "metadata", {}).get("action_modes", ()) if cls is not None else ()
    return {"agents": registry.names_for(env_id),
            "scenarios": list(scen.names()) if scen is not None else [],
            "action_modes": list(modes) or ["(one)"]}


def list_main(args: argparse.Namespace) -> int:
    """``schedgym list [ENV_ID]``."""
    import schedgym
    from schedgym.agents import registry
    from schedgym.train.cli_options import resolve_env_id
    from schedgym.train.hyperparams import ALGOS

    ids = [resolve_env_id(args.env_id)] if args.env_id else list(schedgym.ENV_IDS)
    for env_id in ids:
        info = env_summary(env_id)
        agents = [a + (" (clairvoyant reference)" if registry.is_benchmark(a) else "")
                  for a in info["agents"]]
        print(env_id)
        print(f"  agents:       {', '.join(agents)}")
        print(f"  scenarios:    {', '.join(info['scenarios']) or '(paper default only)'}")
        print(f"  action modes: {', '.join(info['action_modes'])} (default first)")
    print(f"learned agents: ALGO:path/to/model.zip with ALGO in {', '.join(ALGOS)} "
          "(schedgym train ALGO ENV_ID)")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (see the module docstring)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if isinstance(getattr(args, "env_id", None), str):  # every subcommand: one rule
            from schedgym.train.cli_options import resolve_env_id

            args.env_id = resolve_env_id(args.env_id)
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print(f"schedgym {args.command}: interrupted", file=sys.stderr)
        return 130
    except user_errors() as exc:
        if os.environ.get("SCHEDGYM_TRACEBACK"):
            traceback.print_exc()
        msg = " ".join(str(exc).split()) or type(exc).__name__
        msg = _GYM_CREATOR_SUFFIX.sub("", msg)  # gym.make's note repeats the keywords given
        msg = _UNKNOWN_KEYWORD.sub(r": unknown parameter \1", msg)
        if isinstance(exc, OSError) and exc.filename is not None and str(exc.filename) not in msg:
            msg = f"{msg}: {exc.filename}"
        print(f"schedgym {args.command}: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
