"""Trace -> scheduling problem: sampled nodes, job types, locality graph and per-slot arrivals.

Public API (shared by every env's ``alibaba-gpu-2023`` scenario)::

    from schedgym.data.trace_mapping import build_trace_problem
    tp = build_trace_problem(n_instances=128, n_types=10, slot_seconds=600.0, seed=0)
    tp.capacities        # (R, 3) float64: cores, GB, GPUs of each sampled node
    tp.gpu_model         # (R,) str: GPU model of each node ('' = CPU-only node)
    tp.requests          # (L, 3) float64: cores, GB, GPUs of each job type (a real request)
    tp.mask              # (L, R) bool: service locality, tp.edges = argwhere(mask) (lexicographic)
    tp.arrival_counts    # (T_trace, L) int64: tasks of each type created in each slot
    tp.sample_arrivals(rng, horizon, prob, start=None)   # (horizon, L) float64 in {0, 1}
    tp.type_duration     # (L,) float64: median run time of each type's tasks, s (NaN unknown)
    tp.window            # SlotWindow: the slots the problem spans (a split or a time window)

    build_trace_problem(n_instances="all", split="train", ...)   # every node, the trace's past
    slot_window(trace, slot_seconds, split="test")               # the same window, for the envs
                                                                 # that read tasks directly

``trace=None`` uses the shipped gpu-v2023 sample (:func:`schedgym.data.alibaba.load_sample`);
pass any :class:`~schedgym.data.alibaba.Trace` (e.g. from ``load_gpu_v2020``) to use your own.

The mapping (deterministic given ``seed``; every step is what the tests check by hand):

1. **Window.** Tasks created in ``time_window = [t0, t1]`` trace seconds (default: first to last
   task), or in one of the two named **splits** of the trace's time (``split="train"``: the
   first :data:`TRAIN_FRACTION` = 70 % of the span from the first to the last task, in whole
   slots; ``split="test"``: the rest; :func:`slot_window` has the exact boundaries). Everything
   below (classes, types, coverage, arrivals) is derived from the window's tasks only.
2. **Locality class of a task** (Kubernetes semantics): a task requesting no GPU may run on any
   node (class ``any``); a GPU task without constraint on any node that has GPUs (``any-gpu``);
   a GPU task with ``gpu_spec = 'A|B'`` only on nodes whose GPU model is A or B (``gpu:A|B``).
   Classes whose models no trace node has are dropped (noted in :attr:`TraceProblem.notes`).
3. **Job types.** The ``L = n_types`` types are split over the classes in proportion to their
   task counts by the D'Hondt rule (highest averages: the next type goes to the class maximising
   ``tasks / (types + 1)``; ties to the larger class, then the name), never giving a class more
   types than it has distinct request vectors. Within a class with ``k`` types, the distinct
   request vectors ``(cores, GB, GPUs)`` are clustered by weighted k-means (weights = task counts)
   on ``log2(1 + request)``; initial centres: the most frequent vector, then repeatedly the vector
   maximising ``count * squared distance to the nearest centre`` (a deterministic k-means++: no
   randomness, the types depend on the trace only, not on ``seed``). A type's request
   is the **most frequent request vector among its tasks** (a real request; ties to the
   lexicographically smallest). Types are ordered by class (largest first), then by task count.
   Tasks of classes that got no type are not used (``coverage`` = fraction of window tasks used).
4. **Computing instances.** ``R = n_instances`` distinct nodes (``"all"``: every node of the
   trace) drawn uniformly without
   replacement (stream ``trace_nodes`` of ``seed``), except that each type first gets one node
   of its class drawn from its allowed nodes if none is drawn yet, so that every type is reachable.
   Sorted by trace row. Capacities are the trace's (cores, GB, GPUs).
5. **Locality graph.** ``mask[l, r]`` iff node ``r`` is allowed for type ``l``'s class. With
   ``degree_cap = d``, a type keeps ``d`` of its allowed nodes drawn uniformly (stream
   ``trace_graph``); ``None`` (default) keeps them all.
6. **Arrivals.** Slot of a task = ``floor((time - t0) / slot_seconds)`` with ``t0`` the start of
   the window; ``T_trace`` = the window's slots (``floor((t1 - t0) / slot_seconds) + 1`` for a
   time window ``[t0, t1]``); ``arrival_counts[t, l]`` = tasks of type ``l`` in slot ``t``.
   :meth:`TraceProblem.sample_arrivals` turns them into the papers' per-slot indicators
   ``x_l(t) = 1{count > 0} * Bernoulli(prob)`` over a window of ``horizon`` consecutive slots
   starting at a random slot (:meth:`SlotWindow.start_slot`): without a split it wraps around to
   slot 0 past the end; with a split it never wraps, so an episode of one split never sees a
   slot of the other.

What is real and what is not: node capacities, GPU models, request vectors, locality (from the
trace's GPU-model constraints) and the arrival pattern are real; grouping into types, the choice
of nodes, and anything a problem needs beyond (cores, GB, GPUs) (accelerators other than GPUs,
utilities, deadlines, workloads, prices) are not in the trace: each env synthesises them with its
paper's own generator and says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from schedgym.core import rng as rngs
from schedgym.core.arrays import readonly as _readonly
from schedgym.core.validation import check_float, check_int, check_range, check_seed
from schedgym.data.alibaba import Trace, load_sample

__all__ = [
    "RESOURCE_NAMES",
    "RESOURCE_UNITS",
    "SPLITS",
    "TRAIN_FRACTION",
    "SlotWindow",
    "TraceProblem",
    "build_trace_problem",
    "class_allowed_nodes",
    "resolve_n_instances",
    "slot_window",
    "split_boundary",
    "task_classes",
]

RESOURCE_NAMES: tuple[str, str, str] = ("cpu", "mem", "gpu")
RESOURCE_UNITS: tuple[str, str, str] = ("cores", "GB", "GPUs")
ANY, ANY_GPU, GPU_PREFIX = "any", "any-gpu", "gpu:"

#: The named splits of a trace's time: its past (``train``) and its future (``test``).
SPLITS: tuple[str, str] = ("train", "test")
#: Fraction of the span from the first to the last task that is the ``train`` split.
TRAIN_FRACTION = 0.7
#: The ``n_instances`` value that takes every node of the trace.
ALL_NODES = "all"


@dataclass(frozen=True, eq=False)
class TraceProblem:
    """A scheduling problem derived from a cluster trace (read-only numpy arrays).

    Attributes:
        capacities: float64 ``(R, 3)``: (CPU cores, memory GB, GPUs) of each computing instance.
        gpu_model: str ``(R,)``: GPU model of each instance, ``''`` for a CPU-only node.
        node_index: int64 ``(R,)``: row of each instance in the trace's node list.
        requests: float64 ``(L, 3)``: (cores, GB, GPUs) requested by one job of each type (GPUs
            may be fractional: a share of one GPU).
        type_class: ``L`` strings: locality class of each type (``any``, ``any-gpu`` or
            ``gpu:A|B``).
        type_tasks: int64 ``(L,)``: tasks of the window mapped to each type.
        type_duration: float64 ``(L,)``: median run time of each type's tasks, seconds (NaN if
            the trace has none).
        mask: bool ``(L, R)``: ``mask[l, r]`` iff type ``l`` may run on instance ``r``.
        arrival_counts: int64 ``(T_trace, L)``: tasks of each type created in each slot.
        slot_seconds: slot length, seconds.
        start_time: trace time of the start of slot 0, seconds.
        task_type: int64 ``(N,)``: type of each trace task, ``-1`` if unused (outside the window
            or of a class without a type).
        coverage: fraction of the window's tasks mapped to a type.
        seed: the seed of the node (and degree-cap) draws.
        source: the trace's source line.
        notes: what the mapping dropped or assumed, one line each.
        trace: the :class:`Trace` it came from.
        window: the :class:`SlotWindow` of the trace the problem spans (``arrival_counts`` has
            one row per slot of it); ``None`` for a hand-built problem (the whole of
            ``arrival_counts``, wrapping).
        resource_names / resource_units: ``("cpu", "mem", "gpu")`` / ``("cores", "GB", "GPUs")``.
    """

    capacities: np.ndarray
    gpu_model: np.ndarray
    node_index: np.ndarray
    requests: np.ndarray
    type_class: tuple[str, ...]
    type_tasks: np.ndarray
    type_duration: np.ndarray
    mask: np.ndarray
    arrival_counts: np.ndarray
    slot_seconds: float
    start_time: float
    task_type: np.ndarray
    coverage: float
    seed: int
    source: str
    notes: tuple[str, ...] = field(default=())
    trace: Trace | None = field(default=None, repr=False)
    window: SlotWindow | None = field(default=None, repr=False)
    resource_names: tuple[str, ...] = RESOURCE_NAMES
    resource_units: tuple[str, ...] = RESOURCE_UNITS

    def __post_init__(self) -> None:
        for name in ("capacities", "gpu_model", "node_index", "requests", "type_tasks",
                     "type_duration", "mask", "arrival_counts", "task_type"):
            object.__setattr__(self, name, _readonly(np.asarray(getattr(self, name))))
        object.__setattr__(self, "type_class", tuple(self.type_class))
        object.__setattr__(self, "notes", tuple(self.notes))

    @property
    def n_types(self) -> int:
        """``L``."""
        return int(self.requests.shape[0])

    @property
    def n_instances(self) -> int:
        """``R``."""
        return int(self.capacities.shape[0])

    @property
    def n_slots(self) -> int:
        """``T_trace``, the number of slots the trace window spans."""
        return int(self.arrival_counts.shape[0])

    @property
    def split(self) -> str | None:
        """The named split the problem spans (``"train"``, ``"test"``), or ``None``."""
        return None if self.window is None else self.window.split

    @property
    def edges(self) -> np.ndarray:
        """int64 ``(E, 2)``: ``(l, r)`` pairs of ``mask`` in lexicographic order."""
        return np.argwhere(self.mask).astype(np.int64)

    @property
    def arrival_indicators(self) -> np.ndarray:
        """float64 ``(T_trace, L)``: ``1`` where at least one task of the type arrived."""
        return (self.arrival_counts > 0).astype(np.float64)

    @property
    def arrival_rate(self) -> np.ndarray:
        """float64 ``(L,)``: fraction of slots with an arrival of each type (``prob = 1``)."""
        return self.arrival_indicators.mean(axis=0)

    def sample_arrivals(self, rng: np.random.Generator, horizon: int,
                        prob: float | np.ndarray = 1.0, start: int | None = None) -> np.ndarray:
        """float64 ``(horizon, L)`` in {0, 1}: trace indicators of ``horizon`` consecutive slots
        from slot ``start`` (``None``: drawn from ``rng`` by :meth:`SlotWindow.start_slot`),
        each kept with probability ``prob`` (a scalar or one per type: the papers' Bernoulli
        thinning "applied on the actual arrival pattern"; ``1`` keeps the trace as is).

        Without a split the window wraps around to slot 0 past the end; with a split it never
        does (a ``horizon`` longer than the split, or a ``start`` that would run past its end,
        is a ``ValueError``), so an episode of one split never sees a slot of the other."""
        horizon = check_int("horizon", horizon, min_value=1)
        p = np.asarray(prob, dtype=np.float64)
        if p.ndim == 0:
            check_float("prob", float(p), low=0.0, high=1.0)
        elif p.shape != (self.n_types,) or not np.all((p >= 0) & (p <= 1)):
            raise ValueError(f"prob has shape {p.shape}: must be a number in [0, 1] or one per "
                             f"type, shape ({self.n_types},)")
        offset = self._start(rng, horizon, start)
        idx = (offset + np.arange(horizon)) % self.n_slots
        x = self.arrival_counts[idx] > 0
        if np.any(p < 1.0):
            x &= rng.random(x.shape) < p
        return x.astype(np.float64)

    def _start(self, rng: np.random.Generator, horizon: int, start: int | None) -> int:
        """The first slot of :meth:`sample_arrivals`' window (checked against the split)."""
        window = self.window
        if start is None:
            return int(rng.integers(0, self.n_slots)) if window is None else \
                window.start_slot(rng, horizon, wrap=True)
        if window is None or window.split is None:
            return check_int("start", start, min_value=0, max_value=self.n_slots - 1)
        if horizon > window.n_slots:
            window.start_slot(rng, horizon, wrap=False)  # raises the split's one-line error
        return check_int("start", start, min_value=0, max_value=self.n_slots - horizon)

    def describe(self) -> str:
        """A markdown table of the job types (class, request, tasks, arrival rate, degree)."""
        lines = ["| type | locality class | cores | GB | GPUs | tasks | arrival rate | nodes |",
                 "|---:|---|---:|---:|---:|---:|---:|---:|"]
        rate, deg = self.arrival_rate, self.mask.sum(axis=1)
        for l in range(self.n_types):
            c, m, g = self.requests[l]
            lines.append(f"| {l} | {self.type_class[l]} | {c:g} | {m:.4g} | {g:g} | "
                         f"{int(self.type_tasks[l])} | {rate[l]:.3f} | {int(deg[l])} |")
        return "\n".join(lines)



