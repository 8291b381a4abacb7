"""ESDP: Efficient Sampling-based Dynamic Programming (spec esdp §3) for FluctuatingSpeed-v0.

Per slot ``t`` (1-based), with the statistics of slots ``1..t-1`` learned from the observation's
``used`` / ``feedback`` entries (semi-bandit feedback on the effective, post-mask channels):

- ``n_e`` uses, ``y_e`` empirical mean net utility (0 if unused), ``s2_e = g(t) / (2 n_e)``
  (``+inf`` if unused) (8)-(10);
- ``m = ceil(alpha |E|)``, ``eta = ceil(m / delta(t))`` (18), integer scaled means
  ``theta_e = ceil(eta y_e)`` (16) and variances ``S2_e = ceil(eta^2 s2_e)`` (17), with the
  finite big-M ``S2_e = 1e12`` for unexplored edges (§3.7);
- for every budget ``s in {0..eta m}``: ``V*(s) = max S2^T x`` s.t. ``A x <= c``,
  ``theta^T x >= s`` (P4), all solved **exactly** by one dynamic program over
  (edges x budget x remaining capacity) (Algorithm 2,
  :func:`schedgym.core.knapsack.budgeted_knapsack`);
- ``s* = argmax_s s + sqrt(V*(s))`` (21), largest ``s`` on ties; ``x = x*(s*)``;
- paper-literal masking (§3.6): the DP runs over all edges (capacity only), then the edges of
  ports without a job are zeroed. ``arrival_aware=True`` (ESDP-AA, **our addition, not in the
  paper**) runs the DP only over edges of ports with a job.

DP size: ``(S + 1) x prod_k (c_k + 1)`` states per edge, where the budget range is cut from the
paper's ``eta m`` to the largest budget any feasible selection can reach (an upper bound: the sum
of the ``n_max`` largest ``theta_e``, ``n_max`` = most edges that fit together); levels above it
are infeasible, so the result is identical.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numba
import numpy as np

from schedgym.agents.base import Agent
from schedgym.core.knapsack import (
    budgeted_selection,
    budgeted_tables,
    knapsack_01,
    reachable_levels,
)
from schedgym.core.validation import check_bool, check_choice, check_float

#: delta(t) variants of the paper's Fig. 7 (``loglog`` = eq. (14) with t+1, the default).
DELTAS: dict[str, Callable[[int], float]] = {
    "log": lambda t: 1.0 / (math.log(t + 1) + 1.0),
    "loglog": lambda t: 1.0 / (math.log(math.log(t + 1) + 1.0) + 1.0),
    "logloglog": lambda t: 1.0 / (math.log(math.log(math.log(t + 1) + 1.0) + 1.0) + 1.0),
}

#: g(t, m) exploration variants of the paper's Fig. 8 (``paper`` = g1, the default).
EXPLORATIONS: dict[str, Callable[[int, int], float]] = {
    "paper": lambda t, m: math.log(t + 1) + 4.0 * m * math.log(math.log(t + 1) + 1.0),
    "loglog": lambda t, m: 4.0 * m * math.log(math.log(t + 1) + 1.0),
    "log": lambda t, m: math.log(t + 1),
}


def init_stats(n_edges: int) -> dict[str, np.ndarray]:
    """Empty semi-bandit statistics: uses ``n`` and summed net utility ``sum`` per edge."""
    return {"n": np.zeros(n_edges), "sum": np.zeros(n_edges)}


def update_stats(stats: dict[str, np.ndarray], obs: dict[str, np.ndarray]) -> None:
    """Add the previous slot's feedback (``used``, ``feedback`` of the observation)."""
    used = np.asarray(obs["used"]) > 0.5
    stats["n"] += used
    stats["sum"] += np.where(used, np.asarray(obs["feedback"], dtype=np.float64), 0.0)


def empirical_means(stats: dict[str, np.ndarray]) -> np.ndarray:
    """``y_e = sum / n`` (0 where ``n = 0``), spec esdp (9)."""
    n = stats["n"]
    return np.where(n > 0, stats["sum"] / np.where(n > 0, n, 1.0), 0.0)


def slot_of(obs: dict[str, np.ndarray], horizon: int) -> int:
    """1-based slot index ``t`` from the observation's ``progress = (t - 1) / T``."""
    return int(round(float(np.asarray(obs["progress"]).reshape(-1)[0]) * horizon)) + 1


#: Budget level 0 as a numpy integer: a bare ``0`` reaching :func:`budgeted_selection` is typed
#: ``Literal[int](0)`` and numba would compile that kernel once more for it.
_LEVEL0: Any = np.int64(0)


@numba.njit(cache=True)
def _p4_decision(s2: np.ndarray, theta: np.ndarray, allowed: np.ndarray, A: np.ndarray,
                 c: np.ndarray, n_max: int, cap: int) -> tuple[np.ndarray, int, int]:
    """Compiled P4 + rule (21): ``(x (E,) int8, s*, S)``.

    ``S = min(eta m, sum of the n_max largest allowed theta_e)`` (levels above it are infeasible);
    ``V*(s)`` for ``s = 0..S`` by :func:`~schedgym.core.knapsack.budgeted_tables` (edges that do
    not fit alone are excluded); ``s* = argmax_s s + sqrt(V*(s))`` over the feasible levels, the
    largest ``s`` on ties; ``x = x*(s*)``.
    """
    S = reachable_levels(theta, allowed, n_max, cap)[0]
    ok = allowed.copy()
    for e in range(ok.shape[0]):
        for k in range(A.shape[0]):
            if A[k, e] > c[k]:
                ok[e] = False
    reach = reachable_levels(theta, ok, n_max, S)
    values, take, start = budgeted_tables(s2, theta, A, c, ok, reach, S + 1)
    s_star = _LEVEL0
    best = -np.inf
    for s in range(S + 1):
        if np.isfinite(values[s]):
            score = s + np.sqrt(values[s])
            if score >= best:
                best, s_star = score, s
    return budgeted_selection(s_star, A, theta, c, reach, take, start), s_star, S


