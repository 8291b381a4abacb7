"""Offline optimum of DeadlineWelfare-v0: P1 over the whole episode (paper
§III-B, problem P1; docs/spec/onsocmax.md §1.5, §4.4).

P1 is a concave maximisation over a polytope, with one variable per (job, unit of its window)::

    max  Σ_n Σ_{r in R_n} f_nr(x_nr) + β_nr x_nr / C_r
    s.t. Σ_r x_nr <= ρ_n  (4),  Σ_n x_nr <= C_r  (6),  0 <= x_nr <= x̄_nr  (7)

- linear utilities: one LP (``scipy.optimize.linprog``, HiGHS);
- log / sqrt: a primal-dual interior-point method (Woodbury solves in the ``N + units`` row
  space). Its iterates are strictly feasible, so the welfare is a lower bound of OPT;
  ``value + sᵀz`` (duality gap) an upper bound; stopped when the relative gap is below ``rtol``
  (default 1e-9). Checked against cvxpy/Clarabel in the tests.

scipy is imported lazily here only (the env itself needs numpy + gymnasium).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from schedgym.core.limits import NotComputed
from schedgym.envs.deadline_welfare import dynamics
from schedgym.envs.deadline_welfare.tables import JobChunk, JobRows
from schedgym.envs.deadline_welfare.types import DeadlineWelfareInstance, Jobs


@dataclass(frozen=True)
class OfflineSolution:
    """Result of :func:`solve_p1`: ``X (N, R, T)``, its welfare (``value``, a lower bound of OPT
    and the reported optimum), an upper bound and the number of LP rounds."""

    X: np.ndarray
    value: float
    upper: float
    rounds: int


#: Most variables (job, unit) of a linear P1 (one HiGHS LP, its sparse matrix and the dense
#: ``(N, R, T)`` solution): a day of every node of the Alibaba sample (1.0 M variables) took
#: 7 s and 1.3 GB on the development machine.
MAX_LP_VARIABLES = 1_500_000
#: Most constraint rows (jobs + units used) of a log/sqrt P1: the interior-point method solves
#: a dense ``rows x rows`` Newton system every iteration (5,056 rows: 28 iterations, 34 s).
MAX_BARRIER_ROWS = 6_000


class P1TooLarge(NotComputed):
    """P1 of an episode is beyond what :func:`solve_p1` computes (the message says the size
    and the largest it takes); ``schedgym compare`` reports the ceiling as not computed."""

    benchmark = "optimum"


def p1_size(inst: DeadlineWelfareInstance, jobs: Jobs) -> tuple[int, int]:
    """``(variables, rows)`` of P1: ``Σ_n |ℛ_n|`` and jobs + distinct units the jobs may use
    (at most ``N + R T``), without building anything of that size."""
    variables = int(jobs.sizes.sum())
    return variables, jobs.n_jobs + min(inst.n_units, variables)


def check_p1_size(inst: DeadlineWelfareInstance, jobs: Jobs) -> None:
    """Raise :class:`P1TooLarge` (one line) when P1 is beyond :data:`MAX_LP_VARIABLES`
    (linear) or :data:`MAX_BARRIER_ROWS` (log, sqrt), or its dense ``(N, R, T)`` solution
    beyond :data:`MAX_LP_VARIABLES` x 8 entries."""
    variables, rows = p1_size(inst, jobs)
    dense = jobs.n_jobs * inst.n_units
    linear = inst.family_code == dynamics.LINEAR
    if variables > MAX_LP_VARIABLES or dense > 8 * MAX_LP_VARIABLES or \
            (not linear and rows > MAX_BARRIER_ROWS):
        limit = (f"{MAX_LP_VARIABLES:,} variables and {8 * MAX_LP_VARIABLES:,} (job, mesh "
                 "unit) pairs" if linear else f"{MAX_BARRIER_ROWS:,} rows (a dense Newton "
                 f"system) and {MAX_LP_VARIABLES:,} variables")
        raise P1TooLarge(
            f"OPT (P1) of this episode is not computed at this size: {jobs.n_jobs:,} jobs x "
            f"{inst.n_units:,} units, {variables:,} variables, {rows:,} rows; the "
            f"{inst.utility} solver takes at most {limit}")


def _problem(inst: DeadlineWelfareInstance, jobs: Jobs, table: JobChunk):
    from scipy import sparse

    n = np.repeat(np.arange(jobs.n_jobs), np.diff(table.ptr))  # every job's entries, in order
    unit = table.units
    T = inst.horizon
    idx = np.stack([n, unit // T, unit % T], axis=1)  # (v, 3): n, r, t
    v = idx.shape[0]
    used, unit_row = np.unique(unit, return_inverse=True)
    rows = np.concatenate([n, jobs.n_jobs + unit_row])
    A = sparse.csr_matrix((np.ones(2 * v), (rows, np.concatenate([np.arange(v)] * 2))),
                          shape=(jobs.n_jobs + used.size, v))
    b = np.concatenate([jobs.workload, inst.capacity.reshape(-1)[used]])
    ub = np.array(table.capability)
    coef = np.array(table.coef)
    lin = table.weight / inst.capacity.reshape(-1)[unit]
    return idx, A, b, ub, coef, lin


def _scatter(jobs: Jobs, idx: np.ndarray, x: np.ndarray) -> np.ndarray:
    X = np.zeros((jobs.n_jobs, jobs.n_instances, jobs.n_slots))
    X[idx[:, 0], idx[:, 1], idx[:, 2]] = x
    return X


def solve_p1(inst: DeadlineWelfareInstance, jobs: Jobs, rtol: float = 1e-9,
             table: JobChunk | None = None) -> OfflineSolution:
    """Solve P1 for ``jobs`` on ``inst`` (see the module docstring); ``table``: the jobs' values
    on their units (:meth:`.tables.JobRows.table`, built here if not given). Raises
    :class:`P1TooLarge` beyond the solvers' sizes (:func:`check_p1_size`)."""
    from scipy.optimize import linprog

    check_p1_size(inst, jobs)
    idx, A, b, ub, coef, lin = _problem(inst, jobs, JobRows(jobs).table() if table is None
                                        else table)
    v = ub.size
    if v == 0:
        return OfflineSolution(np.zeros((jobs.n_jobs, jobs.n_instances, jobs.n_slots)), 0.0,
                               0.0, 0)
    code = inst.family_code
    if code == dynamics.LINEAR:
        res = linprog(-(coef + lin), A_ub=A, b_ub=b, bounds=np.stack([np.zeros(v), ub], 1),
                      method="highs")
        if res.status != 0:
            raise RuntimeError(f"P1 linear program failed: {res.message}")
        x = np.clip(res.x, 0.0, ub)
        X = _scatter(jobs, idx, x)
        val = dynamics.social_welfare(inst, jobs, X)[0]
        return OfflineSolution(X, val, float(-res.fun), 1)

    return _barrier(inst, jobs, idx, A, b, ub, coef, lin, rtol)


