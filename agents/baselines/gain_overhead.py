"""The four per-slot heuristics OgaSched is compared with (spec ogasched §5).

All serve only the job types with an arrival in the current slot, restart from the full
capacities every slot, respect service locality, the per-channel caps ``a_l^k`` and the instance
capacities, and never learn. Each has a pure function ``*_allocation(instance, x, ...) -> y
(E, K)`` (resource units; its per-slot loop is a numba kernel) and an agent class that encodes
it as an action.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from schedgym.agents.base import Agent
from schedgym.core.validation import check_choice
from schedgym.envs.gain_overhead.types import GainOverheadInstance


def dominant_shares(inst: GainOverheadInstance) -> np.ndarray:
    """DRF's static dominant share ``s_l = max_k a_l^k / sum_{r in R_l} c_r^k`` (L,)."""
    reach = inst.reachable_capacity  # (L, K)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(reach > 0, inst.requests / np.where(reach > 0, reach, 1.0),
                         np.where(inst.requests > 0, np.inf, 0.0))
    return share.max(axis=1)


@numba.njit(cache=True, inline="always")
def _type_end(starts: np.ndarray, l: int, n_edges: int) -> int:
    """One past the last edge of type ``l`` (edges are sorted by type)."""
    return starts[l + 1] if l + 1 < starts.size else n_edges


@numba.njit(cache=True)
def _drf_kernel(x: np.ndarray, order: np.ndarray, starts: np.ndarray, edge_inst: np.ndarray,
                req: np.ndarray, cap: np.ndarray, total: bool) -> np.ndarray:
    """DRF over the arrived types in ``order``: each connected instance in ascending index gives
    ``min(a_l^k, remaining)`` (``total``: the type's total over its channels is capped)."""
    n_edges, n_res = edge_inst.size, req.shape[1]
    y = np.zeros((n_edges, n_res))
    left_cap = cap.copy()
    left = np.empty(n_res)
    for l in order:
        if x[l] <= 0:
            continue
        left[:] = req[l]
        for e in range(starts[l], _type_end(starts, l, n_edges)):
            r = edge_inst[e]
            for k in range(n_res):
                give = min(req[l, k], left_cap[r, k])
                if total:
                    give = min(give, left[k])
                    left[k] -= give
                y[e, k] = give
                left_cap[r, k] -= give
    return y


def drf_order(inst: GainOverheadInstance) -> np.ndarray:
    """All types in ascending dominant share, ties to the lower type: DRF's serving order."""
    return np.argsort(dominant_shares(inst), kind="stable")


def drf_allocation(inst: GainOverheadInstance, x: np.ndarray, demand: str = "channel",
                   order: np.ndarray | None = None) -> np.ndarray:
    """DRF (spec §5.1): arrived types in ascending dominant share; every connected instance in
    ascending index gives ``min(a_l^k, remaining)``. ``demand="total"`` (authors' code) caps the
    type's total over all its channels at ``a_l^k`` instead of per channel. ``order``:
    :func:`drf_order` of the instance (computed when omitted; the agent computes it once)."""
    order = drf_order(inst) if order is None else order
    return _drf_kernel(np.asarray(x, dtype=np.float64), order, inst.type_starts,
                       inst.edge_instance, inst.requests, inst.capacities, demand == "total")


@numba.njit(cache=True)
def _fairness_kernel(x: np.ndarray, edge_type: np.ndarray, edge_inst: np.ndarray,
                     req: np.ndarray, cap: np.ndarray, all_types: bool) -> np.ndarray:
    n_edges, n_res = req.shape
    S = np.zeros(cap.shape)
    for e in range(n_edges):
        if all_types or x[edge_type[e]] > 0:
            for k in range(n_res):
                S[edge_inst[e], k] += req[e, k]
    y = np.zeros((n_edges, n_res))
    for e in range(n_edges):
        if x[edge_type[e]] > 0:
            r = edge_inst[e]
            for k in range(n_res):
                share = req[e, k] / S[r, k] * cap[r, k] if S[r, k] > 0 else 0.0
                y[e, k] = min(share, req[e, k])
    return y


def fairness_allocation(inst: GainOverheadInstance, x: np.ndarray, denominator: str = "arrived"
                        ) -> np.ndarray:
    """Fairness (spec §5.2): each instance splits each resource among its arrived types in
    proportion to their requests, capped at ``a_l^k``. ``denominator="all"`` divides by the
    requests of all connected types (the paper's literal text), leaving shares idle."""
    return _fairness_kernel(np.asarray(x, dtype=np.float64), inst.edge_type, inst.edge_instance,
                            inst.edge_caps, inst.capacities, denominator == "all")


#: Node-picking rules of :func:`_one_node_kernel`.
_BEST_FIT, _BEST_FIT_FRACTION, _SPREAD = 0, 1, 2


