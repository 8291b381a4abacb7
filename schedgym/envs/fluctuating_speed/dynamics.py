"""Pure functions of FluctuatingSpeed-v0: validation, masking, capacity repair, net utility,
waiting times.

Shared by the environment, the agents, the oracle and the tests. A selection ``x`` is an int8
array ``(E,)`` in {0, 1} over the instance's edges (lexicographic ``(l, r)`` order).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numba
import numpy as np

from schedgym.envs.fluctuating_speed.types import FluctuatingSpeedInstance


def validate_selection(action: Any, n_edges: int, name: str = "action") -> np.ndarray:
    """Return ``action`` as an int8 ``(E,)`` selection; raise ``ValueError`` if its shape is not
    ``(E,)`` or an entry is not exactly 0 or 1 (bools and 0./1. floats are accepted)."""
    arr: Any = None
    num = None
    try:
        arr = np.asarray(action)
        if arr.dtype.kind != "c":  # complex to real would silently drop the imaginary part
            num = arr.astype(np.float64)
    except (TypeError, ValueError):
        pass
    if num is None:
        dtype = "" if arr is None else f" of dtype {arr.dtype}"
        raise ValueError(f"{name} is invalid: expected a real 0/1 array of shape ({n_edges},), "
                         f"got {type(action).__name__}{dtype}")
    if num.shape != (n_edges,):
        raise ValueError(f"{name} has shape {num.shape}: must have shape ({n_edges},) "
                         "(one 0/1 entry per edge)")
    i = _first_non_binary(num)
    if i >= 0:
        raise ValueError(f"{name} has a non-binary entry (index {i}: {arr[i]!r}): every entry "
                         "must be 0 or 1")
    return num.astype(np.int8)


def edge_mask(inst: FluctuatingSpeedInstance, arrivals: np.ndarray) -> np.ndarray:
    """int8 ``(E,)``: 1 on the edges of ports with a job this slot (constraint (4))."""
    return _edge_mask(np.asarray(arrivals, dtype=np.float64), inst.port_of_edge)


def load(inst: FluctuatingSpeedInstance, x: np.ndarray) -> np.ndarray:
    """Devices in use per type, ``A x``, int64 ``(K,)``."""
    return _load(inst.requests, np.asarray(x, dtype=np.int64))


def is_feasible(inst: FluctuatingSpeedInstance, x: np.ndarray) -> bool:
    """Capacity (2): ``A x <= c``."""
    return not _overloaded(load(inst, x), inst.capacities)


def utilization(inst: FluctuatingSpeedInstance, x: np.ndarray) -> np.ndarray:
    """Fraction of each device type in use, float ``(K,)`` in [0, 1] (0 where ``c_k = 0``)."""
    util = np.empty(inst.capacities.shape[0])
    _utilization(load(inst, x), inst.capacities, util)
    return util


def repair(inst: FluctuatingSpeedInstance, x: np.ndarray) -> tuple[np.ndarray, int]:
    """The documented deterministic capacity repair; returns ``(feasible x, edges dropped)``.

    Rule: while ``A x > c`` for some type, drop the selected edge with the **highest edge
    index** among those requesting an overloaded type (spec esdp §2.2 "project"
    option, made safe for zero requests). Edges are never added.
    """
    y = np.array(x, dtype=np.int8, copy=True)
    dropped = _repair(y, _load(inst.requests, y), inst.requests, inst.capacities)
    return y, dropped


def net_utility(zraw: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """Normalised net utility ``clip(Z - C, 0, 1)`` (spec esdp §1.8 rule (N))."""
    z = np.asarray(zraw, dtype=np.float64)
    out = np.empty(z.shape)
    _net_utility(z.reshape(-1), np.broadcast_to(np.asarray(cost, dtype=np.float64),
                                                 z.shape).reshape(-1), out.reshape(-1))
    return out


def open_waits(origin: np.ndarray, arrivals: np.ndarray, t: int) -> np.ndarray:
    """Start of slot ``t``: ports with a job and no open wait start one at ``t`` (spec esdp
    §5.3).

    ``origin`` is float ``(L,)``: arrival slot of the oldest unserved job, ``-1`` if none.
    """
    o = np.array(origin, dtype=np.float64, copy=True)
    # a writable copy, like the rows the step passes: one compiled _open_waits
    _open_waits(o, np.array(arrivals, dtype=np.float64), t)
    return o


def waiting_times(origin: np.ndarray, t: int) -> np.ndarray:
    """``w_l(t) = t - o_l`` (0 where no wait is open), float ``(L,)`` in slots."""
    o = np.asarray(origin, dtype=np.float64)
    out = np.empty(o.shape)
    _waiting_times(o.reshape(-1), t, out.reshape(-1))
    return out


def close_waits(inst: FluctuatingSpeedInstance, origin: np.ndarray, x: np.ndarray) -> np.ndarray:
    """After the action: ports with a used edge are served and their wait closes."""
    o = np.array(origin, dtype=np.float64, copy=True)
    _close_waits(o, np.asarray(x), inst.port_of_edge)
    return o


# ------------------------------------------------------------ compiled primitives (one formula)
@numba.njit(cache=True)
def _first_non_binary(a: np.ndarray) -> int:  # pragma: no cover - compiled
    """Index of the first entry that is not exactly 0 or 1 (NaN included), -1 if none."""
    for e in range(a.shape[0]):
        if a[e] != 0 and a[e] != 1:
            return e
    return -1


@numba.njit(cache=True)
def _edge_mask(arrivals: np.ndarray, port: np.ndarray) -> np.ndarray:  # pragma: no cover
    """int8 ``(E,)``: ``arrivals[port[e]] > 0``."""
    m = np.empty(port.shape[0], dtype=np.int8)
    for e in range(port.shape[0]):
        m[e] = 1 if arrivals[port[e]] > 0 else 0
    return m


@numba.njit(cache=True)
def _overloaded(ld: np.ndarray, c: np.ndarray) -> bool:  # pragma: no cover - compiled
    """Whether ``A x > c`` for some type, from the load ``ld = A x``."""
    for k in range(c.shape[0]):
        if ld[k] > c[k]:
            return True
    return False


@numba.njit(cache=True)
def _utilization(ld: np.ndarray, c: np.ndarray, util: np.ndarray) -> float:  # pragma: no cover
    """``util[k] = ld[k] / c[k]`` (0 where ``c_k = 0``); returns their mean (summed in order,
    as numpy does for K < 8)."""
    u = 0.0
    for k in range(c.shape[0]):
        util[k] = ld[k] / c[k] if c[k] > 0 else 0.0
        u += util[k]
    return u / c.shape[0]


@numba.njit(cache=True)
def _net_utility(zraw: np.ndarray, cost: np.ndarray,
                 out: np.ndarray) -> None:  # pragma: no cover - compiled
    """``out = clip(zraw - cost, 0, 1)``."""
    for e in range(zraw.shape[0]):
        out[e] = min(max(zraw[e] - cost[e], 0.0), 1.0)


@numba.njit(cache=True)
def _waiting(origin_l: float, t: int) -> float:  # pragma: no cover - compiled
    """``t - o_l`` if a wait is open (``o_l >= 0``), else 0."""
    return t - origin_l if origin_l >= 0 else 0.0


@numba.njit(cache=True)
def _waiting_times(origin: np.ndarray, t: int, out: np.ndarray) -> None:  # pragma: no cover
    """``out[l] = w_l(t)`` (:func:`_waiting`)."""
    for l in range(origin.shape[0]):
        out[l] = _waiting(origin[l], t)


@numba.njit(cache=True)
def _open_waits(origin: np.ndarray, arrivals: np.ndarray,
                t: int) -> None:  # pragma: no cover - compiled
    """In place: a port with a job and no open wait opens one at ``t``."""
    for l in range(origin.shape[0]):
        if arrivals[l] > 0 and origin[l] < 0:
            origin[l] = t


@numba.njit(cache=True)
def _close_waits(origin: np.ndarray, x: np.ndarray,
                 port: np.ndarray) -> None:  # pragma: no cover - compiled
    """In place: the ports of the used edges are served (their wait closes)."""
    for e in range(x.shape[0]):
        if x[e] > 0:
            origin[port[e]] = -1.0


# ------------------------------------------------------------------ compiled slot dynamics
class SlotTables(NamedTuple):
    """The instance arrays the compiled slot dynamics read (contiguous, fixed dtypes).

    requests: int64 ``(K, E)``; capacities: int64 ``(K,)``; cost, theta: float64 ``(E,)``;
    port_of_edge: int64 ``(E,)``.
    """

    requests: np.ndarray
    capacities: np.ndarray
    cost: np.ndarray
    theta: np.ndarray
    port_of_edge: np.ndarray


def slot_tables(inst: FluctuatingSpeedInstance) -> SlotTables:
    """:class:`SlotTables` of an instance (build once per env)."""
    return SlotTables(np.ascontiguousarray(inst.requests, dtype=np.int64),
                      np.ascontiguousarray(inst.capacities, dtype=np.int64),
                      np.ascontiguousarray(inst.cost, dtype=np.float64),
                      np.array(inst.theta, dtype=np.float64),  # writable, as the other
                      # vectors slot_kernel dots with x: one compiled _dot
                      np.ascontiguousarray(inst.port_of_edge, dtype=np.int64))


#: Layout of the scalar outputs of :func:`slot_kernel` (float64 ``(N_SCALARS,)``).
REWARD, RAW_UTILITY, EXPECTED, N_SELECTED, N_MASKED, N_REPAIRED, UTIL_MEAN, ORACLE_REALISED, \
    BAD_INDEX = range(9)
N_SCALARS = 9
#: Status codes of :func:`slot_kernel`.
OK, NON_BINARY, OVER_CAPACITY = 0, 1, 2


@numba.njit(cache=True)
def _load(A: np.ndarray, x: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """``A x``, int64 ``(K,)``."""
    ld = np.zeros(A.shape[0], dtype=np.int64)
    for e in range(x.shape[0]):
        if x[e]:
            for k in range(A.shape[0]):
                ld[k] += A[k, e]
    return ld


@numba.njit(cache=True)
def _repair(x: np.ndarray, ld: np.ndarray, A: np.ndarray,
            c: np.ndarray) -> int:  # pragma: no cover - compiled
    """Capacity repair of :func:`repair` in place on ``x`` (int8 ``(E,)``) with its load ``ld``
    (updated too); returns the number of dropped edges. Scanning the selected edges from the
    highest index is the rule: an edge skipped because it requests no overloaded type never
    becomes a candidate (loads only fall)."""
    K = c.shape[0]
    dropped = 0
    for e in range(x.shape[0] - 1, -1, -1):
        over = False
        hit = False
        for k in range(K):
            if ld[k] > c[k]:
                over = True
                if A[k, e] > 0:
                    hit = True
        if not over:
            break
        if x[e] and hit:
            x[e] = 0
            dropped += 1
            for k in range(K):
                ld[k] -= A[k, e]
    return dropped


@numba.njit(cache=True)
def _dot(x: np.ndarray, v: np.ndarray) -> float:  # pragma: no cover - compiled
    """``sum_e x_e v_e`` in index order. A plain loop, not BLAS ``ddot``: the order of a BLAS
    sum depends on the kernel OpenBLAS picks for the CPU, and the rewards' bits are promised."""
    s = 0.0
    for e in range(x.shape[0]):
        s += x[e] * v[e]
    return s