@dataclass(frozen=True, eq=False)
class SlotWindow:
    """The slots of a trace that a problem spans: slot ``i`` covers trace seconds
    ``[start + i * slot_seconds, start + (i + 1) * slot_seconds)``.

    Attributes:
        start: trace time of the start of slot 0, seconds.
        n_slots: number of slots (>= 1).
        slot_seconds: slot length, seconds.
        split: ``"train"``, ``"test"`` or ``None`` (a time window, or the whole trace).
        tasks: bool ``(n_tasks,)``: the trace's tasks inside the window (read-only).
    """

    start: float
    n_slots: int
    slot_seconds: float
    split: str | None
    tasks: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "tasks", _readonly(np.asarray(self.tasks, dtype=bool)))

    @property
    def stop(self) -> float:
        """Trace time of the end of the last slot, seconds."""
        return self.start + self.n_slots * self.slot_seconds

    @property
    def max_horizon(self) -> int:
        """The longest episode, in slots, that fits the window without wrapping."""
        return self.n_slots

    def start_slot(self, rng: np.random.Generator, horizon: int, *, wrap: bool) -> int:
        """The first slot of an episode of ``horizon`` slots, drawn from ``rng``.

        With a split the episode never wraps and never leaves the split: the start is uniform
        over ``[0, n_slots - horizon]``, and a longer ``horizon`` is a ``ValueError``. Without a
        split, ``wrap=True`` draws it uniformly over every slot (the episode wraps around to
        slot 0 past the end) and ``wrap=False`` over ``[0, max(0, n_slots - horizon)]`` (an
        episode longer than the window starts at slot 0 and runs past its end).
        """
        horizon = check_int("horizon", horizon, min_value=1)
        if self.split is not None:
            if horizon > self.n_slots:
                raise ValueError(
                    f"horizon={horizon} is invalid with split={self.split!r}: the split has "
                    f"{self.n_slots} slots of {self.slot_seconds:g} s, so horizon must be an "
                    f"integer in [1, {self.n_slots}] (an episode never crosses the split)")
            return int(rng.integers(0, self.n_slots - horizon + 1))
        if wrap:
            return int(rng.integers(0, self.n_slots))
        return int(rng.integers(0, max(1, self.n_slots - horizon + 1)))


