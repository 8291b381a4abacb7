"""One entry point to the per-problem offline solvers (hindsight optimum, oracle, OPT).

Each problem registers a function ``solver(env) -> dict[str, float]`` that receives the
**unwrapped** env right after ``reset(seed)`` — every exogenous random quantity of the episode
(arrivals, realised utilities, jobs) is pre-drawn then, so the solver reads the whole episode
from the env and the instance — and returns named benchmark values for the full episode, e.g.
``{"hindsight_optimum": Q*}``. ``schedgym compare`` calls :func:`episode_benchmarks` once per
seed and reports, for each returned value ``V``, every agent's gap ``V - return`` (regret) and
ratio ``V / return`` on that seed.

A solver that cannot compute a value at the episode's size raises
:class:`~schedgym.core.limits.NotComputed` (a ``ValueError``; re-exported here) with a one-line
reason; ``schedgym compare`` then reports that value as not computed.

Solvers may need scipy (installed with the ``train`` or ``agents`` extras); the environments
themselves never do.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from schedgym.core.limits import NotComputed

__all__ = ["NotComputed", "episode_benchmarks", "register", "solver_for"]

#: env class name -> "module:function"
_SOLVERS: dict[str, str] = {
    "GainOverheadEnv": "schedgym.envs.gain_overhead.offline:episode_benchmarks",
    "FluctuatingSpeedEnv": "schedgym.envs.fluctuating_speed.offline:episode_benchmarks",
    "DeadlineWelfareEnv": "schedgym.envs.deadline_welfare.offline:episode_benchmarks",
}


def register(env_class_name: str, entry_point: str) -> None:
    """Register the offline solver of an env class (``"module:function"``)."""
    _SOLVERS[env_class_name] = entry_point


def solver_for(env: Any) -> Callable[[Any], dict[str, float]] | None:
    """The registered solver of ``env`` (wrapped or not), or ``None``."""
    env = getattr(env, "unwrapped", env)
    entry = _SOLVERS.get(type(env).__name__)
    if entry is None:
        return None
    mod, _, fn = entry.partition(":")
    return getattr(importlib.import_module(mod), fn)  # every registered module ships


def episode_benchmarks(env: Any) -> dict[str, float]:
    """Offline benchmark values of the episode just played in ``env`` ({} if none)."""
    fn = solver_for(env)
    return {} if fn is None else dict(fn(getattr(env, "unwrapped", env)))