@numba.njit(cache=True)
def slot_kernel(action: np.ndarray, arrivals: np.ndarray, zraw: np.ndarray, tabs: SlotTables,
                repair_infeasible: bool, oracle_x: np.ndarray, x: np.ndarray,
                feedback: np.ndarray, util: np.ndarray,
                out: np.ndarray) -> int:  # pragma: no cover - compiled
    """One slot of FluctuatingSpeed-v0, compiled: validate, mask (4), repair (2), score.

    Inputs: ``action`` ``(E,)`` any numeric dtype; ``arrivals`` ``(L,)``; ``zraw`` ``(E,)`` raw
    utilities ``Z(t)``; ``oracle_x`` int8 ``(E,)`` the oracle's selection of the slot (zeros if
    unused). Writes the applied selection ``x`` (int8 ``(E,)``), ``feedback`` (float64 ``(E,)``:
    ``clip(Z - C, 0, 1)`` on used channels, 0 elsewhere), the per-type utilization ``util``
    (float64 ``(K,)``) and ``out`` (float64 ``(N_SCALARS,)``, see the index constants). Returns
    ``OK``, ``NON_BINARY`` (``out[BAD_INDEX]`` = first bad index; nothing else written) or
    ``OVER_CAPACITY`` (only when ``repair_infeasible`` is false; ``x`` is the masked selection).
    """
    A, c, cost, theta, port = tabs
    E = x.shape[0]
    bad = _first_non_binary(action)
    if bad >= 0:
        out[BAD_INDEX] = bad
        return NON_BINARY
    mask = _edge_mask(arrivals, port)
    n_sel = 0
    n_mask = 0
    for e in range(E):
        sel = action[e] == 1
        n_sel += sel
        x[e] = sel * mask[e]
        n_mask += sel * (1 - mask[e])
    ld = _load(A, x)
    n_rep = 0
    if _overloaded(ld, c):
        if not repair_infeasible:
            return OVER_CAPACITY
        n_rep = _repair(x, ld, A, c)
    znet = np.empty(E)
    _net_utility(zraw, cost, znet)
    for e in range(E):
        feedback[e] = znet[e] if x[e] else 0.0
    u = _utilization(ld, c, util)
    out[REWARD] = _dot(x, znet)
    out[RAW_UTILITY] = _dot(x, zraw - cost)
    out[EXPECTED] = _dot(x, theta)
    out[N_SELECTED] = n_sel
    out[N_MASKED] = n_mask
    out[N_REPAIRED] = n_rep
    out[UTIL_MEAN] = u
    out[ORACLE_REALISED] = _dot(oracle_x.copy(), znet)  # writable as x: one compiled _dot
    return OK


