"""Scenarios and the synthetic generator of FluctuatingSpeed-v0 (ESDP paper, §6 "Evaluation",
Table 3).

``SCENARIOS`` names the paper's settings (and the trace-driven ``alibaba-gpu-2023`` of
:mod:`schedgym.envs.fluctuating_speed.trace`); :func:`generate` draws an instance from
:class:`~schedgym.envs.fluctuating_speed.types.FluctuatingSpeedParams` and an instance seed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from schedgym.core import rng as rngs
from schedgym.core.resources import RESOURCE_NAMES
from schedgym.core.scenarios import ScenarioRegistry
from schedgym.envs.fluctuating_speed.types import (
    DEFAULTS,
    FluctuatingSpeedInstance,
    FluctuatingSpeedParams,
)

SCENARIOS = ScenarioRegistry("FluctuatingSpeed-v0", DEFAULTS)
SCENARIOS.register(
    "paper-default", {},
    "ESDP Table 3: |L|=8, |R|=40, K=3, edge prob 0.1, a in {1,2}, c = 3 x {1,2}, rho=0.9, "
    "Z ~ N(mu, (mu/2)^2) with mu ~ U(0.1, 1), cost 0.1 x sum_k N(0.5, 0.1^2), T=2000",
)
SCENARIOS.register(
    "paper-headline", {"horizon": 8000},
    "ESDP Figs. 2-4 (headline 'up to 73%, 36%, 28%'): paper-default with T=8000",
)
SCENARIOS.register(
    "literal-capacity", {"capacity_scale": 1},
    "Table 3 read literally: c_k in {1, 2} (kappa = 1; at most ~2 channels per slot)",
)


def as_params(params: FluctuatingSpeedParams | Mapping[str, Any]) -> FluctuatingSpeedParams:
    """``params`` itself, or a dict of parameter values validated into
    :class:`FluctuatingSpeedParams`."""
    if isinstance(params, FluctuatingSpeedParams):
        return params
    return FluctuatingSpeedParams.from_mapping(params)


def generate(params: FluctuatingSpeedParams | Mapping[str, Any],
             instance_seed: int) -> FluctuatingSpeedInstance:
    """The synthetic generator of ESDP §6 (Table 3).

    Every quantity is drawn on the full ``(L, R)`` grid (then restricted to the edges) from its
    own named stream (``graph``, ``fallback``, ``requests``, ``capacities``, ``means``,
    ``costs``), so a sweep over one parameter keeps every other draw fixed: e.g. raising
    ``edge_prob`` only adds edges (the graphs are nested) and keeps the old edges' parameters.
    A port left without edges gets one edge to a uniformly random server. Raises ``ValueError``
    when the estimated memory exceeds ``params.memory_limit_mb``.
    """
    p = as_params(params)
    p.check_memory()
    L, R, K = p.n_types, p.n_instances, p.n_resources
    st = rngs.streams(instance_seed, "graph", "fallback", "requests", "capacities")
    mask = st["graph"].random((L, R)) < p.edge_prob
    fallback = st["fallback"].integers(0, R, size=L)
    for l in range(L):
        if not mask[l].any():
            mask[l, fallback[l]] = True
    edges = np.argwhere(mask)  # row-major => lexicographic (l, r)
    el, er = edges[:, 0], edges[:, 1]
    a_lo, a_hi = p.request_range
    req = st["requests"].integers(a_lo, a_hi + 1, size=(K, L, R))[:, el, er]
    c_lo, c_hi = p.capacity_range
    cap = p.capacity_scale * st["capacities"].integers(c_lo, c_hi + 1, size=K)
    return with_edge_params(p, instance_seed, edges, req, cap, RESOURCE_NAMES[:K])


def with_edge_params(p: FluctuatingSpeedParams, instance_seed: int, edges: np.ndarray,
                     requests: np.ndarray, capacities: np.ndarray,
                     names: tuple[str, ...]) -> FluctuatingSpeedInstance:
    """Draw the paper's per-edge utility means and costs (streams ``means``, ``costs``, on the
    full ``(L, R)`` grid) and build the instance.

    Args:
        edges: int ``(E, 2)`` lexicographic ``(l, r)``; requests: int ``(K, E)`` devices;
        capacities: int ``(K,)`` devices; names: the ``K`` device names.
    """
    L, R = p.n_types, p.n_instances
    K = requests.shape[0]
    el, er = edges[:, 0], edges[:, 1]
    st = rngs.streams(instance_seed, "means", "costs")
    mu = st["means"].uniform(*p.mean_range, size=(L, R))[el, er]
    phi = st["costs"].normal(p.cost_mean, p.cost_std, size=(K, L, R))[:, el, er]
    cost = p.cost_scale * np.maximum(phi, 0.0).sum(axis=0)
    return FluctuatingSpeedInstance(
        edges=edges,
        requests=requests,
        capacities=capacities,
        cost=cost,
        mean=mu,
        std=p.std_ratio * np.abs(mu),
        n_types=L,
        n_instances=R,
        resource_names=names,
    )

