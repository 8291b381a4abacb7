"""Scenario ``alibaba-gpu-2023`` of FluctuatingSpeed-v0 (ESDP) from the shipped Alibaba
gpu-v2023 sample (``docs/trace-scenarios.md``), applied through
:func:`schedgym.data.trace_mapping.build_trace_problem`.

What comes from the trace: the job types, the service-locality graph (GPU-model constraints, at
most ``degree_cap`` nodes per type), the relative sizes of the requests and of the cluster's
capacity, and the arrival pattern. What does not (the paper normalises it away or the trace has
none): integer request/capacity units, utilities, costs.

- requests: per device type, the types' positive (cores, GB, GPUs) requests are min-max scaled
  into ``request_range`` and rounded (a zero request, e.g. a CPU-only job's GPUs, stays 0); every
  edge of a port gets its type's request;
- capacities: per device type, ``ratio_k`` = cluster total / mean positive request, min-max
  scaled across types into ``capacity_range``, rounded, times ``capacity_scale``;
- arrivals: trace indicators of ``horizon`` consecutive slots of ``slot_seconds`` from a random
  start, thinned by ``arrival_prob`` (:class:`TraceArrivals`);
- utilities ``mu_e``, ``std`` and costs: the paper's synthetic draws (as ``paper-default``).

``edge_prob`` is unused (the graph is the trace's).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from schedgym.core.resources import RESOURCE_NAMES
from schedgym.core.validation import check_float, check_int
from schedgym.data.trace_mapping import TraceProblem, build_trace_problem
from schedgym.envs.fluctuating_speed.generator import as_params, with_edge_params
from schedgym.envs.fluctuating_speed.types import FluctuatingSpeedInstance

#: Parameters only the trace scenario understands, with their defaults.
TRACE_EXTRAS: dict[str, Any] = {"slot_seconds": 600.0, "degree_cap": 4}


@dataclass(frozen=True, eq=False)
class TraceArrivals:
    """Picklable arrival sampler of the trace scenario: ``horizon`` consecutive slots of the
    trace's arrival indicators from a start drawn from ``rng``, thinned by ``prob`` (float64
    ``(L,)``). Returns float64 ``(horizon, L)`` in {0, 1}."""

    problem: TraceProblem
    prob: np.ndarray

    def __call__(self, rng: np.random.Generator, horizon: int) -> np.ndarray:
        return self.problem.sample_arrivals(rng, horizon, self.prob)


def _minmax_round(values: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Min-max scale ``values`` into ``[lo, hi]`` and round (all equal -> ``lo``)."""
    v = np.asarray(values, dtype=np.float64)
    span = v.max() - v.min() if v.size else 0.0
    if span <= 0:
        return np.full(v.shape, lo, dtype=np.int64)
    return np.rint(lo + (hi - lo) * (v - v.min()) / span).astype(np.int64)


def _scaled_sizes(tp: TraceProblem, request_range: tuple[int, int],
                  capacity_range: tuple[int, int], capacity_scale: int
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Integer per-type requests ``(3, L)`` and capacities ``(3,)`` from the trace's sizes."""
    K = 3
    a_lo, a_hi = request_range
    req_type = np.zeros((K, tp.n_types), dtype=np.int64)
    ratio = np.zeros(K)
    for k in range(K):
        raw = tp.requests[:, k]
        pos = raw > 0
        if pos.any():
            req_type[k, pos] = _minmax_round(raw[pos], max(a_lo, 1), max(a_hi, 1))
            ratio[k] = tp.capacities[:, k].sum() / raw[pos].mean()
    c_lo, c_hi = capacity_range
    return req_type, capacity_scale * _minmax_round(ratio, c_lo, c_hi)


def trace_builder(params: Mapping[str, Any],
                  instance_seed: int) -> tuple[FluctuatingSpeedInstance, TraceArrivals]:
    """Builder of the ``alibaba-gpu-2023`` scenario: ``(instance, arrival sampler)``.

    ``params`` holds the :class:`~schedgym.envs.fluctuating_speed.types.FluctuatingSpeedParams`
    values plus ``slot_seconds`` (> 0, seconds per slot) and ``degree_cap`` (>= 1 nodes per
    type, ``None``: all).
    """
    slot_seconds = check_float("slot_seconds", params["slot_seconds"], low=0.0, low_open=True)
    degree_cap = params["degree_cap"]
    if degree_cap is not None:
        degree_cap = check_int("degree_cap", degree_cap, min_value=1)
    p = as_params(params)
    if p.n_resources != 3:
        raise ValueError(f"n_resources={p.n_resources} is invalid: the trace scenario has "
                         "exactly 3 device types (cpu, mem, gpu)")
    tp = build_trace_problem(n_instances=p.n_instances, n_types=p.n_types,
                             slot_seconds=slot_seconds, seed=instance_seed,
                             degree_cap=degree_cap)
    edges = tp.edges
    p.check_memory(n_edges=edges.shape[0])
    req_type, cap = _scaled_sizes(tp, p.request_range, p.capacity_range, p.capacity_scale)
    inst = with_edge_params(p, instance_seed, edges, req_type[:, edges[:, 0]], cap,
                            RESOURCE_NAMES[:3])
    return inst, TraceArrivals(tp, p.probs(tp.n_types))