@numba.njit(cache=True)
def advance_waits(origin: np.ndarray, x: np.ndarray, port: np.ndarray, next_arrivals: np.ndarray,
                  t_next: int, has_next: bool) -> None:  # pragma: no cover - compiled
    """:func:`close_waits` then (if ``has_next``) :func:`open_waits` for slot ``t_next``, in
    place on ``origin`` (float64 ``(L,)``)."""
    _close_waits(origin, x, port)
    if has_next:
        _open_waits(origin, next_arrivals, t_next)


@numba.njit(cache=True)
def observe(arrivals: np.ndarray, util: np.ndarray, feedback: np.ndarray, x: np.ndarray,
            origin: np.ndarray, t: int, horizon: int, cell: np.ndarray, o_arr: np.ndarray,
            o_util: np.ndarray, o_fb: np.ndarray, o_used: np.ndarray, o_wait: np.ndarray,
            o_prog: np.ndarray) -> None:  # pragma: no cover - compiled
    """Fill the float32 observation entries (see the env docstring) at the start of slot ``t``:
    ``arrivals`` (zeros when ``t = T``), previous slot's ``util`` / ``feedback`` / used ``x``,
    ``waiting = w(t) / T`` from ``origin`` and ``progress = t / T``. Edge ``e``'s feedback and
    use go to entry ``cell[e]`` of ``o_fb`` / ``o_used`` (``arange(E)``, or the grid cells of
    the ``"scores"`` mode, where the other entries must already be 0)."""
    for l in range(o_arr.shape[0]):
        o_arr[l] = arrivals[l] if t < horizon else 0.0
        o_wait[l] = _waiting(origin[l], t) / horizon
    for k in range(o_util.shape[0]):
        o_util[k] = util[k]
    for e in range(x.shape[0]):
        o_fb[cell[e]] = feedback[e]
        o_used[cell[e]] = x[e]
    o_prog[0] = t / horizon


