"""Pure functions of DeadlineWelfare-v0: utilities, welfare, the action repair, feasibility, ι/v.

Shared by the environment, the agents, the offline solver and the tests. A dispatch of one job is
a float64 array ``(R, T)`` (instances x slots) in workload units; a whole episode's dispatch ``X``
is ``(N, R, T)``.

Social welfare (spec §1.7, the objective of P1)::

    SW(X) = sum_n sum_{r in R_n} [ f_nr(x_nr) + beta_nr x_nr / C_r ]
          = U_jobs + U_cluster
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

from schedgym.core.pairwise import np_sum
from schedgym.envs.deadline_welfare.tables import JobChunk
from schedgym.envs.deadline_welfare.types import (
    FAMILY_CODES,
    DeadlineWelfareInstance,
    Jobs,
)

LINEAR, LOG, SQRT = (FAMILY_CODES[k] for k in ("linear", "log", "sqrt"))
#: Absolute tolerance of :func:`is_feasible` (workload units), spec §2.2.
FEASIBILITY_TOL = 1e-7
#: ``0`` for calls between kernels: a bare ``0`` is typed ``Literal[int](0)`` and numba compiles
#: the callee (and its callees) once more for it; a numpy integer is a plain ``int64``.
_ZERO: Any = np.int64(0)


# ---------------------------------------------------------------- compiled scalar formulas
# The one implementation of f, f' and f'' (and of the repair and the job's welfare below): the
# numpy-facing functions, the env, the vector env, OnSocMax's solver and the baselines all call
# these. Editing one recompiles its callers in other modules too: the package stamps numba's
# cache with every kernel source (``schedgym/_numba_cache.py``).


@numba.njit(cache=True, error_model="numpy")
def f_value(code: int, a: float, x: float) -> float:
    """``f(x)`` of one unit: ``a x`` (code 0), ``a ln(1+x)`` (1), ``a sqrt(x)`` (2); x < 0 -> 0."""
    x = max(x, 0.0)
    if code == 0:
        return a * x
    if code == 1:
        return a * math.log1p(x)
    return a * math.sqrt(x)


@numba.njit(cache=True, error_model="numpy")
def f_prime(code: int, a: float, x: float) -> float:
    """``f'(x)`` of one unit (``+inf`` at 0 for sqrt; x < 0 is taken as 0)."""
    x = max(x, 0.0)
    if code == 0:
        return a
    if code == 1:
        return a / (1.0 + x)
    return a / (2.0 * math.sqrt(x))


@numba.njit(cache=True, error_model="numpy")
def f_second(code: int, a: float, x: float) -> float:
    """``f''(x)`` of one unit (``-inf`` at 0 for sqrt)."""
    if code == 0:
        return 0.0
    if code == 1:
        return -a / ((1.0 + x) * (1.0 + x))
    return -a / (4.0 * x * math.sqrt(x))


@numba.njit(cache=True, error_model="numpy")
def f_prime_inverse(code: int, a: float, d: float) -> float:
    """The x where ``f'(x) = d`` (d > 0), unclipped: ``a / d - 1`` (log), ``(a / (2 d))^2``
    (sqrt); linear: ``+inf`` if ``a > d`` else 0 (f' is constant)."""
    if code == 1:
        return a / d - 1.0
    if code == 2:
        return (a / (2.0 * d)) ** 2
    return math.inf if a > d else 0.0


@numba.njit(cache=True, error_model="numpy")
def _map_f(code: int, deriv: int, a: np.ndarray, x: np.ndarray) -> np.ndarray:
    out = np.empty(x.size)
    for i in range(x.size):
        out[i] = f_prime(code, a[i], x[i]) if deriv else f_value(code, a[i], x[i])
    return out


def _check_code(code: int) -> None:
    if code not in (LINEAR, LOG, SQRT):
        raise ValueError(f"code={code!r} is invalid: must be 0 (linear), 1 (log) or 2 (sqrt)")


