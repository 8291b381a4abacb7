"""Scenario ``alibaba-gpu-2023`` of DeadlineWelfare-v0 (OnSocMax) from the shipped Alibaba
gpu-v2023 sample.

The OnSocMax model has one scalar capacity per (node, slot) and individual jobs (no job types),
so it uses the trace's nodes and tasks directly (``docs/trace-scenarios.md``):

===========================  ================================================================
quantity                     source
===========================  ================================================================
instances ``R``              real: the ``n_instances`` nodes that
                             :func:`~schedgym.data.trace_mapping.build_trace_problem` samples
                             (10 job types; seed = ``instance_seed``)
capacity ``C_r``             real, scaled: ``capacity_mean`` x the node's size relative to the
                             sample's mean, size = mean over (cores, GB, GPUs) of the node's
                             capacity / the sample's mean capacity (a node without GPUs counts
                             0 for GPUs); constant over slots
jobs: arrival slots          real: the tasks created in ``horizon`` consecutive slots of
                             ``slot_seconds`` (default 1 h, 24 slots: one day) from a start drawn
                             from the episode seed (stream ``trace_window``); ``n_jobs`` of them
                             drawn uniformly without replacement (stream ``trace_jobs``), kept
                             in arrival order (``None``: all of them)
locality ``K_n``             real: the task's GPU-model constraint (``gpu_spec``); CPU-only
                             tasks on every node, other GPU tasks on every GPU node; tasks that
                             no sampled node can run are left out
deadline ``e_n``             ``deadline="synthetic"`` (default; the trace has no deadlines): the
                             paper's ``D_n ~ Exp(duration_mean)`` (stream ``durations``);
                             ``"trace"``: the task's real run time (deletion - creation) as
                             ``D_n``; ``e_n = min(T - 1, s_n + floor(D_n))``
your own trace               ``trace=`` a :class:`schedgym.data.alibaba.Trace` (e.g. from
                             ``load_gpu_v2020``); ``None``: the shipped sample
workload, capability, utility  synthetic: the paper generator (``job_sampler``, same named
coefficients, cluster weights  streams as ``paper-default``)
===========================  ================================================================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from schedgym.core import rng as rngs
from schedgym.core.arrays import f32
from schedgym.core.validation import check_bool, check_choice, check_float
from schedgym.data.trace_mapping import (
    TraceProblem,
    build_trace_problem,
    class_allowed_nodes,
    task_classes,
)
from schedgym.envs.deadline_welfare.generator import (
    DEFAULTS,
    GAUSS_FLOOR,
    SCENARIOS,
    job_limits,
    job_sampler,
    prior_bounds,
    upper_f32,
    validate_params,
)
from schedgym.envs.deadline_welfare.types import DeadlineWelfareInstance, Jobs

NAME = "alibaba-gpu-2023"
PARAMS: dict[str, Any] = {}
EXTRA: dict[str, Any] = {"slot_seconds": 3600.0, "constraints": True, "deadline": "synthetic",
                         "trace": None}
DEADLINE_SOURCES = ("synthetic", "trace")


def trace_problem(params: dict[str, Any], instance_seed: int) -> TraceProblem:
    """The node sample behind the scenario (its types are not used by this problem)."""
    return build_trace_problem(
        n_instances=params["n_instances"], n_types=10,
        slot_seconds=check_float("slot_seconds", params["slot_seconds"], low=0.0,
                                 low_open=True),
        seed=instance_seed, constraints=check_bool("constraints", params["constraints"]),
        trace=params.get("trace"),
    )


def node_sizes(tp: TraceProblem) -> np.ndarray:
    """float ``(R,)``: mean over (cores, GB, GPUs) of capacity / the sample's mean capacity."""
    cap = tp.capacities
    mean = cap.mean(axis=0)
    rel = np.divide(cap, mean, out=np.zeros_like(cap), where=mean > 0)
    return rel[:, mean > 0].mean(axis=1)


