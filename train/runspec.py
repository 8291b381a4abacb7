"""The run description of a ``compare`` or ``reproduce`` run: :class:`RunSpec`.

A spec is what flows from the command (``compare``, ``reproduce``) through the sweep engine
(:func:`schedgym.train.sweep.plan`) to the backend's tasks, and what the run folder keeps as
``meta.json`` (:meth:`RunSpec.to_json` / :meth:`RunSpec.from_json`), so that a run can be
reported and resumed from its folder alone. Override values are kept as given: a spec built
from the command line may hold tuples (``beta_range=(0.4, 0.6)``) where one read from
``meta.json`` holds lists; :func:`schedgym.train.sweep.tuples` turns either into what the
command line parsed, so both plan the same tasks.

``meta.json`` keeps the keys the previous, untyped description had, in the same order, so run
folders written before this class existed resume unchanged. :meth:`RunSpec.from_json` checks
every field and raises :class:`RunSpecError`, a ``ValueError`` whose text names the field (the
store adds the file: one line at the command line).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: the commands that write a run folder
COMMANDS = ("compare", "reproduce")
#: keys every ``meta.json`` has
REQUIRED = ("command", "env_id", "agents", "seeds", "instance_seeds", "settings")


class RunSpecError(ValueError):
    """A ``meta.json`` that is no run description; the text says which field and why."""


@dataclass(frozen=True)
class Setting:
    """One setting of a run: its env ``overrides`` (the run's, plus a swept value). ``compare``
    has one setting named ``""``; ``reproduce`` one per swept value, with ``sweep`` (the sweep's
    label, ``"-"`` without sweeps), ``parameter`` (``"-"`` without sweeps), ``value`` (the
    swept value, ``None`` without sweeps) and ``index`` (its position in the sweep)."""

    name: str
    overrides: dict[str, Any] = field(default_factory=dict)
    sweep: str | None = None
    parameter: str | None = None
    value: Any = None
    index: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON object of ``meta.json``'s ``settings`` list."""
        if self.sweep is None:
            return {"name": self.name, "overrides": self.overrides}
        return {"name": self.name, "sweep": self.sweep, "parameter": self.parameter,
                "value": self.value, "index": self.index, "overrides": self.overrides}

    @classmethod
    def from_json(cls, obj: Any, where: str = "a setting") -> Setting:
        """The setting of a JSON object; :class:`RunSpecError` naming ``where`` if it is none."""
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            raise RunSpecError(f"{where} is not an object with a 'name' string")
        overrides = obj.get("overrides") or {}
        if not isinstance(overrides, dict):
            raise RunSpecError(f"{where} has overrides that are not an object")
        if "sweep" not in obj:
            return cls(obj["name"], overrides)
        for key in ("sweep", "parameter"):
            if not isinstance(obj.get(key), str):
                raise RunSpecError(f"{where}: {key!r} is not a string")
        if not _is_int(obj.get("index")):
            raise RunSpecError(f"{where}: 'index' is not an integer")
        return cls(obj["name"], overrides, obj["sweep"], obj["parameter"], obj.get("value"),
                   obj["index"])


@dataclass(frozen=True)
class RunSpec:
    """What a ``compare`` or ``reproduce`` run plays (every field is a ``meta.json`` key).

    ``command``: ``"compare"`` or ``"reproduce"``; ``env_id``: registered env id;
    ``scenario``: scenario name (``None``: the paper default); ``overrides``: the command
    line's env overrides (every setting has them); ``agents``: agent specs, in table order;
    ``seeds``, ``instance_seeds``: episode and instance seeds (every agent plays every pair);
    ``settings``: see :class:`Setting`; ``benchmarks``: also run the offline benchmark of every
    episode. ``compare`` only: ``agent_env_kwargs`` (agent spec -> the mode kwargs it plays in),
    ``reference`` (the agent of the ratios, ``None``: the best classical one),
    ``record_steps`` (keep every step's scalars, for ``--tensorboard``). ``reproduce`` only:
    ``experiment`` (the experiment YAML, checked; ``{}`` for ``compare``) and ``cmdline`` (the
    command that made it).
    """

    command: str
    env_id: str
    agents: tuple[str, ...]
    seeds: tuple[int, ...]
    instance_seeds: tuple[int, ...]
    settings: tuple[Setting, ...]
    scenario: str | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    benchmarks: bool = False
    agent_env_kwargs: dict[str, dict[str, Any]] = field(default_factory=dict)
    reference: str | None = None
    record_steps: bool = False
    experiment: dict[str, Any] = field(default_factory=dict)
    cmdline: str = ""

    @property
    def is_reproduce(self) -> bool:
        """True for a ``reproduce`` run (it has an ``experiment``)."""
        return self.command == "reproduce"

    def to_json(self) -> dict[str, Any]:
        """The JSON object of ``meta.json`` (the keys and their order of each command's
        previous format; :meth:`from_json` reads it back to an equal spec)."""
        settings = [s.to_json() for s in self.settings]
        if self.is_reproduce:
            return {"command": self.command, "experiment": self.experiment,
                    "cmdline": self.cmdline, "env_id": self.env_id, "scenario": self.scenario,
                    "agents": list(self.agents), "seeds": list(self.seeds),
                    "instance_seeds": list(self.instance_seeds), "overrides": self.overrides,
                    "benchmarks": self.benchmarks, "settings": settings}
        return {"command": self.command, "env_id": self.env_id, "scenario": self.scenario,
                "overrides": self.overrides, "agents": list(self.agents),
                "agent_env_kwargs": self.agent_env_kwargs, "seeds": list(self.seeds),
                "instance_seeds": list(self.instance_seeds), "benchmarks": self.benchmarks,
                "reference": self.reference, "record_steps": self.record_steps,
                "settings": settings}

    @classmethod
    def from_json(cls, obj: Any) -> RunSpec:
        """The spec of a parsed ``meta.json``. Keys the previous format could leave out get
        their defaults; :class:`RunSpecError` (its text names the field) if ``obj`` is no run
        description."""
        if not isinstance(obj, dict):
            raise RunSpecError(f"a JSON {type(obj).__name__}, not an object")
        missing = [k for k in REQUIRED if k not in obj]
        if missing:
            raise RunSpecError("no " + ", ".join(repr(k) for k in missing))
        command = obj["command"]
        if command not in COMMANDS:
            raise RunSpecError(f"'command' is {command!r}, not one of {', '.join(COMMANDS)}")
        if not isinstance(obj["env_id"], str):
            raise RunSpecError("'env_id' is not a str")
        settings = obj["settings"]
        if not isinstance(settings, list):
            raise RunSpecError("'settings' is not a list of dict")
        experiment = obj.get("experiment")
        if command == "reproduce" and not isinstance(experiment, dict):
            raise RunSpecError("a reproduce run without its 'experiment'")
        return cls(
            command=command, env_id=obj["env_id"],
            agents=_list_of(obj, "agents", str), seeds=_list_of(obj, "seeds", int),
            instance_seeds=_list_of(obj, "instance_seeds", int),
            settings=tuple(Setting.from_json(s, f"settings[{i}]")
                           for i, s in enumerate(settings)),
            scenario=_optional(obj, "scenario", str, "a string"),
            overrides=_object(obj, "overrides"),
            benchmarks=_flag(obj, "benchmarks"),
            agent_env_kwargs=_agent_env_kwargs(obj),
            reference=_optional(obj, "reference", str, "a string"),
            record_steps=_flag(obj, "record_steps"),
            experiment=experiment if isinstance(experiment, dict) else {},
            cmdline=_optional(obj, "cmdline", str, "a string") or "")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _list_of(obj: Mapping[str, Any], key: str, elem: type) -> tuple[Any, ...]:
    val = obj[key]
    ok = _is_int if elem is int else (lambda x: isinstance(x, elem))
    if not isinstance(val, list) or not all(ok(x) for x in val):
        raise RunSpecError(f"{key!r} is not a list of {elem.__name__}")
    return tuple(val)


def _optional(obj: Mapping[str, Any], key: str, typ: type, what: str) -> Any:
    val = obj.get(key)
    if val is not None and not isinstance(val, typ):
        raise RunSpecError(f"{key!r} is not {what}")
    return val


def _object(obj: Mapping[str, Any], key: str) -> dict[str, Any]:
    val = obj.get(key) or {}
    if not isinstance(val, dict):
        raise RunSpecError(f"{key!r} is not an object")
    return val


def _flag(obj: Mapping[str, Any], key: str) -> bool:
    val = obj.get(key, False)
    if not isinstance(val, bool):
        raise RunSpecError(f"{key!r} is not true or false")
    return val


def _agent_env_kwargs(obj: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    val = _object(obj, "agent_env_kwargs")
    if not all(isinstance(v, dict) for v in val.values()):
        raise RunSpecError("'agent_env_kwargs' is not an object of objects")
    return val

