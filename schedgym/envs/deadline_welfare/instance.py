"""Problem instance of DeadlineWelfare-v0 (OnSocMax) and its generators.

Vocabulary (paper symbol in brackets): computing instances ``r`` [nodes k, K], time slots ``t``
[T], resource units ``(r, t)`` of the spatio-temporal mesh [ℛ = 𝒦 × 𝒯], jobs ``n`` [𝒩]. There are
no resource types: every unit has one scalar capacity of processable workload (spec §1.1).

Units: workload, capability and capacity are in abstract workload units (the paper says MB);
slots are 0-based indices (τ = 1 h in the paper); utility coefficients and weights are unitless.

Two objects:

- :class:`DeadlineWelfareInstance` - the static cluster (capacities, utility family, how the
  bounds ι, v are obtained). Drawn once from ``instance_seed``; it fixes every space's shape.
- :class:`Jobs` - one episode's job stream (arrival slots, deadlines, workloads, locality,
  per-unit capabilities, utility coefficients, cluster weights). Drawn at ``reset(seed=s)`` from
  named streams of ``s`` (common random numbers), or fixed in ``instance.jobs`` for replay.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from schedgym.core import rng as rngs
from schedgym.core.arrays import readonly as _readonly
from schedgym.core.scenarios import ScenarioRegistry
from schedgym.core.validation import (
    check_array,
    check_choice,
    check_float,
    check_int,
    check_range,
)

#: Job-utility families (spec §1.4). The paper's "poly" is ``a sqrt(x)`` (here: ``sqrt``).
FAMILIES: tuple[str, ...] = ("linear", "log", "sqrt")
FAMILY_CODES: dict[str, int] = {name: i for i, name in enumerate(FAMILIES)}
BOUND_MODES: tuple[str, ...] = ("oracle", "prior")


def _f32(a: np.ndarray) -> np.ndarray:
    """Round to float32-representable float64 values (so float32 observations are exact)."""
    return np.asarray(a, dtype=np.float32).astype(np.float64)


def check_family(utility: Any) -> str:
    """Return ``utility`` if it is a known family name, else raise a clear ``ValueError``."""
    if utility not in FAMILIES:
        raise ValueError(
            f"utility={utility!r} is invalid: must be one of " + ", ".join(map(repr, FAMILIES))
            + " (the paper's 'poly' family a*sqrt(x) is called 'sqrt' here)"
        )
    return str(utility)


@dataclass(frozen=True, eq=False)
class Jobs:
    """One episode's jobs, in arrival order (read-only numpy arrays; ``N`` jobs, ``R`` instances,
    ``T`` slots).

    Attributes:
        arrival: int ``(N,)``, arrival slot ``s_n`` (non-decreasing); a_n = s_n τ.
        deadline: int ``(N,)``, last usable slot ``e_n >= s_n`` (= floor(d_n/τ) clipped to T-1).
        workload: float ``(N,)``, ``ρ_n > 0``: most workload the job may receive in total.
        allowed: bool ``(N, R)``, service locality 𝒦_n (instances the job may use).
        capability: float ``(N, R, T)``, ``x̄_nr > 0``: most workload unit ``r`` can process
            for job n (job-specific per-unit capability, constraint (7)).
        coef: float ``(N, R, T)``, utility coefficient ``a_nr > 0`` of ``f_nr``.
        weight: float ``(N, R, T)``, cluster-utility weight ``β_nr >= 0``.

    ``capability``, ``coef`` and ``weight`` may be given with shape ``(N,)``, ``(N, R)`` or
    ``(N, R, T)``; they are broadcast to ``(N, R, T)``. Values outside the job's units are
    ignored. ``n_slots_hint`` gives ``T`` when no per-unit array is 3-D (default: the last
    deadline + 1).
    """

    arrival: np.ndarray
    deadline: np.ndarray
    workload: np.ndarray
    allowed: np.ndarray
    capability: np.ndarray
    coef: np.ndarray
    weight: np.ndarray
    n_slots_hint: int | None = None

    def __post_init__(self) -> None:
        arr = check_array("arrival", self.arrival, shape=(None,), dtype=np.int64, low=0)
        N = arr.shape[0]
        dl = check_array("deadline", self.deadline, shape=(N,), dtype=np.int64, low=0)
        if N and np.any(dl < arr):
            raise ValueError("deadline has an entry before its job's arrival: every job needs "
                             "deadline >= arrival (the window always holds the arrival slot)")
        if N and np.any(np.diff(arr) < 0):
            raise ValueError("arrival must be non-decreasing: jobs are given in arrival order")
        rho = check_array("workload", self.workload, shape=(N,))
        if N and np.min(rho) <= 0:
            raise ValueError(f"workload has minimum {np.min(rho)!r}: every job's workload must "
                             "be > 0")
        allowed = np.asarray(self.allowed, dtype=bool)
        if allowed.ndim != 2 or allowed.shape[0] != N:
            raise ValueError(f"allowed has shape {allowed.shape}: must have shape ({N}, R)")
        R = allowed.shape[1]
        if R < 1:
            raise ValueError("allowed has no instance column: needs at least 1 instance")
        shapes = [np.shape(x) for x in (self.capability, self.coef, self.weight)]
        T = self.n_slots_hint or next((s[2] for s in shapes if len(s) == 3),
                                      int(dl.max()) + 1 if N else 1)
        T = check_int("n_slots_hint", T, min_value=1)

        def full(name: str, value: Any, low: float, strict: bool) -> np.ndarray:
            a = check_array(name, value)
            a = a.reshape(a.shape + (1,) * (3 - a.ndim)) if 1 <= a.ndim <= 3 else a
            if a.ndim != 3 or a.shape[0] != N or a.shape[1] not in (1, R) or \
                    a.shape[2] not in (1, T):
                raise ValueError(f"{name} has shape {np.shape(value)}: must have shape ({N},), "
                                 f"({N}, {R}) or ({N}, {R}, {T})")
            a = np.broadcast_to(a, (N, R, T))
            if a.size and (np.min(a) < low or (strict and np.min(a) <= low)):
                raise ValueError(f"{name} has minimum {np.min(a)!r}: every entry must be "
                                 f"{'>' if strict else '>='} {low}")
            return a

        cap = full("capability", self.capability, 0.0, True)
        coef = full("coef", self.coef, 0.0, True)
        weight = full("weight", self.weight, 0.0, False)
        if N and dl.max() >= T:
            raise ValueError(f"deadline has maximum {int(dl.max())}: must be < the {T} slots")
        for name, value in (("arrival", arr), ("deadline", dl), ("workload", rho),
                            ("allowed", allowed), ("capability", cap), ("coef", coef),
                            ("weight", weight)):
            object.__setattr__(self, name, _readonly(value))
        object.__setattr__(self, "n_slots_hint", T)

    @property
    def n_jobs(self) -> int:
        """``N``."""
        return int(self.arrival.shape[0])

    @property
    def n_slots(self) -> int:
        """Number of slots ``T`` of the per-unit arrays."""
        return int(self.capability.shape[2])

    @cached_property
    def mask(self) -> np.ndarray:
        """bool ``(N, R, T)``: indicator of ℛ_n = {(r, t): r in 𝒦_n, s_n <= t <= e_n} (Eq. 1)."""
        t = np.arange(self.n_slots)
        window = (t[None, :] >= self.arrival[:, None]) & (t[None, :] <= self.deadline[:, None])
        return _readonly(self.allowed[:, :, None] & window[:, None, :])


@dataclass(frozen=True, eq=False)
class DeadlineWelfareInstance:
    """The static cluster of DeadlineWelfare-v0 (read-only).

    Attributes:
        capacity: float ``(R, T)``, ``C_r > 0``: most workload unit ``(r, t)`` processes in total
            across all jobs (constraint (6)); workload units.
        utility: job-utility family of every job: ``linear`` (a x), ``log`` (a ln(1+x)) or
            ``sqrt`` (a sqrt(x), the paper's "poly").
        sqrt_v_floor: δ_v, where the sqrt family's marginal is evaluated for ``v`` (f'(0) = inf).
        bound_mode: ``oracle`` (ι, v from the realised jobs of each episode, spec default) or
            ``prior`` (from the generator's supports, ``prior_bounds``).
        prior_bounds: ``(ι, v)`` used when ``bound_mode="prior"``.
        jobs: a fixed :class:`Jobs` replayed by every episode, or ``None`` (drawn at reset).
        job_limits: largest ``(workload, capability, coef, weight)`` any episode's jobs may have
            (the observation boxes' upper ends); ``None``: from ``jobs`` if fixed, else the env
            takes them from the generator parameters. Jobs beyond them raise at ``reset``.
    """

    capacity: np.ndarray
    utility: str = "linear"
    sqrt_v_floor: float = 0.1
    bound_mode: str = "oracle"
    prior_bounds: tuple[float, float] | None = None
    jobs: Jobs | None = None
    job_limits: tuple[float, float, float, float] | None = None

    def __post_init__(self) -> None:
        cap = check_array("capacity", self.capacity, shape=(None, None))
        if cap.shape[0] < 1 or cap.shape[1] < 1:
            raise ValueError(f"capacity has shape {cap.shape}: needs at least 1 instance and "
                             "1 slot")
        if np.min(cap) <= 0:
            raise ValueError(f"capacity has minimum {np.min(cap)!r}: every unit's capacity must "
                             "be > 0")
        check_family(self.utility)
        check_float("sqrt_v_floor", self.sqrt_v_floor, low=0.0, low_open=True)
        check_choice("bound_mode", self.bound_mode, BOUND_MODES)
        if self.bound_mode == "prior":
            if self.prior_bounds is None:
                raise ValueError("prior_bounds is None: bound_mode='prior' needs (iota, v)")
            lo, hi = check_range("prior_bounds", self.prior_bounds, low=0.0)
            if lo <= 0:
                raise ValueError(f"prior_bounds={self.prior_bounds!r} is invalid: iota must be "
                                 "> 0")
            object.__setattr__(self, "prior_bounds", (lo, hi))
        if self.jobs is not None:
            if not isinstance(self.jobs, Jobs):
                raise ValueError(f"jobs is invalid: must be a Jobs or None, got "
                                 f"{type(self.jobs).__name__}")
            if self.jobs.allowed.shape[1] != cap.shape[0] or self.jobs.n_slots != cap.shape[1]:
                raise ValueError(
                    f"jobs has {self.jobs.allowed.shape[1]} instances x {self.jobs.n_slots} "
                    f"slots: must match capacity's {cap.shape[0]} x {cap.shape[1]}")
        if self.job_limits is None and self.jobs is not None:
            object.__setattr__(self, "job_limits", observed_limits(self.jobs))
        if self.job_limits is not None:
            lim = check_array("job_limits", self.job_limits, shape=(4,), low=0.0)
            object.__setattr__(self, "job_limits", tuple(float(v) for v in lim))
        object.__setattr__(self, "capacity", _readonly(cap))

    @property
    def n_instances(self) -> int:
        """``R`` (the paper's K nodes)."""
        return int(self.capacity.shape[0])

    @property
    def horizon(self) -> int:
        """``T``, the number of slots."""
        return int(self.capacity.shape[1])

    @property
    def n_units(self) -> int:
        """``R * T``, units of the mesh; flat index ``r * T + t``."""
        return int(self.capacity.size)

    @property
    def family_code(self) -> int:
        """Integer code of ``utility`` (index in :data:`FAMILIES`)."""
        return FAMILY_CODES[self.utility]


def observed_limits(jobs: Jobs) -> tuple[float, float, float, float]:
    """``(workload, capability, coef, weight)`` maxima of ``jobs`` over their units (0 if none)."""
    m = jobs.mask

    def mx(a: np.ndarray) -> float:
        return float(a.max()) if a.size else 0.0

    return (mx(jobs.workload), mx(jobs.capability[m]), mx(jobs.coef[m]), mx(jobs.weight[m]))


#: A job sampler draws one episode's :class:`Jobs` from an integer episode seed.
JobSampler = Callable[[int], Jobs]

# ---------------------------------------------------------------- generator
DEFAULTS: dict[str, Any] = {
    "n_instances": 10,  # K nodes
    "horizon": 24,  # T slots (tau = 1 h)
    "n_jobs": 20,  # N (None: keep every Poisson arrival over the horizon)
    "arrival_rate": 2.03,  # Poisson mean arrivals per slot
    "duration_mean": 4.0,  # mean of the exponential max service duration D_n, slots
    "workload_mean": 18.0,  # rho_n ~ N(mean, sd)
    "workload_sd": 3.0,
    "capability_mean": 7.0,  # xbar_{n,k} ~ N(mean, sd), constant over slots
    "capability_sd": 1.0,
    "capacity_mean": 20.0,  # C_k ~ N(mean, sd), constant over slots
    "capacity_sd": 2.0,
    "coef_range": (1.0, 3.0),  # a ~ U[lo, hi]
    "coef_scope": "unit",  # "unit": i.i.d. per (n, r); "job": one a per job
    "weight_range": (0.1, 0.5),  # beta ~ U[lo, hi] per (n, r)
    "utility": "linear",  # linear | log | sqrt
    "locality_size": None,  # None: every instance; m: m instances drawn per job
    "sqrt_v_floor": 0.1,  # delta_v
    "bound_mode": "oracle",  # oracle | prior
}

SCENARIOS = ScenarioRegistry("DeadlineWelfare-v0", DEFAULTS)
SCENARIOS.register(
    "paper-default", {}, "OnSocMax §V default: 10 instances x 24 one-hour slots, C ~ N(20, 2), "
    "20 jobs from Poisson(2.03)/slot, D ~ Exp(4 slots), rho ~ N(18, 3), xbar ~ N(7, 1), "
    "a ~ U[1, 3], beta ~ U[0.1, 0.5]; pass utility='linear'|'log'|'sqrt'",
)
SCENARIOS.register(
    "paper-poisson", {"n_jobs": None},
    "Default setting keeping every Poisson arrival over the 24 slots (~49 jobs; spec A1)",
)
SCENARIOS.register(
    "congested", {"capacity_mean": 5.0, "capacity_sd": 0.5, "workload_mean": 36.0},
    "A congested cell of the Fig. 6 sweep: C ~ N(5, 0.5), rho ~ N(36, 3)",
)


def validate_params(p: dict[str, Any]) -> dict[str, Any]:
    """Check every generator parameter; returns a normalised copy."""
    q = dict(p)
    q["n_instances"] = check_int("n_instances", p["n_instances"], min_value=1)
    q["horizon"] = check_int("horizon", p["horizon"], min_value=1)
    if p["n_jobs"] is not None:
        q["n_jobs"] = check_int("n_jobs", p["n_jobs"], min_value=1)
    q["arrival_rate"] = check_float("arrival_rate", p["arrival_rate"], low=0.0, low_open=True)
    q["duration_mean"] = check_float("duration_mean", p["duration_mean"], low=0.0, low_open=True)
    for name in ("workload", "capability", "capacity"):
        q[f"{name}_mean"] = check_float(f"{name}_mean", p[f"{name}_mean"], low=0.0,
                                        low_open=True)
        q[f"{name}_sd"] = check_float(f"{name}_sd", p[f"{name}_sd"], low=0.0)
    q["coef_range"] = check_range("coef_range", p["coef_range"], low=0.0)
    if q["coef_range"][0] <= 0:
        raise ValueError(f"coef_range={p['coef_range']!r} is invalid: must have lo > 0")
    q["coef_scope"] = check_choice("coef_scope", p["coef_scope"], ("unit", "job"))
    q["weight_range"] = check_range("weight_range", p["weight_range"], low=0.0)
    q["utility"] = check_family(p["utility"])
    if p["locality_size"] is not None:
        q["locality_size"] = check_int("locality_size", p["locality_size"], min_value=1,
                                       max_value=q["n_instances"])
    q["sqrt_v_floor"] = check_float("sqrt_v_floor", p["sqrt_v_floor"], low=0.0, low_open=True)
    q["bound_mode"] = check_choice("bound_mode", p["bound_mode"], BOUND_MODES)
    return q


#: Floor of every Gaussian draw (spec A8).
GAUSS_FLOOR = 0.1


#: Gaussian draws are also capped at mean + GAUSS_SPAN sd (probability ~6e-16 of mattering), so
#: every observation box is bounded.
GAUSS_SPAN = 8.0


def _gauss_hi(mean: float, sd: float) -> float:
    return max(GAUSS_FLOOR, mean + GAUSS_SPAN * sd)


def _gauss(gen: np.random.Generator, mean: float, sd: float, size) -> np.ndarray:
    return np.clip(gen.normal(mean, sd, size), GAUSS_FLOOR, _gauss_hi(mean, sd))


def job_limits(p: dict[str, Any]) -> tuple[float, float, float, float]:
    """Largest (workload, capability, coef, weight) the generator can draw with params ``p``."""
    return (_gauss_hi(p["workload_mean"], p["workload_sd"]),
            _gauss_hi(p["capability_mean"], p["capability_sd"]),
            float(p["coef_range"][1]), float(p["weight_range"][1]))


def prior_bounds(p: dict[str, Any], capacity: np.ndarray) -> tuple[float, float]:
    """``(ι, v)`` from the generator's supports (spec §1.8 ``bound_mode="prior"``): a and β over
    their ranges, x̄ up to its cap mean + 8 sd, C over the instance's actual capacities. Always
    valid bounds for the generated jobs (looser than the spec's ±4 sd)."""
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
    """The static cluster of spec §6.2: per-instance capacity ``C_k ~ max(0.1, N(mean, sd))``,
    constant over slots, from the named stream ``capacity`` of ``instance_seed``."""
    p = validate_params(params)
    R, T = p["n_instances"], p["horizon"]
    c_node = _f32(_gauss(rngs.stream(instance_seed, "capacity"), p["capacity_mean"],
                         p["capacity_sd"], R))
    capacity = np.repeat(c_node[:, None], T, axis=1)
    return DeadlineWelfareInstance(
        capacity=capacity, utility=p["utility"], sqrt_v_floor=p["sqrt_v_floor"],
        bound_mode=p["bound_mode"],
        prior_bounds=prior_bounds(p, capacity) if p["bound_mode"] == "prior" else None,
        job_limits=job_limits(p),
    )


def poisson_arrivals(gen: np.random.Generator, rate: float, horizon: int,
                     n_jobs: int | None) -> np.ndarray:
    """Arrival slots (non-decreasing): per-slot Poisson(``rate``) counts in slot order, truncated
    at ``n_jobs`` jobs; arrivals after the last slot are put in slot ``T - 1`` (spec §6.2, A1).
    With ``n_jobs=None`` every arrival of the ``T`` slots is kept (possibly none)."""
    if n_jobs is None:
        counts = gen.poisson(rate, horizon)
        return np.repeat(np.arange(horizon), counts)
    counts = gen.poisson(rate, max(horizon - 1, 0))
    slots = np.repeat(np.arange(horizon - 1), counts)[:n_jobs]
    return np.concatenate([slots, np.full(n_jobs - slots.size, horizon - 1)]).astype(np.int64)


def job_sampler(params: dict[str, Any]) -> JobSampler:
    """The job stream of spec §6.2 from independent named streams of the episode seed
    (``arrivals``, ``durations``, ``workloads``, ``capability``, ``coef``, ``weights``,
    ``locality``), so a sweep over one parameter keeps every other draw fixed. Values are rounded
    to float32 precision, so float32 observations show them exactly."""
    p = validate_params(params)
    R, T = p["n_instances"], p["horizon"]

    def sample(episode_seed: int) -> Jobs:
        st = rngs.streams(episode_seed, "arrivals", "durations", "workloads", "capability",
                          "coef", "weights", "locality")
        s = poisson_arrivals(st["arrivals"], p["arrival_rate"], T, p["n_jobs"])
        N = s.size
        D = st["durations"].exponential(p["duration_mean"], N)
        e = np.minimum(T - 1, s + np.floor(D).astype(np.int64))
        rho = _f32(_gauss(st["workloads"], p["workload_mean"], p["workload_sd"], N))
        xbar = _f32(_gauss(st["capability"], p["capability_mean"], p["capability_sd"], (N, R)))
        if p["coef_scope"] == "job":
            coef = _f32(st["coef"].uniform(*p["coef_range"], N))
        else:
            coef = _f32(st["coef"].uniform(*p["coef_range"], (N, R, T)))
        weight = _f32(st["weights"].uniform(*p["weight_range"], (N, R, T)))
        allowed = np.ones((N, R), dtype=bool)
        m = p["locality_size"]
        if m is not None and m < R:
            allowed[:] = False
            for n in range(N):
                allowed[n, st["locality"].choice(R, size=m, replace=False)] = True
        return Jobs(arrival=s, deadline=e, workload=rho, allowed=allowed, capability=xbar,
                    coef=coef, weight=weight, n_slots_hint=T)

    return sample