def _barrier(inst, jobs, idx, A, b, ub, coef, lin, rtol: float) -> OfflineSolution:
    """Primal-dual interior-point method for the strictly concave families (log, sqrt).

    Minimises ``-F(x)`` s.t. ``G x <= h`` with ``G = [A; -I; I]``, ``h = [b; 0; x̄]``, from a
    strictly feasible start; Newton steps on the perturbed KKT system ``s_j z_j = σ μ`` with
    centring ``σ = 0.1`` and a 0.99 fraction-to-the-boundary step. The reduced system
    ``(D + Aᵀ W A) Δx = r`` (D diagonal) is solved by Woodbury in the ``N + units`` row space.
    Every iterate is feasible, so ``F(x)`` is a lower bound of OPT; ``F(x) + sᵀz`` (the duality
    gap) bounds it above once the dual residual vanishes.
    """
    code = inst.family_code
    v = ub.size
    A = A.tocsr()
    At = A.T.tocsr()

    def F(x: np.ndarray) -> float:
        return float(np.sum(dynamics.utility(code, coef, x) + lin * x))

    def grad_hess(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if code == dynamics.LOG:
            q = 1.0 / (1.0 + x)
            return coef * q + lin, coef * q * q  # ∇F, -∇²F (diagonal)
        r = 1.0 / np.sqrt(x)
        return 0.5 * coef * r + lin, 0.25 * coef * r / x

    theta = 0.5 * min(1.0, float(np.min(b / np.maximum(A @ ub, 1e-300))))
    x = theta * ub
    sA, slo, sup = b - A @ x, x.copy(), ub - x
    zA, zlo, zup = np.ones_like(sA), np.ones(v), np.ones(v)
    m = sA.size + 2 * v
    steps = 0
    for steps in range(1, 201):  # noqa: B007
        g, hn = grad_hess(x)
        rd = -g + At @ zA - zlo + zup  # dual residual of  min -F
        mu = (sA @ zA + slo @ zlo + sup @ zup) / m
        fx = F(x)
        if mu * m <= rtol * max(1.0, abs(fx)):
            break
        tau = 0.1 * mu
        # complementarity targets: z_j + Δz_j = (tau - z_j Δs_j) / s_j with Δs = -G Δx
        wA, wlo, wup = zA / sA, zlo / slo, zup / sup
        D = hn + wlo + wup
        rhs = -rd - At @ (tau / sA - zA) + (tau / slo - zlo) - (tau / sup - zup)
        # (D + Aᵀ diag(wA) A) dx = rhs, Woodbury
        Dinv = 1.0 / D
        M = (A.multiply(Dinv[None, :]) @ At).toarray()
        M[np.diag_indices_from(M)] += 1.0 / wA
        y = np.linalg.solve(M, A @ (Dinv * rhs))
        dx = Dinv * (rhs - At @ y)
        dsA, dslo, dsup = -(A @ dx), dx, -dx
        dzA = (tau - zA * dsA) / sA - zA
        dzlo = (tau - zlo * dslo) / slo - zlo
        dzup = (tau - zup * dsup) / sup - zup
        step = 1.0
        for arr, d in ((sA, dsA), (slo, dslo), (sup, dsup), (zA, dzA), (zlo, dzlo), (zup, dzup)):
            neg = d < 0
            if neg.any():
                step = min(step, 0.99 * float(np.min(-arr[neg] / d[neg])))
        if not (step > 0 and np.all(np.isfinite(dx))):
            break  # numerical floor reached; x is feasible
        x = x + step * dx
        sA, slo, sup = b - A @ x, x.copy(), ub - x  # recomputed: stays exactly feasible
        zA, zlo, zup = zA + step * dzA, zlo + step * dzlo, zup + step * dzup
        sA, slo, sup = np.maximum(sA, 1e-300), np.maximum(slo, 1e-300), np.maximum(sup, 1e-300)
    x = np.clip(x, 0.0, ub)
    X = _scatter(jobs, idx, x)
    val = dynamics.social_welfare(inst, jobs, X)[0]
    gap = float(sA @ zA + slo @ zlo + sup @ zup)
    return OfflineSolution(X, val, val + gap, steps)


_CACHE: OrderedDict[bytes, OfflineSolution] = OrderedDict()


def _key(inst: DeadlineWelfareInstance, jobs: Jobs, table: JobChunk) -> bytes:
    import hashlib

    h = hashlib.sha1()
    for a in (inst.capacity, jobs.arrival, jobs.deadline, jobs.allowed, jobs.workload,
              table.units, table.capability, table.coef, table.weight):
        h.update(np.ascontiguousarray(a).tobytes())
    h.update(inst.utility.encode())
    return h.digest()


def cached_p1(inst: DeadlineWelfareInstance, jobs: Jobs) -> OfflineSolution:
    """:func:`solve_p1` with a small cache keyed on the instance and jobs' content, so comparing
    several agents on the same (instance, seed) solves P1 once."""
    check_p1_size(inst, jobs)
    table = JobRows(jobs).table()
    k = _key(inst, jobs, table)
    if k not in _CACHE:
        _CACHE[k] = solve_p1(inst, jobs, table=table)
        while len(_CACHE) > 64:
            _CACHE.popitem(last=False)
    return _CACHE[k]


def episode_benchmarks(env: Any) -> dict[str, float]:
    """``{"optimum": OPT}`` of the episode's jobs (only needs ``reset``); ``schedgym compare``
    reports ``optimum - welfare`` and ``optimum / welfare`` (the empirical competitive ratio,
    to set beside ``alpha_hat``). Raises :class:`P1TooLarge` (one line) beyond the solvers'
    sizes."""
    env = getattr(env, "unwrapped", env)
    return {"optimum": cached_p1(env.instance, env.jobs).value}
