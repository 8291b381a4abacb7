"""The handcrafted online baselines of DeadlineWelfare-v0 (OnSocMax paper §V and its journal
version): MAX-FIRST, EQUAL-SHARE and JSQ, arrival-driven (spec onsocmax §5).

Each decides the arriving job's dispatch at once from the observation, with the job's per-unit
room ``cap_r = max(0, min(x̄_nr, C_r - ω_r))`` on its units ℛ_n; all respect (4)-(7).

- **MAX-FIRST** (§5.1): greedily give the unit with the largest *myopic welfare*
  ``f(u) + β u / C`` of its next piece ``u = min(cap_r, remaining workload)``, until the workload
  or the units run out (ties: earliest slot, then lowest instance).
- **EQUAL-SHARE** (§5.2): spread the workload evenly over the job's units by water-filling
  (``x_r = min(s, cap_r)`` with ``Σ x = ρ``), or ``variant="simple"``: ``min(ρ/|ℛ_n|, cap_r)``.
- **JSQ** (join the shortest queue, journal version): each infinitesimal piece of work goes to the
  job's least-loaded unit. Its fluid limit is water-filling of the *load*: units are raised to a
  common utilisation level ``L`` (``x_r = clip(L C_r - ω_r, 0, cap_r)``, ``load="relative"``,
  default) or common absolute usage (``x_r = clip(L - ω_r, 0, cap_r)``, ``load="absolute"``)
  with ``Σ x = ρ`` (or everything when the units cannot hold ρ).

:func:`simulate_slot_policy` runs the optional slot-driven (node-centric) readings of §5.3
outside the env: they need every job of a slot before deciding it.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from schedgym.agents.base import Agent
from schedgym.core.validation import check_choice
from schedgym.core.waterfill import waterfill, waterfill_kernel
from schedgym.envs.deadline_welfare.dynamics import ObservedJob, f_value, observed_job
from schedgym.envs.deadline_welfare.types import DeadlineWelfareInstance, Jobs


@numba.njit(cache=True)
def greedy_fill(code: int, coef: np.ndarray, b: np.ndarray, lim: np.ndarray, total: float,
                key: np.ndarray) -> np.ndarray:
    """MAX-FIRST's greedy rule, compiled: while ``total`` is left and entries are available,
    give the available entry with the largest myopic welfare ``f(u) + b u`` of its next piece
    ``u = min(lim_r, total left)`` all of ``u`` (ties: smallest ``key``). Arrays ``(m,)``;
    returns the amounts ``(m,)``."""
    m = lim.size
    x = np.zeros(m)
    avail = np.empty(m, dtype=np.bool_)
    for r in range(m):
        avail[r] = lim[r] > 1e-12
    rem = total
    while rem > 1e-12:
        best = -1
        hb = -np.inf
        for r in range(m):
            if avail[r]:
                u = min(lim[r], rem)
                h = f_value(code, coef[r], u) + b[r] * u
                if best < 0 or h > hb or (h == hb and key[r] < key[best]):
                    best, hb = r, h
        if best < 0:
            break
        x[best] = min(lim[best], rem)
        rem -= x[best]
        avail[best] = False
    return x


def check_flat_observation(agent: Agent) -> None:
    """Refuse (one line) an env whose observation is not the flat ``Dict`` the classical agents
    parse (:func:`~schedgym.envs.deadline_welfare.dynamics.observed_job`)."""
    if "allowed" not in agent.observation_space.spaces:
        raise ValueError(f"obs_mode={getattr(agent.env, 'obs_mode', None)!r} is invalid for "
                         f"{type(agent).__name__}: it reads the flat observation; build the env "
                         "with obs_mode='flat'")


class _MeshBaseline(Agent):
    """Shared plumbing: parse the observation, decide on the job's units, encode the action."""

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        check_flat_observation(self)

    def decide(self, job: ObservedJob) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _act(self, obs: dict[str, np.ndarray], state: Any, deterministic: bool) -> np.ndarray:
        job = observed_job(obs)
        x = self.decide(job) if job.units.size else np.zeros(0)
        return job.encode(x)


class MaxFirst(_MeshBaseline):
    """MAX-FIRST, arrival-driven (spec §5.1): greedy by the myopic welfare of each unit's next
    piece ``f(u) + β u / C``, ``u = min(cap_r, remaining)``; ties: earliest slot, lowest
    instance."""

    name = "max-first"

    def decide(self, job: ObservedJob) -> np.ndarray:
        T = self.instance.horizon
        order_key = (job.units % T) * self.instance.n_instances + job.units // T  # (t, k)
        return greedy_fill(job.family, job.coef, job.weight / job.capacity, job.remaining,
                           job.workload, order_key)