def split_boundary(trace: Trace) -> float:
    """The trace time (s) where ``split="test"`` begins: ``t_first + TRAIN_FRACTION * (t_last -
    t_first)`` over the tasks' creation times (the shipped sample: 2,084,278.7 s, 24.12 days
    after its first task)."""
    t_first, t_last = float(trace.task_time.min()), float(trace.task_time.max())
    return t_first + TRAIN_FRACTION * (t_last - t_first)


def slot_window(trace: Trace, slot_seconds: float, *, split: str | None = None,
                time_window: tuple[float, float] | None = None) -> SlotWindow:
    """The slots of ``trace`` that a split, a time window or the whole trace spans.

    - ``split="train"``: slot 0 starts at the first task; only the whole slots before
      :func:`split_boundary` ``b`` (``floor((b - t_first) / slot_seconds)`` of them), so no
      training slot reaches into the test split's time; its tasks are those created in them.
    - ``split="test"``: slot 0 starts at ``b``; slots up to the one holding the last task; its
      tasks are those created at or after ``b``.
    - ``time_window=(t0, t1)`` (trace seconds, inclusive): slot 0 starts at ``t0``,
      ``floor((t1 - t0) / slot_seconds) + 1`` slots, the tasks created in ``[t0, t1]``.
    - neither: the whole trace, from its first to its last task.

    Raises:
        ValueError: an unknown ``split``, ``split`` together with ``time_window``, a window
            without tasks, or a split shorter than one slot.
    """
    dt = check_float("slot_seconds", slot_seconds, low=0.0, low_open=True)
    if split is not None and split not in SPLITS:
        raise ValueError(f"split={split!r} is invalid: must be one of 'train', 'test' or None")
    if split is not None and time_window is not None:
        raise ValueError(f"split={split!r} and time_window={time_window!r} exclude each other: "
                         "a split is a time window of its own (give one of them)")
    t = trace.task_time
    if split is None:
        t0, t1, in_win = _window(trace, time_window)
        return SlotWindow(t0, int(np.floor((t1 - t0) / dt)) + 1, dt, None, in_win)
    t_first, t_last, b = float(t.min()), float(t.max()), split_boundary(trace)
    if split == "train":
        n = int(np.floor((b - t_first) / dt))
        start = t_first
        in_win = (t >= start) & (t < start + n * dt)
    else:
        start = b
        n = int(np.floor((t_last - b) / dt)) + 1
        in_win = t >= b
    if n < 1 or not in_win.any():
        raise ValueError(f"split={split!r} is invalid for this trace with slot_seconds={dt:g}: "
                         f"the split spans {'less than one slot' if n < 1 else 'no task'} "
                         f"(the trace's tasks span [{t_first:g}, {t_last:g}] s, the split "
                         f"boundary is {b:g} s)")
    return SlotWindow(start, n, dt, split, in_win)