@dataclass(frozen=True, eq=False)
class TraceJobSampler:
    """The scenario's job stream (picklable): the trace tasks of a window of ``T`` slots drawn
    from the episode seed, with the paper generator's synthetic fields (see the module table).

    Attributes:
        params: validated generator parameters (``horizon``, ``n_jobs``, ``duration_mean`` and
            the synthetic fields' parameters).
        deadline: ``"synthetic"`` or ``"trace"``.
        times, durations: float ``(M,)``: creation time and run time (s) of every trace task.
        runnable: bool ``(M,)``: tasks that some sampled node can run.
        allowed: bool ``(M, R)``: the nodes each task may use.
        slot_seconds: slot length, seconds.
    """

    params: dict[str, Any]
    deadline: str
    times: np.ndarray
    durations: np.ndarray
    runnable: np.ndarray
    allowed: np.ndarray
    slot_seconds: float

    def _window(self, episode_seed: int) -> tuple[float, np.ndarray]:
        """Start time of the episode's window and its tasks (arrival order)."""
        T, dt, times = self.params["horizon"], self.slot_seconds, self.times
        t_first, t_last = float(times.min()), float(times.max())
        n_start = max(1, int(np.floor((t_last - t_first) / dt)) - T + 2)
        start = t_first + dt * int(rngs.stream(episode_seed, "trace_window").integers(0, n_start))
        idx = np.flatnonzero(self.runnable & (times >= start) & (times < start + T * dt))
        n_jobs = self.params["n_jobs"]
        if n_jobs is not None and idx.size > n_jobs:
            pick = rngs.stream(episode_seed, "trace_jobs").choice(idx.size, n_jobs,
                                                                   replace=False)
            idx = idx[np.sort(pick)]
        return start, idx[np.argsort(times[idx], kind="stable")]

    def __call__(self, episode_seed: int) -> Jobs:
        """One episode's jobs from ``episode_seed``."""
        p, dt = self.params, self.slot_seconds
        T, R = p["horizon"], self.allowed.shape[1]
        start, idx = self._window(episode_seed)
        N = int(idx.size)
        s = np.floor((self.times[idx] - start) / dt).astype(np.int64)
        if self.deadline == "trace":
            dur = np.nan_to_num(self.durations[idx], nan=0.0) / dt
        else:
            dur = rngs.stream(episode_seed, "durations").exponential(p["duration_mean"], N)
        e = np.minimum(T - 1, s + np.floor(np.maximum(dur, 0.0)).astype(np.int64))
        synth = job_sampler({**p, "n_instances": R, "n_jobs": max(N, 1)})(episode_seed)
        return Jobs(arrival=s, deadline=e, workload=synth.workload[:N],
                    allowed=self.allowed[idx], capability=synth.capability[:N],
                    coef=synth.coef[:N], weight=synth.weight[:N], n_slots_hint=T)


def build(params: dict[str, Any], instance_seed: int) -> tuple[DeadlineWelfareInstance,
                                                                 TraceJobSampler]:
    """Scenario builder: ``(instance, job sampler)`` from the shipped trace sample."""
    p = validate_params({k: v for k, v in params.items() if k in DEFAULTS})
    deadline = check_choice("deadline", params["deadline"], DEADLINE_SOURCES)
    tp = trace_problem(params, instance_seed)
    tr = tp.trace
    assert tr is not None
    R, T = tp.n_instances, p["horizon"]
    capacity = np.repeat(f32(p["capacity_mean"] * node_sizes(tp))[:, None], T, axis=1)
    capacity = np.maximum(capacity, f32(GAUSS_FLOOR))
    # a node's size is a mean of ratios capacity / sample mean, each <= R: C <= capacity_mean R
    c_hi = upper_f32(max(p["capacity_mean"] * R, float(f32(GAUSS_FLOOR))))
    instance = DeadlineWelfareInstance(
        capacity=capacity, utility=p["utility"], sqrt_v_floor=p["sqrt_v_floor"],
        bound_mode=p["bound_mode"],
        prior_bounds=prior_bounds(p, capacity) if p["bound_mode"] == "prior" else None,
        job_limits=job_limits(p), capacity_bounds=(GAUSS_FLOOR, c_hi),
    )
    cls = task_classes(tr)
    allowed_by_class = {c: class_allowed_nodes(tr, c)[tp.node_index] for c in np.unique(cls)}
    allowed = np.stack([allowed_by_class[c] for c in cls]) if cls.size else \
        np.zeros((0, R), dtype=bool)
    sampler = TraceJobSampler(
        params={**p, "n_instances": R}, deadline=deadline, times=np.asarray(tr.task_time),
        durations=np.asarray(tr.task_duration, dtype=np.float64),
        runnable=np.asarray(allowed.any(axis=1)), allowed=allowed, slot_seconds=tp.slot_seconds)
    return instance, sampler


SCENARIOS.register(
    NAME, PARAMS,
    "Alibaba cluster-trace-gpu-v2023 (shipped sample): real nodes (capacity ~ relative node size "
    "x capacity_mean), real task arrivals over one day of 1-h slots (n_jobs sampled) and "
    "GPU-model locality; deadlines, workloads, capabilities and utilities from the paper generator",
    builder=build, extra_params=EXTRA,
)
