"""DeadlineWelfare-v0's step in plain numpy, written as the paper states it (the specification
the compiled kernels of :mod:`.dynamics`, :mod:`.actions` and the vector env are tested against;
``tests/envs/deadline_welfare/test_reference.py``). Nothing here is fast; everything is direct.

One step decides job ``n`` of the mesh of ``R`` instances x ``T`` slots (paper §III, problem
P1; arrays ``(R, T)``, workload units):

1. **decode** the action into a proposed dispatch ``y``:

   - ``"dispatch"``: ``y_r = (clip(a_r, -1, 1) + 1) / 2 * x̄_nr`` on ℛ_n, 0 off it;
   - ``"pricing"``: prices ``p_r = v max(0, a_0) + v max(0, a_1) ω_r / C_r``, budget
     ``q ρ_n`` with ``q = min(1, 1 + a_2)``; ``y`` is the job's best response
     ``argmax Σ_r f_r(y_r) + (β_r / C_r - p_r) y_r`` s.t. ``Σ y <= q ρ_n``,
     ``0 <= y_r <= max(0, min(x̄_r, C_r - ω_r))`` on ℛ_n (:func:`best_response`);
   - ``"unit_prices"``: the same best response to the prices ``p_r = v max(0, a_r)`` (one
     entry per unit), budget ``ρ_n``;
   - ``"demand_price"``: the same to ``p_r = v max(0, a_0) D_r / C_r``, ``D`` the expected
     later demand after the job's slot, budget ``ρ_n``;

2. **repair** (constraints (4)-(7)): ``x = min(max(y, 0), x̄, max(0, C - ω))``, then if
   ``Σ x > ρ_n`` scale ``x`` by ``ρ_n / Σ x``;

3. **reward**: ``f_n(x) + g_n(x)`` with ``f_n = Σ_{r in ℛ_n} f_nr(x_r)`` (``a x``,
   ``a ln(1 + x)`` or ``a sqrt(x)``) and ``g_n = Σ_{r in ℛ_n} β_nr x_r / C_r``;

4. **next state**: ``ω <- ω + x``, ``n <- n + 1``; the next observation shows job ``n + 1``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Utility family codes (``instance.family_code``).
LINEAR, LOG, SQRT = 0, 1, 2


@dataclass(frozen=True)
class Job:
    """The arriving job on the whole mesh, arrays ``(R, T)``: ``mask`` ℛ_n (bool), capability
    x̄_nr, utility coefficient a_nr and cluster weight β_nr; ``workload`` ρ_n."""

    mask: np.ndarray
    capability: np.ndarray
    coef: np.ndarray
    weight: np.ndarray
    workload: float


@dataclass(frozen=True)
class Step:
    """One step's outcome: the applied dispatch ``x`` ``(R, T)``, the welfare parts, the repair
    parts (L1, workload units), how far the action was clipped into [-1, 1], the usage after
    the step ``(R, T)`` and the step's info figures."""

    x: np.ndarray
    job_utility: float
    cluster_utility: float
    repair_capacity: float
    repair_workload: float
    action_clip: float
    usage: np.ndarray
    served: float  # Σ x / ρ_n
    units_used: int  # units with x > 1e-9
    utilization: float  # mean of ω / C over the mesh, after the step

    @property
    def reward(self) -> float:
        return self.job_utility + self.cluster_utility