def resolve_n_instances(n_instances: int | str, trace: Trace | None = None,
                        constraints: bool = True) -> int:
    """The number of nodes ``n_instances`` asks for: ``"all"`` is every node of ``trace`` (the
    shipped sample for ``None``), an integer must lie in ``[1, nodes of the trace]``."""
    tr = load_sample(constraints) if trace is None else trace
    n_nodes = int(tr.n_nodes) if isinstance(tr, Trace) else None
    if isinstance(n_instances, str):
        if n_instances != ALL_NODES:
            hi = f"[1, {n_nodes}]" if n_nodes is not None else ">= 1"
            raise ValueError(f"n_instances={n_instances!r} is invalid: must be 'all' (every "
                             f"node of the trace) or an integer in {hi}")
        if n_nodes is None:
            raise ValueError(f"trace is invalid: must be a schedgym.data.alibaba.Trace or None, "
                             f"got {type(tr).__name__}")
        return n_nodes
    if n_nodes is None:
        return check_int("n_instances", n_instances, min_value=1)
    try:
        return check_int("n_instances", n_instances, min_value=1, max_value=n_nodes)
    except ValueError:
        raise ValueError(f"n_instances={n_instances!r} is invalid: must be 'all' or an integer "
                         f"in [1, {n_nodes}] (the trace has {n_nodes} nodes)") from None