class ESDP(Agent):
    """ESDP (spec esdp §3). Defaults are the paper's experimental settings.

    Args:
        env: a FluctuatingSpeed-v0 env (reads ``instance.requests``, ``capacities``,
            ``port_of_edge`` and ``env.horizon`` only; never the hidden means).
        alpha: ``m = ceil(alpha |E|)`` (paper: 0.5).
        delta: ``"loglog"`` (default, eq. (14) with t+1), ``"log"``, ``"logloglog"`` (Fig. 7) or a
            callable ``t -> delta``.
        exploration: ``g(t)``: ``"paper"`` (g1, default), ``"loglog"`` (g2), ``"log"`` (g3)
            (Fig. 8) or a callable ``(t, m) -> g``.
        arrival_aware: ESDP-AA (our addition): DP over edges of present ports only.
        big_m: finite stand-in for ``S2 = +inf`` of unexplored edges (§3.7).
    """

    name = "esdp"

    def __init__(
        self,
        env: Any,
        alpha: float = 0.5,
        delta: str | Callable[[int], float] = "loglog",
        exploration: str | Callable[[int, int], float] = "paper",
        arrival_aware: bool = False,
        big_m: float = 1e12,
    ) -> None:
        super().__init__(env)
        inst = self.instance
        self.alpha = check_float("alpha", alpha, low=0.0, low_open=True)
        self.delta = delta if callable(delta) else DELTAS[check_choice("delta", delta, DELTAS)]
        self.exploration = (exploration if callable(exploration) else
                            EXPLORATIONS[check_choice("exploration", exploration, EXPLORATIONS)])
        self.arrival_aware = check_bool("arrival_aware", arrival_aware)
        self.big_m = check_float("big_m", big_m, low=1.0)
        self.horizon = int(self.env.horizon)
        self.n_edges = inst.n_edges
        self.m = max(1, math.ceil(self.alpha * inst.n_edges))
        self.requests = np.ascontiguousarray(inst.requests, dtype=np.int64)
        self.capacities = np.ascontiguousarray(inst.capacities, dtype=np.int64)
        self.cap_states = int(np.prod(self.capacities + 1))
        self.port_of_edge = np.asarray(inst.port_of_edge)
        # most edges that fit together: bounds the reachable budget level
        ones = np.ones(inst.n_edges)
        ones.setflags(write=False)  # read-only as the oracle's values: one compiled knapsack
        self.n_max = int(knapsack_01(ones, self.requests, self.capacities)[1].sum())
        #: diagnostics of the last decision (t, eta, budget levels, DP states, s*, x_P4)
        self.last: dict[str, Any] = {}

    def _init_state(self, index: int) -> dict[str, np.ndarray]:
        return init_stats(self.n_edges)

    # ------------------------------------------------------------------ core
    def scaled_index(self, stats: dict[str, np.ndarray], t: int) -> tuple[np.ndarray, np.ndarray,
                                                                           int]:
        """``(theta_hat int (E,), S2 float (E,), eta)`` at slot ``t`` (16)-(18)."""
        n = stats["n"]
        eta = math.ceil(self.m / self.delta(t))
        y = empirical_means(stats)
        theta = np.ceil(eta * y).astype(np.int64)
        g = self.exploration(t, self.m)
        s2 = np.where(n > 0, np.ceil(eta * eta * g / (2.0 * np.where(n > 0, n, 1.0))),
                      self.big_m)
        return theta, s2, eta

    def solve_p4(self, stats: dict[str, np.ndarray], t: int,
                 allowed: np.ndarray | None = None) -> np.ndarray:
        """``x_P4(t)`` (before arrival masking): the DP of §3.5 and the selection rule (21)."""
        theta, s2, eta = self.scaled_index(stats, t)
        ok = np.ones(self.n_edges, dtype=bool) if allowed is None else np.asarray(allowed, bool)
        x, s_star, S = _p4_decision(np.asarray(s2, dtype=np.float64), theta, ok, self.requests,
                                    self.capacities, self.n_max, int(eta * self.m))
        self.last = {"t": t, "eta": eta, "budget_levels": S + 1,
                     "dp_states": (S + 1) * self.cap_states, "s_star": s_star,
                     "x_p4": x.copy()}
        return x

    def _act(self, obs: dict[str, np.ndarray], state: dict[str, np.ndarray],
             deterministic: bool) -> np.ndarray:
        update_stats(state, obs)
        t = slot_of(obs, self.horizon)
        present = (np.asarray(obs["arrivals"]) > 0.5)[self.port_of_edge]
        x = self.solve_p4(state, t, present if self.arrival_aware else None)
        return (x * present).astype(np.int8)  # (4), Algorithm 1 lines 9-16

    def __repr__(self) -> str:
        return f"ESDP(alpha={self.alpha}, arrival_aware={self.arrival_aware})"


class ESDPArrivalAware(ESDP):
    """ESDP-AA: the arrival-aware variant (our addition, **not in the paper**)."""

    name = "esdp-aa"

    def __init__(self, env: Any, **kwargs: Any) -> None:
        kwargs.setdefault("arrival_aware", True)
        super().__init__(env, **kwargs)
