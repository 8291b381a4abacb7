"""Scenario ``alibaba-gpu-2023`` of GainOverhead-v0: the instance from the shipped Alibaba trace.

Built by :func:`schedgym.data.trace_mapping.build_trace_problem` (see its module docstring and
``docs/trace-scenarios.md``); then, for the OgaSched problem:

=======================  =====================================================================
quantity                 source
=======================  =====================================================================
instances ``R``          real: ``n_instances`` trace nodes (capacities CPU cores, memory GB, GPUs);
                         ``"all"``: every node of the trace (1,523 in the shipped sample)
job types ``L``          real request vectors grouped into ``n_types`` types (k-means per class)
locality graph ``E``     real: GPU-model constraints (``gpu_spec``); CPU-only types on any node
requests ``a_l``         real (cores, GB, GPUs) x ``contention`` (default 1: as recorded)
arrivals ``x_l(t)``      real: ``1{a type-l task was created in slot t}`` over ``horizon``
                         consecutive slots of ``slot_seconds`` from a random start (wrapping
                         around the trace, or never leaving the ``split``), thinned by
                         Bernoulli(``arrival_prob``) (default 1: no thinning)
NPU, TPU, FPGA           synthetic: the paper generator's capacities and ``contention x U[lo, hi]``
                         requests (OgaSched §6.1), ``K = n_resources`` (default 6)
``alpha``, ``beta``,     synthetic: the paper generator (``alpha_range``, ``beta_range``,
utilities                ``utility``), the same named streams as ``paper-default``
=======================  =====================================================================

Parameters besides the GainOverhead ones: ``slot_seconds`` (slot length, s), ``constraints``
(use the GPU-model constraints), ``degree_cap`` (at most this many nodes per type; ``None``: all
allowed nodes), ``split`` (``"train"``: the tasks created in the first 70 % of the trace's time,
``"test"``: the rest, ``None``: the whole trace; see
:func:`~schedgym.data.trace_mapping.slot_window`), ``time_window`` (``(t0, t1)`` seconds of the
trace, ``None``: all; excludes ``split``), ``trace`` (a :class:`schedgym.data.alibaba.Trace` read
from your own files, e.g. by ``load_gpu_v2020``; ``None``: the shipped sample).

``horizon=None`` (the scenario's default) is :data:`MONTH_SLOTS` (30 days of 30-minute slots),
or the whole split when a split is shorter. With a split, an episode's ``horizon`` slots lie
inside the split (its start is drawn over the split's slots and never wraps), so a training
episode never sees a slot of the test split; an explicit ``horizon`` longer than the split is
refused at construction in one line (the shipped sample at 30-minute slots: 1,157 training
slots, 497 test slots).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from schedgym.core.validation import check_bool, check_float, check_int
from schedgym.data.trace_mapping import TraceProblem, build_trace_problem, resolve_n_instances
from schedgym.envs.gain_overhead.generator import SCENARIOS, generate, validate_params
from schedgym.envs.gain_overhead.types import GainOverheadInstance

NAME = "alibaba-gpu-2023"
#: The default episode: 30 days of 30-minute slots.
MONTH_SLOTS = 1440
#: Scenario parameters: 10 types on 64 sampled nodes; ``horizon=None``: :data:`MONTH_SLOTS`, or
#: the whole split when it is shorter (:func:`episode_horizon`).
PARAMS: dict[str, Any] = {"n_instances": 64, "n_types": 10, "horizon": None,
                          "arrival_prob": 1.0, "contention": 1.0}
EXTRA: dict[str, Any] = {"slot_seconds": 1800.0, "constraints": True, "degree_cap": None,
                         "split": None, "time_window": None, "trace": None}


def trace_problem(params: dict[str, Any], instance_seed: int) -> TraceProblem:
    """The :class:`TraceProblem` behind the scenario for these parameters (``n_instances`` may
    be ``"all"``; ``split`` and ``time_window`` choose the slots, see the module docstring)."""
    degree_cap = params["degree_cap"]
    if degree_cap is not None:
        degree_cap = check_int("degree_cap", degree_cap, min_value=1)
    return build_trace_problem(
        n_instances=params["n_instances"], n_types=params["n_types"],
        slot_seconds=check_float("slot_seconds", params["slot_seconds"], low=0.0, low_open=True),
        seed=instance_seed, constraints=check_bool("constraints", params["constraints"]),
        degree_cap=degree_cap, time_window=params["time_window"], split=params.get("split"),
        trace=params.get("trace"),
    )


def episode_horizon(horizon: int | None, problem: TraceProblem) -> int:
    """The episode length in slots: ``horizon``, or by default :data:`MONTH_SLOTS`, shortened to
    the split's slots when a split is shorter; an explicit ``horizon`` longer than a split is
    refused in :meth:`~schedgym.data.trace_mapping.SlotWindow.start_slot`'s one line."""
    window = problem.window
    split = window is not None and window.split is not None
    if horizon is None:
        return min(MONTH_SLOTS, problem.n_slots) if split else MONTH_SLOTS
    T = check_int("horizon", horizon, min_value=1)
    if window is not None and split:
        window.start_slot(np.random.default_rng(0), T, wrap=False)  # raises if it cannot fit
    return T


