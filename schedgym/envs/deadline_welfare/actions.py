"""Action modes of DeadlineWelfare-v0 and the decoders of the learnable ``"pricing"``,
``"unit_prices"`` and ``"demand_price"`` modes.

``"dispatch"`` (default): ``Box(-1, 1, (R*T,))``, one entry per resource unit, mapped affinely to
``[0, x̄_nr]`` and made feasible by the env's repair (see the env docstring).

``"pricing"``: ``Box(-1, 1, (3,))``, three scalars per job, ``a = (a_0, a_1, a_2)``:

- base reserve price ``p_0 = v max(0, a_0)``;
- congestion slope ``p_1 = v max(0, a_1)``; the price of unit ``r`` is
  ``p_r = p_0 + p_1 ω_r / C_r`` (ω_r / C_r the unit's utilisation before the job);
- served fraction ``q = min(1, 1 + a_2)`` of the job's workload ρ_n,

with ``v`` the upper bound of the marginal social welfare (the observation's ``bounds[1]``, the
scale of OnSocMax's pricing function, paper Theorem 2). The decoder returns the job's exact best
response to these prices, the per-job problem

    max_x  Σ_r f_r(x_r) + (β_r / C_r - p_r) x_r
    s.t.   Σ_r x_r <= q ρ_n,   0 <= x_r <= room_r = max(0, min(x̄_r, C_r - ω_r))  (r in ℛ_n),

which is OnSocMax's per-job problem P3 with a price that is constant within the decision instead
of φ(ω). It is feasible by construction (constraints (4)-(7) of P1), so the env's repair has
nothing to do. With the zero action (the initial mean of an SB3 Gaussian policy) the prices are 0
and q = 1: the job gets its myopic welfare maximiser, a MAX-FIRST-like policy; a learner improves
on it by reserving capacity (positive prices) for later, more valuable jobs.

``"unit_prices"``: ``Box(-1, 1, (R*T,))``, one entry per mesh unit (the ``dispatch`` action's
order, entity ``r * T + t`` of the entity observation): unit ``r``'s price is ``p_r = v max(0,
a_r)`` and the job is served in full (``q = 1``); the decoder returns the same best response.
Entries off the job's units are ignored. The zero action is again the job's myopic optimum; a
per-unit rule such as the ``time-of-use`` agent's (a price per unit of the workload later jobs
are expected to want there) is one action of this mode, and a shared-weights policy with one
head per unit (:class:`~schedgym.train.policies.EntityPolicy`) can express it.

``"demand_price"``: ``Box(-1, 1, (1,))``, one scalar per job: unit ``r``'s price is
``p_r = v max(0, a_0) D_r / C_r``, with ``D_r`` the workload that jobs arriving after the
job's slot are expected to want on the unit (the env's ``expected_later_demand``, from the
scenario's job distribution) and ``C_r`` its capacity; the job is served in full. The zero
action is the job's myopic optimum and ``a_0 = lam`` is the ``time-of-use`` agent's rule at
that ``lam`` (its default: ``a_0 = 0.15``): the learner chooses, job by job, how much the
expected later demand should cost.

Solution (KKT): with the multiplier λ >= 0 of the workload constraint and ``m_r = λ + p_r -
β_r / C_r``, ``x_r(λ) = room_r`` where ``m_r <= 0`` and else ``clip(g_r(m_r), 0, room_r)`` with
``g = (f')^{-1}``: linear ``a x`` -> ``room_r`` if ``a_r > m_r`` else 0 (ties at ``a_r = m_r``:
filled in flat order r * T + t until the budget is met); log -> ``a_r / m_r - 1``; sqrt ->
``(a_r / (2 m_r))^2``. λ = 0 if ``Σ x(0) <= q ρ``; else linear: greedy by ``a_r + β_r / C_r -
p_r`` (stable order, last unit filled partially), concave: bisection on λ (100 halvings, keeping the
feasible side) and a final scale-down so ``Σ x <= q ρ`` holds exactly in floating point.
"""

from __future__ import annotations

import numba
import numpy as np

from schedgym.envs.deadline_welfare.dynamics import f_prime_inverse

#: Names of the action modes, default first (``env.unwrapped.metadata["action_modes"]``).
ACTION_MODES: tuple[str, ...] = ("dispatch", "pricing", "unit_prices", "demand_price")
#: Size of the ``"pricing"`` action.
PRICING_DIM = 3


