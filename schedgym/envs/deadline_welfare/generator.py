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
from typing import Any, cast

import numba
import numpy as np

from schedgym.core import rng as rngs
from schedgym.core.arrays import f32
from schedgym.core.scenarios import ScenarioRegistry
from schedgym.envs.deadline_welfare.tables import CHUNK_DRAWS
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
    x = gen.normal(mean, sd, size)
    return np.minimum(np.maximum(x, GAUSS_FLOOR, out=x), _gauss_hi(mean, sd), out=x)


def _uniform(gen: np.random.Generator, low: float, high: float, size: Any) -> np.ndarray:
    """``gen.uniform(low, high, size)``, the same values bit for bit (numpy computes each as
    ``low + (high - low) * random()``), without ``uniform``'s general broadcasting loop, which
    costs more than the draws of the episode's ``(N, R, T)`` arrays."""
    x = gen.random(size)
    x *= high - low
    x += low
    return x


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
    """Arrival slots (non-decreasing, int64): per-slot Poisson(``rate``) counts in slot order,
    truncated at ``n_jobs`` jobs; arrivals after the last slot are put in slot ``T - 1`` (so
    the episode always has ``n_jobs`` jobs). With ``n_jobs=None`` every arrival of the ``T``
    slots is kept (possibly none). With ``n_jobs`` the counts are never expanded, so the work
    is ``O(T + N log T)`` whatever the rate."""
    if n_jobs is None:
        counts = gen.poisson(rate, horizon)
        return np.repeat(np.arange(horizon, dtype=np.int64), counts)
    # job i arrives in the first slot whose cumulative count exceeds i (T - 1 if none does)
    cum = np.cumsum(gen.poisson(rate, max(horizon - 1, 0)))
    return np.searchsorted(cum, np.arange(n_jobs), side="right").astype(np.int64)


#: The named streams of an episode's jobs (``locality`` is drawn only when it is used): the
#: job scalars' and the per-unit values' (:class:`StreamValues`).
JOB_STREAMS: tuple[str, ...] = ("arrivals", "durations", "workloads", "capability", "coef",
                                "weights")
#: The streams of the per-unit values.
VALUE_STREAMS: tuple[str, ...] = ("capability", "coef", "weights")


