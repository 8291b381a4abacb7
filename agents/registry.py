"""Build any agent by name: ``agents.make(name, env, **kw)``.

Classical agents register themselves with :func:`register`; learned agents are loaded from a
Stable-Baselines3 zip with ``"ALGO:path/to/model.zip"`` (``ppo``, ``a2c``, ``sac``, ``td3``: the
algorithms ``schedgym train`` trains; :mod:`schedgym.agents.learned`). ``env`` may be a plain
env, a wrapped env or a vector env (see :func:`schedgym.agents.base.unwrap_env`). An agent is
named by a spec (:class:`~schedgym.agents.spec.AgentSpec`); the functions here take one or its
text.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from schedgym.agents.base import env_id_of
from schedgym.agents.learned import load_learned, make_learned
from schedgym.agents.record import learned_env_kwargs
from schedgym.agents.spec import SB3_ALGOS, AgentSpec

__all__ = ["SB3_ALGOS", "agent_options", "is_benchmark", "load_learned", "make",
           "mode_kwargs", "names", "names_for", "play_kwargs", "register", "supported_envs"]

_REGISTRY: dict[str, str] = {}
#: Which env ids each agent supports (None = every env).
_SUPPORTS: dict[str, tuple[str, ...] | None] = {}
#: Agents that see hidden information (e.g. true means): references for regret, not competitors.
_BENCHMARKS: set[str] = set()

def register(name: str, entry_point: str, envs: tuple[str, ...] | None = None,
             benchmark: bool = False) -> None:
    """Register ``name`` -> ``"module:Class"`` (imported lazily). ``envs``: supported env ids;
    ``benchmark``: the agent sees hidden information (an oracle), so it is a reference for
    regret, never "the best classical agent"."""
    _REGISTRY[name] = entry_point
    _SUPPORTS[name] = envs
    if benchmark:
        _BENCHMARKS.add(name)


def is_benchmark(spec: str | AgentSpec) -> bool:
    """True for a clairvoyant reference agent (e.g. FluctuatingSpeed's ``oracle``), with or
    without ``[options]``."""
    return AgentSpec.parse(spec).key in _BENCHMARKS


def names() -> list[str]:
    """Every registered classical agent name."""
    return sorted(_REGISTRY)


def names_for(env_id: str) -> list[str]:
    """The agents that support ``env_id``, in registration order (the paper's algorithm first,
    agents for every env last)."""
    own = [n for n, sup in _SUPPORTS.items() if sup is not None and env_id in sup]
    return own + [n for n, sup in _SUPPORTS.items() if sup is None]


def supported_envs(name: str) -> tuple[str, ...] | None:
    """The env ids ``name`` supports (None: every env)."""
    return _SUPPORTS.get(name)


def _load(entry: str) -> Any:
    mod, _, cls = entry.partition(":")
    return getattr(importlib.import_module(mod), cls)


def agent_options(name: str) -> dict[str, Any]:
    """``{option: default}`` of the classical agent ``name``'s constructor (``inspect.Parameter
    .empty`` for a required one)."""
    cls = _load(_REGISTRY[name.lower()])
    out: dict[str, Any] = {}
    for klass in cls.__mro__:  # follow **kwargs up to the base classes
        if "__init__" not in vars(klass):
            continue
        params = list(inspect.signature(klass.__init__).parameters.values())[2:]  # self, env
        for p in params:
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                out.setdefault(p.name, p.default)
        if not any(p.kind == p.VAR_KEYWORD for p in params):
            break
    return out


def play_kwargs(spec: str | AgentSpec, env_id: str) -> dict[str, Any]:
    """The env kwargs the classical agent ``spec`` (``name`` or ``name[options]``) plays in on
    ``env_id``: ``{"action_mode": mode}`` for an agent whose class names its mode there
    (``play_modes``, e.g. ``fixed-price``), else ``{}`` (the default mode)."""
    name = AgentSpec.parse(spec).key
    if name not in _REGISTRY:
        return {}
    mode = getattr(_load(_REGISTRY[name]), "play_modes", {}).get(env_id)
    return {} if mode is None else {"action_mode": mode}


def mode_kwargs(spec: str | AgentSpec, env_id: str) -> dict[str, Any]:
    """The ``gym.make`` kwargs of the mode ``spec`` plays in on ``env_id``: a learned agent's
    own, from its run record (:func:`~schedgym.agents.record.learned_env_kwargs`), else a
    classical agent's (:func:`play_kwargs`; ``{}`` for the default mode)."""
    return learned_env_kwargs(spec, env_id) or play_kwargs(spec, env_id)


def _check_options(key: str, kwargs: dict[str, Any]) -> None:
    opts = agent_options(key)
    unknown = sorted(set(kwargs) - set(opts))
    if unknown:
        listed = ", ".join(f"{k}={v!r}" if v is not inspect.Parameter.empty else k
                           for k, v in opts.items()) or "none"
        raise ValueError(f"agent {key!r} has no option {', '.join(unknown)}: its options "
                         f"(with defaults) are {listed}")


def make(name: str | AgentSpec, env: Any, **kwargs: Any) -> Any:
    """Build the agent ``name`` for ``env`` (classical) or load ``"ALGO:path.zip"`` (learned),
    with the options ``kwargs``. ``name`` is a registered name or ``ALGO:path.zip`` (no
    ``[...]``: pass options as keyword arguments), or an
    :class:`~schedgym.agents.spec.AgentSpec` (its options and ``kwargs`` both apply).

    Unknown names, unknown options and envs the agent does not support raise ``ValueError``
    saying what is allowed.
    """
    spec = AgentSpec.of(name, kwargs)
    if spec.is_learned:
        return make_learned(spec, env)
    key = spec.key
    if key not in _REGISTRY:
        raise ValueError(
            f"agent={spec.name!r} is invalid: must be one of {', '.join(names())}, or "
            f"ALGO:path.zip with ALGO in {', '.join(SB3_ALGOS)}"
        )
    env_id = env_id_of(env)
    sup = _SUPPORTS[key]
    if sup is not None and env_id is not None and env_id not in sup:
        raise ValueError(f"agent={spec.name!r} does not support env {env_id!r}: it supports "
                         f"{', '.join(sup)}")
    options = spec.kwargs
    _check_options(key, options)
    return _load(_REGISTRY[key])(env, **options)