def _map(code: int, deriv: int, coef: np.ndarray, x: np.ndarray) -> np.ndarray:
    _check_code(code)
    a, xb = np.broadcast_arrays(np.asarray(coef, dtype=np.float64),
                                np.asarray(x, dtype=np.float64))
    out = _map_f(int(code), deriv, np.ascontiguousarray(a).reshape(-1),
                 np.ascontiguousarray(xb).reshape(-1))
    return out.reshape(xb.shape)


def utility(code: int, coef: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Job utility ``f(x)`` elementwise: ``a x``, ``a ln(1+x)`` or ``a sqrt(x)`` (x >= 0);
    ``coef`` and ``x`` broadcast, float64 result of their broadcast shape."""
    return _map(code, 0, coef, x)


def utility_derivative(code: int, coef: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``f'(x)`` elementwise (``+inf`` at 0 for sqrt); shapes as :func:`utility`."""
    return _map(code, 1, coef, x)


@numba.njit(cache=True)
def welfare_units(code: int, x: np.ndarray, units: np.ndarray, coef: np.ndarray,
                  weight: np.ndarray, capacity: np.ndarray) -> tuple[float, float]:
    """``(Σ_k f_k(x_k), Σ_k β_k x_k / C_{u_k})`` over a job's entries ``(m,)`` (``x``, ``coef``,
    ``weight`` on its units ``units``; ``capacity`` the mesh's flat ``(U,)``), in entry order."""
    fj = 0.0
    fc = 0.0
    for k in range(x.size):
        fj += f_value(code, coef[k], x[k])
        fc += weight[k] * x[k] / capacity[units[k]]
    return fj, fc


def job_welfare(inst: DeadlineWelfareInstance, jobs: Jobs, n: int,
                x: np.ndarray) -> tuple[float, float]:
    """``(sum_r f_nr(x_r), sum_r beta_nr x_r / C_r)`` of job ``n`` given ``x`` (R, T); units
    outside ℛ_n count as zero."""
    job = jobs.job(n)
    xs = np.ascontiguousarray(np.asarray(x, dtype=np.float64).reshape(-1)[job.units])
    return welfare_units(inst.family_code, xs, job.units.copy(), job.coef.copy(),
                         job.weight.copy(), _flat(inst.capacity))


def _flat(a: np.ndarray) -> np.ndarray:
    """``a`` as a C-contiguous 1-D array (a view when it already is one)."""
    if type(a) is np.ndarray and a.flags.c_contiguous and a.dtype in (np.float64, np.bool_):
        return a.reshape(-1)
    a = np.asarray(a)
    if a.dtype != np.bool_:
        a = a.astype(np.float64, copy=False)
    return np.ascontiguousarray(a).reshape(-1)


def _entries(jobs: Jobs) -> Iterator[tuple[np.ndarray, JobChunk]]:
    """Every chunk of ``jobs`` with the flat index ``n * U + u`` of each of its entries in the
    ``(N, R, T)`` arrays."""
    U = jobs.n_instances * jobs.n_slots
    for c in jobs.rows:
        rows = np.repeat(np.arange(c.first, c.stop), np.diff(c.ptr))
        yield rows * U + c.units, c


def social_welfare(inst: DeadlineWelfareInstance, jobs: Jobs,
                   X: np.ndarray) -> tuple[float, float, float]:
    """``(SW, U_jobs, U_cluster)`` of an episode's dispatch ``X`` (N, R, T) (spec §1.7); the
    sums run over the whole ``(N, R, T)`` arrays (0 off the jobs' units), numpy's order."""
    X = np.asarray(X, dtype=np.float64)
    if X.shape != (jobs.n_jobs, jobs.n_instances, jobs.n_slots):
        raise ValueError(f"X has shape {X.shape}: must have shape "
                         f"{(jobs.n_jobs, jobs.n_instances, jobs.n_slots)}")
    f, g = np.zeros(X.shape), np.zeros(X.shape)
    cap = _flat(inst.capacity)
    for idx, c in _entries(jobs):
        x = X.reshape(-1)[idx]
        f.reshape(-1)[idx] = utility(inst.family_code, c.coef, x)
        g.reshape(-1)[idx] = c.weight * x / cap[c.units]
    uj, uc = float(f.sum()), float(g.sum())
    return uj + uc, uj, uc


def feasibility_violation(inst: DeadlineWelfareInstance, jobs: Jobs, X: np.ndarray) -> float:
    """Largest violation of P1's constraints (4)-(7) by ``X`` (N, R, T); 0 when feasible."""
    X = np.asarray(X, dtype=np.float64)
    if X.shape != (jobs.n_jobs, jobs.n_instances, jobs.n_slots):
        raise ValueError(f"X has shape {X.shape}: must have shape "
                         f"{(jobs.n_jobs, jobs.n_instances, jobs.n_slots)}")
    outside = float(np.max(np.abs(np.where(jobs.mask, 0.0, X)), initial=0.0))  # (5)
    cap4 = float(np.max(X.sum(axis=(1, 2)) - jobs.workload, initial=0.0))  # (4)
    cap6 = float(np.max(X.sum(axis=0) - inst.capacity, initial=0.0))  # (6)
    box = float(np.max(-X, initial=0.0))  # (7)
    for idx, c in _entries(jobs):
        box = max(box, float(np.max(X.reshape(-1)[idx] - c.capability, initial=0.0)))
    return max(outside, cap4, cap6, box, 0.0)


def is_feasible(inst: DeadlineWelfareInstance, jobs: Jobs, X: np.ndarray,
                tol: float = FEASIBILITY_TOL) -> bool:
    """``X`` satisfies (4)-(7) up to ``tol`` (spec §2.2 ``check_feasible``)."""
    return feasibility_violation(inst, jobs, X) <= tol


def step_violation(inst: DeadlineWelfareInstance, jobs: Jobs, n: int, x: np.ndarray,
                   usage: np.ndarray) -> float:
    """Largest violation of (4)-(7) by job ``n``'s dispatch ``x`` (R, T) given the usage ω
    (R, T) before it: what one step may break, in ``O(R T)`` (no ``(N, R, T)`` array); 0 when
    feasible."""
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    job = jobs.job(n)
    on = np.zeros(x.size, dtype=bool)
    on[job.units] = True
    xs = x[job.units]
    return max(float(np.max(np.abs(x[~on]), initial=0.0)),  # (5)
               float(xs.sum() - jobs.workload[n]),  # (4)
               float(np.max(x + np.asarray(usage).reshape(-1) - _flat(inst.capacity),
                            initial=0.0)),  # (6)
               float(np.max(-x, initial=0.0)),
               float(np.max(xs - job.capability, initial=0.0)), 0.0)  # (7)


def unit_upper(jobs: Jobs, n: int) -> np.ndarray:
    """Upper end of the action map for job ``n``: ``x̄_nr`` on ℛ_n, 0 elsewhere; ``(R, T)``."""
    job = jobs.job(n)
    out = np.zeros(jobs.n_instances * jobs.n_slots)
    out[job.units] = job.capability
    return out.reshape(jobs.n_instances, jobs.n_slots)


@dataclass(frozen=True)
class Repair:
    """A feasible dispatch and how far the proposal was moved (L1, workload units)."""

    dispatch: np.ndarray  # (R, T) applied
    capacity_l1: float  # removed by clipping to the remaining unit capacity
    workload_l1: float  # removed by scaling down to the job's workload

    @property
    def l1(self) -> float:
        return self.capacity_l1 + self.workload_l1


@numba.njit(cache=True)
def _repair_into(proposal: np.ndarray, upper: np.ndarray, remaining: np.ndarray,
                 workload: float, y: np.ndarray) -> tuple[float, float]:
    """The repair rule of :func:`repair` on flat ``(m,)`` arrays, written into ``y``; returns
    ``(capacity_l1, workload_l1)``."""
    cap_l1 = 0.0
    total = 0.0
    for r in range(proposal.size):
        x = min(max(proposal[r], 0.0), upper[r])
        v = min(x, max(remaining[r], 0.0))
        cap_l1 += x - v
        total += v
        y[r] = v
    wl_l1 = 0.0
    if total > workload:
        scale = workload / total
        for r in range(proposal.size):
            z = y[r] * scale
            wl_l1 += y[r] - z
            y[r] = z
    return cap_l1, wl_l1


@numba.njit(cache=True)
def repair_kernel(proposal: np.ndarray, upper: np.ndarray, remaining: np.ndarray,
                  workload: float) -> tuple[np.ndarray, float, float]:
    """:func:`repair` on flat arrays ``(U,)``: ``(dispatch, capacity_l1, workload_l1)``."""
    y = np.empty(proposal.size)
    cap_l1, wl_l1 = _repair_into(proposal, upper, remaining, workload, y)
    return y, cap_l1, wl_l1


@numba.njit(cache=True)
def apply_units(code: int, proposal: np.ndarray, units: np.ndarray, capability: np.ndarray,
                coef: np.ndarray, weight: np.ndarray, capacity: np.ndarray, usage: np.ndarray,
                workload: float, x: np.ndarray, xs: np.ndarray) -> tuple[float, float, float,
                                                                          float]:
    """One job's step on its entries ``(m,)`` (``proposal``, ``capability``, ``coef``,
    ``weight`` on the units ``units``), as the env does it: repair ``proposal`` against the
    remaining capacity ``capacity - usage`` (the mesh's flat ``(U,)``), write the dispatch into
    ``xs`` ``(m,)`` and into the zeros of ``x`` ``(U,)``, add it to ``usage`` (in place) and
    score it. The job's other units get nothing, so only its entries are visited: the sums are
    those over the whole mesh (the other terms are exact zeros). Returns ``(capacity_l1,
    workload_l1, job utility, cluster utility)``."""
    m = units.size
    rem = np.empty(m)
    for k in range(m):
        rem[k] = capacity[units[k]] - usage[units[k]]
    cap_l1, wl_l1 = _repair_into(proposal, capability, rem, workload, xs)
    for k in range(m):
        x[units[k]] = xs[k]
        usage[units[k]] += xs[k]
    fj, fc = welfare_units(code, xs, units, coef, weight, capacity)
    return cap_l1, wl_l1, fj, fc


@numba.njit(cache=True)
def decode_units(a: np.ndarray, units: np.ndarray, capability: np.ndarray,
                 proposal: np.ndarray) -> float:
    """The ``"dispatch"`` mode's map of a finite action ``a`` ``(U,)`` on a job's entries:
    ``proposal`` ``(m,)`` = ``(clip(a_u, -1, 1) + 1) / 2 * x̄`` at its units (the map gives 0
    elsewhere); returns the clip amount ``max |clip(a) - a|`` over the whole action. The one
    compiled copy of the decode, for the env's and the vector env's step."""
    clip = 0.0
    for i in range(a.size):
        c = min(max(a[i], -1.0), 1.0)
        clip = max(clip, abs(c - a[i]))
    for k in range(units.size):
        c = min(max(a[units[k]], -1.0), 1.0)
        proposal[k] = (c + 1.0) * 0.5 * capability[k]
    return clip


@numba.njit(cache=True)
def all_finite(a: np.ndarray) -> bool:
    """Whether every entry of ``a`` is finite."""
    for i in range(a.size):
        if not np.isfinite(a[i]):
            return False
    return True


@numba.njit(cache=True)
def dispatch_stats(x: np.ndarray, usage: np.ndarray, capacity: np.ndarray,
                   ratio: np.ndarray) -> tuple[float, int, float]:
    """A step's info figures of the dispatch ``x`` ``(U,)`` after it: ``(Σ x, units with
    x > 1e-9, mean usage / capacity)``, the sums as numpy adds them (:func:`np_sum`); ``ratio``
    ``(U,)`` is scratch."""
    U = capacity.size
    units = 0
    for i in range(U):
        units += x[i] > 1e-9
        ratio[i] = usage[i] / capacity[i]
    return np_sum(x, _ZERO, U), units, np_sum(ratio, _ZERO, U) / U


@numba.njit(cache=True)
def step_job(code: int, decode: bool, a: np.ndarray, prop: np.ndarray, ptr: np.ndarray,
             units: np.ndarray, capability: np.ndarray, coef: np.ndarray, weight: np.ndarray,
             j: int, capacity: np.ndarray, usage: np.ndarray, workload: float, active: bool,
             x: np.ndarray, hist: np.ndarray,
             h0: int) -> tuple[bool, float, float, float, float, float, float, int, float]:
    """The single env's step of one job, in one call. The job is entry range ``[ptr[j],
    ptr[j + 1])`` of its chunk (``units``, ``capability``, ``coef``, ``weight``), read only
    for an ``active`` job (else the null job of an empty episode). With ``decode``, ``a`` is the
    raw dispatch action ``(U,)``: refused (nothing changed, first result False) if an entry is
    not finite, else mapped by :func:`decode_units`; without, ``prop`` is the job's proposal
    on its entries. Then, for an ``active`` job, :func:`apply_units` (``x`` ``(U,)`` and
    ``usage`` updated) and the job's dispatch on its entries into ``hist[h0:h0 + m]``.
    Returns ``(ok, action clip, capacity_l1, workload_l1, job utility, cluster utility, Σ x,
    units with x > 1e-9, mean usage / capacity)``; the sums are numpy's (:func:`np_sum`)."""
    clip = 0.0
    lo, hi = (ptr[j], ptr[j + 1]) if active else (0, 0)
    if decode:
        if not all_finite(a):
            return False, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0, 0.0
        prop = np.empty(hi - lo)
        clip = decode_units(a, units[lo:hi], capability[lo:hi], prop)
    cap_l1 = wl_l1 = fj = fc = 0.0
    if active:
        cap_l1, wl_l1, fj, fc = apply_units(code, prop, units[lo:hi], capability[lo:hi],
                                            coef[lo:hi], weight[lo:hi], capacity, usage,
                                            workload, x, hist[h0:h0 + hi - lo])
    served, count, util = dispatch_stats(x, usage, capacity, np.empty(capacity.size))
    return True, clip, cap_l1, wl_l1, fj, fc, served, count, util


@numba.njit(cache=True)
def obs_fill(n: int, N: int, scalars: np.ndarray, ptr: np.ndarray, units: np.ndarray,
             capability: np.ndarray, coef: np.ndarray, weight: np.ndarray, j: int,
             family: np.ndarray, usage: np.ndarray, capacity: np.ndarray,
             capacity32: np.ndarray, iota: float, v: float, features: np.ndarray,
             buf: np.ndarray) -> None:
    """The env's observation of job ``n`` of ``N`` into one float32 buffer, in the keys' order:
    workload, window (``scalars[n]``), allowed, capability, utility_coef, cluster_weight (the
    job's entries ``[ptr[j], ptr[j + 1])`` of its chunk at their units, 0 elsewhere and after
    the last job), utility_family, usage (``min(ω, C)``), capacity, bounds ``(ι, v)``, progress
    ``min(1, n / max(N, 1))``, then ``features`` (the instance features, possibly empty). Every
    value is rounded to float32 once."""
    U = capacity.size
    k = 3 + 4 * U
    # element loops, not slice assignments: numba's array-to-slice copy brings a shape-check
    # error path with string formatting that makes the kernel much slower to compile
    for i in range(k):
        buf[i] = 0.0
    if n < N:
        buf[0] = scalars[n, 0]
        buf[1] = scalars[n, 1]
        buf[2] = scalars[n, 2]
        for e in range(ptr[j], ptr[j + 1]):
            u = units[e]
            buf[3 + u] = 1.0
            buf[3 + U + u] = capability[e]
            buf[3 + 2 * U + u] = coef[e]
            buf[3 + 3 * U + u] = weight[e]
    for i in range(family.size):
        buf[k + i] = family[i]
    k += family.size
    for u in range(U):
        buf[k + u] = min(usage[u], capacity[u])
        buf[k + U + u] = capacity32[u]
    k += 2 * U
    buf[k] = iota
    buf[k + 1] = v
    buf[k + 2] = min(1.0, n / max(N, 1))
    for i in range(features.size):
        buf[k + 3 + i] = features[i]


@numba.njit(cache=True)
def scan_units(code: int, delta: float, units: np.ndarray, capability: np.ndarray,
               coef: np.ndarray, weight: np.ndarray, capacity: np.ndarray,
               out: np.ndarray) -> None:
    """What a reset derives from a chunk's entries before it accepts the jobs, as running
    values in ``out`` ``(5,)`` (start: ``(inf, -inf, -inf, -inf, -inf)``): the bounds' candidates
    ``min f'(x̄) + β/C`` and ``max f'(δ) + β/C`` (spec §1.8; ``delta``: where v takes the
    marginal) and the maxima of capability, coef and weight (:func:`.types.observed_limits`).
    ``capacity`` is the mesh's flat ``(U,)``."""
    for k in range(units.size):
        b = weight[k] / capacity[units[k]]
        a = coef[k]
        out[0] = min(out[0], f_prime(code, a, capability[k]) + b)
        out[1] = max(out[1], f_prime(code, a, delta) + b)
        out[2] = max(out[2], capability[k])
        out[3] = max(out[3], a)
        out[4] = max(out[4], weight[k])


def scan_start() -> np.ndarray:
    """The start of :func:`scan_units`' running values."""
    return np.array([math.inf, -math.inf, -math.inf, -math.inf, -math.inf])


def repair(proposal: np.ndarray, upper: np.ndarray, remaining: np.ndarray,
           workload: float) -> Repair:
    """The documented repair rule, in order (all arrays ``(R, T)``, workload units):

    1. mask and per-unit capability: clip to ``[0, upper]`` (``upper = x̄_nr`` on ℛ_n, 0 off it;
       the env's affine action map already lands in this box);
    2. remaining unit capacity: clip to ``max(0, C_r - ω_r)``;
    3. job workload: if ``sum > ρ_n``, multiply everything by ``ρ_n / sum``.
    """
    p = np.asarray(proposal, dtype=np.float64)
    up, rem = np.asarray(upper, dtype=np.float64), np.asarray(remaining, dtype=np.float64)
    if up.shape != p.shape or rem.shape != p.shape:
        up, rem = (np.broadcast_to(v, p.shape) for v in (up, rem))
    y, cap_l1, wl_l1 = repair_kernel(_flat(p), _flat(up), _flat(rem), float(workload))
    return Repair(y.reshape(p.shape), cap_l1, wl_l1)


def marginal_bounds(inst: DeadlineWelfareInstance, jobs: Jobs) -> tuple[float, float]:
    """``(ι, v)`` of spec §1.8 for the realised ``jobs`` (or ``inst.prior_bounds`` in prior mode).

    ``ι = min_{n, r in R_n} f'_nr(x̄_nr) + β_nr/C_r``; ``v = max f'_nr(δ) + β_nr/C_r`` with
    ``δ = 0`` (linear, log) or ``sqrt_v_floor`` (sqrt). An episode without jobs gives ``(1, 1)``.
    """
    if inst.bound_mode == "prior":
        assert inst.prior_bounds is not None
        return inst.prior_bounds
    delta = inst.sqrt_v_floor if inst.family_code == SQRT else 0.0
    out = scan_start()
    cap = _flat(inst.capacity)
    for c in jobs.rows:
        scan_units(inst.family_code, float(delta), c.units, c.capability, c.coef, c.weight,
                   cap, out)
    return bounds_from(inst, *scan_bounds(out))


def scan_bounds(out: np.ndarray) -> tuple[float, float]:
    """:func:`scan_units`' bound candidates ``(ι, v)``; ``(nan, nan)`` without any job unit."""
    return (math.nan, math.nan) if out[0] == math.inf else (float(out[0]), float(out[1]))


def bounds_from(inst: DeadlineWelfareInstance, iota: float, v: float) -> tuple[float, float]:
    """:func:`marginal_bounds` from the candidates ``(ι, v)`` (:func:`scan_bounds`): the prior
    in prior mode, ``(1, 1)`` without any job unit (``nan``), else ``(ι, max(v, ι))``."""
    if inst.bound_mode == "prior":
        assert inst.prior_bounds is not None
        return inst.prior_bounds
    if math.isnan(iota):  # no job unit
        return 1.0, 1.0
    return iota, max(v, iota)


@dataclass(frozen=True)
class ObservedJob:
    """The arriving job as an agent sees it in one observation, restricted to its ``m`` units.

    Attributes:
        units: int ``(m,)``, flat unit indices ``r * T + t`` of ℛ_n.
        workload: ρ_n.  family: utility family code.
        capability, coef, weight, usage, capacity: float64 ``(m,)`` on those units.
        remaining: ``max(0, min(x̄, C - ω))`` per unit, the most the job can get there.
        bounds: ``(ι, v)`` from the observation.
        n_units: ``R * T``.
    """

    units: np.ndarray
    workload: float
    family: int
    capability: np.ndarray
    coef: np.ndarray
    weight: np.ndarray
    usage: np.ndarray
    capacity: np.ndarray
    remaining: np.ndarray
    bounds: tuple[float, float]
    n_units: int
    arrival: int

    def scatter(self, x: np.ndarray) -> np.ndarray:
        """Dispatch on the job's units ``(m,)`` -> flat dispatch ``(R * T,)``."""
        out = np.zeros(self.n_units)
        out[self.units] = x
        return out

    def encode(self, x: np.ndarray) -> np.ndarray:
        """Dispatch ``(m,)`` in workload units -> the env's float32 action ``(R * T,)``
        (``2 x / x̄ - 1`` on the job's units, ``-1`` elsewhere)."""
        a = -np.ones(self.n_units)
        a[self.units] = 2.0 * np.clip(x, 0.0, self.capability) / self.capability - 1.0
        return np.clip(a, -1.0, 1.0).astype(np.float32)


def observed_job(obs: dict[str, np.ndarray]) -> ObservedJob:
    """Parse one (unbatched) DeadlineWelfare-v0 observation into an :class:`ObservedJob`."""
    allowed = np.asarray(obs["allowed"]) > 0.5
    units = np.flatnonzero(allowed)
    cap = np.asarray(obs["capability"], dtype=np.float64)[units]
    usage = np.asarray(obs["usage"], dtype=np.float64)[units]
    capacity = np.asarray(obs["capacity"], dtype=np.float64)[units]
    fam = int(np.argmax(obs["utility_family"]))
    b = np.asarray(obs["bounds"], dtype=np.float64)
    return ObservedJob(
        units=units, workload=float(obs["workload"][0]), family=fam, capability=cap,
        coef=np.asarray(obs["utility_coef"], dtype=np.float64)[units],
        weight=np.asarray(obs["cluster_weight"], dtype=np.float64)[units], usage=usage,
        capacity=capacity, remaining=np.maximum(0.0, np.minimum(cap, capacity - usage)),
        bounds=(float(b[0]), float(b[1])), n_units=int(allowed.size),
        arrival=int(round(float(obs["window"][0]))),
    )
