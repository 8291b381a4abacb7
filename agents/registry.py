"""Build any agent by name: ``agents.make(name, env, **kw)``.

Classical agents register themselves with :func:`register`; learned agents are loaded from a
Stable-Baselines3 zip with ``"ALGO:path/to/model.zip"`` (``ppo``, ``sac``, ``td3``, ``a2c``,
``dqn``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

_REGISTRY: dict[str, str] = {}
#: Which env ids each agent supports (None = every env).
_SUPPORTS: dict[str, tuple[str, ...] | None] = {}
#: Agents that see hidden information (e.g. true means): references for regret, not competitors.
_BENCHMARKS: set[str] = set()

SB3_ALGOS = ("ppo", "sac", "td3", "a2c", "dqn", "ddpg")


def register(name: str, entry_point: str, envs: tuple[str, ...] | None = None,
             benchmark: bool = False) -> None:
    """Register ``name`` -> ``"module:Class"`` (imported lazily). ``envs``: supported env ids;
    ``benchmark``: the agent sees hidden information (an oracle), so it is a reference for
    regret, never "the best classical agent"."""
    _REGISTRY[name] = entry_point
    _SUPPORTS[name] = envs
    if benchmark:
        _BENCHMARKS.add(name)


def is_benchmark(spec: str) -> bool:
    """True for a clairvoyant reference agent (e.g. FluctuatingSpeed's ``oracle``), with or
    without ``[options]``."""
    return spec.split("[", 1)[0].strip().lower() in _BENCHMARKS


def names() -> list[str]:
    """Every registered classical agent name."""
    return sorted(_REGISTRY)


def supported_envs(name: str) -> tuple[str, ...] | None:
    return _SUPPORTS.get(name)


def _load(entry: str) -> Callable[..., Any]:
    mod, _, cls = entry.partition(":")
    return getattr(importlib.import_module(mod), cls)


def load_learned(spec: str, env: Any = None) -> Any:
    """Load an SB3 model from ``"ALGO:path.zip"``; returns the model (it has ``predict``)."""
    algo, _, path = spec.partition(":")
    algo = algo.lower()
    if algo not in SB3_ALGOS:
        raise ValueError(f"agent={spec!r} is invalid: learned agents are ALGO:path.zip with ALGO "
                         f"one of {', '.join(SB3_ALGOS)}")
    if not path or not Path(path).is_file():
        raise ValueError(f"agent={spec!r} is invalid: model file {path!r} does not exist")
    import stable_baselines3 as sb3

    cls = getattr(sb3, algo.upper())
    return cls.load(path, device="cpu")


def make(name: str, env: Any, **kwargs: Any) -> Any:
    """Build the agent ``name`` for ``env`` (classical) or load ``"ALGO:path.zip"`` (learned)."""
    if ":" in name and name.split(":", 1)[0].lower() in SB3_ALGOS:
        if kwargs:
            raise ValueError(f"learned agent {name!r} takes no keyword arguments, got "
                             f"{sorted(kwargs)}")
        return load_learned(name, env)
    key = name.lower()
    if key not in _REGISTRY:
        raise ValueError(
            f"agent={name!r} is invalid: must be one of {', '.join(names())}, or ALGO:path.zip "
            f"with ALGO in {', '.join(SB3_ALGOS)}"
        )
    env_id = getattr(getattr(env, "spec", None), "id", None)
    sup = _SUPPORTS[key]
    if sup is not None and env_id is not None and env_id not in sup:
        raise ValueError(f"agent={name!r} does not support env {env_id!r}: it supports "
                         f"{', '.join(sup)}")
    return _load(_REGISTRY[key])(env, **kwargs)