class SlotOutcome(NamedTuple):
    """What :func:`apply_slot` returns: the applied selection ``x`` (int8 ``(E,)``), the
    ``feedback`` (float64 ``(E,)``), the per-type utilization ``util`` (float64 ``(K,)``) and the
    scalars ``out`` (float64 ``(N_SCALARS,)``: ``out[REWARD]``, ``out[RAW_UTILITY]``, ...)."""

    x: np.ndarray
    feedback: np.ndarray
    util: np.ndarray
    out: np.ndarray


#: The action dtypes :func:`slot_kernel` takes as they are: MultiBinary's int8 and what agents
#: and learners commonly give. Any other real dtype (float16 and long double, which numba lacks,
#: included) is converted by :func:`validate_selection`, so the kernel is compiled for a few
#: dtypes only.
SELECTION_DTYPES = frozenset(np.dtype(t) for t in (np.bool_, np.int8, np.int64, np.float32,
                                                    np.float64))


def as_selection(action: Any, n_edges: int) -> np.ndarray:
    """``action`` as a numeric ``(E,)`` array for :func:`slot_kernel` (no copy when its dtype is
    one of :data:`SELECTION_DTYPES`); anything else goes through :func:`validate_selection`
    (which converts float16 and the like, and raises on a bad shape or a non-binary entry)."""
    arr = np.asarray(action) if not isinstance(action, np.ndarray) else action
    if arr.shape != (n_edges,) or arr.dtype not in SELECTION_DTYPES:
        arr = validate_selection(action, n_edges)
    return arr