def f(family: int, a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Job utility per unit: ``a x``, ``a ln(1 + x)`` or ``a sqrt(x)``."""
    return [a * x, a * np.log1p(x), a * np.sqrt(x)][family]


def f_prime_inverse(family: int, a: np.ndarray, m: np.ndarray) -> np.ndarray:
    """The x where ``f'(x) = m`` for ``m > 0``: ``a / m - 1`` (log), ``(a / (2 m))^2`` (sqrt)."""
    return a / m - 1.0 if family == LOG else (a / (2.0 * m)) ** 2


def decode_dispatch(action: np.ndarray, job: Job) -> tuple[np.ndarray, float]:
    """``"dispatch"`` mode: the proposal ``(R, T)`` and the clip amount ``max |clip(a) - a|``."""
    a = np.asarray(action, dtype=np.float64).reshape(job.mask.shape)
    c = np.clip(a, -1.0, 1.0)
    upper = np.where(job.mask, job.capability, 0.0)
    return (c + 1.0) / 2.0 * upper, float(np.max(np.abs(c - a), initial=0.0))


def best_response(family: int, a: np.ndarray, gain: np.ndarray, price: np.ndarray,
                  room: np.ndarray, budget: float) -> np.ndarray:
    """``argmax Σ f(y) + (gain - price) y`` s.t. ``Σ y <= budget``, ``0 <= y <= room`` (1-D).

    KKT with the budget's multiplier λ >= 0: ``y_r = room_r`` where ``m_r = λ + p_r - gain_r
    <= 0``, else ``clip((f')^-1(m_r), 0, room_r)``. Linear utilities: fill the units by
    decreasing ``a + gain - p`` (stable order) while it is positive. Concave: the smallest λ
    whose response fits the budget, by bisection."""
    if family == LINEAR:
        value = a + gain - price
        y = np.zeros_like(a)
        left = budget
        for r in np.argsort(-value, kind="stable"):
            if value[r] <= 0.0 or left <= 0.0:
                break
            y[r] = min(room[r], left)
            left -= y[r]
        return y

    def response(lam: float) -> np.ndarray:
        m = lam + price - gain
        with np.errstate(divide="ignore", invalid="ignore"):
            inner = f_prime_inverse(family, a, np.where(m > 0.0, m, 1.0))
        return np.where(m <= 0.0, room, np.clip(inner, 0.0, room))

    if response(0.0).sum() <= budget:
        return response(0.0)
    lo, hi = 0.0, 1.0
    while response(hi).sum() > budget:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if response(mid).sum() > budget else (lo, mid)
    y = response(hi)
    return y * min(1.0, budget / y.sum()) if y.sum() > 0 else y


def respond(job: Job, family: int, capacity: np.ndarray, usage: np.ndarray,
            price: np.ndarray, budget: float) -> np.ndarray:
    """The job's best response ``(R, T)`` to ``price`` on its units (``price`` ``(|ℛ_n|,)``,
    in the mask's order): room ``max(0, min(x̄, C - ω))`` per unit, ``budget`` in all."""
    m = job.mask
    room = np.maximum(0.0, np.minimum(job.capability[m], capacity[m] - usage[m]))
    y = np.zeros(m.shape)
    y[m] = best_response(family, job.coef[m], job.weight[m] / capacity[m], price, room, budget)
    return y


def decode_pricing(action: np.ndarray, job: Job, family: int, v: float, capacity: np.ndarray,
                   usage: np.ndarray) -> np.ndarray:
    """``"pricing"`` mode: the job's best response ``(R, T)`` to the action's prices."""
    a = np.clip(np.asarray(action, dtype=np.float64), -1.0, 1.0)
    p0, p1, q = v * max(0.0, a[0]), v * max(0.0, a[1]), min(1.0, 1.0 + a[2])
    m = job.mask
    return respond(job, family, capacity, usage, p0 + p1 * usage[m] / capacity[m],
                   q * job.workload)


def decode_unit_prices(action: np.ndarray, job: Job, family: int, v: float,
                       capacity: np.ndarray, usage: np.ndarray) -> np.ndarray:
    """``"unit_prices"`` mode: the job's best response ``(R, T)`` to the prices ``v max(0,
    a)`` of its units, its whole workload offered."""
    a = np.clip(np.asarray(action, dtype=np.float64), -1.0, 1.0).reshape(capacity.shape)
    return respond(job, family, capacity, usage, v * np.maximum(a[job.mask], 0.0),
                   job.workload)


def decode_demand_price(action: np.ndarray, job: Job, family: int, v: float,
                        capacity: np.ndarray, usage: np.ndarray,
                        later: np.ndarray) -> np.ndarray:
    """``"demand_price"`` mode: the job's best response ``(R, T)`` to the prices ``v max(0,
    a_0) D / C`` of its units (``later`` = ``D`` ``(R, T)``), its whole workload offered."""
    lam = max(0.0, min(float(np.asarray(action, dtype=np.float64).reshape(-1)[0]), 1.0))
    m = job.mask
    return respond(job, family, capacity, usage, lam * v * later[m] / capacity[m],
                   job.workload)


def repair(y: np.ndarray, job: Job, capacity: np.ndarray,
           usage: np.ndarray) -> tuple[np.ndarray, float, float]:
    """The documented repair: ``(x, L1 removed by capacity, L1 removed by the workload cap)``."""
    upper = np.where(job.mask, job.capability, 0.0)
    boxed = np.minimum(np.maximum(y, 0.0), upper)  # (5), (7)
    x = np.minimum(boxed, np.maximum(capacity - usage, 0.0))  # (6)
    cap_l1 = float((boxed - x).sum())
    total = float(x.sum())
    if total > job.workload:  # (4)
        scaled = x * (job.workload / total)
        return scaled, cap_l1, float((x - scaled).sum())
    return x, cap_l1, 0.0


def welfare(x: np.ndarray, job: Job, family: int, capacity: np.ndarray) -> tuple[float, float]:
    """``(f_n(x), g_n(x))``: job utility and cluster utility on ℛ_n."""
    m = job.mask
    return float(f(family, job.coef[m], x[m]).sum()), float((job.weight[m] * x[m]
                                                              / capacity[m]).sum())


def step(job: Job, action: np.ndarray, mode: str, family: int, v: float, capacity: np.ndarray,
         usage: np.ndarray, later: np.ndarray | None = None) -> Step:
    """One step of DeadlineWelfare-v0 (module docstring) for the job ``job`` with the mesh's
    capacity ``C`` and usage ``ω`` before it (``(R, T)``); ``v`` is the bounds' upper end (the
    price scale of the learnable modes); ``later`` ``(R, T)``: the expected later demand after
    the job's slot (the ``"demand_price"`` mode only)."""
    if mode == "dispatch":
        y, clip = decode_dispatch(action, job)
    else:
        a = np.asarray(action, dtype=np.float64)
        clip = float(np.max(np.abs(np.clip(a, -1.0, 1.0) - a)))
        if mode == "demand_price":
            if later is None:
                raise ValueError("mode='demand_price' needs later, the expected later demand")
            y = decode_demand_price(a, job, family, v, capacity, usage, later)
        else:
            decode = decode_pricing if mode == "pricing" else decode_unit_prices
            y = decode(a, job, family, v, capacity, usage)
    x, cap_l1, wl_l1 = repair(y, job, capacity, usage)
    fj, fc = welfare(x, job, family, capacity)
    after = usage + x
    return Step(x=x, job_utility=fj, cluster_utility=fc, repair_capacity=cap_l1,
                repair_workload=wl_l1, action_clip=clip, usage=after,
                served=float(x.sum()) / job.workload if job.workload > 0 else 0.0,
                units_used=int((x > 1e-9).sum()), utilization=float((after / capacity).mean()))


def observation(job: Job | None, window: tuple[int, int], usage: np.ndarray,
                capacity: np.ndarray, n: int, n_jobs: int) -> dict[str, np.ndarray]:
    """The observation's job and mesh pieces for job ``n`` of ``n_jobs`` (``job=None`` after
    the last one), flat ``r * T + t``, float32: ``workload``, ``window``, ``allowed``,
    ``capability``, ``utility_coef``, ``cluster_weight`` (0 off ℛ_n), ``usage`` ``min(ω, C)``,
    ``capacity`` and ``progress`` ``n / N``."""
    f32 = np.float32
    U = capacity.size
    if job is None:
        rows = {k: np.zeros(U, f32) for k in ("allowed", "capability", "utility_coef",
                                              "cluster_weight")}
        head = {"workload": np.zeros(1, f32), "window": np.zeros(2, f32)}
    else:
        m = job.mask
        rows = {"allowed": m.astype(f32).ravel(),
                "capability": np.where(m, job.capability, 0.0).astype(f32).ravel(),
                "utility_coef": np.where(m, job.coef, 0.0).astype(f32).ravel(),
                "cluster_weight": np.where(m, job.weight, 0.0).astype(f32).ravel()}
        head = {"workload": np.array([job.workload], f32), "window": np.array(window, f32)}
    return {**head, **rows, "usage": np.minimum(usage, capacity).astype(f32).ravel(),
            "capacity": capacity.astype(f32).ravel(),
            "progress": np.array([min(1.0, n / max(n_jobs, 1))], f32)}
