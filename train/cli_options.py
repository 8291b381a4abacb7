"""Command-line options shared by ``schedgym train``, ``compare`` and ``reproduce``.

One definition of the env options (``ENV_ID``, ``--scenario``, ``--instance-seed``, ``--set``),
of the parallel options (``--workers``, ``--ray [ADDRESS]``), of the run-folder options of a
sweep (``--out``, ``--resume``, ``--overwrite``, ``--quiet``), of ``--set KEY=VALUE`` parsing,
and of env-id resolution, so every subcommand accepts and rejects the same things with the same
message::

    from schedgym.train.cli_options import add_env_options, env_options

    add_env_options(parser)          # in add_parser(...)
    opts = env_options(args)         # in main(args): EnvOptions, env id resolved, --set parsed
    gym.make(opts.env_id, **opts.make_kwargs())

Env ids: the registered ``schedgym/GainOverhead-v0``, or Gymnasium's module-prefixed form
``schedgym:schedgym/GainOverhead-v0`` (the prefix makes Gymnasium import schedgym first, which is
what a fresh worker process needs, e.g. SB3's ``SubprocVecEnv``). A namespace-less or misspelt id
is one line naming the closest registered id (``did you mean schedgym/GainOverhead-v0?``).
"""

from __future__ import annotations

import argparse
import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Gymnasium's module prefix that imports schedgym before resolving the id.
MODULE_PREFIX = "schedgym:"