def pricing_params(action: np.ndarray, v: float) -> tuple[float, float, float]:
    """``(p_0, p_1, q)`` of a pricing action ``(3,)`` in [-1, 1] and the price scale ``v``."""
    a0, a1, a2 = (float(x) for x in action)
    return v * max(0.0, a0), v * max(0.0, a1), min(1.0, 1.0 + a2)


@numba.njit(cache=True)
def _response(code: int, a: np.ndarray, m: np.ndarray, room: np.ndarray,
              out: np.ndarray) -> float:
    """``x(λ)`` of the concave families into ``out`` given ``m = λ + p - β/C``; returns Σ x."""
    s = 0.0
    for r in range(a.size):
        x = room[r] if m[r] <= 0.0 else f_prime_inverse(code, a[r], m[r])  # (f')^-1(m)
        x = min(max(x, 0.0), room[r])
        out[r] = x
        s += x
    return s


@numba.njit(cache=True)
def _concave(code: int, a: np.ndarray, gain: np.ndarray, price: np.ndarray,
             room: np.ndarray, budget: float) -> np.ndarray:
    """Concave families: water-filling on λ (``gain = β/C``, ``m = λ + p - gain``)."""
    U = a.size
    x = np.empty(U)
    net = gain - price
    if _response(code, a, price - gain, room, x) <= budget:
        return x
    lo, hi = 0.0, 1.0
    amax = 0.0
    for r in range(U):
        amax = max(amax, a[r])
        hi = max(hi, net[r])
    if code == 1:
        hi += amax  # m >= a_r -> x_r = a_r / m - 1 <= 0
    else:
        hi += amax / (2.0 * np.sqrt(budget / U)) if budget > 0 else 1e300
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if _response(code, a, mid + price - gain, room, x) > budget:
            lo = mid
        else:
            hi = mid
    s = _response(code, a, hi + price - gain, room, x)
    if s > budget:
        x *= budget / s
    return x


@numba.njit(cache=True)
def _linear(a: np.ndarray, gain: np.ndarray, price: np.ndarray, room: np.ndarray,
            budget: float) -> np.ndarray:
    """Linear family: fractional knapsack by ``(a + β/C) - p`` (stable order)."""
    x = np.zeros(a.size)
    value = (a + gain) - price
    order = np.argsort(-value, kind="mergesort")
    left = budget
    for i in order:
        if value[i] <= 0.0 or left <= 0.0:
            break
        x[i] = min(room[i], left)
        left -= x[i]
    return x


def best_response(code: int, coef: np.ndarray, weight: np.ndarray, capacity: np.ndarray,
                  room: np.ndarray, price: np.ndarray, budget: float) -> np.ndarray:
    """The job's best response to unit prices (the problem in the module docstring).

    Args:
        code: utility family code (0 linear, 1 log, 2 sqrt).
        coef, weight, capacity, room, price: float ``(m,)`` on the job's units: ``a_r``,
            ``β_r``, ``C_r``, ``room_r >= 0`` (workload units) and ``p_r >= 0``.
        budget: ``q ρ_n >= 0``, workload units.

    Returns:
        float64 ``(m,)``: ``0 <= x <= room`` with ``Σ x <= budget``.
    """
    a = np.ascontiguousarray(coef, dtype=np.float64)
    gain = np.ascontiguousarray(np.asarray(weight, dtype=np.float64)
                                / np.asarray(capacity, dtype=np.float64))
    p = np.ascontiguousarray(np.broadcast_to(np.asarray(price, dtype=np.float64), a.shape))
    room = np.ascontiguousarray(np.maximum(np.asarray(room, dtype=np.float64), 0.0))
    budget = max(float(budget), 0.0)
    if a.size == 0:
        return np.zeros(0)
    if code == 0:
        return _linear(a, gain, p, room, budget)
    return _concave(int(code), a, gain, p, room, budget)