class EqualShare(_MeshBaseline):
    """EQUAL-SHARE, arrival-driven (spec §5.2): water-filling ``x_r = min(s, cap_r)``,
    ``Σ x = ρ`` (``variant="waterfill"``, default) or ``min(ρ / |ℛ_n|, cap_r)``
    (``variant="simple"``, no redistribution)."""

    name = "equal-share"

    def __init__(self, env: Any, variant: str = "waterfill") -> None:
        super().__init__(env)
        self.variant = check_choice("variant", variant, ("waterfill", "simple"))

    def decide(self, job: ObservedJob) -> np.ndarray:
        cap = job.remaining
        if self.variant == "simple":
            return np.minimum(job.workload / cap.size, cap)
        return waterfill(np.zeros_like(cap), cap, np.ones_like(cap), job.workload)


class JSQ(_MeshBaseline):
    """Join-the-shortest-queue, fluid form: water-filling of the units' load, so the job's work
    goes to its least-loaded units first and raises them to a common level. ``load="relative"``
    (default): level = utilisation ω/C; ``load="absolute"``: level = usage ω."""

    name = "jsq"

    def __init__(self, env: Any, load: str = "relative") -> None:
        super().__init__(env)
        self.load = check_choice("load", load, ("relative", "absolute"))

    def decide(self, job: ObservedJob) -> np.ndarray:
        cap = job.remaining
        if self.load == "relative":
            C = job.capacity
            return waterfill(job.usage / C, (job.usage + cap) / C, C, job.workload)
        return waterfill(job.usage, job.usage + cap, np.ones_like(cap), job.workload)


def simulate_slot_policy(inst: DeadlineWelfareInstance, jobs: Jobs, rule: str,
                         memory_limit_mb: float = 2048.0) -> np.ndarray:
    """The slot-driven (node-centric) baselines of spec §5.3, run outside the env.

    For every slot ``t`` and instance ``r`` in order, the jobs whose window holds ``t``, that may
    use ``r`` and have workload left share the unit's capacity: ``rule="max-first"`` serves them
    by largest myopic welfare ``f(u) + β u / C`` with ``u = min(x̄, capacity left, workload
    left)``; ``rule="equal-share"`` water-fills the capacity over them. Returns ``X (N, R, T)``.
    It reads the jobs' whole ``(N, R, T)`` arrays (33 bytes an entry with ``X``): refused in
    one line above ``memory_limit_mb``.
    """
    check_choice("rule", rule, ("max-first", "equal-share"))
    shape = (jobs.n_jobs, jobs.n_instances, jobs.n_slots)
    need = 33.0 * float(np.prod(shape)) / 2**20
    if need > memory_limit_mb:
        raise ValueError(f"simulate_slot_policy needs the jobs' whole {shape} arrays, about "
                         f"{need:,.0f} MB: more than memory_limit_mb={memory_limit_mb:,.0f} "
                         "(pass a larger memory_limit_mb= to allow it)")
    cap, coef, weight = (np.ascontiguousarray(np.broadcast_to(np.asarray(a, dtype=np.float64),
                                                              shape))
                         for a in (jobs.capability, jobs.coef, jobs.weight))
    return _slot_policy(inst.family_code, int(rule == "equal-share"),
                        np.ascontiguousarray(inst.capacity, dtype=np.float64),
                        np.ascontiguousarray(jobs.mask), cap, coef, weight,
                        np.asarray(jobs.workload, dtype=np.float64).copy())


@numba.njit(cache=True)
def _slot_policy(code: int, equal_share: int, capacity: np.ndarray, mask: np.ndarray,
                 capability: np.ndarray, coef: np.ndarray, weight: np.ndarray,
                 rem: np.ndarray) -> np.ndarray:
    """:func:`simulate_slot_policy`'s loop over slots and instances, compiled; ``rem`` ``(N,)``
    is the workload left (updated in place)."""
    N, R, T = mask.shape
    X = np.zeros((N, R, T))
    act = np.empty(N, dtype=np.int64)
    for t in range(T):
        for r in range(R):
            k = 0
            for n in range(N):
                if mask[n, r, t] and rem[n] > 1e-12:
                    act[k] = n
                    k += 1
            if k == 0:
                continue
            lim, a, b = np.empty(k), np.empty(k), np.empty(k)
            for i in range(k):
                n = act[i]
                lim[i] = min(capability[n, r, t], rem[n])
                a[i] = coef[n, r, t]
                b[i] = weight[n, r, t] / capacity[r, t]
            c = capacity[r, t]
            if equal_share:
                got = waterfill_kernel(np.zeros(k), lim, np.ones(k), c)[0]
            else:
                got = greedy_fill(code, a, b, lim, c, np.arange(k))
            for i in range(k):
                X[act[i], r, t] = got[i]
                rem[act[i]] -= got[i]
    return X
