"""The ESDP paper's greedy baselines HAUF, LCF, LWTF (spec esdp §5) and the Oracle (spec esdp §4.3).

All greedy baselines consider only ports with a job, order them by a port key, order each port's
edges by an edge key, and fill capacity **first-fit** (an edge that does not fit is skipped and
the fill continues; ``mode="stop"`` stops at the first edge that does not fit, the literal
reading). Ties: lower port index, then lower server index. Estimates ``y_e`` are the running
means of the observed net utility on the agent's own effective edges (0 if never observed; no
exploration bonus, spec esdp §8 item 25). Their selections are feasible by construction, so they
never need the env's repair.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from schedgym.agents.base import Agent
from schedgym.agents.esdp import empirical_means, init_stats, update_stats
from schedgym.core.pairwise import np_sum
from schedgym.core.validation import check_choice
from schedgym.envs.fluctuating_speed.offline import OracleSolver

FILL_MODES = ("first-fit", "stop")


@numba.njit(cache=True)
def _fill(order: np.ndarray, A: np.ndarray, c: np.ndarray,
          stop: bool) -> np.ndarray:  # pragma: no cover - compiled
    """First-fit (or stop-at-first-miss) selection of the edges in ``order``; int8 ``(E,)``."""
    x = np.zeros(A.shape[1], dtype=np.int8)
    rem = c.copy()
    for e in order:
        fits = True
        for k in range(A.shape[0]):
            if A[k, e] > rem[k]:
                fits = False
                break
        if fits:
            x[e] = 1
            for k in range(A.shape[0]):
                rem[k] -= A[k, e]
        elif stop:
            break
    return x


@numba.njit(cache=True)
def port_sums(values: np.ndarray, start: np.ndarray) -> np.ndarray:  # pragma: no cover
    """``sum_{e in E_l} values_e`` per port (float64 ``(L,)``); port ``l``'s edges are
    ``start[l]:start[l + 1]`` (edges are sorted by port). Summed in numpy's pairwise order
    (:func:`schedgym.core.pairwise.np_sum`), so the port keys and their ties are numpy's."""
    L = start.shape[0] - 1
    out = np.empty(L)
    for l in range(L):
        out[l] = np_sum(values, start[l], start[l + 1] - start[l])
    return out


@numba.njit(cache=True)
def priority_order(port_key: np.ndarray, edge_key: np.ndarray, present: np.ndarray,
                   start: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """Edge indices of the ports with a job: ports by descending ``port_key``, each port's edges
    by descending ``edge_key`` (stable sorts: ties keep the lower index first)."""
    ports = np.flatnonzero(present)
    ports = ports[np.argsort(-port_key[ports], kind="mergesort")]
    n = 0
    for l in ports:
        n += start[l + 1] - start[l]
    out = np.empty(n, dtype=np.int64)
    j = 0
    for l in ports:
        s, e = start[l], start[l + 1]
        idx = np.argsort(-edge_key[s:e], kind="mergesort")
        for q in range(e - s):
            out[j] = s + idx[q]
            j += 1
    return out


@numba.njit(cache=True)
def _select(port_key: np.ndarray, edge_key: np.ndarray, present: np.ndarray, start: np.ndarray,
            A: np.ndarray, c: np.ndarray, stop: bool) -> np.ndarray:  # pragma: no cover
    """:func:`priority_order` then the fill, in one compiled call."""
    return _fill(priority_order(port_key, edge_key, present, start), A, c, stop)


def greedy_fill(order: np.ndarray, requests: np.ndarray, capacities: np.ndarray,
                mode: str = "first-fit") -> np.ndarray:
    """Select edges in ``order`` while they fit (``A x <= c``); int8 ``(E,)``. ``mode="stop"``
    stops at the first edge that does not fit."""
    return _fill(np.asarray(order, dtype=np.int64),
                 np.ascontiguousarray(requests, dtype=np.int64),
                 np.ascontiguousarray(capacities, dtype=np.int64), mode == "stop")


class _Greedy(Agent):
    """Port key then edge key, first-fit. Subclasses define :meth:`_keys` (descending order)."""

    def __init__(self, env: Any, mode: str = "first-fit") -> None:
        super().__init__(env)
        self.mode = check_choice("mode", mode, FILL_MODES)
        inst = self.instance
        self.requests = np.ascontiguousarray(inst.requests, dtype=np.int64)
        self.capacities = np.ascontiguousarray(inst.capacities, dtype=np.int64)
        self.edges_of_port = inst.edges_of_port
        # a writable copy: the kernels then see one array type for every key they sum
        self.cost = np.array(inst.cost, dtype=np.float64)
        self.port_of_edge = np.asarray(inst.port_of_edge)
        #: port l's edges are start[l]:start[l + 1] (edges are sorted by (l, r))
        self.start = np.searchsorted(self.port_of_edge, np.arange(inst.n_types + 1)).astype(
            np.int64)

    def _init_state(self, index: int) -> dict[str, np.ndarray]:
        return init_stats(self.instance.n_edges)

    def _keys(self, obs: dict[str, np.ndarray], y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(port priority (L,), edge priority (E,))``, float64; larger = earlier."""
        raise NotImplementedError

    def order(self, obs: dict[str, np.ndarray], y: np.ndarray) -> np.ndarray:
        """Edge indices in priority order (ports with a job only)."""
        port_key, edge_key = self._keys(obs, y)
        return priority_order(port_key, edge_key, np.asarray(obs["arrivals"]) > 0.5, self.start)

    def _act(self, obs: dict[str, np.ndarray], state: dict[str, np.ndarray],
             deterministic: bool) -> np.ndarray:
        update_stats(state, obs)
        port_key, edge_key = self._keys(obs, empirical_means(state))
        return _select(port_key, edge_key, np.asarray(obs["arrivals"]) > 0.5, self.start,
                       self.requests, self.capacities, self.mode == "stop")


class HAUF(_Greedy):
    """Highest Accumulative Utility First (a.k.a. HSWF in the paper, spec esdp §5.1): ports by
    ``sum_{r in R_l} y_(l,r)`` descending, edges by ``y_e`` descending."""

    name = "hauf"

    def _keys(self, obs: dict[str, np.ndarray],
              y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return port_sums(y, self.start), y


class LCF(_Greedy):
    """Lowest Cost First (spec esdp §5.2): ports by total cost ``sum_{r in R_l} C_(l,r)`` ascending,
    edges by ``C_e`` ascending. Uses no utility estimate."""

    name = "lcf"

    def __init__(self, env: Any, mode: str = "first-fit") -> None:
        super().__init__(env, mode)
        self._port_key = -port_sums(self.cost, self.start)
        self._edge_key = -self.cost

    def _keys(self, obs: dict[str, np.ndarray],
              y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self._port_key, self._edge_key


class LWTF(_Greedy):
    """Longest Waiting Time First (spec esdp §5.3): ports by head-of-line waiting time (the
    observation's ``waiting``) descending, edges by ``y_e`` descending."""

    name = "lwtf"

    def _keys(self, obs: dict[str, np.ndarray],
              y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.asarray(obs["waiting"], dtype=np.float64), y


class Oracle(Agent):
    """Reference policy for regret only (**reads the hidden true means** ``theta``, not an online
    learner): per slot, the exact ``max theta^T x`` over capacity- and arrival-feasible
    selections (spec esdp §4.3)."""

    name = "oracle"

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.solver = OracleSolver(self.instance)

    def _act(self, obs: dict[str, np.ndarray], state: Any, deterministic: bool) -> np.ndarray:
        x, _ = self.solver.solve(np.asarray(obs["arrivals"]) > 0.5)
        return x.copy()