def decode_job(mode: str, action: np.ndarray, code: int, v: float, units: np.ndarray,
               capability: np.ndarray, coef: np.ndarray, weight: np.ndarray,
               capacity: np.ndarray, usage: np.ndarray, workload: float,
               later: np.ndarray | None = None) -> np.ndarray:
    """A learnable mode's action (validated, clipped to [-1, 1]) -> the job's feasible dispatch
    on its entries ``(m,)``, workload units: its best response to the mode's unit prices.

    ``units`` int ``(m,)`` are the job's flat units ``r * T + t`` and ``capability``, ``coef``,
    ``weight`` its values there; ``capacity``, ``usage`` the mesh's flat ``C`` and ``ω``
    ``(R T,)``; ``v`` the price scale; ``workload`` ρ_n; ``later`` the flat expected later
    demand after the job's slot (``"demand_price"`` only). Modes: ``"pricing"`` (``(3,)``: base
    price + congestion slope, served fraction), ``"unit_prices"`` (``(R T,)``: one price per
    unit), ``"demand_price"`` (``(1,)``: a price per unit of later demand)."""
    cap = np.asarray(capacity, dtype=np.float64).reshape(-1)[units]
    use = np.asarray(usage, dtype=np.float64).reshape(-1)[units]
    budget = workload
    if mode == "pricing":
        p0, p1, q = pricing_params(action, v)
        price = p0 + p1 * use / cap
        budget = q * workload
    elif mode == "unit_prices":
        price = v * np.maximum(np.asarray(action, dtype=np.float64).reshape(-1)[units], 0.0)
    elif mode == "demand_price":
        if later is None:
            raise ValueError("mode='demand_price' needs later, the expected later demand")
        lam = max(0.0, float(np.asarray(action, dtype=np.float64).reshape(-1)[0]))
        price = lam * v * np.asarray(later, dtype=np.float64).reshape(-1)[units] / cap
    else:
        raise ValueError(f"mode={mode!r} is invalid: must be 'pricing', 'unit_prices' or "
                         "'demand_price'")
    room = np.maximum(0.0, np.minimum(capability, cap - use))
    return best_response(code, coef, weight, cap, room, price, budget)


def _dense(mode: str, action: np.ndarray, code: int, v: float, mask: np.ndarray,
           capability: np.ndarray, coef: np.ndarray, weight: np.ndarray, capacity: np.ndarray,
           usage: np.ndarray, workload: float, later: np.ndarray | None = None) -> np.ndarray:
    """:func:`decode_job` on a job given by whole-mesh ``(R, T)`` arrays; ``(R, T)`` result."""
    idx = np.flatnonzero(np.asarray(mask).reshape(-1))
    x = decode_job(mode, action, code, v, idx, np.asarray(capability).reshape(-1)[idx],
                   np.asarray(coef).reshape(-1)[idx], np.asarray(weight).reshape(-1)[idx],
                   capacity, usage, workload, later)
    out = np.zeros(np.asarray(mask).size)
    out[idx] = x
    return out.reshape(np.shape(mask))


def decode_pricing(action: np.ndarray, code: int, v: float, mask: np.ndarray,
                   capability: np.ndarray, coef: np.ndarray, weight: np.ndarray,
                   capacity: np.ndarray, usage: np.ndarray, workload: float) -> np.ndarray:
    """A ``"pricing"`` action ``(3,)`` (already validated and clipped to [-1, 1]) -> the job's
    feasible dispatch ``(R, T)`` in workload units.

    ``mask`` (bool), ``capability``, ``coef``, ``weight`` are the job's ``(R, T)`` arrays,
    ``capacity`` and ``usage`` the mesh's ``C`` and ``ω`` ``(R, T)``, ``v`` the price scale,
    ``workload`` ρ_n. (:func:`decode_job` is the same on the job's own units.)
    """
    return _dense("pricing", action, code, v, mask, capability, coef, weight, capacity, usage,
                  workload)


def decode_unit_prices(action: np.ndarray, code: int, v: float, mask: np.ndarray,
                       capability: np.ndarray, coef: np.ndarray, weight: np.ndarray,
                       capacity: np.ndarray, usage: np.ndarray, workload: float) -> np.ndarray:
    """A ``"unit_prices"`` action ``(R T,)`` (validated, clipped to [-1, 1]) -> the job's
    feasible dispatch ``(R, T)``: its best response to the prices ``v max(0, a_r)`` on its
    units, the whole workload ``workload`` offered. Arguments as :func:`decode_pricing`'s."""
    return _dense("unit_prices", action, code, v, mask, capability, coef, weight, capacity,
                  usage, workload)


def decode_demand_price(action: np.ndarray, code: int, v: float, mask: np.ndarray,
                        capability: np.ndarray, coef: np.ndarray, weight: np.ndarray,
                        capacity: np.ndarray, usage: np.ndarray, workload: float,
                        later: np.ndarray) -> np.ndarray:
    """A ``"demand_price"`` action ``(1,)`` (validated, clipped to [-1, 1]) -> the job's
    feasible dispatch ``(R, T)``: its best response to the prices ``v max(0, a_0) D / C`` on
    its units, the whole workload offered; ``later`` ``(R, T)`` or ``(R T,)`` is ``D``, the
    expected later demand after the job's slot. Other arguments as :func:`decode_pricing`'s."""
    return _dense("demand_price", action, code, v, mask, capability, coef, weight, capacity,
                  usage, workload, later)
