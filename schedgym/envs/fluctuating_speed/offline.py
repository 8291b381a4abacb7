"""The oracle of FluctuatingSpeed-v0 (ESDP §4, the regret benchmark) and the episode benchmark for
``schedgym compare``.

The oracle knows the true mean net utilities ``theta`` and the current arrivals (not the
realisation ``Z(t)``) and solves, per slot, ``max theta^T x`` s.t. ``A x <= c`` and ``x_e = 0`` on
edges of ports without a job, exactly, with the capacity DP of
:func:`schedgym.core.knapsack.knapsack_01`. Slots are decoupled, so this myopic optimum is the
optimal policy; its value defines the pseudo-regret. No solver dependency: the DP is exact.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from schedgym.core.knapsack import knapsack_01
from schedgym.envs.fluctuating_speed.dynamics import _dot, edge_mask, net_utility
from schedgym.envs.fluctuating_speed.types import FluctuatingSpeedInstance


class OracleSolver:
    """Per-slot oracle selection, cached by arrival pattern (at most ``2^L`` patterns; the
    first 4096 are kept).

    ``solve(arrivals) -> (x, value)`` with ``x`` int8 ``(E,)`` (read-only, shared by the cache)
    and ``value = theta^T x``. ``values`` overrides ``theta`` (e.g. to solve with other means).
    """

    def __init__(self, instance: FluctuatingSpeedInstance, values: np.ndarray | None = None):
        self.instance = instance
        # a read-only copy whatever was given: one array type for the compiled knapsack
        self.values = np.array(instance.theta if values is None else values, dtype=np.float64)
        self.values.setflags(write=False)
        self._cache: dict[bytes, tuple[np.ndarray, float]] = {}

    def solve(self, arrivals: np.ndarray) -> tuple[np.ndarray, float]:
        allowed = edge_mask(self.instance, arrivals)
        key = allowed.tobytes()
        hit = self._cache.get(key)
        if hit is None:
            inst = self.instance
            _, x = knapsack_01(self.values, inst.requests, inst.capacities,
                               allowed.astype(bool))
            x.setflags(write=False)
            # writable copies, the array types slot_kernel passes: one compiled _dot
            hit = (x, float(_dot(np.array(x), np.array(self.values))))
            if len(self._cache) < 4096:
                self._cache[key] = hit
        return hit


def episode_benchmarks(env: Any) -> dict[str, float]:
    """Benchmark of the episode just played (unwrapped env): ``{"oracle": AOU}``, the realised
    normalised AOU ``sum_t Z~(t)^T x*(t)`` of the oracle on the same arrivals and utility draws
    (common random numbers), so ``oracle - return`` is the agent's realised regret. The
    pseudo-regret (expected, ESDP's regret of §4) is the per-step info key
    ``pseudo_regret`` summed by ``episode_metrics``."""
    inst = env.instance
    solver = getattr(env, "_oracle", None) or OracleSolver(inst)
    total = 0.0
    for t in range(env.horizon):
        x, _ = solver.solve(env.arrivals[t])
        total += float(_dot(np.array(x), net_utility(env.utilities[t], inst.cost)))
    return {"oracle": total}
