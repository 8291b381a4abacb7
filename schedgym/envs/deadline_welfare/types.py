"""Types of DeadlineWelfare-v0 (OnSocMax problem): the frozen cluster instance, one episode's jobs
and the typed, validated generator parameters.

Vocabulary (paper symbol in brackets, Zhao et al., "OnSocMax", §III): computing instances ``r``
[nodes k, K], time slots ``t`` [T], resource units ``(r, t)`` of the spatio-temporal mesh
[ℛ = 𝒦 × 𝒯], jobs ``n`` [𝒩]. There are no resource types: every unit has one scalar capacity of
processable workload (paper §III-A, constraint (6)).

Units: workload, capability and capacity are in abstract workload units (the paper says MB);
slots are 0-based indices (τ = 1 h in the paper); utility coefficients and weights are unitless.

- :class:`DeadlineWelfareInstance` - the static cluster (capacities, utility family, how the
  bounds ι, v are obtained). Drawn once from ``instance_seed``; it fixes every space's shape.
- :class:`Jobs` - one episode's job stream (arrival slots, deadlines, workloads, locality,
  per-unit capabilities, utility coefficients, cluster weights). Drawn at ``reset(seed=s)`` from
  named streams of ``s`` (common random numbers), or fixed in ``instance.jobs`` for replay.
- :class:`DeadlineWelfareParams` - every knob of the synthetic generator, validated.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from functools import cached_property
from typing import Any, Protocol

import numba
import numpy as np

from schedgym.core.arrays import readonly, readonly_view
from schedgym.core.validation import (
    check_array,
    check_choice,
    check_float,
    check_int,
    check_range,
)
from schedgym.envs.deadline_welfare.tables import (
    DenseValues,
    JobRows,
    JobUnits,
    UnitValues,
    job_sizes,
)

#: Job-utility families (paper §III-B). The paper's "poly" is ``a sqrt(x)`` (here: ``sqrt``).
FAMILIES: tuple[str, ...] = ("linear", "log", "sqrt")
FAMILY_CODES: dict[str, int] = {name: i for i, name in enumerate(FAMILIES)}
BOUND_MODES: tuple[str, ...] = ("oracle", "prior")
COEF_SCOPES: tuple[str, ...] = ("unit", "job")
#: Most Poisson arrivals per slot (``arrival_rate``): far above any cluster this models, and
#: low enough that numpy's Poisson sampler accepts it and every count sums exactly in int64.
ARRIVAL_RATE_MAX = 1e9


def check_family(utility: Any) -> str:
    """Return ``utility`` if it is a known family name, else raise a clear ``ValueError``."""
    if utility not in FAMILIES:
        raise ValueError(
            f"utility={utility!r} is invalid: must be one of " + ", ".join(map(repr, FAMILIES))
            + " (the paper's 'poly' family a*sqrt(x) is called 'sqrt' here)"
        )
    return str(utility)


def _per_unit(name: str, value: Any, shape: tuple[int, int, int], low: float,
              strict: bool) -> np.ndarray:
    """``value`` of shape ``(N,)``, ``(N, R)`` or ``(N, R, T)`` broadcast to ``(N, R, T)``; every
    entry ``> low`` (``strict``) or ``>= low``."""
    N, R, T = shape
    a = check_array(name, value)
    a = a.reshape(a.shape + (1,) * (3 - a.ndim)) if 1 <= a.ndim <= 3 else a
    if a.ndim != 3 or a.shape[0] != N or a.shape[1] not in (1, R) or a.shape[2] not in (1, T):
        raise ValueError(f"{name} has shape {np.shape(value)}: must have shape ({N},), "
                         f"({N}, {R}) or ({N}, {R}, {T})")
    a = np.broadcast_to(a, (N, R, T))
    if a.size and (np.min(a) < low or (strict and np.min(a) <= low)):
        raise ValueError(f"{name} has minimum {np.min(a)!r}: every entry must be "
                         f"{'>' if strict else '>='} {low}")
    return a


class Jobs:
    """One episode's jobs, in arrival order (read-only numpy arrays; ``N`` jobs, ``R`` instances,
    ``T`` slots).

    Attributes:
        arrival: int ``(N,)``, arrival slot ``s_n`` (non-decreasing); a_n = s_n τ.
        deadline: int ``(N,)``, last usable slot ``e_n >= s_n`` (= floor(d_n/τ) clipped to T-1).
        workload: float ``(N,)``, ``ρ_n > 0``: most workload the job may receive in total.
        allowed: bool ``(N, R)``, service locality 𝒦_n (instances the job may use).
        values: where the per-unit values come from (:class:`~.tables.UnitValues`): the arrays
            given to the constructor, or a generator's named streams.

    Per-unit values: capability ``x̄_nr > 0`` (most workload unit ``r`` can process for job n,
    constraint (7)), utility coefficient ``a_nr > 0`` of ``f_nr`` and cluster-utility weight
    ``β_nr >= 0``. They matter only on the job's units ℛ_n, and that is where the env reads them:
    :meth:`job` gives job ``n``'s values on its units (built chunk by chunk in arrival order,
    :mod:`.tables`), so an episode's memory does not grow with jobs x mesh units. The whole
    ``(N, R, T)`` arrays :attr:`capability`, :attr:`coef`, :attr:`weight` and :attr:`mask` are
    built when read (``O(N R T)`` memory: for small instances, tests and offline analysis).

    The constructor takes ``capability``, ``coef`` and ``weight`` with shape ``(N,)``,
    ``(N, R)`` or ``(N, R, T)`` (broadcast to ``(N, R, T)``; values outside the job's units are
    ignored) and validates everything. ``n_slots_hint`` gives ``T`` when no per-unit array is
    3-D (default: the last deadline + 1). :meth:`trusted` and :meth:`drawn` build jobs a
    generator owns without re-validating them.
    """

    arrival: np.ndarray
    deadline: np.ndarray
    workload: np.ndarray
    allowed: np.ndarray
    values: UnitValues
    n_slots_hint: int

    def __init__(self, arrival: Any, deadline: Any, workload: Any, allowed: Any,
                 capability: Any, coef: Any, weight: Any, n_slots_hint: int | None = None) -> None:
        arr = check_array("arrival", arrival, shape=(None,), dtype=np.int64, low=0)
        N = arr.shape[0]
        dl = check_array("deadline", deadline, shape=(N,), dtype=np.int64, low=0)
        if N and np.any(dl < arr):
            raise ValueError("deadline has an entry before its job's arrival: every job needs "
                             "deadline >= arrival (the window always holds the arrival slot)")
        if N and np.any(np.diff(arr) < 0):
            raise ValueError("arrival must be non-decreasing: jobs are given in arrival order")
        rho = check_array("workload", workload, shape=(N,))
        if N and np.min(rho) <= 0:
            raise ValueError(f"workload has minimum {np.min(rho)!r}: every job's workload must "
                             "be > 0")
        allow = np.asarray(allowed, dtype=bool)
        if allow.ndim != 2 or allow.shape[0] != N:
            raise ValueError(f"allowed has shape {allow.shape}: must have shape ({N}, R)")
        R = allow.shape[1]
        if R < 1:
            raise ValueError("allowed has no instance column: needs at least 1 instance")
        shapes = [np.shape(x) for x in (capability, coef, weight)]
        T = n_slots_hint or next((s[2] for s in shapes if len(s) == 3),
                                 int(dl.max()) + 1 if N else 1)
        T = check_int("n_slots_hint", T, min_value=1)
        cap = _per_unit("capability", capability, (N, R, T), 0.0, True)
        a = _per_unit("coef", coef, (N, R, T), 0.0, True)
        b = _per_unit("weight", weight, (N, R, T), 0.0, False)
        if N and dl.max() >= T:
            raise ValueError(f"deadline has maximum {int(dl.max())}: must be < the {T} slots")
        self._init(readonly(arr), readonly(dl), readonly(rho), readonly(allow), T,
                   DenseValues(readonly(cap), readonly(a), readonly(b)))

    def _init(self, arrival: np.ndarray, deadline: np.ndarray, workload: np.ndarray,
              allowed: np.ndarray, n_slots: int, values: UnitValues) -> None:
        for name, value in (("arrival", arrival), ("deadline", deadline),
                            ("workload", workload), ("allowed", allowed),
                            ("n_slots_hint", int(n_slots)), ("values", values)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Jobs is read-only: cannot assign to {name!r}")

    @classmethod
    def trusted(cls, arrival: np.ndarray, deadline: np.ndarray, workload: np.ndarray,
                allowed: np.ndarray, capability: np.ndarray, coef: np.ndarray,
                weight: np.ndarray) -> Jobs:
        """Jobs from arrays a generator has just built and owns, without re-validating them
        (the validating constructor would check again what the generator guarantees): ``arrival``,
        ``deadline`` int64 ``(N,)``, ``workload`` float64 ``(N,)``, ``allowed`` bool ``(N, R)``,
        ``capability`` float64 ``(N, R)`` or ``(N, R, T)``, ``coef`` float64 ``(N,)`` or
        ``(N, R, T)``, ``weight`` float64 ``(N, R, T)``; values as the validating constructor
        requires. The arrays are taken over (made read-only, not copied); the result equals
        ``Jobs(...)`` of the same arrays. User-given jobs go through ``Jobs(...)``."""
        N, R, T = weight.shape

        def full(a: np.ndarray) -> np.ndarray:
            if a.shape == (N, R, T):
                return a
            # (N,) per job or (N, R) per instance: each value repeated over its units
            return np.repeat(a, R * T if a.ndim == 1 else T).reshape(N, R, T)

        cap, a = full(capability), full(coef)
        for x in (cap, a, weight):
            x.setflags(write=False)
        return cls.drawn(arrival, deadline, workload, allowed, T, DenseValues(cap, a, weight))

    @classmethod
    def drawn(cls, arrival: np.ndarray, deadline: np.ndarray, workload: np.ndarray,
              allowed: np.ndarray, n_slots: int, values: UnitValues) -> Jobs:
        """Jobs whose per-unit values come from ``values`` (e.g. a generator's named streams,
        read only when a consumer needs them), without re-validation: arrays as
        :meth:`trusted` takes them (taken over, made read-only), ``n_slots`` = ``T``."""
        for a in (arrival, deadline, workload, allowed):
            a.setflags(write=False)
        jobs = cls.__new__(cls)
        jobs._init(arrival, deadline, workload, allowed, n_slots, values)
        return jobs

    @property
    def n_jobs(self) -> int:
        """``N``."""
        return int(self.arrival.shape[0])

    @property
    def n_slots(self) -> int:
        """Number of slots ``T`` of the mesh."""
        return self.n_slots_hint

    @property
    def n_instances(self) -> int:
        """Number of instances ``R`` of the mesh."""
        return int(self.allowed.shape[1])

    @cached_property
    def sizes(self) -> np.ndarray:
        """int64 ``(N,)``: ``|ℛ_n|``, the units each job may use (:func:`.tables.job_sizes`)."""
        return readonly(job_sizes(self.arrival, self.deadline, self.allowed))

    @cached_property
    def rows(self) -> JobRows:
        """This object's own cursor over its chunks (:class:`~.tables.JobRows`), for
        :meth:`job`; the env keeps its own per episode."""
        return JobRows(self)

    def job(self, n: int) -> JobUnits:
        """Job ``n``'s values on its units ℛ_n (:class:`~.tables.JobUnits`, read-only views;
        ``0 <= n < N``)."""
        job = self.rows.chunk(int(n)).job(int(n))
        return JobUnits(*(readonly_view(getattr(job, k))
                          for k in ("units", "capability", "coef", "weight")))

    def unit_mask(self, n: int) -> np.ndarray:
        """bool ``(R, T)``: the indicator of job ``n``'s units ℛ_n (one row of :attr:`mask`)."""
        t = np.arange(self.n_slots)
        window = (t >= self.arrival[n]) & (t <= self.deadline[n])
        return self.allowed[n][:, None] & window[None, :]

    @cached_property
    def mask(self) -> np.ndarray:
        """bool ``(N, R, T)``: indicator of ℛ_n = {(r, t): r in 𝒦_n, s_n <= t <= e_n} (Eq. 1);
        built when read (``N R T`` bytes)."""
        m = np.empty((self.n_jobs, self.n_instances, self.n_slots), dtype=bool)
        mask_into(self.arrival, self.deadline, self.allowed, m)
        return readonly(m)

    @cached_property
    def _dense(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        out = tuple(np.asarray(a) for a in self.values.dense(self))
        for a in out:
            a.setflags(write=False)
        return out  # type: ignore[return-value]

    @property
    def capability(self) -> np.ndarray:
        """float64 ``(N, R, T)``: x̄_nr, built when read (``O(N R T)``; :meth:`job` is the
        per-job form the env reads)."""
        return self._dense[0]

    @property
    def coef(self) -> np.ndarray:
        """float64 ``(N, R, T)``: a_nr, built when read (see :attr:`capability`)."""
        return self._dense[1]

    @property
    def weight(self) -> np.ndarray:
        """float64 ``(N, R, T)``: β_nr, built when read (see :attr:`capability`)."""
        return self._dense[2]


@numba.njit(cache=True)
def mask_into(arrival: np.ndarray, deadline: np.ndarray, allowed: np.ndarray,
              mask: np.ndarray) -> None:
    """``mask`` bool ``(N, R, T)`` = ``allowed[n, r] and arrival[n] <= t <= deadline[n]``
    (ℛ_n, Eq. 1; :attr:`Jobs.mask`)."""
    N, R, T = mask.shape
    for n in range(N):
        for r in range(R):
            for t in range(T):
                mask[n, r, t] = allowed[n, r] and arrival[n] <= t <= deadline[n]


class JobSampler(Protocol):
    """Draws one episode's :class:`Jobs` from an integer episode seed (picklable classes, so an
    env can be pickled and sent to a worker process)."""

    def __call__(self, episode_seed: int) -> Jobs: ...


@dataclass(frozen=True, eq=False)
class FixedJobs:
    """The job sampler of an instance with fixed ``jobs``: every episode replays them."""

    jobs: Jobs

    def __call__(self, episode_seed: int) -> Jobs:
        """The fixed jobs, whatever the seed."""
        return self.jobs


@dataclass(frozen=True, eq=False)
class DeadlineWelfareInstance:
    """The static cluster of DeadlineWelfare-v0 (read-only).

    Attributes:
        capacity: float ``(R, T)``, ``C_r > 0``: most workload unit ``(r, t)`` processes in total
            across all jobs (constraint (6)); workload units.
        utility: job-utility family of every job: ``linear`` (a x), ``log`` (a ln(1+x)) or
            ``sqrt`` (a sqrt(x), the paper's "poly").
        sqrt_v_floor: δ_v, where the sqrt family's marginal is evaluated for ``v`` (f'(0) = inf).
        bound_mode: ``oracle`` (ι, v from the realised jobs of each episode, our default; the
            paper treats them as known, Theorem 2) or ``prior`` (from the generator's supports,
            ``prior_bounds``).
        prior_bounds: ``(ι, v)`` used when ``bound_mode="prior"``.
        jobs: a fixed :class:`Jobs` replayed by every episode, or ``None`` (drawn at reset).
        job_limits: largest ``(workload, capability, coef, weight)`` any episode's jobs may have
            (the observation boxes' upper ends); ``None``: from ``jobs`` if fixed, else the env
            takes them from the generator parameters. Jobs beyond them raise at ``reset``.
        capacity_bounds: ``(lowest, highest)`` capacity of the distribution the instance is drawn
            from (generated instances: the generator's support), so that the observation boxes
            do not depend on the instance seed; ``None``: the min and max of ``capacity``.
    """

    capacity: np.ndarray
    utility: str = "linear"
    sqrt_v_floor: float = 0.1
    bound_mode: str = "oracle"
    prior_bounds: tuple[float, float] | None = None
    jobs: Jobs | None = None
    job_limits: tuple[float, float, float, float] | None = None
    capacity_bounds: tuple[float, float] | None = None

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
        self._set_capacity_bounds(cap)
        object.__setattr__(self, "capacity", readonly(cap))

    def _set_capacity_bounds(self, cap: np.ndarray) -> None:
        """Validate ``capacity_bounds`` (they must hold every entry of ``capacity``)."""
        if self.capacity_bounds is None:
            object.__setattr__(self, "capacity_bounds", (float(cap.min()), float(cap.max())))
            return
        lo, hi = check_range("capacity_bounds", self.capacity_bounds, low=0.0)
        if lo <= 0 or lo > cap.min() or hi < cap.max():
            raise ValueError(f"capacity_bounds={self.capacity_bounds!r} is invalid: must be "
                             f"(lo, hi) with 0 < lo <= min(capacity) = {cap.min()!r} and hi >= "
                             f"max(capacity) = {cap.max()!r}")
        object.__setattr__(self, "capacity_bounds", (lo, hi))

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
    """``(workload, capability, coef, weight)`` maxima of ``jobs`` over their units (0 if none),
    read chunk by chunk (:class:`~.tables.JobRows`)."""
    out = np.full(4, -np.inf)
    if jobs.n_jobs:
        out[0] = float(np.max(jobs.workload))
    for chunk in jobs.rows:
        unit_maxima(chunk.capability, chunk.coef, chunk.weight, out)
    return tuple(float(v) if v > -np.inf else 0.0 for v in out)  # type: ignore[return-value]


@numba.njit(cache=True)
def unit_maxima(capability: np.ndarray, coef: np.ndarray, weight: np.ndarray,
                out: np.ndarray) -> None:
    """``out[1:4]`` = the running maxima of the entries of ``capability``, ``coef`` and
    ``weight`` (float64 ``(m,)``; ``out`` starts at ``-inf``)."""
    for k in range(capability.size):
        out[1] = max(out[1], capability[k])
        out[2] = max(out[2], coef[k])
        out[3] = max(out[3], weight[k])


@dataclass(frozen=True)
class DeadlineWelfareParams:
    """Every knob of the synthetic generator (paper §V-A defaults), validated at construction.

    Sizes: ``n_instances`` (K nodes), ``horizon`` (T one-hour slots), ``n_jobs`` (N; ``None``
    keeps every Poisson arrival over the horizon). Arrivals: ``arrival_rate`` (Poisson mean
    arrivals per slot, at most :data:`ARRIVAL_RATE_MAX`), ``duration_mean`` (mean of the
    exponential max service time D_n, slots).
    Gaussian draws ``N(mean, sd)`` floored at 0.1 and capped at mean + 8 sd: ``workload_*``
    (ρ_n), ``capability_*`` (x̄_nr, constant over slots), ``capacity_*`` (C_k, constant over
    slots). Uniform draws: ``coef_range`` (a, per unit or per job by ``coef_scope``),
    ``weight_range`` (β per unit). ``utility`` (linear, log, sqrt), ``locality_size`` (``None``:
    every instance; m: m instances drawn per job), ``sqrt_v_floor`` (δ_v), ``bound_mode``
    (oracle, prior). Errors name the parameter, the value and what is allowed.
    """

    n_instances: int = 10
    horizon: int = 24
    n_jobs: int | None = 20
    arrival_rate: float = 2.03
    duration_mean: float = 4.0
    workload_mean: float = 18.0
    workload_sd: float = 3.0
    capability_mean: float = 7.0
    capability_sd: float = 1.0
    capacity_mean: float = 20.0
    capacity_sd: float = 2.0
    coef_range: tuple[float, float] = (1.0, 3.0)
    coef_scope: str = "unit"
    weight_range: tuple[float, float] = (0.1, 0.5)
    utility: str = "linear"
    locality_size: int | None = None
    sqrt_v_floor: float = 0.1
    bound_mode: str = "oracle"

    def __post_init__(self) -> None:
        def put(name: str, value: Any) -> None:
            object.__setattr__(self, name, value)

        put("n_instances", check_int("n_instances", self.n_instances, min_value=1))
        put("horizon", check_int("horizon", self.horizon, min_value=1))
        if self.n_jobs is not None:
            put("n_jobs", check_int("n_jobs", self.n_jobs, min_value=1))
        put("arrival_rate", check_float("arrival_rate", self.arrival_rate, low=0.0,
                                        low_open=True, high=ARRIVAL_RATE_MAX))
        put("duration_mean", check_float("duration_mean", self.duration_mean, low=0.0,
                                         low_open=True))
        for name in ("workload", "capability", "capacity"):
            put(f"{name}_mean", check_float(f"{name}_mean", getattr(self, f"{name}_mean"),
                                            low=0.0, low_open=True))
            put(f"{name}_sd", check_float(f"{name}_sd", getattr(self, f"{name}_sd"), low=0.0))
        coef = check_range("coef_range", self.coef_range, low=0.0)
        if coef[0] <= 0:
            raise ValueError(f"coef_range={self.coef_range!r} is invalid: must have lo > 0")
        put("coef_range", coef)
        put("coef_scope", check_choice("coef_scope", self.coef_scope, COEF_SCOPES))
        put("weight_range", check_range("weight_range", self.weight_range, low=0.0))
        put("utility", check_family(self.utility))
        if self.locality_size is not None:
            put("locality_size", check_int("locality_size", self.locality_size, min_value=1,
                                           max_value=self.n_instances))
        put("sqrt_v_floor", check_float("sqrt_v_floor", self.sqrt_v_floor, low=0.0,
                                        low_open=True))
        put("bound_mode", check_choice("bound_mode", self.bound_mode, BOUND_MODES))

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The parameter names, in declaration order."""
        return tuple(f.name for f in fields(cls))

    def as_dict(self) -> dict[str, Any]:
        """The parameters as a plain dict (what ``gym.make`` overrides look like)."""
        return asdict(self)