# ---------------------------------------------------------------- the steps
def task_classes(trace: Trace) -> np.ndarray:
    """str ``(N,)``: the locality class of every task (``any``, ``any-gpu``, ``gpu:A|B``)."""
    out = np.full(trace.n_tasks, ANY, dtype=object)
    gpu = trace.task_gpu > 0
    out[gpu] = ANY_GPU
    spec = gpu & (trace.task_gpu_spec != "")
    out[spec] = np.char.add(GPU_PREFIX, trace.task_gpu_spec[spec].astype(str)).astype(object)
    return out.astype(str)


def class_allowed_nodes(trace: Trace, cls: str) -> np.ndarray:
    """bool ``(M,)``: the trace nodes a task of locality class ``cls`` may run on."""
    if cls == ANY:
        return np.ones(trace.n_nodes, dtype=bool)
    has_gpu = trace.node_gpu > 0
    if cls == ANY_GPU:
        return has_gpu
    if not cls.startswith(GPU_PREFIX):
        raise ValueError(f"cls={cls!r} is invalid: must be 'any', 'any-gpu' or 'gpu:MODEL|...'")
    models = cls[len(GPU_PREFIX):].split("|")
    return has_gpu & np.isin(trace.node_model, models)


def _dhondt(counts: list[int], caps: list[int], seats: int) -> list[int]:
    """Seats per party (parties pre-sorted by priority); party ``i`` gets at most ``caps[i]``."""
    got = [0] * len(counts)
    for _ in range(seats):
        best, best_q = -1, -1.0
        for i, (c, cap) in enumerate(zip(counts, caps, strict=True)):
            if got[i] < cap and c / (got[i] + 1) > best_q:
                best, best_q = i, c / (got[i] + 1)
        got[best] += 1
    return got


