"""Pure functions of FluctuatingSpeed-v0: validation, masking, capacity repair, net utility,
waiting times.

Shared by the environment, the agents, the oracle and the tests. A selection ``x`` is an int8
array ``(E,)`` in {0, 1} over the instance's edges (lexicographic ``(l, r)`` order).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from schedgym.envs.fluctuating_speed.instance import FluctuatingSpeedInstance


def validate_selection(action: Any, n_edges: int, name: str = "action") -> np.ndarray:
    """Return ``action`` as an int8 ``(E,)`` selection; raise ``ValueError`` if its shape is not
    ``(E,)`` or an entry is not exactly 0 or 1 (bools and 0./1. floats are accepted)."""
    try:
        arr = np.asarray(action)
        num = arr.astype(np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            f"{name} is invalid: expected a 0/1 array of shape ({n_edges},), got "
            f"{type(action).__name__}"
        ) from None
    if num.shape != (n_edges,):
        raise ValueError(f"{name} has shape {num.shape}: must have shape ({n_edges},) "
                         "(one 0/1 entry per edge)")
    bad = np.flatnonzero((num != 0.0) & (num != 1.0))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"{name} has a non-binary entry (index {i}: {arr[i]!r}): every entry "
                         "must be 0 or 1")
    return num.astype(np.int8)


def edge_mask(inst: FluctuatingSpeedInstance, arrivals: np.ndarray) -> np.ndarray:
    """int8 ``(E,)``: 1 on the edges of ports with a job this slot (constraint (4))."""
    return (np.asarray(arrivals)[inst.port_of_edge] > 0).astype(np.int8)


def load(inst: FluctuatingSpeedInstance, x: np.ndarray) -> np.ndarray:
    """Devices in use per type, ``A x``, int64 ``(K,)``."""
    return inst.requests @ np.asarray(x, dtype=np.int64)


def is_feasible(inst: FluctuatingSpeedInstance, x: np.ndarray) -> bool:
    """Capacity (2): ``A x <= c``."""
    return bool(np.all(load(inst, x) <= inst.capacities))


def utilization(inst: FluctuatingSpeedInstance, x: np.ndarray) -> np.ndarray:
    """Fraction of each device type in use, float ``(K,)`` in [0, 1] (0 where ``c_k = 0``)."""
    c = inst.capacities
    return np.where(c > 0, load(inst, x) / np.where(c > 0, c, 1), 0.0)


def repair(inst: FluctuatingSpeedInstance, x: np.ndarray) -> tuple[np.ndarray, int]:
    """The documented deterministic capacity repair; returns ``(feasible x, edges dropped)``.

    Rule: while ``A x > c`` for some type, drop the selected edge with the **highest edge
    index** among those requesting an overloaded type (spec esdp §2.2 "project" option, made
    safe for zero requests). Edges are never added.
    """
    x = np.array(x, dtype=np.int8, copy=True)
    c = inst.capacities.tolist()
    ld = (inst.requests @ x.astype(np.int64)).tolist()
    over = [k for k in range(len(c)) if ld[k] > c[k]]
    dropped = 0
    cols = inst.requests.T
    # Scanning the selected edges from the highest index is the same rule: an edge skipped
    # because it requests no overloaded type never becomes a candidate (loads only fall).
    for e in np.flatnonzero(x)[::-1]:
        if not over:
            break
        a = cols[e].tolist()
        if any(a[k] > 0 for k in over):
            x[e] = 0
            dropped += 1
            ld = [lk - ak for lk, ak in zip(ld, a, strict=True)]
            over = [k for k in over if ld[k] > c[k]]
    return x, dropped


def net_utility(zraw: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """Normalised net utility ``clip(Z - C, 0, 1)`` (spec esdp §1.8 rule (N))."""
    return np.clip(np.asarray(zraw) - cost, 0.0, 1.0)


def open_waits(origin: np.ndarray, arrivals: np.ndarray, t: int) -> np.ndarray:
    """Start of slot ``t``: ports with a job and no open wait start one at ``t`` (spec §5.3).

    ``origin`` is float ``(L,)``: arrival slot of the oldest unserved job, ``-1`` if none.
    """
    o = np.array(origin, dtype=np.float64, copy=True)
    o[(np.asarray(arrivals) > 0) & (o < 0)] = t
    return o


def waiting_times(origin: np.ndarray, t: int) -> np.ndarray:
    """``w_l(t) = t - o_l`` (0 where no wait is open), float ``(L,)`` in slots."""
    return np.where(origin >= 0, t - origin, 0.0)


def close_waits(inst: FluctuatingSpeedInstance, origin: np.ndarray, x: np.ndarray) -> np.ndarray:
    """After the action: ports with a used edge are served and their wait closes."""
    served = np.zeros(inst.n_types, dtype=bool)
    served[inst.port_of_edge[np.asarray(x) > 0]] = True
    o = np.array(origin, dtype=np.float64, copy=True)
    o[served] = -1.0
    return o
