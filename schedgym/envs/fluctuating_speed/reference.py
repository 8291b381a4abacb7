"""FluctuatingSpeed-v0's slot in plain numpy, written as the ESDP paper states it (the
specification the compiled kernels of :mod:`.dynamics` and the vector env are tested against;
``tests/envs/fluctuating_speed/test_fs_reference.py``). Nothing here is fast; everything is
direct.

One step is one slot ``t`` (ESDP §3). Ports ``l`` with a job (``1_l(t) = 1``), channels
``e = (l, r)`` of the service-locality graph, requests ``A`` ``(K, E)``, capacities ``c``
``(K,)``, known costs ``C_e``, raw utilities ``Z_e(t)`` drawn at reset:

1. **decode** the action into a selection ``x in {0, 1}^E``:

   - ``"selection"``: ``x = action``;
   - ``"scores"``: among the edges of present ports with a score ``> 0``, by decreasing score
     (ties: lower edge first), add an edge iff its requests fit what is left of ``c``;

2. **mask** (constraint (4)): ``x_e = 0`` where port ``l(e)`` has no job this slot;
3. **repair** (constraint (2)): while ``A x > c`` for some type, drop the selected edge with the
   highest index among those requesting an overloaded type;
4. **reward**: ``Σ_e x_e clip(Z_e - C_e, 0, 1)`` (the normalised net utility); also
   ``raw_utility = Σ_e x_e (Z_e - C_e)`` and ``expected_reward = θᵀx`` with
   ``θ_e = E[clip(Z_e - C_e, 0, 1)]``;
5. **next state**: the feedback ``clip(Z_e - C_e, 0, 1)`` on the used edges, the utilization
   ``(A x)_k / c_k``, and the head-of-line waits: a served port's wait closes, a port with a
   job in the next slot and no open wait opens one.

The oracle (the regret benchmark) is ``max θᵀx`` over the feasible, masked selections.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from schedgym.envs.fluctuating_speed.types import FluctuatingSpeedInstance


@dataclass(frozen=True)
class Slot:
    """One slot's outcome: applied selection ``x`` (int ``(E,)``), reward parts, feedback
    ``(E,)`` (0 off the used edges), utilization ``(K,)`` and the action's counts."""

    x: np.ndarray
    reward: float
    raw_utility: float
    expected_reward: float
    feedback: np.ndarray
    utilization: np.ndarray
    n_selected: int  # entries of the selection equal to 1, before masking
    n_masked: int  # of those, on ports without a job
    n_repaired: int  # dropped by the capacity repair


def decode_scores(inst: FluctuatingSpeedInstance, scores: np.ndarray,
                  arrivals: np.ndarray) -> np.ndarray:
    """The ``"scores"`` mode's selection ``(E,)`` from grid scores ``(L * R,)``."""
    s = np.clip(np.asarray(scores, dtype=np.float64), -1.0, 1.0)
    left = inst.capacities.astype(np.int64).copy()
    x = np.zeros(inst.n_edges, dtype=np.int64)
    cands = [e for e in range(inst.n_edges)
             if arrivals[inst.edges[e, 0]] > 0 and s[inst.edges[e, 0] * inst.n_instances
                                                      + inst.edges[e, 1]] > 0]
    score = {e: s[inst.edges[e, 0] * inst.n_instances + inst.edges[e, 1]] for e in cands}
    for e in sorted(cands, key=lambda e: (-score[e], e)):
        if np.all(inst.requests[:, e] <= left):
            x[e] = 1
            left -= inst.requests[:, e]
    return x


def repair(inst: FluctuatingSpeedInstance, x: np.ndarray) -> tuple[np.ndarray, int]:
    """Constraint (2) by the documented rule; returns ``(x, edges dropped)``."""
    x = x.copy()
    dropped = 0
    while np.any(inst.requests @ x > inst.capacities):
        over = inst.requests @ x > inst.capacities
        hit = [e for e in range(inst.n_edges) if x[e] and np.any(inst.requests[over, e] > 0)]
        x[max(hit)] = 0
        dropped += 1
    return x, dropped


def step(inst: FluctuatingSpeedInstance, action: np.ndarray, mode: str, arrivals: np.ndarray,
         zraw: np.ndarray) -> Slot:
    """One slot (module docstring) with the slot's arrivals ``(L,)`` and raw utilities
    ``(E,)``."""
    sel = (decode_scores(inst, action, arrivals) if mode == "scores"
           else (np.asarray(action, dtype=np.float64) == 1).astype(np.int64))
    present = np.array([arrivals[l] > 0 for l in inst.edges[:, 0]])
    x = sel * present
    x, dropped = repair(inst, x)
    net = np.clip(zraw - inst.cost, 0.0, 1.0)
    c = inst.capacities.astype(np.float64)
    util = np.where(c > 0, (inst.requests @ x) / np.where(c > 0, c, 1.0), 0.0)
    return Slot(x=x, reward=float(np.sum(x * net)), raw_utility=float(np.sum(x * (zraw
                - inst.cost))), expected_reward=float(np.sum(x * inst.theta)),
                feedback=np.where(x > 0, net, 0.0), utilization=util,
                n_selected=int(sel.sum()), n_masked=int((sel * (1 - present)).sum()),
                n_repaired=dropped)


def next_waits(inst: FluctuatingSpeedInstance, origin: np.ndarray, x: np.ndarray,
               next_arrivals: np.ndarray | None, t_next: int) -> np.ndarray:
    """Head-of-line wait origins ``(L,)`` (slot of the oldest unserved job, -1 if none) after a
    slot that used ``x``, at the start of slot ``t_next`` (``next_arrivals=None`` after the
    last slot)."""
    o = origin.copy()
    o[inst.edges[x > 0, 0]] = -1.0
    if next_arrivals is not None:
        o[(next_arrivals > 0) & (o < 0)] = t_next
    return o


def oracle_value(inst: FluctuatingSpeedInstance, arrivals: np.ndarray) -> float:
    """``max θᵀx`` over the selections that are masked and feasible, by enumeration (small
    instances only: ``2^E`` selections)."""
    best = 0.0
    allowed = [e for e in range(inst.n_edges) if arrivals[inst.edges[e, 0]] > 0]
    for k in range(len(allowed) + 1):
        for subset in itertools.combinations(allowed, k):
            x = np.zeros(inst.n_edges)
            x[list(subset)] = 1.0
            if np.all(inst.requests @ x <= inst.capacities):
                best = max(best, float(inst.theta @ x))
    return best
