"""Scenarios and the synthetic instance generator of GainOverhead-v0 (OgaSched problem).

The trace-driven scenario ``alibaba-gpu-2023`` is built in :mod:`.trace` and registers itself in
:data:`SCENARIOS` when the package is imported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from schedgym.core import rng as rngs
from schedgym.core.resources import resource_names
from schedgym.core.scenarios import ScenarioRegistry
from schedgym.core.utilities import FAMILIES
from schedgym.envs.gain_overhead.types import (
    DENSITY_DEGREES,
    GainOverheadInstance,
    GainOverheadParams,
)

#: Synthetic capacity ranges per resource type, numpy ``integers(lo, hi)`` (hi exclusive), from the
#: authors' code (OgaSched §6.1). Requests are contention x U[lo, hi].
CAPACITY_RANGES: tuple[tuple[int, int], ...] = ((1, 128), (2, 512), (0, 64), (0, 8), (0, 8), (0, 4))

#: Every generator parameter with its paper-default value (OgaSched Table 2).
DEFAULTS: dict[str, Any] = GainOverheadParams().as_dict()

SCENARIOS = ScenarioRegistry("GainOverhead-v0", DEFAULTS)
SCENARIOS.register(
    "paper-default", {}, "OgaSched Table 2: L=10, R=128, K=6, T=2000, rho=0.7, contention 10, "
    "beta in [0.3, 0.5], all-linear utilities, density ~2.5, synthetic capacities",
)
SCENARIOS.register(
    "paper-headline",
    {"horizon": 8000, "beta_range": (0.4, 0.6), "contention": 11.0},
    "OgaSched Fig. 2 (headline numbers): T=8000, beta in [0.4, 0.6], contention 11",
)
SCENARIOS.register(
    "large-scale",
    {"n_types": 100, "n_instances": 1024, "horizon": 10000, "beta_range": (0.01, 0.015),
     "contention": 5.0},
    "OgaSched Fig. 5: L=100, R=1024, T=10000, beta in [0.01, 0.015], contention 5",
)


def validate_params(params: Mapping[str, Any] | GainOverheadParams) -> GainOverheadParams:
    """The typed, validated parameters from a dict of generator parameters (extra keys, e.g. a
    trace scenario's own, are ignored)."""
    if isinstance(params, GainOverheadParams):
        return params
    return GainOverheadParams(**{k: v for k, v in params.items() if k in DEFAULTS})


def _random_graph(rng: np.random.Generator, L: int, R: int, choices: tuple[int, ...]) -> np.ndarray:
    """Each instance draws ``|L_r|`` from ``choices`` and that many distinct types; re-draw until
    every type has an instance (OgaSched §6.1). Returns the edges ``(E, 2)`` in lexicographic
    ``(l, r)`` order, built from the draws alone (``O(E)`` memory: no dense ``(L, R)`` mask)."""
    if max(min(d, L) for d in choices) * R < L:
        raise ValueError(
            f"n_types={L} cannot be covered by n_instances={R} with degrees {choices}: "
            "raise n_instances or the degrees"
        )
    for _ in range(1000):
        deg = np.minimum(rng.choice(np.asarray(choices), size=R), L)
        types = np.concatenate([rng.choice(L, size=deg[r], replace=False) for r in range(R)])
        if np.bincount(types, minlength=L).all():
            instances = np.repeat(np.arange(R, dtype=np.int64), deg)
            order = np.lexsort((instances, types))
            return np.stack([types[order], instances[order]], axis=1).astype(np.int64)
    raise ValueError(
        f"could not draw a graph covering all n_types={L} with n_instances={R} and degrees "
        f"{choices} in 1000 tries: raise n_instances or the degrees"
    )


def generate(params: Mapping[str, Any] | GainOverheadParams,
             instance_seed: int) -> GainOverheadInstance:
    """The synthetic generator of the OgaSched experiments (§6.1, authors' code ranges).

    Independent named streams (``graph``, ``capacities``, ``requests``, ``alpha``, ``beta``,
    ``utility``) so that changing one parameter keeps every other draw of the instance fixed.
    """
    p = validate_params(params)
    L, R, K = p.n_types, p.n_instances, p.n_resources
    st = rngs.streams(instance_seed, "graph", "capacities", "requests", "alpha", "beta", "utility")
    choices = p.degree_choices or DENSITY_DEGREES[p.density]
    edges = _random_graph(st["graph"], L, R, choices)
    ranges = CAPACITY_RANGES[:K]
    caps = np.stack([st["capacities"].integers(lo, hi, size=R) for lo, hi in ranges], axis=1)
    base = np.stack([st["requests"].uniform(lo, hi, size=L) for lo, hi in ranges], axis=1)
    alpha = st["alpha"].uniform(*p.alpha_range, size=(R, K))
    beta = st["beta"].uniform(*p.beta_range, size=K)
    util = p.utility
    if isinstance(util, str) and util == "mixed":
        utility = np.asarray(FAMILIES)[st["utility"].integers(0, len(FAMILIES), size=(R, K))]
    elif isinstance(util, str):
        utility = np.full((R, K), util)
    else:
        utility = np.asarray(util)
    return GainOverheadInstance(
        edges=edges,
        requests=p.contention * base,
        capacities=caps.astype(np.float64),
        alpha=alpha,
        beta=beta,
        utility=utility,
        reciprocal_scale=p.reciprocal_scale,
        resource_names=resource_names(K),
    )