def _kmeans(X: np.ndarray, w: np.ndarray, k: int, max_iter: int = 100) -> np.ndarray:
    """Deterministic weighted k-means of the distinct rows ``X`` ``(D, F)``; labels ``(D,)``.

    Initial centres: the heaviest row (ties: lexicographically smallest), then repeatedly the row
    maximising ``weight * squared distance to the nearest centre`` (a deterministic k-means++;
    ties: heavier, then lexicographically smaller);
    Lloyd iterations (ties to the lower centre); an emptied cluster takes the row farthest from
    its centre. Requires ``k <= D``.
    """
    D = X.shape[0]
    lex = np.lexsort(X.T[::-1])
    rank = np.empty(D, dtype=np.int64)
    rank[lex] = np.arange(D)  # rank[i] = lexicographic position of row i
    first = min(range(D), key=lambda i: (-w[i], rank[i]))
    centres = [first]
    dmin = ((X - X[first]) ** 2).sum(axis=1)
    while len(centres) < k:
        cand = [i for i in range(D) if i not in centres]
        nxt = max(cand, key=lambda i: (w[i] * dmin[i], w[i], -rank[i]))
        centres.append(nxt)
        dmin = np.minimum(dmin, ((X - X[nxt]) ** 2).sum(axis=1))
    C = X[centres].astype(np.float64)
    labels = np.full(D, -1)
    for _ in range(max_iter):
        d2 = ((X[:, None, :] - C[None, :, :]) ** 2).sum(axis=2)
        new = np.argmin(d2, axis=1)
        for j in range(k):  # refill emptied clusters
            if not np.any(new == j):
                own = d2[np.arange(D), new]
                sizes = np.bincount(new, minlength=k)
                own[sizes[new] < 2] = -1.0
                far = int(np.argmax(own))
                new[far] = j
                C[j] = X[far]
        if np.array_equal(new, labels):
            break
        labels = new
        for j in range(k):
            m = labels == j
            C[j] = (w[m, None] * X[m]).sum(axis=0) / w[m].sum()
    return labels


@dataclass
class _Classes:
    """Step 2's result: the locality classes kept, largest first."""

    names: list[str]  # class names
    counts: list[int]  # window tasks of each class
    n_distinct: list[int]  # distinct request vectors of each class
    allowed: dict[str, np.ndarray]  # class -> (n_nodes,) bool allowed nodes


@dataclass
class _Types:
    """Step 3's result: the job types."""

    requests: np.ndarray  # (L, 3) representative request of each type
    type_class: list[str]  # class of each type
    type_tasks: list[int]  # window tasks of each type
    task_type: np.ndarray  # (n_tasks,) type of each trace task, -1 = unused