def positive_int(text: str) -> int:
    """argparse type of a count that must be at least 1 (``--workers``): the message names the
    value received and what is allowed."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer: must be >= 1") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is invalid: must be >= 1 (omit it for the "
                                         "number of CPUs)")
    return value


def parse_overrides(items: list[str] | None, flag: str = "--set") -> dict[str, Any]:
    """``["horizon=500", "beta_range=0.4:0.6"]`` -> ``{"horizon": 500, "beta_range": (0.4, 0.6)}``.

    Values are parsed as agent options are (:func:`schedgym.agents.spec.parse_value`: int,
    float, bool, None, tuples ``a:b``/``(a, b)``/``[a, b]``, else str; so ``time_window=0:86400``,
    ``time_window=(0,86400)`` and ``time_window=[0,86400]`` are one pair). ``flag`` names the
    option in the error message.
    """
    from schedgym.agents.spec import parse_value

    out: dict[str, Any] = {}
    for item in items or []:
        key, eq, val = item.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"{flag} {item!r} is invalid: must be KEY=VALUE")
        out[key.strip()] = parse_value(val.strip())
    return out


def check_run_name(name: Any, what: str = "--name") -> str:
    """``name`` if it can be one folder's name inside an output folder: a non-empty string
    without a path separator, not ``.`` or ``..`` and not hidden (so a run never writes
    outside ``--out``); ``ValueError`` naming ``what`` otherwise."""
    bad = (not isinstance(name, str) or not name.strip() or name.startswith(".")
           or any(sep in name for sep in ("/", "\\", "\0")))
    if bad:
        raise ValueError(f"{what}={name!r} is invalid: must be a plain folder name (no path "
                         "separator, not starting with '.')")
    return name


def check_out_folder(out: str | Path, what: str = "out") -> Path:
    """``out`` as a ``Path`` if it is, or can be created as, a folder: neither it nor its
    nearest existing parent may be a file (else ``ValueError`` saying so, rather than a later
    "the run folder exists" or a raw ``NotADirectoryError``)."""
    path = Path(out)
    for p in (path, *path.parents):
        if p.exists():
            if p == path and not p.is_dir():
                raise ValueError(f"{what}={str(out)!r} is invalid: it names a file, not a "
                                 "folder")
            if not p.is_dir():
                raise ValueError(f"{what}={str(out)!r} is not writable: {str(p)!r} is a file, "
                                 "not a folder")
            break
    return path


def free_run_folder(path: str | Path) -> Path:
    """``path`` if nothing is there, else the first free ``path-2``, ``path-3``, ... (a repeated
    command gets a new run folder, as ``train`` does, and never overwrites one)."""
    path = Path(path)
    for k in range(1, 10_000):
        cand = path if k == 1 else path.with_name(f"{path.name}-{k}")
        if not cand.exists():
            return cand
    raise ValueError(f"out={str(path)!r}: too many runs of this name; give --out")


def known_env_ids() -> list[str]:
    """Every env id registered with Gymnasium (schedgym's first)."""
    import gymnasium as gym

    import schedgym

    rest = sorted(k for k in gym.registry if k not in schedgym.ENV_IDS)
    return [*schedgym.ENV_IDS, *rest]


def resolve_env_id(text: str) -> str:
    """The registered env id meant by ``text``; ``ValueError`` with the closest match otherwise.

    ``schedgym:schedgym/GainOverhead-v0`` -> ``schedgym/GainOverhead-v0``; ``GainOverhead-v0``
    -> error "did you mean schedgym/GainOverhead-v0?".
    """
    import gymnasium as gym

    import schedgym

    env_id = str(text).strip()
    if env_id.startswith(MODULE_PREFIX):
        env_id = env_id[len(MODULE_PREFIX):]
    if env_id in gym.registry:
        return env_id
    ids = known_env_ids()
    by_tail = {i.split("/")[-1].lower(): i for i in schedgym.ENV_IDS}
    guess = by_tail.get(env_id.split("/")[-1].lower())
    if guess is None:
        close = difflib.get_close_matches(env_id, ids, n=1, cutoff=0.5)
        guess = close[0] if close else None
    hint = (f"did you mean {guess}?" if guess is not None
            else f"must be one of {', '.join(schedgym.ENV_IDS)}")
    raise ValueError(f"env_id={text!r} is invalid: {hint}")


@dataclass(frozen=True)
class EnvOptions:
    """The env a subcommand runs on, as given on the command line.

    ``env_id``: registered id (resolved); ``scenario``: scenario name or None (paper default);
    ``instance_seed``: seed of the instance; ``overrides``: ``--set`` env parameters.
    """

    env_id: str
    scenario: str | None = None
    instance_seed: int = 0
    overrides: dict[str, Any] = field(default_factory=dict)

    def make_kwargs(self) -> dict[str, Any]:
        """``gym.make`` keyword arguments (``overrides`` + ``scenario`` + ``instance_seed``)."""
        kw = dict(self.overrides)
        if self.scenario is not None:
            kw["scenario"] = self.scenario
        kw["instance_seed"] = self.instance_seed
        return kw


def add_env_options(p: argparse.ArgumentParser, *, env_id: bool = True,
                    instance_seed_default: int | None = 0) -> None:
    """Add ``ENV_ID`` (positional, unless ``env_id=False``), ``--scenario``, ``--instance-seed``
    (default ``instance_seed_default``; ``None`` lets a command tell "not given") and
    ``--set KEY=VALUE`` (repeatable) to ``p``."""
    if env_id:
        p.add_argument("env_id", metavar="ENV_ID",
                       help="e.g. schedgym/GainOverhead-v0 (see 'schedgym list')")
    p.add_argument("--scenario", default=None,
                   help="scenario name (default: the paper default; see 'schedgym list')")
    p.add_argument("--instance-seed", type=int, default=instance_seed_default,
                   help="seed of the instance: graph, capacities, utilities (default 0)")
    add_set_option(p, "override an env parameter, e.g. --set horizon=500 or "
                   "--set action_mode=fractions (repeatable)")


def add_set_option(p: argparse.ArgumentParser, help: str) -> None:
    """Add ``--set KEY=VALUE`` (repeatable, into ``args.overrides``; parse it with
    :func:`parse_overrides`) with the help text ``help``."""
    p.add_argument("--set", dest="overrides", action="append", metavar="KEY=VALUE", help=help)


def add_parallel_options(p: argparse.ArgumentParser, what: str = "the episodes",
                         condition: str = "") -> None:
    """Add ``--workers N`` (parallel worker processes; default ``None``: as many as CPUs) and
    ``--ray [ADDRESS]`` (default ``None``: no Ray; alone ``""``: a local Ray; ``auto`` or
    ``HOST:PORT``: a cluster), the two arguments of
    :func:`schedgym.train.backend.run_calls`. ``what``: the jobs that run in parallel, in the
    help text; ``condition``: a help prefix such as ``"with --seeds: "``."""
    p.add_argument("--workers", type=positive_int, default=None,
                   help=f"{condition}parallel worker processes, at least 1 (default: number of "
                   "CPUs)")
    p.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                   help=f"{condition}run {what} as Ray tasks: alone, a local Ray; 'auto' or "
                   "HOST:PORT joins a cluster started with 'ray start --head'")


def add_run_folder_options(p: argparse.ArgumentParser, default_out: str) -> None:
    """Add the run-folder options of a sweep (``compare``, ``reproduce``): ``--out`` (help
    naming ``default_out``, the folder used when it is not given), ``--resume RUN_DIR``,
    ``--overwrite`` and ``--quiet``."""
    p.add_argument("--out", default=None,
                   help=f"run folder (default {default_out}; when a run is there, the "
                   "command moves on to NAME-2, NAME-3, ...); a given --out that exists is "
                   "refused, unless --overwrite")
    p.add_argument("--resume", default=None, metavar="RUN_DIR",
                   help="finish an interrupted run: only its missing episodes are played")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the run folder if it exists")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def env_options(args: argparse.Namespace) -> EnvOptions:
    """The :class:`EnvOptions` of parsed ``args`` (env id resolved, ``--set`` parsed)."""
    if args.instance_seed < 0:
        raise ValueError(f"--instance-seed {args.instance_seed} is invalid: must be >= 0")
    return EnvOptions(resolve_env_id(args.env_id), args.scenario, int(args.instance_seed),
                      parse_overrides(args.overrides))
