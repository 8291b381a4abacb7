"""The four per-slot heuristics OgaSched is compared with (spec ogasched §5).

All serve only the job types with an arrival in the current slot, restart from the full
capacities every slot, respect service locality, the per-channel caps ``a_l^k`` and the instance
capacities, and never learn. Each has a pure function ``*_allocation(instance, x, ...) -> y
(E, K)`` (resource units) and an agent class that encodes it as an action.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from schedgym.agents.base import Agent
from schedgym.core.validation import check_choice
from schedgym.envs.gain_overhead.types import GainOverheadInstance


def _type_edges(inst: GainOverheadInstance) -> list[np.ndarray]:
    """Edge indices of each type, ascending instance index (edges are lexicographic)."""
    starts = np.searchsorted(inst.edge_type, np.arange(inst.n_types + 1))
    return [np.arange(starts[l], starts[l + 1]) for l in range(inst.n_types)]


def dominant_shares(inst: GainOverheadInstance) -> np.ndarray:
    """DRF's static dominant share ``s_l = max_k a_l^k / sum_{r in R_l} c_r^k`` (L,)."""
    reach = inst.mask.astype(np.float64) @ inst.capacities  # (L, K)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(reach > 0, inst.requests / np.where(reach > 0, reach, 1.0),
                         np.where(inst.requests > 0, np.inf, 0.0))
    return share.max(axis=1)


def drf_allocation(inst: GainOverheadInstance, x: np.ndarray, demand: str = "channel"
                   ) -> np.ndarray:
    """DRF (spec §5.1): arrived types in ascending dominant share; every connected instance in
    ascending index gives ``min(a_l^k, remaining)``. ``demand="total"`` (authors' code) caps the
    type's total over all its channels at ``a_l^k`` instead of per channel."""
    y = np.zeros((inst.n_edges, inst.n_resources))
    U = inst.capacities.copy()
    shares = dominant_shares(inst)
    tedges = _type_edges(inst)
    for l in sorted(np.flatnonzero(x > 0), key=lambda l: (shares[l], l)):
        left = inst.requests[l].copy()
        for e in tedges[l]:
            r = inst.edge_instance[e]
            give = np.minimum(inst.requests[l], U[r])
            if demand == "total":
                give = np.minimum(give, left)
                left -= give
            y[e] = give
            U[r] -= give
    return y


def fairness_allocation(inst: GainOverheadInstance, x: np.ndarray, denominator: str = "arrived"
                        ) -> np.ndarray:
    """Fairness (spec §5.2): each instance splits each resource among its arrived types in
    proportion to their requests, capped at ``a_l^k``. ``denominator="all"`` divides by the
    requests of all connected types (the paper's literal text), leaving shares idle."""
    arrived = x[inst.edge_type] > 0  # (E,)
    req = inst.edge_caps  # (E, K)
    weight = req if denominator == "all" else req * arrived[:, None]
    S = np.zeros((inst.n_instances, inst.n_resources))
    np.add.at(S, inst.edge_instance, weight)
    S_e = S[inst.edge_instance]
    cap_e = inst.capacities[inst.edge_instance]
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(S_e > 0, req / np.where(S_e > 0, S_e, 1.0) * cap_e, 0.0)
    return np.where(arrived[:, None], np.minimum(share, req), 0.0)


def _one_node(inst: GainOverheadInstance, x: np.ndarray, pick) -> np.ndarray:
    y = np.zeros((inst.n_edges, inst.n_resources))
    U = inst.capacities.copy()
    tedges = _type_edges(inst)
    for l in np.flatnonzero(x > 0):
        es = tedges[l]
        rs = inst.edge_instance[es]
        for k in range(inst.n_resources):
            a = inst.requests[l, k]
            if a <= 0:
                continue
            i, give = pick(U[rs, k], inst.capacities[rs, k], a)
            if i is None or give <= 0:
                continue
            y[es[i], k] += give
            U[rs[i], k] -= give
    return y


def binpacking_allocation(inst: GainOverheadInstance, x: np.ndarray, score: str = "remaining"
                          ) -> np.ndarray:
    """BinPacking / MostAllocated (spec §5.3): for each arrived type (ascending) and resource,
    the connected instance with the least remaining capacity that still fits ``a_l^k`` gets all
    of it (best fit; ties to the lower index); if none fits, the one with the most remaining gives
    all it has. ``score="fraction"`` ranks by utilisation ``1 - U/c`` instead."""

    def pick(U: np.ndarray, cap: np.ndarray, a: float):
        if score == "fraction":
            with np.errstate(divide="ignore", invalid="ignore"):
                key = np.where(cap > 0, U / np.where(cap > 0, cap, 1.0), np.inf)
        else:
            key = U
        fits = np.flatnonzero(U >= a)
        if fits.size:
            return int(fits[np.argmin(key[fits])]), a  # argmin returns the lowest index on ties
        i = int(np.argmax(U))
        return i, float(U[i])

    return _one_node(inst, x, pick)


def spreading_allocation(inst: GainOverheadInstance, x: np.ndarray) -> np.ndarray:
    """Spreading / LeastAllocated (spec §5.4): for each arrived type and resource, the connected
    instance with the most remaining capacity gives ``min(a_l^k, remaining)``."""

    def pick(U: np.ndarray, cap: np.ndarray, a: float):
        i = int(np.argmax(U))
        if U[i] <= 1e-12:
            return None, 0.0
        return i, float(min(a, U[i]))

    return _one_node(inst, x, pick)


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

    def _allocate(self, x):
        return drf_allocation(self.instance, x, self.demand)


class Fairness(_Heuristic):
    """Proportional share per instance. ``denominator``: ``"arrived"`` (default, authors' code)
    or ``"all"`` (the paper's literal text)."""

    name = "fairness"

    def __init__(self, env: Any, denominator: str = "arrived") -> None:
        super().__init__(env)
        self.denominator = check_choice("denominator", denominator, ("arrived", "all"))

    def _allocate(self, x):
        return fairness_allocation(self.instance, x, self.denominator)


class BinPacking(_Heuristic):
    """Kubernetes MostAllocated / Volcano binpack. ``score``: ``"remaining"`` (default) or
    ``"fraction"``."""

    name = "binpacking"

    def __init__(self, env: Any, score: str = "remaining") -> None:
        super().__init__(env)
        self.score = check_choice("score", score, ("remaining", "fraction"))

    def _allocate(self, x):
        return binpacking_allocation(self.instance, x, self.score)


class Spreading(_Heuristic):
    """Kubernetes LeastAllocated: one instance per (job, resource), the least loaded."""

    name = "spreading"

    def _allocate(self, x):
        return spreading_allocation(self.instance, x)
