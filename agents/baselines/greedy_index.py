"""Greedy optimistic index per unit of capacity for FluctuatingSpeed-v0 (a strong simple
baseline for the learned agents to beat; not from the ESDP paper).

Per slot ``t`` (0-based, from the observation's ``progress``), every edge ``e`` gets the index

    ``i_e = (y_e + c * sqrt(2 ln(t + 2) / n_e)) / s_e``   (``i_e = unused_value / s_e`` if
    ``n_e = 0``)

with ``y_e`` the running mean of its observed net utility ``clip(Z_e - C_e, 0, 1)`` and ``n_e`` the
slots it was used (learned from the observation's ``used`` / ``feedback`` entries, as ESDP and
HAUF learn them), and ``s_e = sum_k a_k^e / c_k`` its summed request share of the capacities (the
instance's requests and capacities, known at construction as every classical agent knows them;
an edge requesting a type of capacity 0 never fits and is skipped). Among the edges of the ports
with a job, by descending index (ties: lower edge index first), an edge is selected iff its
requests fit in what the already selected edges leave (the ``"scores"`` decoder's rule), so the
selection is always feasible. It reads nothing hidden (no true means).

``c`` (exploration constant) defaults to the value chosen on the training instances only
(instance seeds 0-99, episode seed 0, paper-default; docs/learned-vs-classical.md gives the
command and the numbers); ``unused_value`` is the optimistic value of an unused edge.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from schedgym.agents.base import Agent
from schedgym.agents.baselines.fluctuating_speed import greedy_fill
from schedgym.agents.esdp import empirical_means, init_stats, update_stats
from schedgym.core.validation import check_float

#: Default exploration constant (chosen on training instance seeds 0-99, see module docstring).
DEFAULT_C = 0.1


class GreedyIndex(Agent):
    """Greedy optimistic index per unit of capacity; see the module docstring.

    Args:
        env: a FluctuatingSpeed-v0 env (default ``action_mode="selection"``).
        c: exploration constant ``>= 0`` of the optimistic bonus.
        unused_value: index numerator of a never-used edge (``> 0``; large = try every edge).
    """

    name = "greedy-index"

    def __init__(self, env: Any, c: float = DEFAULT_C, unused_value: float = 10.0) -> None:
        super().__init__(env)
        self.c = check_float("c", c, low=0.0)
        self.unused_value = check_float("unused_value", unused_value, low=0.0, low_open=True)
        inst = self.instance
        self.requests = np.ascontiguousarray(inst.requests, dtype=np.int64)
        self.capacities = np.ascontiguousarray(inst.capacities, dtype=np.int64)
        cap = self.capacities.astype(np.float64)[:, None]
        over = (self.requests > 0) & (cap <= 0)  # requests a type the cluster lacks
        share = np.where(cap > 0, self.requests / np.where(cap > 0, cap, 1.0), 0.0).sum(axis=0)
        self.fits = ~over.any(axis=0) & np.all(self.requests <= cap, axis=0)
        # an edge requesting nothing costs no capacity: the smallest positive share stands in
        self.share = np.maximum(share, 1e-9)
        self.port_of_edge = np.asarray(inst.port_of_edge)
        self.horizon = int(getattr(self.env, "horizon", 1))

    def _init_state(self, index: int) -> dict[str, np.ndarray]:
        return init_stats(self.instance.n_edges)

    def index(self, stats: dict[str, np.ndarray], t: int) -> np.ndarray:
        """The index ``i_e`` of every edge at 0-based slot ``t``, float64 ``(E,)``."""
        n = stats["n"]
        bonus = self.c * np.sqrt(2.0 * np.log(t + 2.0) / np.where(n > 0, n, 1.0))
        value = np.where(n > 0, empirical_means(stats) + bonus, self.unused_value)
        return value / self.share

    def _act(self, obs: dict[str, np.ndarray], state: dict[str, np.ndarray],
             deterministic: bool) -> np.ndarray:
        update_stats(state, obs)
        t = int(round(float(np.asarray(obs["progress"]).reshape(-1)[0]) * self.horizon))
        idx = self.index(state, t)
        present = np.asarray(obs["arrivals"])[self.port_of_edge] > 0.5
        cand = np.flatnonzero(present & self.fits)
        order = cand[np.argsort(-idx[cand], kind="stable")]
        return greedy_fill(order, self.requests, self.capacities)

    def __repr__(self) -> str:
        return f"GreedyIndex(c={self.c}, unused_value={self.unused_value})"
