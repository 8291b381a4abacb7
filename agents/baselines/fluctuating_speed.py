"""The ESDP paper's greedy baselines HAUF, LCF, LWTF (spec esdp §5) and the Oracle (§4.3).

All greedy baselines consider only ports with a job, order them by a port key, order each port's
edges by an edge key, and fill capacity **first-fit** (an edge that does not fit is skipped and
the fill continues; ``mode="stop"`` stops at the first edge that does not fit, the literal
reading). Ties: lower port index, then lower server index. Estimates ``y_e`` are the running
means of the observed net utility on the agent's own effective edges (0 if never observed; no
exploration bonus, spec §8 item 25). Their selections are feasible by construction, so they
never need the env's repair.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from schedgym.agents.base import Agent
from schedgym.agents.esdp import empirical_means, init_stats, update_stats
from schedgym.core.validation import check_choice
from schedgym.envs.fluctuating_speed.offline import OracleSolver

FILL_MODES = ("first-fit", "stop")


def greedy_fill(order: np.ndarray, requests: np.ndarray, capacities: np.ndarray,
                mode: str = "first-fit") -> np.ndarray:
    """Select edges in ``order`` while they fit (``A x <= c``); int8 ``(E,)``."""
    x = np.zeros(requests.shape[1], dtype=np.int8)
    rem = np.array(capacities, dtype=np.int64, copy=True)
    for e in order:
        a = requests[:, e]
        if np.all(a <= rem):
            x[e] = 1
            rem -= a
        elif mode == "stop":
            break
    return x


class _Greedy(Agent):
    """Port key then edge key, first-fit. Subclasses define :meth:`_keys` (descending order)."""

    def __init__(self, env: Any, mode: str = "first-fit") -> None:
        super().__init__(env)
        self.mode = check_choice("mode", mode, FILL_MODES)
        inst = self.instance
        self.requests = np.asarray(inst.requests)
        self.capacities = np.asarray(inst.capacities)
        self.edges_of_port = inst.edges_of_port
        self.cost = np.asarray(inst.cost)

    def _init_state(self, index: int) -> dict[str, np.ndarray]:
        return init_stats(self.instance.n_edges)

    def _keys(self, obs: dict[str, np.ndarray], y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(port priority (L,), edge priority (E,))``; larger = earlier."""
        raise NotImplementedError

    def order(self, obs: dict[str, np.ndarray], y: np.ndarray) -> np.ndarray:
        """Edge indices in priority order (ports with a job only)."""
        port_key, edge_key = self._keys(obs, y)
        present = np.flatnonzero(np.asarray(obs["arrivals"]) > 0.5)
        ports = present[np.argsort(-port_key[present], kind="stable")]
        out = [es[np.argsort(-edge_key[es], kind="stable")] for es in
               (self.edges_of_port[l] for l in ports)]
        return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)

    def _act(self, obs: dict[str, np.ndarray], state: dict[str, np.ndarray],
             deterministic: bool) -> np.ndarray:
        update_stats(state, obs)
        y = empirical_means(state)
        return greedy_fill(self.order(obs, y), self.requests, self.capacities, self.mode)


class HAUF(_Greedy):
    """Highest Accumulative Utility First (a.k.a. HSWF in the paper, spec §5.1): ports by
    ``sum_{r in R_l} y_(l,r)`` descending, edges by ``y_e`` descending."""

    name = "hauf"

    def _keys(self, obs, y):
        port = np.array([y[es].sum() for es in self.edges_of_port])
        return port, y


class LCF(_Greedy):
    """Lowest Cost First (spec §5.2): ports by total cost ``sum_{r in R_l} C_(l,r)`` ascending,
    edges by ``C_e`` ascending. Uses no utility estimate."""

    name = "lcf"

    def _keys(self, obs, y):
        port = np.array([self.cost[es].sum() for es in self.edges_of_port])
        return -port, -self.cost


class LWTF(_Greedy):
    """Longest Waiting Time First (spec §5.3): ports by head-of-line waiting time (the
    observation's ``waiting``) descending, edges by ``y_e`` descending."""

    name = "lwtf"

    def _keys(self, obs, y):
        return np.asarray(obs["waiting"], dtype=np.float64), y


class Oracle(Agent):
    """Reference policy for regret only (**reads the hidden true means** ``theta``, not an online
    learner): per slot, the exact ``max theta^T x`` over capacity- and arrival-feasible
    selections (spec §4.3)."""

    name = "oracle"

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.solver = OracleSolver(self.instance)

    def _act(self, obs, state, deterministic):
        x, _ = self.solver.solve(np.asarray(obs["arrivals"]) > 0.5)
        return x.copy()