@numba.njit(cache=True, inline="always")
def _pick(rule: int, U: np.ndarray, cap: np.ndarray, rs: np.ndarray, k: int, a: float
          ) -> tuple[int, float]:
    """Index into ``rs`` and amount for one (job, resource); index -1 = give nothing.

    Best fit: the fitting node (``U >= a``) with the least key (remaining, or remaining fraction
    ``U / c``), lowest index on ties, gets ``a``; if none fits, the most remaining gives all it
    has. Spread: the most remaining gives ``min(a, U)`` (nothing when ``U <= 1e-12``).
    """
    best, best_key, most, most_u = -1, np.inf, 0, -np.inf
    for i in range(rs.size):
        u = U[rs[i], k]
        if u > most_u:
            most, most_u = i, u
        if rule != _SPREAD and u >= a:
            if rule == _BEST_FIT:
                key = u
            else:
                c = cap[rs[i], k]
                key = u / c if c > 0 else np.inf
            if best < 0 or key < best_key:
                best, best_key = i, key
    if rule == _SPREAD:
        return (most, min(a, most_u)) if most_u > 1e-12 else (-1, 0.0)
    if best >= 0:
        return best, a
    return most, most_u


@numba.njit(cache=True)
def _one_node_kernel(x: np.ndarray, starts: np.ndarray, edge_inst: np.ndarray,
                     req: np.ndarray, cap: np.ndarray, rule: int) -> np.ndarray:
    """Arrived types ascending; per resource one node of the type's channels gets it
    (:func:`_pick`)."""
    n_edges, n_res = edge_inst.size, req.shape[1]
    y = np.zeros((n_edges, n_res))
    U = cap.copy()
    for l in range(starts.size):
        if x[l] <= 0:
            continue
        lo = starts[l]
        rs = edge_inst[lo:_type_end(starts, l, n_edges)]
        for k in range(n_res):
            a = req[l, k]
            if a <= 0:
                continue
            i, give = _pick(rule, U, cap, rs, k, a)
            if i < 0 or give <= 0:
                continue
            y[lo + i, k] += give
            U[rs[i], k] -= give
    return y


def _one_node(inst: GainOverheadInstance, x: np.ndarray, rule: int) -> np.ndarray:
    return _one_node_kernel(np.asarray(x, dtype=np.float64), inst.type_starts,
                            inst.edge_instance, inst.requests, inst.capacities, rule)


def binpacking_allocation(inst: GainOverheadInstance, x: np.ndarray, score: str = "remaining"
                          ) -> np.ndarray:
    """BinPacking / MostAllocated (spec §5.3): for each arrived type (ascending) and resource,
    the connected instance with the least remaining capacity that still fits ``a_l^k`` gets all
    of it (best fit; ties to the lower index); if none fits, the one with the most remaining gives
    all it has. ``score="fraction"`` ranks by utilisation ``1 - U/c`` instead."""
    return _one_node(inst, x, _BEST_FIT_FRACTION if score == "fraction" else _BEST_FIT)


def spreading_allocation(inst: GainOverheadInstance, x: np.ndarray) -> np.ndarray:
    """Spreading / LeastAllocated (spec §5.4): for each arrived type and resource, the connected
    instance with the most remaining capacity gives ``min(a_l^k, remaining)``."""
    return _one_node(inst, x, _SPREAD)


class _Heuristic(Agent):
    """Common agent wrapper: allocation of the current arrivals, encoded as an action."""

    def _allocate(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _act(self, obs: dict[str, np.ndarray], state: Any, deterministic: bool) -> np.ndarray:
        x = np.asarray(obs["arrivals"], dtype=np.float64)
        return self.env.encode_action(self._allocate(x))

    def allocation(self, arrivals: np.ndarray) -> np.ndarray:
        """The allocation ``(E, K)`` in resource units for arrivals ``(L,)``."""
        return self._allocate(np.asarray(arrivals, dtype=np.float64))


class DRF(_Heuristic):
    """Dominant Resource Fairness. ``demand``: ``"channel"`` (default, per-channel cap as in
    constraint (5)) or ``"total"`` (authors' code: ``a_l^k`` caps the job's total)."""

    name = "drf"

    def __init__(self, env: Any, demand: str = "channel") -> None:
        super().__init__(env)
        self.demand = check_choice("demand", demand, ("channel", "total"))
        self._order = drf_order(self.instance)

    def _allocate(self, x: np.ndarray) -> np.ndarray:
        return drf_allocation(self.instance, x, self.demand, self._order)


class Fairness(_Heuristic):
    """Proportional share per instance. ``denominator``: ``"arrived"`` (default, authors' code)
    or ``"all"`` (the paper's literal text)."""

    name = "fairness"

    def __init__(self, env: Any, denominator: str = "arrived") -> None:
        super().__init__(env)
        self.denominator = check_choice("denominator", denominator, ("arrived", "all"))

    def _allocate(self, x: np.ndarray) -> np.ndarray:
        return fairness_allocation(self.instance, x, self.denominator)


class BinPacking(_Heuristic):
    """Kubernetes MostAllocated / Volcano binpack. ``score``: ``"remaining"`` (default) or
    ``"fraction"``."""

    name = "binpacking"

    def __init__(self, env: Any, score: str = "remaining") -> None:
        super().__init__(env)
        self.score = check_choice("score", score, ("remaining", "fraction"))

    def _allocate(self, x: np.ndarray) -> np.ndarray:
        return binpacking_allocation(self.instance, x, self.score)


class Spreading(_Heuristic):
    """Kubernetes LeastAllocated: one instance per (job, resource), the least loaded."""

    name = "spreading"

    def _allocate(self, x: np.ndarray) -> np.ndarray:
        return spreading_allocation(self.instance, x)