@dataclass(frozen=True, eq=False)
class TraceArrivals:
    """Picklable arrival sampler of the scenario: a random window of the trace's arrival
    indicators, thinned by Bernoulli(``prob``) (see :meth:`TraceProblem.sample_arrivals`).
    ``horizon`` is the scenario's episode length (:func:`episode_horizon`), which the env uses
    when its ``horizon`` parameter is ``None``."""

    problem: TraceProblem
    prob: float
    horizon: int

    def __call__(self, rng: np.random.Generator, horizon: int) -> np.ndarray:
        return self.problem.sample_arrivals(rng, horizon, self.prob)


def build(params: dict[str, Any], instance_seed: int) -> tuple[GainOverheadInstance,
                                                                 TraceArrivals]:
    """Scenario builder: ``(instance, arrival sampler)`` from the shipped trace sample (or
    ``params["trace"]``); a ``horizon`` longer than the ``split`` is refused in one line."""
    n_instances = resolve_n_instances(params["n_instances"], params.get("trace"),
                                      check_bool("constraints", params["constraints"]))
    p = validate_params({**params, "n_instances": n_instances, "horizon": 1})
    tp = trace_problem({**params, **p.as_dict()}, instance_seed)
    horizon = episode_horizon(params["horizon"], tp)
    L, R, K = tp.n_types, tp.n_instances, p.n_resources
    # The paper's generator for everything the trace lacks (same named streams as paper-default);
    # degree_choices=(L,) only makes its (discarded) graph draw trivially succeed. The utility is
    # drawn on the trace's sizes, so an explicit (R, K) array must already have the trace's R.
    synth = generate(p.replace(n_types=L, n_instances=R, degree_choices=(L,)), instance_seed)
    k_real = min(K, 3)
    requests = np.concatenate([p.contention * tp.requests[:, :k_real],
                               synth.requests[:, k_real:]], axis=1)
    capacities = np.concatenate([tp.capacities[:, :k_real], synth.capacities[:, k_real:]], axis=1)
    instance = GainOverheadInstance(
        edges=tp.edges, requests=requests, capacities=capacities, alpha=synth.alpha,
        beta=synth.beta, utility=synth.utility, reciprocal_scale=p.reciprocal_scale,
        resource_names=synth.resource_names,
    )
    return instance, TraceArrivals(tp, p.arrival_prob, horizon)


SCENARIOS.register(
    NAME, PARAMS,
    "Alibaba cluster-trace-gpu-v2023 (shipped sample): real node capacities, request vectors, "
    "GPU-model locality and arrivals (30-min slots, 30-day episodes); NPU/TPU/FPGA, alpha, beta "
    "and utilities from the paper generator",
    builder=build, extra_params=EXTRA,
)
