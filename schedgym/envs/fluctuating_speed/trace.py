"""Scenario ``alibaba-gpu-2023`` of FluctuatingSpeed-v0 (ESDP) from the shipped Alibaba
gpu-v2023 sample (``docs/trace-scenarios.md``), applied through
:func:`schedgym.data.trace_mapping.build_trace_problem`.

What comes from the trace: the job types, the service-locality graph (GPU-model constraints, at
most ``degree_cap`` nodes per type), the relative sizes of the requests and of the cluster's
capacity, and the arrival pattern. What does not (the paper normalises it away or the trace has
none): integer request/capacity units, utilities, costs.

- servers: ``n_instances`` nodes of the trace (``"all"``: every node of it);
- graph: the nodes each type's GPU-model class allows, at most ``degree_cap`` of them per type
  (stream ``trace_graph``). ``degree_cap="auto"`` (default) keeps the paper's edge density:
  ``max(1, round(edge_prob * R))`` nodes per type (Table 3's ``edge_prob = 0.1``: 4 at the
  default ``R = 40``, 152 with every node of the sample), so the graph grows with the nodes;
  ``None`` keeps every allowed node; an integer is a fixed cap;
- requests: per device type, the types' positive (cores, GB, GPUs) requests are min-max scaled
  into ``request_range`` and rounded (a zero request, e.g. a CPU-only job's GPUs, stays 0); every
  edge of a port gets its type's request;
- capacities: per device type, ``ratio_k`` = cluster total / mean positive request, min-max
  scaled across types into ``capacity_range``, rounded, times ``capacity_scale``;
- arrivals: trace indicators of ``horizon`` consecutive slots of ``slot_seconds`` from a random
  start, thinned by ``arrival_prob`` (:class:`TraceArrivals`). The slots come from a window of
  the trace: ``split="train"`` (its first 70 % of time) or ``"test"`` (the rest), never crossing
  the boundary and never wrapping; or ``time_window=(t0, t1)`` trace seconds (wrapping inside
  it); or the whole trace (wrapping). ``horizon=None`` (default): the paper's
  :data:`DEFAULT_HORIZON` slots, or the whole split when it is shorter;
- utilities ``mu_e``, ``std`` and costs: the paper's synthetic draws (as ``paper-default``);
- ``trace=`` a :class:`schedgym.data.alibaba.Trace` of your own (``None``: the shipped sample),
  ``constraints=False`` ignores the GPU-model constraints.

``edge_prob`` only sets the ``"auto"`` degree cap (the graph is the trace's).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from schedgym.core.resources import RESOURCE_NAMES
from schedgym.core.validation import check_bool, check_float, check_int
from schedgym.data.alibaba import Trace, load_sample
from schedgym.data.trace_mapping import (
    TraceProblem,
    build_trace_problem,
    resolve_n_instances,
    slot_window,
)
from schedgym.envs.fluctuating_speed.generator import SCENARIOS, as_params, with_edge_params
from schedgym.envs.fluctuating_speed.types import DEFAULTS, FluctuatingSpeedInstance

#: The scenario's own values of the shared parameters: ``horizon=None`` is
#: :data:`DEFAULT_HORIZON` slots, or the whole split when it is shorter.
TRACE_PARAMS: dict[str, Any] = {"horizon": None}
#: Parameters only the trace scenario understands, with their defaults.
TRACE_EXTRAS: dict[str, Any] = {"slot_seconds": 600.0, "degree_cap": "auto", "split": None,
                                "time_window": None, "trace": None, "constraints": True}
#: The default episode length in slots (ESDP Table 3's ``T``).
DEFAULT_HORIZON: int = int(DEFAULTS["horizon"])
#: The ``degree_cap`` value that keeps the paper's edge density (``edge_prob`` R per type).
AUTO_DEGREE = "auto"


@dataclass(frozen=True, eq=False)
class TraceArrivals:
    """Picklable arrival sampler of the trace scenario: ``horizon`` consecutive slots of the
    trace's arrival indicators from a start drawn from ``rng``, thinned by ``prob`` (float64
    ``(L,)``). Returns float64 ``(horizon, L)`` in {0, 1}. ``horizon`` (the attribute) is the
    episode length the scenario resolved (the env reads it when ``horizon=None``)."""

    problem: TraceProblem
    prob: np.ndarray
    horizon: int = DEFAULT_HORIZON

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


def degree_cap_of(value: Any, edge_prob: float, n_instances: int) -> int | None:
    """The per-type node cap ``degree_cap`` asks for: ``"auto"`` = ``max(1, round(edge_prob *
    n_instances))`` (the paper's edge density), ``None`` = every allowed node, else an integer
    >= 1."""
    if isinstance(value, str):
        if value != AUTO_DEGREE:
            raise ValueError(f"degree_cap={value!r} is invalid: must be 'auto' (edge_prob x "
                             "n_instances nodes per type), None (every allowed node) or an "
                             "integer >= 1")
        return max(1, int(round(edge_prob * n_instances)))
    return None if value is None else check_int("degree_cap", value, min_value=1)


def episode_horizon(horizon: Any, n_slots: int, split: str | None) -> int:
    """The episode length: ``horizon``, or by default :data:`DEFAULT_HORIZON` slots shortened
    to the split's ``n_slots`` when a split is shorter. An explicit ``horizon`` longer than a
    split is left to :meth:`SlotWindow.start_slot`'s one-line error."""
    if horizon is None:
        return min(DEFAULT_HORIZON, n_slots) if split is not None else DEFAULT_HORIZON
    return check_int("horizon", horizon, min_value=1)


def trace_builder(params: Mapping[str, Any],
                  instance_seed: int) -> tuple[FluctuatingSpeedInstance, TraceArrivals]:
    """Builder of the ``alibaba-gpu-2023`` scenario: ``(instance, arrival sampler)``.

    ``params`` holds the :class:`~schedgym.envs.fluctuating_speed.types.FluctuatingSpeedParams`
    values (``n_instances`` may be ``"all"``, ``horizon`` ``None``) plus ``slot_seconds`` (> 0,
    seconds per slot), ``degree_cap`` (:func:`degree_cap_of`), ``split``, ``time_window``,
    ``trace`` and ``constraints`` (module docstring).
    """
    slot_seconds = check_float("slot_seconds", params["slot_seconds"], low=0.0, low_open=True)
    constraints = check_bool("constraints", params["constraints"])
    trace = params["trace"]
    if trace is not None and not isinstance(trace, Trace):
        raise ValueError(f"trace is invalid: must be a schedgym.data.alibaba.Trace or None, got "
                         f"{type(trace).__name__}")
    tr = load_sample(constraints) if trace is None else trace
    split, window = params["split"], params["time_window"]
    n_slots = slot_window(tr, slot_seconds, split=split, time_window=window).n_slots
    R = resolve_n_instances(params["n_instances"], tr)
    p = as_params({**params, "n_instances": R,
                   "horizon": episode_horizon(params["horizon"], n_slots, split)})
    if p.n_resources != 3:
        raise ValueError(f"n_resources={p.n_resources} is invalid: the trace scenario has "
                         "exactly 3 device types (cpu, mem, gpu)")
    tp = build_trace_problem(n_instances=R, n_types=p.n_types, slot_seconds=slot_seconds,
                             seed=instance_seed, trace=trace, split=split, time_window=window,
                             constraints=constraints,
                             degree_cap=degree_cap_of(params["degree_cap"], p.edge_prob, R))
    if tp.window is not None and tp.window.split is not None:
        tp.window.start_slot(np.random.default_rng(0), p.horizon, wrap=False)  # fits the split
    edges = tp.edges
    p.check_memory(n_edges=edges.shape[0])
    req_type, cap = _scaled_sizes(tp, p.request_range, p.capacity_range, p.capacity_scale)
    inst = with_edge_params(p, instance_seed, edges, req_type[:, edges[:, 0]], cap,
                            RESOURCE_NAMES[:3])
    return inst, TraceArrivals(tp, p.probs(tp.n_types), p.horizon)


SCENARIOS.register(
    "alibaba-gpu-2023", TRACE_PARAMS,
    "Shipped Alibaba gpu-v2023 sample: job types, locality graph (<= degree_cap nodes per "
    "type, 'auto': the paper's density edge_prob x n_instances), relative request/capacity "
    "sizes and arrival pattern from the trace (split='train'|'test' or time_window), "
    "normalised into the paper's ranges; utilities and costs synthetic as in paper-default",
    builder=trace_builder,
    extra_params=TRACE_EXTRAS,
)