def capacity_error(tabs: SlotTables, x: np.ndarray) -> ValueError:
    """The error of ``invalid_action="raise"`` for a (masked) selection that breaks capacity."""
    load_ = (tabs.requests @ x.astype(np.int64)).tolist()
    return ValueError(
        f"action breaks capacity: devices requested A x = {load_} > c = "
        f"{tabs.capacities.tolist()} (after masking absent ports); use "
        "invalid_action='repair' to repair it")


def apply_slot(tabs: SlotTables, action: Any, arrivals: np.ndarray, zraw: np.ndarray,
               oracle_x: np.ndarray | None = None, repair_infeasible: bool = True) -> SlotOutcome:
    """One slot's dynamics (:func:`slot_kernel`) with the env's errors: a bad shape or entry
    raises :func:`validate_selection`'s ``ValueError``; a selection over capacity raises
    :func:`capacity_error` unless ``repair_infeasible``. ``arrivals`` float64 ``(L,)``, ``zraw``
    float64 ``(E,)``, ``oracle_x`` int8 ``(E,)`` (the oracle's selection; ``None``: no oracle)."""
    E = tabs.cost.shape[0]
    arr = as_selection(action, E)
    x = np.empty(E, dtype=np.int8)
    fb = np.empty(E)
    util = np.empty(tabs.capacities.shape[0])
    out = np.zeros(N_SCALARS)
    ox = oracle_x
    if ox is None:  # read-only, as the oracle's cached selections: one compiled slot_kernel
        ox = np.zeros(E, dtype=np.int8)
        ox.setflags(write=False)
    status = slot_kernel(arr, arrivals, zraw, tabs, repair_infeasible, ox, x, fb, util, out)
    if status == NON_BINARY:
        validate_selection(action, E)  # raises the message naming the entry
    if status == OVER_CAPACITY:
        raise capacity_error(tabs, x)
    return SlotOutcome(x, fb, util, out)


