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
expected later demand        ``split="test"``: estimated from episodes of the ``train`` split
                             (the trace's past, before the split boundary), never from other
                             days of the test split (:meth:`TraceJobSampler.estimate_sampler`);
                             otherwise from the scenario's own window
workload, capability, utility  synthetic: the paper generator (``job_sampler``, same named
coefficients, cluster weights  streams as ``paper-default``)
===========================  ================================================================
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from schedgym.core import rng as rngs
from schedgym.core.arrays import f32
from schedgym.core.validation import check_bool, check_choice, check_float, check_int
from schedgym.data.alibaba import Trace, load_sample
from schedgym.data.trace_mapping import (
    SlotWindow,
    TraceProblem,
    build_trace_problem,
    class_allowed_nodes,
    slot_window,
    task_classes,
)
from schedgym.envs.deadline_welfare.generator import (
    DEFAULTS,
    GAUSS_FLOOR,
    SCENARIOS,
    StreamValues,
    draw_workloads,
    job_limits,
    prior_bounds,
    upper_f32,
    validate_params,
)
from schedgym.envs.deadline_welfare.memory import expected_window
from schedgym.envs.deadline_welfare.types import DeadlineWelfareInstance, Jobs

NAME = "alibaba-gpu-2023"
#: ``horizon=None``: one day (:data:`DAY_SLOTS` slots), or a shorter split's every slot.
PARAMS: dict[str, Any] = {"horizon": None}
EXTRA: dict[str, Any] = {"slot_seconds": 3600.0, "constraints": True, "deadline": "synthetic",
                         "trace": None, "split": None, "time_window": None}
#: The default episode: one day of 1-h slots.
DAY_SLOTS = 24
#: Job types of the node sample (:func:`trace_problem`).
N_TYPES = 10
DEADLINE_SOURCES = ("synthetic", "trace")


def trace_problem(params: dict[str, Any], instance_seed: int) -> TraceProblem:
    """The node sample and the slot window behind the scenario (its job types are not used by
    this problem): ``n_instances`` nodes (``"all"``: every node of the trace), the window of
    ``split`` or ``time_window`` (:func:`~schedgym.data.trace_mapping.slot_window`). The node
    sample gives every job type one node of its class first: 10 types, or as many as the
    window has distinct (locality class, request) pairs when it has fewer (a small trace)."""
    dt = check_float("slot_seconds", params["slot_seconds"], low=0.0, low_open=True)
    constraints = check_bool("constraints", params["constraints"])
    trace, split, window = params.get("trace"), params.get("split"), params.get("time_window")
    n_types = min(N_TYPES, _distinct_pairs(dt, trace, split, window, constraints))
    return build_trace_problem(n_instances=params["n_instances"], n_types=n_types,
                               slot_seconds=dt, seed=instance_seed, trace=trace, split=split,
                               time_window=window, constraints=constraints)


def _distinct_pairs(dt: float, trace: Any, split: str | None,
                    time_window: tuple[float, float] | None, constraints: bool) -> int:
    """Distinct (locality class, request) pairs among the window's tasks that some node can
    run (at least 1; errors of the window itself are left to the mapping)."""
    tr = load_sample(constraints) if trace is None else trace
    if not isinstance(tr, Trace) or tr.n_tasks == 0:
        return N_TYPES
    try:
        tasks = np.asarray(slot_window(tr, dt, split=split, time_window=time_window).tasks)
    except ValueError:
        return N_TYPES
    cls = task_classes(tr) if constraints else np.where(tr.task_gpu > 0, "any-gpu", "any")
    ok = {c: bool(class_allowed_nodes(tr, c).any()) for c in np.unique(cls[tasks])}
    keep = tasks & np.array([ok.get(c, False) for c in cls])
    if not keep.any():
        return N_TYPES
    rows = np.column_stack([np.unique(cls, return_inverse=True)[1].reshape(-1),
                            tr.task_requests])[keep]
    return max(1, int(np.unique(rows, axis=0).shape[0]))


def episode_horizon(horizon: int | None, window: SlotWindow) -> int:
    """The episode length in slots: ``horizon``, or by default one day (:data:`DAY_SLOTS` of
    1 h), shortened to the split's slots when a split is shorter; an explicit ``horizon``
    longer than a split is refused by :meth:`SlotWindow.start_slot`'s one line."""
    if horizon is None:
        return min(DAY_SLOTS, window.n_slots) if window.split is not None else DAY_SLOTS
    T = check_int("horizon", horizon, min_value=1)
    if window.split is not None:
        window.start_slot(np.random.default_rng(0), T, wrap=False)  # raises if it cannot fit
    return T


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
        task_class: int ``(M,)``: each task's locality class (a row of ``class_nodes``; -1 for
            a task no sampled node can run).
        class_nodes: bool ``(n_classes, R)``: the nodes each locality class may use.
        slot_seconds: slot length, seconds.
        window: the trace's slots an episode may span (:class:`SlotWindow`: a split, a time
            window or the whole trace); an episode's ``T`` slots start at a slot drawn by
            ``window.start_slot`` (never past a split's end) and take its tasks only.
        past_window: with ``split="test"``, the ``train`` split's window (the trace's past),
            which :meth:`estimate_sampler` draws from; ``None`` otherwise.
        past_error: with ``split="test"`` on a trace whose training split holds no whole
            slot, the one-line reason :meth:`estimate_sampler` refuses (else ``""``).
    """

    params: dict[str, Any]
    deadline: str
    times: np.ndarray
    durations: np.ndarray
    task_class: np.ndarray
    class_nodes: np.ndarray
    slot_seconds: float
    window: SlotWindow
    past_window: SlotWindow | None = None
    past_error: str = ""

    def estimate_sampler(self) -> TraceJobSampler:
        """The job sampler that statistics of the job distribution (the env's
        ``expected_later_demand``) are estimated from: on ``split="test"`` the same sampler on
        the ``train`` split's window, so an estimate made while playing the test split sees
        only the trace's past, as a deployment would; otherwise this sampler itself (the
        ``train`` split, a time window or the whole trace: unchanged).

        Raises:
            ValueError: ``split="test"`` on a trace whose training split is shorter than one
                slot (nothing in the past to estimate from).
        """
        if self.past_error:
            raise ValueError(self.past_error)
        return self if self.past_window is None else replace(self, window=self.past_window)

    @property
    def runnable(self) -> np.ndarray:
        """bool ``(M,)``: tasks that some sampled node can run."""
        return self.task_class >= 0

    def size_bounds(self) -> tuple[float, float, dict[str, int]]:
        """Upper ends of an episode's size for the memory check (:mod:`.memory`): ``(jobs,
        entries, extra)``, the busiest window's task count (at most ``n_jobs``) and its
        ``Σ_n |𝒦_n| w_n`` (window ``w_n <= min(T, run time in slots + 1)`` with trace deadlines,
        the exponential deadlines' mean window otherwise; scaled to ``n_jobs`` tasks), plus
        the sampler's own tasks and locality classes."""
        T, dt, win = self.params["horizon"], self.slot_seconds, self.window
        run = np.flatnonzero(self.runnable & win.tasks)
        order = run[np.argsort(self.times[run], kind="stable")]
        times = self.times[order]
        nodes = self.class_nodes.sum(axis=1)[self.task_class[order]].astype(np.float64)
        if self.deadline == "trace":
            slots = np.nan_to_num(self.durations[order], nan=0.0) / dt
            w = np.minimum(float(T), np.floor(np.maximum(slots, 0.0)) + 1.0)
        else:
            w = np.full(order.size, expected_window(self.params["duration_mean"], T))
        extra = {"tasks": int(self.times.size), "node_classes": int(self.class_nodes.shape[0])}
        if not order.size:
            return 0.0, 0.0, extra
        starts = win.start + dt * np.arange(max(1, win.n_slots - T + 1))
        lo = np.searchsorted(times, starts, side="left")
        hi = np.searchsorted(times, starts + T * dt, side="left")
        cum = np.concatenate([[0.0], np.cumsum(nodes * w)])
        count = (hi - lo).astype(np.float64)
        entries = cum[hi] - cum[lo]
        n_jobs = self.params["n_jobs"]
        if n_jobs is not None:  # n_jobs of a window's tasks: their expected share
            entries = np.where(count > n_jobs, entries * n_jobs / np.maximum(count, 1.0),
                               entries)
            count = np.minimum(count, n_jobs)
        R = self.class_nodes.shape[1]
        return float(count.max()), float(entries.max()) + R * T, extra

    def _window(self, episode_seed: int) -> tuple[float, np.ndarray]:
        """Start time of the episode's window and its tasks (arrival order)."""
        T, dt, times, w = self.params["horizon"], self.slot_seconds, self.times, self.window
        start = w.start + dt * w.start_slot(rngs.stream(episode_seed, "trace_window"), T,
                                            wrap=False)
        idx = np.flatnonzero(self.runnable & w.tasks & (times >= start)
                             & (times < start + T * dt))
        n_jobs = self.params["n_jobs"]
        if n_jobs is not None and idx.size > n_jobs:
            pick = rngs.stream(episode_seed, "trace_jobs").choice(idx.size, n_jobs,
                                                                   replace=False)
            idx = idx[np.sort(pick)]
        return start, idx[np.argsort(times[idx], kind="stable")]

    def __call__(self, episode_seed: int) -> Jobs:
        """One episode's jobs from ``episode_seed`` (per-unit values drawn when read)."""
        p, dt = self.params, self.slot_seconds
        T, R = p["horizon"], self.class_nodes.shape[1]
        start, idx = self._window(episode_seed)
        N = int(idx.size)
        s = np.floor((self.times[idx] - start) / dt).astype(np.int64)
        if self.deadline == "trace":
            dur = np.nan_to_num(self.durations[idx], nan=0.0) / dt
        else:
            dur = rngs.stream(episode_seed, "durations").exponential(p["duration_mean"], N)
        e = np.minimum(T - 1, s + np.floor(np.maximum(dur, 0.0)).astype(np.int64))
        rho = draw_workloads(rngs.stream(episode_seed, "workloads"), p, N)
        allowed = self.class_nodes[self.task_class[idx]]
        return Jobs.drawn(s, e, rho, allowed, T, StreamValues.of(p, episode_seed, R))


def build(params: dict[str, Any], instance_seed: int) -> tuple[DeadlineWelfareInstance,
                                                                 TraceJobSampler]:
    """Scenario builder: ``(instance, job sampler)`` from the shipped trace sample."""
    deadline = check_choice("deadline", params["deadline"], DEADLINE_SOURCES)
    tp = trace_problem(params, instance_seed)
    tr, window = tp.trace, tp.window
    assert tr is not None and window is not None
    T = episode_horizon(params["horizon"], window)
    p = validate_params({**{k: v for k, v in params.items() if k in DEFAULTS},
                         "n_instances": tp.n_instances, "horizon": T})
    R = tp.n_instances
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
    classes = _task_classes(tr, tp.node_index, R)
    sampler = TraceJobSampler(
        params={**p, "n_instances": R}, deadline=deadline, times=np.asarray(tr.task_time),
        durations=np.asarray(tr.task_duration, dtype=np.float64),
        task_class=classes["task_class"], class_nodes=classes["class_nodes"],
        slot_seconds=tp.slot_seconds, window=window)
    return instance, _with_past(sampler, tr)


def _with_past(sampler: TraceJobSampler, tr: Trace) -> TraceJobSampler:
    """``sampler`` with its ``past_window`` (the ``train`` split's window) when it plays the
    ``test`` split, or its ``past_error`` when the trace has no training slot; unchanged
    otherwise."""
    if sampler.window.split != "test":
        return sampler
    try:
        return replace(sampler, past_window=slot_window(tr, sampler.slot_seconds, split="train"))
    except ValueError as err:
        return replace(sampler, past_error="split='test': the expected later demand is "
                       f"estimated from the training split, which this trace cannot give ({err})")


def _task_classes(tr: Any, node_index: np.ndarray, n_nodes: int) -> dict[str, np.ndarray]:
    """``task_class`` int ``(M,)`` and ``class_nodes`` bool ``(n_classes, R)``: every task's
    locality class among those some of the ``node_index`` nodes can run (-1: none can)."""
    names, inverse = np.unique(task_classes(tr), return_inverse=True)
    nodes = np.stack([class_allowed_nodes(tr, c)[node_index] for c in names]) if names.size \
        else np.zeros((0, n_nodes), dtype=bool)
    runnable = nodes.any(axis=1)
    keep = np.flatnonzero(runnable)
    renumber = np.full(names.size, -1, dtype=np.int64)
    renumber[keep] = np.arange(keep.size)
    return {"task_class": renumber[inverse.reshape(-1)] if names.size else
            np.zeros(0, dtype=np.int64), "class_nodes": nodes[keep]}


SCENARIOS.register(
    NAME, PARAMS,
    "Alibaba cluster-trace-gpu-v2023 (shipped sample): real nodes (capacity ~ relative node size "
    "x capacity_mean), real task arrivals over one day of 1-h slots (n_jobs sampled) and "
    "GPU-model locality; deadlines, workloads, capabilities and utilities from the paper generator",
    builder=build, extra_params=EXTRA,
)
