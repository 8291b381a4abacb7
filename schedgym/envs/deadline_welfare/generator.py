"""Scenarios and the synthetic generator of DeadlineWelfare-v0 (OnSocMax problem).

The generator follows the paper's simulation setting (Zhao et al., OnSocMax, §V-A): a cluster of
K nodes x T one-hour slots with Gaussian capacities, Poisson job arrivals, exponential service
times and Gaussian workloads and capabilities, uniform utility coefficients and cluster weights.
Every parameter is a field of :class:`~schedgym.envs.deadline_welfare.types.DeadlineWelfareParams`.
The trace-driven scenario ``alibaba-gpu-2023`` is built in :mod:`.trace`.

Scenarios (``gym.make("schedgym/DeadlineWelfare-v0", scenario=NAME)``): ``paper-default``,
``paper-poisson``, ``congested`` (here) and ``alibaba-gpu-2023`` (:mod:`.trace`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

from schedgym.core import rng as rngs
from schedgym.core.arrays import f32
from schedgym.core.scenarios import ScenarioRegistry
from schedgym.envs.deadline_welfare import pcg
from schedgym.envs.deadline_welfare.streams import StreamSet
from schedgym.envs.deadline_welfare.types import (
    DeadlineWelfareInstance,
    DeadlineWelfareParams,
    Jobs,
)

#: Every generator parameter with its default (the paper's §V-A setting).
DEFAULTS: dict[str, Any] = DeadlineWelfareParams().as_dict()

SCENARIOS = ScenarioRegistry("DeadlineWelfare-v0", DEFAULTS)
SCENARIOS.register(
    "paper-default", {}, "OnSocMax §V default: 10 instances x 24 one-hour slots, C ~ N(20, 2), "
    "20 jobs from Poisson(2.03)/slot, D ~ Exp(4 slots), rho ~ N(18, 3), xbar ~ N(7, 1), "
    "a ~ U[1, 3], beta ~ U[0.1, 0.5]; pass utility='linear'|'log'|'sqrt'",
)
SCENARIOS.register(
    "paper-poisson", {"n_jobs": None},
    "Default setting keeping every Poisson arrival over the 24 slots (~49 jobs)",
)
SCENARIOS.register(
    "congested", {"capacity_mean": 5.0, "capacity_sd": 0.5, "workload_mean": 36.0},
    "A congested cell of the Fig. 6 sweep: C ~ N(5, 0.5), rho ~ N(36, 3)",
)


def validate_params(p: dict[str, Any]) -> dict[str, Any]:
    """Check every generator parameter (through :class:`DeadlineWelfareParams`); returns a
    normalised copy as a dict."""
    return DeadlineWelfareParams(**p).as_dict()


#: Floor of every Gaussian draw (a non-positive workload, capability or capacity is meaningless).
GAUSS_FLOOR = 0.1


#: Gaussian draws are also capped at mean + GAUSS_SPAN sd (probability ~6e-16 of mattering), so
#: every observation box is bounded.
GAUSS_SPAN = 8.0


def _gauss_hi(mean: float, sd: float) -> float:
    return max(GAUSS_FLOOR, mean + GAUSS_SPAN * sd)


def _gauss(gen: np.random.Generator, mean: float, sd: float, size: Any) -> np.ndarray:
    return np.clip(gen.normal(mean, sd, size), GAUSS_FLOOR, _gauss_hi(mean, sd))


def upper_f32(x: float) -> float:
    """The smallest float32-representable number ``>= x`` (as a float). Generated values are
    rounded to float32 (:func:`~schedgym.core.arrays.f32`), which may round up: a value ``<= x``
    rounds to at most ``upper_f32(x)``, so limits built with it always hold."""
    y = np.float32(x)
    if float(y) < x:
        y = np.nextafter(y, np.float32(np.inf))
    return float(y)


#: Parameters that set each entry of :func:`job_limits` (what an error names).
LIMIT_PARAMS: tuple[str, ...] = ("workload_mean/workload_sd", "capability_mean/capability_sd",
                                 "coef_range", "weight_range")


def job_limits(p: dict[str, Any]) -> tuple[float, float, float, float]:
    """Largest (workload, capability, coef, weight) the generator can draw with params ``p``,
    float32 values after rounding included."""
    return (upper_f32(_gauss_hi(p["workload_mean"], p["workload_sd"])),
            upper_f32(_gauss_hi(p["capability_mean"], p["capability_sd"])),
            upper_f32(float(p["coef_range"][1])), upper_f32(float(p["weight_range"][1])))


def capacity_bounds(p: dict[str, Any]) -> tuple[float, float]:
    """``(lowest, highest)`` capacity the generator can draw with params ``p`` (whatever the
    instance seed): the observation boxes use it, so they do not depend on the instance seed."""
    return GAUSS_FLOOR, upper_f32(_gauss_hi(p["capacity_mean"], p["capacity_sd"]))


#: Default of the env's ``memory_limit_mb``: the most memory one episode may need.
MEMORY_LIMIT_MB = 2048.0


def estimate_memory_mb(n_instances: int, horizon: int, n_jobs: int | None,
                       arrival_rate: float) -> float:
    """Memory one episode needs, MB: the jobs' ``(N, R, T)`` arrays (capability, coef, weight,
    mask), the episode dispatch ``X`` and temporaries (64 bytes per job and unit) plus the mesh
    arrays and observation (256 bytes per unit). With ``n_jobs=None`` N is the Poisson count's
    mean + 6 sd + 10 (exceeded with probability < 1e-9)."""
    units = float(n_instances) * float(horizon)
    if n_jobs is None:
        mean = arrival_rate * horizon
        n = mean + 6.0 * math.sqrt(mean) + 10.0
    else:
        n = float(n_jobs)
    return (64.0 * n * units + 256.0 * units) / 2**20


def prior_bounds(p: dict[str, Any], capacity: np.ndarray) -> tuple[float, float]:
    """``(ι, v)`` from the generator's supports (``bound_mode="prior"``): a and β over their
    ranges, x̄ up to its cap mean + 8 sd, C over the instance's actual capacities. Always valid
    bounds of the marginal social welfare (paper Theorem 2) for the generated jobs."""
    a_lo, a_hi = p["coef_range"]
    b_lo, b_hi = p["weight_range"]
    x_hi = _gauss_hi(p["capability_mean"], p["capability_sd"])
    c_lo, c_hi = float(np.min(capacity)), float(np.max(capacity))
    fam = p["utility"]
    if fam == "linear":
        lo_m, hi_m = a_lo, a_hi
    elif fam == "log":
        lo_m, hi_m = a_lo / (1.0 + x_hi), a_hi
    else:
        lo_m, hi_m = a_lo / (2.0 * math.sqrt(x_hi)), a_hi / (2.0 * math.sqrt(p["sqrt_v_floor"]))
    return lo_m + b_lo / c_hi, hi_m + b_hi / c_lo


def generate(params: dict[str, Any], instance_seed: int) -> DeadlineWelfareInstance:
    """The static cluster of the paper's §V-A: per-instance capacity ``C_k ~ max(0.1, N(mean,
    sd))``, constant over slots, from the named stream ``capacity`` of ``instance_seed``."""
    p = validate_params(params)
    R, T = p["n_instances"], p["horizon"]
    c_node = f32(_gauss(rngs.stream(instance_seed, "capacity"), p["capacity_mean"],
                        p["capacity_sd"], R))
    capacity = np.repeat(c_node[:, None], T, axis=1)
    return DeadlineWelfareInstance(
        capacity=capacity, utility=p["utility"], sqrt_v_floor=p["sqrt_v_floor"],
        bound_mode=p["bound_mode"],
        prior_bounds=prior_bounds(p, capacity) if p["bound_mode"] == "prior" else None,
        job_limits=job_limits(p), capacity_bounds=capacity_bounds(p),
    )


def poisson_arrivals(gen: np.random.Generator, rate: float, horizon: int,
                     n_jobs: int | None) -> np.ndarray:
    """Arrival slots (non-decreasing): per-slot Poisson(``rate``) counts in slot order, truncated
    at ``n_jobs`` jobs; arrivals after the last slot are put in slot ``T - 1`` (so the episode
    always has ``n_jobs`` jobs). With ``n_jobs=None`` every arrival of the ``T`` slots is kept
    (possibly none)."""
    if n_jobs is None:
        counts = gen.poisson(rate, horizon)
        return np.repeat(np.arange(horizon), counts)
    counts = gen.poisson(rate, max(horizon - 1, 0))
    slots = np.repeat(np.arange(horizon - 1), counts)[:n_jobs]
    return np.concatenate([slots, np.full(n_jobs - slots.size, horizon - 1)]).astype(np.int64)


#: The named streams of an episode's jobs (``locality`` is created only when it is used).
_JOB_STREAMS: tuple[str, ...] = ("arrivals", "durations", "workloads", "capability", "coef",
                                 "weights")


@numba.njit(cache=True)
def _arrivals(st: np.ndarray, rate: float, horizon: int, n_jobs: int) -> np.ndarray:
    """:func:`poisson_arrivals` drawn from the compiled stream ``st`` (:mod:`.pcg`; the same
    Poisson draws in the same order); ``n_jobs < 0`` stands for ``None``."""
    slots = horizon if n_jobs < 0 else max(horizon - 1, 0)
    counts = np.empty(slots, dtype=np.int64)
    for t in range(slots):
        counts[t] = pcg.poisson(st, rate)
    # np.empty and loops, not .sum()/np.full: every numba-internal specialisation of those is
    # one more first-use compile (same integers)
    N = n_jobs
    if n_jobs < 0:
        N = 0
        for t in range(slots):
            N += counts[t]
    s = np.empty(N, dtype=np.int64)
    for i in range(N):
        s[i] = horizon - 1
    n = 0
    for t in range(slots):
        for _ in range(counts[t]):
            if n < N:
                s[n] = t
                n += 1
    return s


@numba.njit(cache=True)
def _f32(x: float) -> float:
    return float(np.float32(x))


@numba.njit(cache=True)
def _fill_jobs(st: np.ndarray, p: np.ndarray, coef_job: bool, s: np.ndarray, e: np.ndarray,
               rho: np.ndarray, cap: np.ndarray, coef: np.ndarray, weight: np.ndarray) -> None:
    """Draw the jobs arriving in slots ``s`` ``(N,)`` from the compiled streams ``st`` ``(5, 4)``
    (durations, workloads, capability, coef, weights) into ``e``, ``rho`` ``(N,)`` and ``cap``,
    ``coef``, ``weight`` ``(N, R, T)`` (float32-rounded, x̄ constant over slots, ``coef`` per job
    if ``coef_job``). ``p``: duration mean, workload mean/sd/cap, capability mean/sd/cap, coef
    range, weight range. Every draw is numpy's, in numpy's order (size-``N`` calls per stream,
    row-major), as :class:`PaperJobSampler` made them with ``Generator`` objects."""
    N, R, T = cap.shape
    for n in range(N):
        d = np.floor(p[0] * pcg.standard_exponential(st[0]))
        e[n] = T - 1 if d >= T - 1 - s[n] else s[n] + int(d)
    for n in range(N):
        rho[n] = _f32(min(max(p[1] + p[2] * pcg.standard_normal(st[1]), GAUSS_FLOOR), p[3]))
    for n in range(N):
        for r in range(R):
            x = _f32(min(max(p[4] + p[5] * pcg.standard_normal(st[2]), GAUSS_FLOOR), p[6]))
            cap[n, r, :] = x
    a_lo, a_span, b_lo, b_span = p[7], p[8] - p[7], p[9], p[10] - p[9]
    for n in range(N):
        if coef_job:
            coef[n] = _f32(a_lo + a_span * pcg.next_double(st[3]))
        else:
            for r in range(R):
                for t in range(T):
                    coef[n, r, t] = _f32(a_lo + a_span * pcg.next_double(st[3]))
    for n in range(N):
        for r in range(R):
            for t in range(T):
                weight[n, r, t] = _f32(b_lo + b_span * pcg.next_double(st[4]))


@numba.njit(cache=True)
def _draw_jobs(words: np.ndarray, p: np.ndarray, R: int, T: int, n_jobs: int,
               coef_job: bool) -> tuple[np.ndarray, ...]:
    """One episode's job arrays from the streams' seed words ``words`` ``(6, 8)`` (arrivals,
    durations, workloads, capability, coef, weights; :meth:`.StreamSet.words`): ``(arrival,
    deadline, workload, capability, coef, weight)``."""
    st = np.empty((6, 4), dtype=np.uint64)
    for i in range(6):
        pcg.seed_state(words[i], st[i])
    s = _arrivals(st[0], p[11], T, n_jobs)
    N = s.size
    e = np.empty(N, dtype=np.int64)
    rho = np.empty(N)
    cap = np.empty((N, R, T))
    coef = np.empty((N, R, T))
    weight = np.empty((N, R, T))
    _fill_jobs(st[1:], p, coef_job, s, e, rho, cap, coef, weight)
    return s, e, rho, cap, coef, weight


@dataclass(frozen=True, eq=False)
class PaperJobSampler:
    """The job stream of the paper's §V-A, drawn from independent named streams of the episode
    seed (``arrivals``, ``durations``, ``workloads``, ``capability``, ``coef``, ``weights``,
    ``locality``), so a sweep over one parameter keeps every other draw fixed. Values are rounded
    to float32 precision, so float32 observations show them exactly. Picklable.

    The draws are numpy ``Generator(PCG64)``'s, made by compiled code (:mod:`.pcg`) from the
    streams' seed words: the jobs are those ``rng.stream(seed, name)``'s generators give."""

    params: dict[str, Any]

    def __post_init__(self) -> None:
        p = validate_params(self.params)
        object.__setattr__(self, "params", p)
        object.__setattr__(self, "_streams", StreamSet(*_JOB_STREAMS))
        object.__setattr__(self, "_p", draw_params(p))

    def __call__(self, episode_seed: int) -> Jobs:
        """One episode's jobs from ``episode_seed``."""
        p = self.params
        R, T = p["n_instances"], p["horizon"]
        words = self._streams.words(episode_seed)  # type: ignore[attr-defined]
        n_jobs = -1 if p["n_jobs"] is None else p["n_jobs"]
        s, e, rho, cap, coef, weight = _draw_jobs(words, self._p,  # type: ignore[attr-defined]
                                                  R, T, n_jobs, p["coef_scope"] == "job")
        allowed = np.ones((s.size, R), dtype=bool)
        m = p["locality_size"]
        if m is not None and m < R:  # the only user of its stream: created only then
            loc = rngs.stream(episode_seed, "locality")
            allowed[:] = False
            for n in range(s.size):
                allowed[n, loc.choice(R, size=m, replace=False)] = True
        # our own fresh arrays, valid by construction: no re-validation (Jobs.trusted)
        return Jobs.trusted(s, e, rho, allowed, cap, coef, weight)


def draw_params(p: dict[str, Any]) -> np.ndarray:
    """float64 ``(12,)`` of the compiled sampler (:func:`_fill_jobs`'s ``p``, then the arrival
    rate) from validated params ``p``."""
    return np.array([p["duration_mean"], p["workload_mean"], p["workload_sd"],
                     _gauss_hi(p["workload_mean"], p["workload_sd"]), p["capability_mean"],
                     p["capability_sd"], _gauss_hi(p["capability_mean"], p["capability_sd"]),
                     *p["coef_range"], *p["weight_range"], p["arrival_rate"]], dtype=np.float64)


def job_sampler(params: dict[str, Any]) -> PaperJobSampler:
    """The paper's job sampler for ``params`` (kept for callers of the old closure API)."""
    return PaperJobSampler(params)
