"""What names an agent: the text ``name[key=value,...]``, parsed once into a frozen
:class:`AgentSpec`.

Two kinds of agent share the syntax:

- a classical agent: its registered name, optionally with constructor options,
  ``ogasched``, ``ogasched[timing=lookahead,eta0=5]``;
- a learned agent: a saved Stable-Baselines3 model, ``ALGO:path/to/model.zip`` with ``ALGO``
  one of :data:`SB3_ALGOS` (any case), optionally with the options of
  :data:`LEARNED_OPTIONS`, ``ppo:runs/x/model.zip[deterministic=false]``.

Options are ``key=value`` pairs between ``[`` and ``]`` at the end, separated by commas; a value
is read by :func:`parse_value` (int, float, bool, None, a tuple ``a:b``, else the text). The
text a user wrote is the agent's identity: it is the agent's row in a table, its key in a run
folder's records and ``meta.json``, so ``str(spec)`` gives it back unchanged
(:attr:`AgentSpec.label`); a spec built in code (:meth:`AgentSpec.learned`) gets the canonical
text, which :meth:`AgentSpec.parse` reads back to an equal spec.

This module is the only place that knows the syntax; everything else asks an
:class:`AgentSpec`. It imports nothing of schedgym, so every layer can use it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Learned-agent prefixes: exactly the algorithms ``schedgym train`` trains.
SB3_ALGOS: tuple[str, ...] = ("ppo", "a2c", "sac", "td3")


@dataclass(frozen=True)
class LearnedOption:
    """One option of a learned agent spec: its ``default``, the values it accepts (``check``)
    and how an error message names them (``allowed``)."""

    default: Any
    allowed: str
    check: Callable[[Any], bool]


#: The options a learned agent spec takes (``ALGO:path.zip[key=value]``), in the order an error
#: message lists them. ``deterministic``: play the policy's mode (True) or its sampled actions
#: (False, seeded by the episode seed; :class:`~schedgym.agents.played.PlayedPolicy`); not
#: given (None): the play recorded at training (the model's ``play``; the mode when there is no
#: record). ``trusted``: the user vouches for the file, so a zip without schedgym's plain-JSON
#: record may be loaded by SB3, which unpickles (runs) the objects saved in it. A new option is
#: one entry here and its use in :func:`schedgym.agents.learned.make_learned`.
LEARNED_OPTIONS: dict[str, LearnedOption] = {
    "deterministic": LearnedOption(None, "true or false",
                                   lambda v: v is None or isinstance(v, bool)),
    "trusted": LearnedOption(False, "true or false", lambda v: isinstance(v, bool)),
}


def parse_value(text: str) -> Any:
    """Parse a command-line value: int, float, bool, None, a tuple ``(a, b)``/``[a, b]``/``a:b``
    (a list is read as a tuple: what ``--set time_window=[0,86400]`` means), or str."""
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    bracketed = any(text.startswith(a) and text.endswith(b) for a, b in ("()", "[]"))
    if bracketed or ":" in text and "/" not in text:
        parts = (text[1:-1] if bracketed else text).replace(":", ",").split(",")
        return tuple(parse_value(p.strip()) for p in parts if p.strip())
    return text


def format_value(value: Any) -> str:
    """The text :func:`parse_value` reads back as ``value`` (bools ``true``/``false``, ``None``
    ``none``, tuples ``a:b``), for the canonical text of a spec built in code."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "none"
    if isinstance(value, tuple):
        return ":".join(format_value(v) for v in value)
    return repr(value) if isinstance(value, float) else str(value)


def _learned_parts(name: str) -> tuple[str, str] | None:
    """``(algo, path)`` of a learned agent's name ``ALGO:path`` (algo lower-cased), else None."""
    algo, colon, path = name.partition(":")
    return (algo.lower(), path) if colon and algo.lower() in SB3_ALGOS else None


