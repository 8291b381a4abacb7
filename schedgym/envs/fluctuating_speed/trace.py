"""Scenario ``alibaba-gpu-2023`` of FluctuatingSpeed-v0 (ESDP): spec esdp §6.2 "trace mode" on
the shipped Alibaba gpu-v2023 sample.

Built by :func:`schedgym.data.trace_mapping.build_trace_problem` (``docs/trace-scenarios.md``),
then mapped to the ESDP model as spec esdp §6.2 prescribes for its trace mode:

==========================  ==================================================================
quantity                    source
==========================  ==================================================================
servers ``R``               real: ``n_instances`` sampled trace nodes
ports ``L``                 real: ``n_types`` job types of the mapping
edges ``E``                 real locality (GPU-model constraints), thinned to ``degree_cap``
                            random allowed servers per port (default 4 = the paper's edge
                            probability 0.1 x 40 servers)
requests ``a_k^e``          real, normalised (spec §6.2 item 2): each type's (cores, GB, GPUs)
                            min-max scaled across types into ``request_range`` and rounded;
                            the same for every edge of the port
capacities ``c_k``          real, normalised (spec §6.2 item 4, our reading): the sampled nodes'
                            total capacity of ``k`` divided by the expected demand per slot
                            ``sum_l rate_l a_lk`` (real rates and requests) is min-max scaled
                            across ``k`` into ``capacity_range``, rounded, times
                            ``capacity_scale``: the relatively scarcest resource gets the
                            smallest capacity
arrivals ``x_l(t)``         real (spec §6.2 item 3): the trace span split into ``horizon`` equal
                            slots (``slot_seconds=None``), ``h_l(t) = 1{a type-l task started in
                            slot t}``, job arrives w.p. ``rho_l h_l(t)`` (``arrival_prob``)
NPU/TPU/FPGA (K > 3),       synthetic: the paper generator (spec §6.3), same named streams as
utilities ``mu_e``, costs   ``paper-default``, drawn on the full (port, server) grid and read at
                            the trace edges
==========================  ==================================================================

Parameters besides the FluctuatingSpeed ones: ``slot_seconds`` (``None``: span / horizon, so an
episode is the whole trace in order; a number: slots of that length over ``horizon``
consecutive slots from a random start), ``constraints``, ``degree_cap`` (``None``: every allowed
server), ``time_window``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from schedgym.core.validation import check_bool, check_float, check_int
from schedgym.data.alibaba import load_sample
from schedgym.data.trace_mapping import TraceProblem, build_trace_problem
from schedgym.envs.fluctuating_speed.instance import (
    DEFAULTS,
    SCENARIOS,
    ArrivalSampler,
    FluctuatingSpeedInstance,
    arrival_probs,
    generate,
    validate_params,
)

NAME = "alibaba-gpu-2023"
PARAMS: dict[str, Any] = {}
EXTRA: dict[str, Any] = {"slot_seconds": None, "constraints": True, "degree_cap": 4,
                         "time_window": None}


def _minmax_round(v: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Min-max scale ``v`` into ``[lo, hi]`` and round (all ``lo`` when ``v`` is constant)."""
    v = np.asarray(v, dtype=np.float64)
    span = v.max() - v.min()
    if span <= 0:
        return np.full(v.shape, lo, dtype=np.int64)
    return np.rint(lo + (hi - lo) * (v - v.min()) / span).astype(np.int64)


def trace_problem(params: dict[str, Any], instance_seed: int) -> TraceProblem:
    """The :class:`TraceProblem` behind the scenario for these parameters."""
    horizon = check_int("horizon", params["horizon"], min_value=1)
    dt = params["slot_seconds"]
    tp_kw = dict(n_instances=params["n_instances"], n_types=params["n_types"],
                 seed=instance_seed, constraints=check_bool("constraints", params["constraints"]),
                 time_window=params["time_window"])
    cap = params["degree_cap"]
    tp_kw["degree_cap"] = None if cap is None else check_int("degree_cap", cap, min_value=1)
    if dt is None:
        # T equal windows over the span (spec esdp §6.2 item 3); the tiny stretch keeps the last
        # task inside slot T - 1.
        if params["time_window"] is None:
            times = load_sample(tp_kw["constraints"]).task_time
            span = float(times.max() - times.min())
        else:
            span = float(params["time_window"][1]) - float(params["time_window"][0])
        dt = max(span, 1.0) / horizon * (1.0 + 1e-9)
    else:
        dt = check_float("slot_seconds", dt, low=0.0, low_open=True)
    return build_trace_problem(slot_seconds=dt, **tp_kw)


def build(params: dict[str, Any], instance_seed: int) -> tuple[FluctuatingSpeedInstance,
                                                                 ArrivalSampler]:
    """Scenario builder: ``(instance, arrival sampler)`` from the shipped trace sample."""
    p = validate_params({k: v for k, v in params.items() if k in DEFAULTS})
    tp = trace_problem({**params, **p}, instance_seed)
    L, R, K = tp.n_types, tp.n_instances, p["n_resources"]
    edges = tp.edges
    el = edges[:, 0]
    # Paper generator on the full grid (every pair an edge), read at the trace edges.
    synth = generate({**p, "n_types": L, "n_instances": R, "edge_prob": 1.0}, instance_seed)
    full = el * R + edges[:, 1]
    k_real = min(K, 3)
    a_lo, a_hi = p["request_range"]
    type_req = np.stack([_minmax_round(tp.requests[:, k], a_lo, a_hi) for k in range(k_real)])
    requests = np.concatenate([type_req[:, el], synth.requests[k_real:, full]], axis=0)
    supply = tp.capacities[:, :k_real].sum(axis=0)
    demand = tp.arrival_rate @ tp.requests[:, :k_real]
    abundance = supply / np.maximum(demand, 1e-12)
    c_lo, c_hi = p["capacity_range"]
    caps_real = p["capacity_scale"] * _minmax_round(abundance, c_lo, c_hi)
    capacities = np.concatenate([caps_real, synth.capacities[k_real:]])
    instance = FluctuatingSpeedInstance(
        edges=edges, requests=requests, capacities=capacities, cost=synth.cost[full],
        mean=synth.mean[full], std=synth.std[full], n_types=L, n_instances=R,
        resource_names=synth.resource_names,
    )
    rho = arrival_probs(p, L)
    start = 0 if params["slot_seconds"] is None else None

    def sample(rng: np.random.Generator, horizon: int) -> np.ndarray:
        return tp.sample_arrivals(rng, horizon, rho, start=start)

    return instance, sample


SCENARIOS.register(
    NAME, PARAMS,
    "ESDP trace mode (spec §6.2) on the Alibaba cluster-trace-gpu-v2023 sample: real servers, "
    "port types, GPU-model locality (4 servers per port), normalised real requests and "
    "capacities, arrivals rho_l x 1{trace arrival}; utilities and costs from the paper generator",
    builder=build, extra_params=EXTRA,
)