def slot_info(o: SlotOutcome, arrivals: np.ndarray, t: int,
              oracle_value: float | None = None) -> dict[str, Any]:
    """The env's step ``info`` from :func:`apply_slot`'s outcome (keys as in the env docstring;
    the oracle keys only when ``oracle_value`` is given)."""
    out = o.out
    n_rep = int(out[N_REPAIRED])
    info: dict[str, Any] = {
        "selection": o.x.copy(), "slot_arrivals": np.array(arrivals, dtype=np.float64),
        "slot_feedback": o.feedback.copy(),
        "raw_utility": float(out[RAW_UTILITY]), "expected_reward": float(out[EXPECTED]),
        "n_selected": int(out[N_SELECTED]), "n_masked": int(out[N_MASKED]),
        "n_repaired": n_rep, "repaired": n_rep > 0, "mean_utilization": float(out[UTIL_MEAN]),
        "slot": int(t)}
    if oracle_value is not None:
        info["oracle_value"] = oracle_value
        info["pseudo_regret"] = oracle_value - info["expected_reward"]
        info["realised_regret"] = float(out[ORACLE_REALISED]) - float(out[REWARD])
    return info


def slot_observation(arrivals: np.ndarray, util: np.ndarray, feedback: np.ndarray,
                     x: np.ndarray, origin: np.ndarray, t: int, horizon: int,
                     cell: np.ndarray, n_cells: int) -> dict[str, np.ndarray]:
    """A fresh observation dict (float32 entries, see :func:`observe`); ``n_cells`` is the size
    of ``feedback`` / ``used`` (``|E|``, or ``L * R`` in the ``"scores"`` mode)."""
    f32 = np.float32
    o = {"arrivals": np.empty(origin.shape[0], f32), "utilization": np.empty(util.shape[0], f32),
         "feedback": np.zeros(n_cells, f32), "used": np.zeros(n_cells, f32),
         "waiting": np.empty(origin.shape[0], f32), "progress": np.empty(1, f32)}
    observe(arrivals, util, feedback, x, origin, t, horizon, cell, o["arrivals"],
            o["utilization"], o["feedback"], o["used"], o["waiting"], o["progress"])
    return o


# ------------------------------------------------------------ per-cell feedback statistics
#: The observation keys of ``feedback_stats=True``.
STATS_KEYS = ("feedback_mean", "feedback_count")


def accumulate_feedback(fsum: np.ndarray, fcount: np.ndarray, x: np.ndarray,
                        feedback: np.ndarray) -> None:
    """In place: add a slot's semi-bandit feedback to the running sums. ``fsum`` float64 and
    ``fcount`` int64, ``x`` int8 and ``feedback`` float64 (0 off the used channels), all
    ``(..., E)`` (one row per copy in the vector env)."""
    fsum += feedback
    fcount += x


def feedback_stats(fsum: np.ndarray, fcount: np.ndarray, horizon: int, cell: np.ndarray,
                   n_cells: int) -> dict[str, np.ndarray]:
    """The ``feedback_stats`` observation entries, float32 ``(..., n_cells)`` in [0, 1]:
    ``feedback_mean`` = ``fsum / fcount``, the running mean of the observed net utility
    ``clip(Z_e - C_e, 0, 1)`` of every channel (0 if never used), and ``feedback_count`` =
    ``fcount / T``, how often it was observed, as a share of the horizon ``T``. Edge ``e`` goes to
    entry ``cell[e]`` (0 elsewhere), as the ``feedback`` entry."""
    seen = fcount > 0
    mean = np.where(seen, fsum / np.where(seen, fcount, 1), 0.0)
    out = {k: np.zeros((*fsum.shape[:-1], n_cells), dtype=np.float32) for k in STATS_KEYS}
    out["feedback_mean"][..., cell] = mean
    out["feedback_count"][..., cell] = fcount / horizon
    return out