@dataclass(frozen=True)
class AgentSpec:
    """One agent as a command names it (see the module docstring).

    ``name``: the text before the options, as written (a registered name such as ``ogasched``,
    or ``ALGO:path``); ``options``: the ``(key, value)`` pairs of ``[...]`` in the order written
    (:attr:`kwargs` as a dict, a later key winning); ``label``: the whole text, as written
    (``str(spec)``). Derived: :attr:`is_learned`, :attr:`algo` and :attr:`path` (learned agents
    only, else None) and :attr:`key` (the registry's lower-cased name).
    """

    name: str
    options: tuple[tuple[str, Any], ...] = ()
    label: str = field(default="")

    def __post_init__(self) -> None:
        if not self.label:
            text = ",".join(f"{k}={format_value(v)}" for k, v in self.options)
            object.__setattr__(self, "label", f"{self.name}[{text}]" if text else self.name)

    # -- building ------------------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str | AgentSpec) -> AgentSpec:
        """The spec of ``text`` (an :class:`AgentSpec` is returned as it is); ``ValueError``
        naming the spec when its options are not ``[key=value,...]`` at the end. Each text is
        parsed once per process (the specs are immutable, so they are shared)."""
        if isinstance(text, AgentSpec):
            return text
        return _parse(str(text).strip())

    @classmethod
    def of(cls, name: str | AgentSpec, options: Mapping[str, Any] | None = None) -> AgentSpec:
        """The spec of an agent name and keyword options, as ``agents.make(name, env, **kw)``
        takes them: ``name`` is used as it is (no ``[...]`` is read from it), ``options`` are
        added after any a given spec has."""
        extra = tuple((options or {}).items())
        if not isinstance(name, AgentSpec):
            _check_algo(str(name))
        if isinstance(name, AgentSpec):
            return name if not extra else cls(name.name, name.options + extra)
        return cls(str(name), extra, str(name) if not extra else "")

    @classmethod
    def learned(cls, algo: str, path: str | Path, **options: Any) -> AgentSpec:
        """The spec of the SB3 model ``path`` trained with ``algo``, with ``options``
        (e.g. ``deterministic=False``), in its canonical text."""
        return cls(f"{algo}:{path}", tuple(options.items()))

    # -- reading -------------------------------------------------------------------------------
    @property
    def is_learned(self) -> bool:
        """True for a saved SB3 model ``ALGO:path``; False for a classical agent's name."""
        return _learned_parts(self.name) is not None

    @property
    def algo(self) -> str | None:
        """The SB3 algorithm of a learned agent, lower-cased (None for a classical agent)."""
        parts = _learned_parts(self.name)
        return None if parts is None else parts[0]

    @property
    def path(self) -> str | None:
        """The model file of a learned agent, as written (None for a classical agent)."""
        parts = _learned_parts(self.name)
        return None if parts is None else parts[1]

    @property
    def key(self) -> str:
        """The name the registry files the agent under (lower-cased)."""
        return self.name.lower()

    @property
    def kwargs(self) -> dict[str, Any]:
        """The options as keyword arguments (a key given twice: the later value)."""
        return dict(self.options)

    def learned_options(self) -> dict[str, Any]:
        """Every option of :data:`LEARNED_OPTIONS` for this learned spec: the value given or
        the default. ``ValueError`` naming the spec for an unknown option or a value that
        option does not take, before any model is loaded."""
        given = self.kwargs
        unknown = sorted(set(given) - set(LEARNED_OPTIONS))
        if unknown:
            listed = ", ".join(f"{k}={'the recorded play' if o.default is None else o.default}"
                               for k, o in LEARNED_OPTIONS.items())
            raise ValueError(f"learned agent {self.name!r} has no option {', '.join(unknown)}: "
                             f"its options (with defaults) are {listed}")
        out = {}
        for key, opt in LEARNED_OPTIONS.items():
            value = given.get(key, opt.default)
            if not opt.check(value):
                raise ValueError(f"learned agent {self.name!r}: {key}={value!r} is invalid: "
                                 f"must be {opt.allowed}")
            out[key] = value
        return out

    def short_label(self) -> str:
        """The label with a learned agent's path cut to its folder and file,
        ``ALGO:…/run/model.zip[opts]`` (paths of fewer than three parts, and classical agents,
        unchanged): the full path stays in the files, the table stays readable."""
        head, bracket, opts = self.label.partition("[")
        algo, _, path = head.partition(":")
        parts = Path(path).parts
        if not self.is_learned or len(parts) <= 2:
            return self.label
        return f"{algo}:…/{parts[-2]}/{parts[-1]}{bracket}{opts}"

    def __str__(self) -> str:
        return self.label


@functools.lru_cache(maxsize=1024)
def _parse(text: str) -> AgentSpec:
    """:meth:`AgentSpec.parse` of stripped text (cached: a failing text raises every time)."""
    _check_algo(text.partition("[")[0].strip())
    if "[" not in text:
        return AgentSpec(text, (), text)
    if not text.endswith("]"):
        raise ValueError(f"agent={text!r} is invalid: options must be written "
                         "name[key=value,...]")
    name, _, body = text[:-1].partition("[")
    options: list[tuple[str, Any]] = []
    for item in filter(None, (s.strip() for s in body.split(","))):
        key, eq, val = item.partition("=")
        if not eq:
            raise ValueError(f"agent={text!r} is invalid: option {item!r} is not key=value")
        if key.strip() in (k for k, _ in options):
            raise ValueError(f"agent={text!r} is invalid: option {key.strip()!r} is given "
                             "twice; give each option once")
        options.append((key.strip(), parse_value(val.strip())))
    return AgentSpec(name.strip(), tuple(options), text)


def _check_algo(name: str) -> None:
    """A name ``X:path`` is a learned agent: ``X`` must be one of :data:`SB3_ALGOS` (one line
    naming it; no classical agent has a ``:`` in its name)."""
    algo, colon, path = name.partition(":")
    if colon and algo.lower() not in SB3_ALGOS:
        raise ValueError(f"agent={name!r} is invalid: {algo!r} is not a learning algorithm; a "
                         f"learned agent is ALGO:{path or 'path.zip'} with ALGO one of "
                         f"{', '.join(SB3_ALGOS)}")


def is_learned(spec: str | AgentSpec) -> bool:
    """True for a learned agent spec (``ppo:path.zip`` and the like), False for a classical one."""
    return AgentSpec.parse(spec).is_learned


def split_specs(text: str) -> list[str]:
    """Split a comma-separated agent list ``a,b[x=1,y=2],c`` at top-level commas only (the
    specs' own text, stripped; ``ValueError`` when there is none)."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += ch == "["
        depth -= ch == "]"
        cur += ch
    out.append(cur)
    specs = [s.strip() for s in out if s.strip()]
    if not specs:
        raise ValueError(f"agents={text!r} is invalid: give at least one agent name")
    return specs
