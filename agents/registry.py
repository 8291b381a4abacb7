"""Build any agent by name: ``agents.make(name, env, **kw)``.

Classical agents register themselves with :func:`register`; learned agents are loaded from a
Stable-Baselines3 zip with ``"ALGO:path/to/model.zip"`` (``ppo``, ``a2c``, ``sac``, ``td3``: the
algorithms ``schedgym train`` trains). ``env`` may be a plain env, a wrapped env or a vector env
(see :func:`schedgym.agents.base.unwrap_env`).
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from typing import Any

_REGISTRY: dict[str, str] = {}
#: Which env ids each agent supports (None = every env).
_SUPPORTS: dict[str, tuple[str, ...] | None] = {}
#: Agents that see hidden information (e.g. true means): references for regret, not competitors.
_BENCHMARKS: set[str] = set()

#: Learned-agent prefixes: exactly the algorithms ``schedgym train`` accepts.
SB3_ALGOS = ("ppo", "a2c", "sac", "td3")


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


def play_kwargs(spec: str, env_id: str) -> dict[str, Any]:
    """The env kwargs the classical agent ``spec`` (``name`` or ``name[options]``) plays in on
    ``env_id``: ``{"action_mode": mode}`` for an agent whose class names its mode there
    (``play_modes``, e.g. ``fixed-price``), else ``{}`` (the default mode)."""
    name = spec.split("[", 1)[0].strip().lower()
    if name not in _REGISTRY:
        return {}
    mode = getattr(_load(_REGISTRY[name]), "play_modes", {}).get(env_id)
    return {} if mode is None else {"action_mode": mode}


def load_learned(spec: str, env: Any = None) -> Any:
    """Load an SB3 model from ``"ALGO:path.zip"`` for ``env``; returns the model (it has
    ``predict``).

    With ``env`` given, the model is checked against it before anything is played (one-line
    ``ValueError``): the env id of the ``run.json`` beside the model, when there is one, must be
    the env's; a model whose policy is :class:`~schedgym.train.policies.EntityPolicy` (shared
    weights, issue 24) is rebuilt with the env's own spaces, so it plays every instance size,
    provided the env is in ``obs_mode="entities"`` with the same entity/context features and an
    action of the same layout; any other model needs exactly the observation and action spaces
    it was trained on.

    SB3 zips hold pickled Python objects, which run code when loaded: load only model files
    from a trusted source.
    """
    algo, _, path = spec.partition(":")
    algo = algo.lower()
    if algo not in SB3_ALGOS:
        raise ValueError(f"agent={spec!r} is invalid: learned agents are ALGO:path.zip with ALGO "
                         f"one of {', '.join(SB3_ALGOS)}")
    if not path or not Path(path).is_file():
        raise ValueError(f"agent={spec!r} is invalid: model file {path!r} does not exist")
    import stable_baselines3 as sb3

    cls = getattr(sb3, algo.upper())
    if env is None:
        return cls.load(path, device="cpu")
    from schedgym.agents.learned import fit_spaces

    return cls.load(path, device="cpu", custom_objects=fit_spaces(spec, path, env))


def _env_id(env: Any) -> str | None:
    from schedgym.agents.base import unwrap_env

    spec = getattr(env, "spec", None)
    if spec is None:
        spec = getattr(unwrap_env(env)[0], "spec", None)
    return getattr(spec, "id", None)


def _check_options(key: str, kwargs: dict[str, Any]) -> None:
    opts = agent_options(key)
    unknown = sorted(set(kwargs) - set(opts))
    if unknown:
        listed = ", ".join(f"{k}={v!r}" if v is not inspect.Parameter.empty else k
                           for k, v in opts.items()) or "none"
        raise ValueError(f"agent {key!r} has no option {', '.join(unknown)}: its options "
                         f"(with defaults) are {listed}")


def make(name: str, env: Any, **kwargs: Any) -> Any:
    """Build the agent ``name`` for ``env`` (classical) or load ``"ALGO:path.zip"`` (learned).

    Unknown names, unknown options and envs the agent does not support raise ``ValueError``
    saying what is allowed.
    """
    if ":" in name and name.split(":", 1)[0].lower() in SB3_ALGOS:
        from schedgym.agents.played import StochasticModel, deterministic_option

        deterministic = deterministic_option(name, kwargs)  # checked before loading
        model = load_learned(name, env)
        return model if deterministic else StochasticModel(model)
    key = name.lower()
    if key not in _REGISTRY:
        raise ValueError(
            f"agent={name!r} is invalid: must be one of {', '.join(names())}, or ALGO:path.zip "
            f"with ALGO in {', '.join(SB3_ALGOS)}"
        )
    env_id = _env_id(env)
    sup = _SUPPORTS[key]
    if sup is not None and env_id is not None and env_id not in sup:
        raise ValueError(f"agent={name!r} does not support env {env_id!r}: it supports "
                         f"{', '.join(sup)}")
    _check_options(key, kwargs)
    return _load(_REGISTRY[key])(env, **kwargs)
