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
are infeasible, so the result is identical. Memory: every back-pointer (one byte per edge,
capacity state and level) when that fits ``memory_limit_mb`` and 256 MiB, else a checkpoint
table every ``sqrt(8 |E|)`` edges and the maximiser rebuilt by recomputation (the same decision;
two passes, yet faster than writing gigabytes of back-pointers); a size that cannot fit even so
is refused at construction
(:class:`~schedgym.core.knapsack.DPTooLargeError`). Growth against the paper's stated
``O(|E| |S(t)| prod_k c_k)``: ``docs/envs/fluctuating-speed.md``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numba
import numpy as np

from schedgym.agents.base import Agent
from schedgym.core.knapsack import (
    DPTooLargeError,
    best_segment,
    budgeted_memory,
    budgeted_selection,
    budgeted_tables,
    checkpointed_selection,
    checkpointed_tables,
    knapsack_01,
    reachable_levels,
)
from schedgym.core.validation import check_bool, check_choice, check_float
from schedgym.envs.fluctuating_speed.types import MEMORY_LIMIT_MB

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


@numba.njit(cache=True)
def _p4_levels(theta: np.ndarray, allowed: np.ndarray, A: np.ndarray, c: np.ndarray,
               n_max: int, cap: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Compiled: ``(ok (E,), reach (E + 1,), S)``: the allowed edges that fit alone, the
    largest budget level each suffix of them reaches, ``S = min(eta m, sum of the n_max largest
    allowed theta_e)`` (levels above it are infeasible)."""
    S = reachable_levels(theta, allowed, n_max, cap)[0]
    ok = allowed.copy()
    for e in range(ok.shape[0]):
        for k in range(A.shape[0]):
            if A[k, e] > c[k]:
                ok[e] = False
    return ok, reachable_levels(theta, ok, n_max, S), S


def _mib(n_bytes: float) -> str:
    """``n_bytes`` in MiB for a message: whole MiB from 10 up, else two significant digits."""
    mib = n_bytes / 2**20
    return f"{mib:,.0f}" if mib >= 10 else f"{mib:.2g}"


#: Budget level 0 as a numpy integer: a bare ``0`` reaching :func:`budgeted_selection` is typed
#: ``Literal[int](0)`` and numba would compile that kernel once more for it.
_LEVEL0: Any = np.int64(0)


@numba.njit(cache=True)
def rule_21(values: np.ndarray) -> int:
    """Compiled: ``s* = argmax_s s + sqrt(V*(s))`` over the feasible levels, the largest ``s``
    on ties (spec esdp (21))."""
    s_star = _LEVEL0
    best = -np.inf
    for s in range(values.shape[0]):
        if np.isfinite(values[s]):
            score = s + np.sqrt(values[s])
            if score >= best:
                best, s_star = score, s
    return s_star


@numba.njit(cache=True)
def _p4_full(s2: np.ndarray, theta: np.ndarray, allowed: np.ndarray, A: np.ndarray,
             c: np.ndarray, n_max: int, cap: int,
             max_bytes: float) -> tuple[np.ndarray, int, int, bool]:
    """Compiled P4 + rule (21) in the full form when its tables (``8 n_c (S + 1)`` bytes of
    values and one byte per back-pointer) fit ``max_bytes``: ``(x, s*, S, True)``; else
    ``(zeros, -1, S, False)`` without solving."""
    ok, reach, S = _p4_levels(theta, allowed, A, c, n_max, cap)
    n_c = 1
    for k in range(c.shape[0]):
        n_c *= c[k] + 1
    total = 8 * n_c * (S + 1)
    for e in range(ok.shape[0]):
        if ok[e]:
            total += n_c * (reach[e] + 1)
    if total > max_bytes:
        return np.zeros(theta.shape[0], dtype=np.int8), -1, S, False
    values, take, rows = budgeted_tables(s2, theta, A, c, ok, reach, S + 1)
    s_star = rule_21(values)
    return budgeted_selection(s_star, A, theta, c, take, rows), s_star, S, True


def p4_memory(n_edges: int, n_states: int, n_levels: int) -> tuple[int, int | None]:
    """``(bytes, segment)`` of the cheaper DP form for these sizes
    (:func:`~schedgym.core.knapsack.budgeted_memory`, every edge touching every level):
    every back-pointer (``segment=None``) or checkpointed every ``segment`` edges."""
    seg = best_segment(n_edges)
    full = budgeted_memory(n_edges, n_states, n_levels)
    ck = budgeted_memory(n_edges, n_states, n_levels, seg)
    return (full, None) if full <= ck else (ck, seg)


#: How :func:`p4_decision` holds the DP: ``"auto"`` (every back-pointer when they fit the
#: limit and :data:`FULL_FORM_BYTES`, else checkpointed), ``"full"`` or ``"checkpointed"`` (the
#: same decisions).
DP_FORMS = ("auto", "full", "checkpointed")
#: Above this many bytes of back-pointers ``"auto"`` checkpoints even within the limit: writing
#: them costs more than recomputing (measured: equal at 243 MB, the checkpointed form twice as
#: fast at 3.8 GB; ``docs/envs/fluctuating-speed.md``).
FULL_FORM_BYTES = 256 * 2**20


def p4_decision(s2: np.ndarray, theta: np.ndarray, allowed: np.ndarray, A: np.ndarray,
                c: np.ndarray, n_max: int, cap: int, limit_bytes: float,
                form: str = "auto") -> tuple[np.ndarray, int, int, str]:
    """P4 + rule (21): ``(x (E,) int8, s*, S, form used)``.

    ``V*(s)`` for ``s = 0..S`` by Algorithm 2 (edges that do not fit alone are excluded);
    ``x = x*(s*)``. The form (:data:`DP_FORMS`) is ``"full"``
    (:func:`~schedgym.core.knapsack.budgeted_tables`, every back-pointer kept) when that fits
    in ``limit_bytes`` and :data:`FULL_FORM_BYTES` (or is asked for), else ``"checkpointed"``
    (:func:`~schedgym.core.knapsack.checkpointed_tables`, the maximiser rebuilt by recomputing
    one segment of the allowed edges at a time): the same values, the same ``x``.
    """
    if form != "checkpointed":
        bound = np.inf if form == "full" else float(min(limit_bytes, FULL_FORM_BYTES))
        x, s_star, S, done = _p4_full(s2, theta, allowed, A, c, n_max, cap, bound)
        if done:
            return x, int(s_star), int(S), "full"
    ok, reach, S = _p4_levels(theta, allowed, A, c, n_max, cap)
    n_c = int(np.prod(c + 1))
    idx = np.flatnonzero(ok)
    seg = best_segment(idx.size)
    need = budgeted_memory(idx.size, n_c, S + 1, seg)
    if need > limit_bytes and form == "auto":
        raise DPTooLargeError(f"esdp's dynamic program needs {_mib(need)} MiB for "
                              f"{idx.size} channels x {n_c} capacity states x {S + 1} budget "
                              f"levels: above its limit of {_mib(limit_bytes)} MiB")
    # the allowed edges only, in order: the same recursion on a shorter list
    sub = (np.ascontiguousarray(s2[idx]), np.ascontiguousarray(theta[idx]),
           np.ascontiguousarray(A[:, idx]))
    every = np.ones(idx.size, dtype=np.bool_)
    r = np.ascontiguousarray(np.append(reach[idx], 0))
    values, ck = checkpointed_tables(sub[0], sub[1], sub[2], c, every, r, S + 1, seg)
    s_star = int(rule_21(values))
    x = np.zeros(theta.shape[0], dtype=np.int8)
    x[idx] = checkpointed_selection(s_star, sub[0], sub[1], sub[2], c, every, r, S + 1, seg, ck)
    return x, s_star, S, "checkpointed"


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
        memory_limit_mb: the most memory (MiB) the DP may hold; ``None``: the env's
            ``memory_limit_mb`` (4096 by default). The DP keeps every back-pointer when they
            fit (and take at most 256 MiB), else checkpoints (same decisions); a size whose
            DP would exceed the limit at the last slot is refused at construction with a
            :class:`~schedgym.core.knapsack.DPTooLargeError` naming the largest ``|E|`` it
            can play (:meth:`worst_case_memory`).
        dp_form: ``"auto"`` (above), ``"full"`` or ``"checkpointed"`` (:data:`DP_FORMS`;
            the same decisions, to measure one form).
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
        memory_limit_mb: float | None = None,
        dp_form: str = "auto",
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
        limit = getattr(getattr(self.env, "params", None), "memory_limit_mb", MEMORY_LIMIT_MB) \
            if memory_limit_mb is None else memory_limit_mb
        self.memory_limit_mb = check_float("memory_limit_mb", limit, low=0.0, low_open=True)
        self.dp_form = check_choice("dp_form", dp_form, DP_FORMS)
        self._refuse_if_too_large()
        #: diagnostics of the last decision (t, eta, budget levels, DP states, s*, x_P4, the
        #: DP's form: "full" or "checkpointed")
        self.last: dict[str, Any] = {}

    # ------------------------------------------------------------------ size
    def largest_eta(self, m: int) -> int:
        """``max_t eta(t) = ceil(m / delta(t))`` over the episode's slots (at ``t = T`` for the
        built-in, decreasing ``delta``)."""
        if self.delta in DELTAS.values():
            return math.ceil(m / self.delta(self.horizon))
        return max(math.ceil(m / self.delta(t)) for t in range(1, self.horizon + 1))

    def worst_case_memory(self, n_edges: int | None = None) -> tuple[int, int]:
        """``(bytes, budget levels)`` of the DP (the cheaper of its two forms) at the worst
        slot for ``n_edges`` channels (default ``|E|``) at this instance's capacities and
        horizon: every channel allowed, every ``theta_e`` at its largest ``eta``, so ``S =
        min(eta m, n_max eta)``."""
        E = self.n_edges if n_edges is None else n_edges
        m = max(1, math.ceil(self.alpha * E))
        eta = self.largest_eta(m)
        levels = min(eta * m, min(self.n_max, E) * eta) + 1
        return p4_memory(E, self.cap_states, levels)[0], levels

    def _refuse_if_too_large(self) -> None:
        """Raise :class:`DPTooLargeError` in one line when the DP cannot fit the limit."""
        limit = self.memory_limit_mb * 2**20
        need, levels = self.worst_case_memory()
        if need <= limit:
            return
        lo, hi = 0, self.n_edges  # the largest |E| that fits (the bound grows with |E|)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if self.worst_case_memory(mid)[0] <= limit else (lo, mid - 1)
        raise DPTooLargeError(
            f"esdp cannot play this instance within memory_limit_mb={self.memory_limit_mb:g}: "
            f"its exact dynamic program needs about {_mib(need)} MiB at the last slot "
            f"(|E|={self.n_edges} channels x {self.cap_states} capacity states x {levels:,} "
            f"budget levels); the largest it can play at these capacities and "
            f"horizon={self.horizon} is |E|={lo} channels: use fewer channels (n_types, "
            "n_instances, edge_prob or degree_cap), a shorter horizon, or raise memory_limit_mb",
            benchmark=self.name)

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
        try:
            x, s_star, S, form = p4_decision(
                np.asarray(s2, dtype=np.float64), theta, ok, self.requests, self.capacities,
                self.n_max, int(eta * self.m), self.memory_limit_mb * 2**20, self.dp_form)
        except MemoryError:  # the machine has less free memory than the limit promised
            raise DPTooLargeError(
                f"esdp's dynamic program could not allocate its tables at slot t={t} "
                f"(|E|={self.n_edges} channels x {self.cap_states} capacity states): this "
                f"machine has less free memory than memory_limit_mb={self.memory_limit_mb:g}; "
                "lower memory_limit_mb (the DP then checkpoints) or the sizes",
                benchmark=self.name) from None
        self.last = {"t": t, "eta": eta, "budget_levels": S + 1,
                     "dp_states": (S + 1) * self.cap_states, "s_star": s_star,
                     "x_p4": x.copy(), "dp_form": form}
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