def build_trace_problem(
    n_instances: int | str = 128,
    n_types: int = 10,
    slot_seconds: float = 600.0,
    seed: int = 0,
    trace: Trace | None = None,
    *,
    time_window: tuple[float, float] | None = None,
    split: str | None = None,
    constraints: bool = True,
    degree_cap: int | None = None,
) -> TraceProblem:
    """Map a trace to a scheduling problem (module docstring: the six steps).

    Args:
        n_instances: ``R``, nodes to sample (at most the trace's node count), or ``"all"``:
            every node of the trace.
        n_types: ``L``, job types (at most the number of distinct (class, request) pairs).
        slot_seconds: slot length ``Delta`` in seconds (> 0).
        seed: seeds the node sample (stream ``trace_nodes``) and the degree cap (``trace_graph``).
        trace: the trace; ``None`` = the shipped gpu-v2023 sample.
        time_window: ``(t0, t1)`` trace seconds (inclusive); ``None`` = first to last task.
        split: ``"train"`` (the trace's first 70 % of time) or ``"test"`` (the rest), see
            :func:`slot_window`; excludes ``time_window``. ``None``: no split.
        constraints: use the tasks' GPU-model constraints (``False``: every GPU task may run on
            any GPU node, like ``openb_pod_list_default``).
        degree_cap: keep at most this many allowed nodes per type (``None``: all).

    Raises:
        ValueError: naming the argument, when a size cannot be met or the window is empty.
    """
    if not isinstance(n_instances, str):
        check_int("n_instances", n_instances, min_value=1)
    L = check_int("n_types", n_types, min_value=1)
    dt = check_float("slot_seconds", slot_seconds, low=0.0, low_open=True)
    seed = check_seed("seed", seed) or 0
    if degree_cap is not None:
        degree_cap = check_int("degree_cap", degree_cap, min_value=1)
    tr = _resolve_trace(trace, constraints)
    R = resolve_n_instances(n_instances, tr)
    notes: list[str] = []
    window = slot_window(tr, dt, split=split, time_window=time_window)  # 1
    t0, in_win = window.start, np.asarray(window.tasks)
    classes = _classes(tr, in_win, L, notes)  # 2
    types = _types(tr, in_win, classes, L, notes)  # 3
    used = types.task_type >= 0
    durations = np.array([np.nanmedian(tr.task_duration[types.task_type == l])
                          if np.isfinite(tr.task_duration[types.task_type == l]).any()
                          else np.nan for l in range(L)])
    nodes = _nodes(tr, types.type_class, classes.allowed, R, seed)  # 4
    mask = _graph(types.type_class, classes.allowed, nodes, degree_cap, seed)  # 5
    T = window.n_slots  # 6. arrivals
    slots = np.floor((tr.task_time[used] - t0) / dt).astype(np.int64)
    arrivals = np.zeros((T, L), dtype=np.int64)
    np.add.at(arrivals, (slots, types.task_type[used]), 1)
    return TraceProblem(
        capacities=tr.node_resources[nodes],
        gpu_model=tr.node_model[nodes],
        node_index=nodes,
        requests=types.requests,
        type_class=tuple(types.type_class),
        type_tasks=np.asarray(types.type_tasks, dtype=np.int64),
        type_duration=durations,
        mask=mask,
        arrival_counts=arrivals,
        slot_seconds=dt,
        start_time=t0,
        task_type=types.task_type,
        coverage=float(used.sum() / in_win.sum()),
        seed=seed,
        source=tr.source,
        notes=(*tr.notes, *notes),
        trace=tr,
        window=window,
    )


def _resolve_trace(trace: Trace | None, constraints: bool) -> Trace:
    """The trace to map (the shipped sample for ``None``), without GPU-model constraints if
    ``constraints`` is false; checks that it has some tasks."""
    tr = load_sample(constraints) if trace is None else trace
    if not isinstance(tr, Trace):
        raise ValueError(f"trace is invalid: must be a schedgym.data.alibaba.Trace or None, got "
                         f"{type(tr).__name__}")
    if not constraints and trace is not None:
        tr = Trace(tr.node_cpu, tr.node_mem, tr.node_gpu, tr.node_model, tr.task_time,
                   tr.task_cpu, tr.task_mem, tr.task_gpu, np.full(tr.n_tasks, ""),
                   tr.task_duration, tr.source, (*tr.notes, "GPU-model constraints ignored"))
    if tr.n_tasks == 0:
        raise ValueError("trace has no tasks")
    return tr


def _window(tr: Trace, time_window: tuple[float, float] | None
            ) -> tuple[float, float, np.ndarray]:
    """Step 1: ``(t0, t1, (n_tasks,) bool tasks created in [t0, t1])``."""
    if time_window is None:
        t0, t1 = float(tr.task_time.min()), float(tr.task_time.max())
    elif isinstance(time_window, str):  # a command-line value that is not a pair
        raise ValueError(f"time_window={time_window!r} is invalid: must be a pair (t0, t1) of "
                         "trace seconds with t0 <= t1 (on the command line: --set "
                         "time_window=0:86400, time_window=(0,86400) or time_window=[0,86400])")
    else:
        t0, t1 = check_range("time_window", time_window)
    in_win = (tr.task_time >= t0) & (tr.task_time <= t1)
    if not in_win.any():
        raise ValueError(f"time_window={time_window!r} is invalid: no task is created inside it "
                         f"(tasks span [{tr.task_time.min():g}, {tr.task_time.max():g}] s)")
    return t0, t1, in_win