@dataclass(frozen=True, eq=False)
class StreamValues:
    """The paper generator's per-unit values of one episode (a :class:`~.tables.UnitValues`),
    drawn from the named streams ``capability``, ``coef`` and ``weights`` of the episode seed
    only when a consumer reads them. Job ``n``'s values are its ``n``-th block of each stream:
    capability ``x̄_nr ~ N(mean, sd)`` per instance (``R`` normals, clipped to
    ``[0.1, mean + 8 sd]``, constant over slots), ``a ~ U[coef_range]`` per unit (``R T`` values;
    one per job with ``coef_scope="job"``) and ``β ~ U[weight_range]`` per unit (``R T``), all
    rounded to float32 precision. Reading the blocks job by job in arrival order is the whole
    ``(N, R, T)`` draw read in order, so both forms give the same values (tested).

    Attributes:
        seed: the episode seed.  n_instances, horizon: ``R``, ``T``.
        capability: ``(mean, sd)``.  coef_range, weight_range: ``(lo, hi)``.
        coef_per_job: ``coef_scope == "job"``.
    """

    seed: int
    n_instances: int
    horizon: int
    capability: tuple[float, float]
    coef_range: tuple[float, float]
    weight_range: tuple[float, float]
    coef_per_job: bool

    @classmethod
    def of(cls, params: dict[str, Any], seed: int, n_instances: int) -> StreamValues:
        """The values of validated generator ``params`` for episode ``seed`` on ``n_instances``."""
        return cls(int(seed), int(n_instances), int(params["horizon"]),
                   (params["capability_mean"], params["capability_sd"]),
                   (params["coef_range"][0], params["coef_range"][1]),
                   (params["weight_range"][0], params["weight_range"][1]),
                   params["coef_scope"] == "job")

    def dense(self, jobs: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The whole ``(N, R, T)`` float64 arrays ``(capability, coef, weight)`` (one draw each,
        ``N = jobs.n_jobs``)."""
        N, R, T = jobs.n_jobs, self.n_instances, self.horizon
        st = rngs.streams(self.seed, *VALUE_STREAMS)
        xbar = f32(_gauss(st["capability"], *self.capability, (N, R)))
        coef = f32(_uniform(st["coef"], *self.coef_range, N if self.coef_per_job else (N, R, T)))
        weight = f32(_uniform(st["weights"], *self.weight_range, (N, R, T)))
        return (np.repeat(xbar, T).reshape(N, R, T),
                np.repeat(coef, R * T).reshape(N, R, T) if self.coef_per_job else coef, weight)

    def reader(self, jobs: Any) -> StreamReader:
        """A reader at job 0 (fresh streams)."""
        return StreamReader(self)


@numba.njit(cache=True)
def _gather(cap: np.ndarray, coef: np.ndarray, weight: np.ndarray, rows: np.ndarray,
            units: np.ndarray, n_instances: int, horizon: int, coef_per_job: bool,
            cap_hi: float, a_lo: float,
            a_span: float, b_lo: float, b_span: float, out_cap: np.ndarray,
            out_coef: np.ndarray, out_weight: np.ndarray) -> None:
    """A chunk's values at its entries from its jobs' raw draws, as :func:`_gauss` and
    :func:`_uniform` make them and rounded to float32 precision (:func:`f32`): capability
    ``clip(cap[j R + r], 0.1, cap_hi)`` (normals already scaled), coefficient
    ``coef[j U + u] * a_span + a_lo`` (``coef[j]`` per job), weight ``weight[j U + u] * b_span
    + b_lo``, entry ``k`` at job offset ``j = rows[k]``, unit ``u = units[k] = r T + t``."""
    R = n_instances
    n_units = R * horizon
    for k in range(units.size):
        j, u = rows[k], units[k]
        c = min(max(cap[j * R + u // horizon], GAUSS_FLOOR), cap_hi)
        out_cap[k] = np.float64(np.float32(c))
        a = coef[j] if coef_per_job else coef[j * n_units + u]
        out_coef[k] = np.float64(np.float32(a * a_span + a_lo))
        out_weight[k] = np.float64(np.float32(weight[j * n_units + u] * b_span + b_lo))


class StreamReader:
    """Reads :class:`StreamValues` chunk by chunk in arrival order (a
    :class:`~.tables.ValueReader`): each chunk draws its jobs' blocks of the three streams (a
    skipped job's blocks are passed over: ``advance`` on the uniform streams, its normals drawn
    and dropped) and keeps the values at the chunk's layout entries."""

    def __init__(self, values: StreamValues) -> None:
        self.values = values
        st = rngs.streams(values.seed, *VALUE_STREAMS)
        self._cap, self._coef, self._weight = (st[k] for k in VALUE_STREAMS)
        self._pos = 0

    def read(self, n0: int, n1: int, rows: np.ndarray,
             units: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(capability, coef, weight)`` of jobs ``n0 .. n1 - 1`` at their layout entries
        (``rows``: job offset, ``units``: flat unit); ``n0`` at or after the last chunk read."""
        v = self.values
        if n0 < self._pos:
            raise ValueError(f"chunk from job {n0} is behind the reader (at job {self._pos}): "
                             "the streams are read in arrival order")
        self._skip(n0 - self._pos)
        k, R, T = n1 - n0, v.n_instances, v.horizon
        U = R * T
        mean, sd = v.capability
        m = units.size
        out = np.empty(m), np.empty(m), np.empty(m)
        (a_lo, a_hi), (b_lo, b_hi) = v.coef_range, v.weight_range
        _gather(self._cap.normal(mean, sd, k * R),
                self._coef.random(k if v.coef_per_job else k * U), self._weight.random(k * U),
                rows, units, R, T, v.coef_per_job, _gauss_hi(mean, sd), a_lo, a_hi - a_lo, b_lo,
                b_hi - b_lo, *out)
        self._pos = n1
        return out

    def _skip(self, k: int) -> None:
        """Pass over the blocks of ``k`` jobs."""
        if k <= 0:
            return
        v = self.values
        U = v.n_instances * v.horizon
        cast(np.random.PCG64, self._coef.bit_generator).advance(k if v.coef_per_job else k * U)
        cast(np.random.PCG64, self._weight.bit_generator).advance(k * U)
        left = k * v.n_instances
        while left > 0:  # normals take a varying number of raw draws: draw them
            step = min(left, CHUNK_DRAWS)
            self._cap.standard_normal(step)
            left -= step


@dataclass(frozen=True, eq=False)
class PaperJobSampler:
    """The job stream of the paper's §V-A, drawn from independent named streams of the episode
    seed (:func:`schedgym.core.rng.streams`: ``arrivals``, ``durations``, ``workloads``,
    ``locality``, and the per-unit values' ``capability``, ``coef``, ``weights``,
    :class:`StreamValues`), so a sweep over one parameter keeps every other draw fixed. Values
    are rounded to float32 precision, so float32 observations show them exactly. Picklable.

    Per job ``n`` (slots 0-based): ``s_n`` from :func:`poisson_arrivals`; deadline slot
    ``e_n = min(T - 1, s_n + floor(D_n))``, ``D_n ~ Exp(duration_mean)``; workload
    ``ρ_n ~ N``, capability ``x̄_nr ~ N`` (constant over slots), both clipped to
    ``[0.1, mean + 8 sd]``; ``a ~ U[coef_range]`` per unit (or per job), ``β ~ U[weight_range]``
    per unit; with ``locality_size = m < R``, ``m`` instances drawn without replacement. The
    per-unit values are drawn when a consumer reads them (:class:`StreamValues`)."""

    params: dict[str, Any]

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", validate_params(self.params))

    def __call__(self, episode_seed: int) -> Jobs:
        """One episode's jobs from ``episode_seed`` (a non-negative integer)."""
        p = self.params
        R, T = p["n_instances"], p["horizon"]
        st = rngs.streams(episode_seed, "arrivals", "durations", "workloads")
        s = poisson_arrivals(st["arrivals"], p["arrival_rate"], T, p["n_jobs"])
        N = s.size
        d = np.floor(st["durations"].exponential(p["duration_mean"], N))
        # compared as floats first: a huge duration never reaches an int64 cast
        e = np.where(d >= T - 1 - s, T - 1, s + np.minimum(d, T).astype(np.int64))
        rho = draw_workloads(st["workloads"], p, N)
        allowed = np.ones((N, R), dtype=bool)
        m = p["locality_size"]
        if m is not None and m < R:  # the only user of its stream: drawn only then
            loc = rngs.stream(episode_seed, "locality")
            allowed[:] = False
            for n in range(N):
                allowed[n, loc.choice(R, size=m, replace=False)] = True
        # our own fresh arrays, valid by construction: no re-validation (Jobs.drawn)
        return Jobs.drawn(s, e.astype(np.int64), rho, allowed, T,
                          StreamValues.of(p, episode_seed, R))


def draw_workloads(gen: np.random.Generator, params: dict[str, Any], n_jobs: int) -> np.ndarray:
    """``ρ_n ~ N(workload_mean, workload_sd)`` clipped to ``[0.1, mean + 8 sd]``, float32
    precision, from the ``workloads`` stream ``gen``."""
    return f32(_gauss(gen, params["workload_mean"], params["workload_sd"], n_jobs))


def job_sampler(params: dict[str, Any]) -> PaperJobSampler:
    """The paper's job sampler for ``params`` (:class:`PaperJobSampler`)."""
    return PaperJobSampler(params)
