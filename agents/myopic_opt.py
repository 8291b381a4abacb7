"""``myopic-opt``: the exact per-slot optimum of GainOverhead-v0, the ceiling of online policies.

In GainOverhead-v0 jobs last one slot and nothing carries over, so under the revealed-arrivals
protocol (``arrivals="revealed"``, the default: ``x(t)`` is observed before acting) no online
policy can beat, in any slot, the allocation

    y(t) = argmax_{y in Y} q(x(t), y)

and ``myopic-opt`` plays exactly that. It is not clairvoyant (it uses only the observation and
the instance, as every classical agent does) but it has full model knowledge (utilities,
penalty, capacities): it is a **ceiling**, reported beside the classical agents and never taken
as "the best classical agent" (``schedgym.train.report.CEILING_AGENTS``).

How: ``q`` is linear in ``x``, so ``q(x(t), .)`` is the hindsight objective of
:func:`schedgym.envs.gain_overhead.offline.solve_hindsight` with counts ``x(t)``: one LP (HiGHS)
when every utility is linear, and the certified piecewise-linear refinement (relative gap
``rtol``) for the concave families. Only the arrived types enter the problem (the others get
nothing: they only consume capacity). The optimum depends on ``x(t)`` alone, and ``x(t)`` is a
0/1 vector of ``L`` entries, so solutions are cached per arrival pattern (an LRU cache of
``cache_size`` patterns): paper-default episodes repeat patterns, the cost per slot falls as the
episode goes on.

Size: with linear utilities any size is played (the whole 1,523-node cluster's month of the
trace: 23.5 s of CPU). The concave families' piecewise-linear refinement costs several LPs per
pattern; beyond :data:`MAX_NONLINEAR_ENTRIES` allocation entries ``E K`` the agent refuses at
construction in one line (:class:`MyopicOptTooLarge`, a
:class:`~schedgym.core.limits.NotComputed`: ``schedgym compare`` reports the ceiling as not
computed), since a month of the trace then takes more than 10 minutes of one core (the whole
cluster, ``utility="mixed"``: 720.6 s of CPU); ``max_nonlinear_entries=None`` plays anyway.

Under ``arrivals="hidden"`` the observation carries ``x(t-1)``: the agent then plays the optimum
for the previous slot's arrivals (a "last arrivals" predictor), which is no longer a ceiling.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np

from schedgym.agents.base import Agent
from schedgym.core.limits import NotComputed
from schedgym.core.utilities import LINEAR
from schedgym.core.validation import check_float, check_int
from schedgym.envs.gain_overhead.offline import solve_hindsight
from schedgym.envs.gain_overhead.types import GainOverheadInstance

#: The largest allocation (``E K`` entries) myopic-opt solves with non-linear utilities: a
#: 1,440-slot month of the trace's arrivals (about 300 distinct patterns) within 10 minutes of
#: one core (docs/gain-overhead.md has the measurements).
MAX_NONLINEAR_ENTRIES = 32_768


class MyopicOptTooLarge(NotComputed):
    """myopic-opt declines an instance beyond :data:`MAX_NONLINEAR_ENTRIES` with non-linear
    utilities (the message says the size and the largest it takes)."""

    benchmark = "myopic-opt"


class MyopicOpt(Agent):
    """Exact per-slot maximiser of ``q(x(t), .)`` over Y (see the module docstring).

    Args:
        env: a GainOverhead-v0 env (plain, wrapped or vector) in the default action mode.
        rtol: relative optimality gap of the concave families' solve (certified by a dual
            bound; linear utilities are solved exactly by the LP).
        cache_size: arrival patterns whose optimum is kept (0: no cache).
        max_nonlinear_entries: the largest ``E K`` played with non-linear utilities
            (:class:`MyopicOptTooLarge` beyond it); ``None``: no limit.
    """

    name = "myopic-opt"

    def __init__(self, env: Any, rtol: float = 1e-8, cache_size: int = 4096,
                 max_nonlinear_entries: int | None = MAX_NONLINEAR_ENTRIES) -> None:
        super().__init__(env)
        if not isinstance(self.instance, GainOverheadInstance):
            raise ValueError(f"env={type(self.env).__name__} is invalid for myopic-opt: must be "
                             "schedgym/GainOverhead-v0")
        if max_nonlinear_entries is not None:
            check_size(self.instance, check_int("max_nonlinear_entries", max_nonlinear_entries,
                                                min_value=1))
        self.rtol = check_float("rtol", rtol, low=0.0, low_open=True, high=1e-3)
        self.cache_size = check_int("cache_size", cache_size, min_value=0)
        self._cache: OrderedDict[bytes, np.ndarray] = OrderedDict()
        #: Solves run so far (cache misses) and decisions served (for decision-time reports).
        self.n_solves = 0
        self.n_calls = 0

    def optimum(self, arrivals: np.ndarray) -> tuple[np.ndarray, float]:
        """``(y*, q(x, y*))``: the optimal allocation ``(E, K)`` (resource units, feasible) for
        arrivals ``x`` ``(L,)`` and its reward (uncached)."""
        x = np.asarray(arrivals, dtype=np.float64)
        sol = solve_hindsight(self.instance, x, rtol=self.rtol)
        return sol.allocation, sol.value

    def allocation(self, arrivals: np.ndarray) -> np.ndarray:
        """The optimal allocation ``(E, K)`` for arrivals ``(L,)``, from the cache when seen."""
        x = np.asarray(arrivals, dtype=np.float64)
        key = x.tobytes()
        self.n_calls += 1
        y = self._cache.get(key)
        if y is not None:
            self._cache.move_to_end(key)
            return y
        y, _ = self.optimum(x)
        self.n_solves += 1
        if self.cache_size:
            self._cache[key] = y
            if len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return y

    def _act(self, obs: dict[str, np.ndarray], state: Any, deterministic: bool) -> np.ndarray:
        x = np.asarray(obs["arrivals"], dtype=np.float64)
        return self.env.encode_action(self.allocation(x))


def check_size(inst: GainOverheadInstance, limit: int = MAX_NONLINEAR_ENTRIES) -> None:
    """Raise :class:`MyopicOptTooLarge` (one line) when ``inst`` has a non-linear utility and
    more than ``limit`` allocation entries ``E K``."""
    entries = inst.n_edges * inst.n_resources
    if entries > limit and not bool(np.all(inst.utility_codes == LINEAR)):
        raise MyopicOptTooLarge(
            f"myopic-opt is not played at this size: {inst.n_edges:,} channels x "
            f"{inst.n_resources} resources = {entries:,} allocation entries with non-linear "
            f"utilities; it takes at most {limit:,} with them (any size with linear ones), or "
            "pass max_nonlinear_entries=None to play anyway")