def _classes(tr: Trace, in_win: np.ndarray, L: int, notes: list[str]) -> _Classes:
    """Step 2: the locality classes of the window's tasks that some node can serve, largest
    first (ties by name); dropped classes are noted."""
    cls = task_classes(tr)
    req = tr.task_requests
    class_names, class_counts = np.unique(cls[in_win], return_counts=True)
    order = sorted(range(len(class_names)), key=lambda i: (-class_counts[i], class_names[i]))
    out = _Classes([], [], [], {})
    for i in order:
        c = str(class_names[i])
        ok = class_allowed_nodes(tr, c)
        if not ok.any():
            notes.append(f"class {c}: {class_counts[i]} tasks dropped (no node has these models)")
            continue
        out.allowed[c] = ok
        out.names.append(c)
        out.counts.append(int(class_counts[i]))
        out.n_distinct.append(int(np.unique(req[in_win & (cls == c)], axis=0).shape[0]))
    if sum(out.n_distinct) < L:
        raise ValueError(f"n_types={L} is invalid: the trace window has only "
                         f"{sum(out.n_distinct)} distinct (locality class, request) pairs")
    return out


def _types(tr: Trace, in_win: np.ndarray, classes: _Classes, L: int,
           notes: list[str]) -> _Types:
    """Step 3: D'Hondt split of the ``L`` types over the classes, k-means of each class's
    distinct requests, the most frequent request of each cluster as the type's request."""
    cls = task_classes(tr)
    req = tr.task_requests
    seats = _dhondt(classes.counts, classes.n_distinct, L)
    out = _Types(np.empty((0, 3)), [], [], np.full(tr.n_tasks, -1, dtype=np.int64))
    reps: list[np.ndarray] = []
    for c, k in zip(classes.names, seats, strict=True):
        if k == 0:
            notes.append(f"class {c}: {classes.counts[classes.names.index(c)]} tasks got no "
                         "type (too few types for this class under the D'Hondt split)")
            continue
        members = np.flatnonzero(in_win & (cls == c))
        vecs, inv, w = np.unique(req[members], axis=0, return_inverse=True, return_counts=True)
        inv = inv.reshape(-1)
        lab = _kmeans(np.log2(1.0 + vecs), w.astype(np.float64), k)
        local: list[tuple[int, tuple[float, ...], np.ndarray, np.ndarray]] = []
        for j in range(k):
            in_j = np.flatnonzero(lab == j)
            best = min(in_j, key=lambda i: (-w[i], tuple(vecs[i])))
            local.append((int(w[in_j].sum()), tuple(vecs[best]), vecs[best], in_j))
        local.sort(key=lambda x: (-x[0], x[1]))
        for n_tasks, _, rep, in_j in local:
            out.task_type[members[np.isin(inv, in_j)]] = len(reps)
            reps.append(rep)
            out.type_class.append(c)
            out.type_tasks.append(n_tasks)
    out.requests = np.asarray(reps, dtype=np.float64)
    return out


def _nodes(tr: Trace, type_class: list[str], allowed: dict[str, np.ndarray], R: int,
           seed: int) -> np.ndarray:
    """Step 4: ``(R,)`` sorted trace rows of the sampled nodes, one allowed node per type
    first (stream ``trace_nodes``)."""
    g_nodes = rngs.stream(seed, "trace_nodes")
    chosen: list[int] = []
    for c in type_class:
        ok = allowed[c]
        if not ok[chosen].any():
            pool = np.flatnonzero(ok & ~np.isin(np.arange(tr.n_nodes), chosen))
            chosen.append(int(g_nodes.choice(pool)))
    if len(chosen) > R:
        raise ValueError(f"n_instances={R} is invalid: at least {len(chosen)} nodes are needed so "
                         "that every job type has a node of its GPU models")
    rest = np.setdiff1d(np.arange(tr.n_nodes), chosen)
    chosen.extend(int(i) for i in g_nodes.choice(rest, size=R - len(chosen), replace=False))
    return np.sort(np.asarray(chosen, dtype=np.int64))


def _graph(type_class: list[str], allowed: dict[str, np.ndarray], nodes: np.ndarray,
           degree_cap: int | None, seed: int) -> np.ndarray:
    """Step 5: ``(L, R)`` bool locality mask, at most ``degree_cap`` nodes per type (stream
    ``trace_graph``)."""
    mask = np.stack([allowed[c][nodes] for c in type_class])
    if degree_cap is not None:
        g_graph = rngs.stream(seed, "trace_graph")
        for l in range(len(type_class)):
            idx = np.flatnonzero(mask[l])
            if idx.size > degree_cap:
                keep = g_graph.choice(idx, size=degree_cap, replace=False)
                mask[l] = False
                mask[l, keep] = True
    return mask
