"""GainOverhead-v0's step in plain numpy: the statement the compiled kernels are tested against.

Read it next to the spec (``spec ogasched``: §1.4 feasible set, §1.6 reward, §3.4 projection)
and :mod:`.actions` (the action modes). One slot ``t`` with arrivals ``x = x(t)`` ``(L,)``:

1. **decode** the action, clipped to ``[-1, 1]``, into a target ``z`` ``(E, K)`` in resource
   units with ``0 <= z <= a_l^k`` (:func:`decode`);
2. **project** ``z`` onto the feasible set ``Y`` (box (5) and capacities (6)), the exact
   Euclidean projection, one (instance, resource) group at a time (:func:`project`);
3. **reward** ``q(x, y) = gain - penalty`` of the projected ``y`` (:func:`reward_parts`)::

       gain    = sum_l x_l sum_{r in R_l} sum_k f_r^k(y_(l,r)^k)
       penalty = sum_l x_l max_k beta_k Y_l^k,     Y_l^k = sum_{r in R_l} y_(l,r)^k

4. **next state**: the slot advances to ``t + 1``; the observation shows the utilization
   ``min(load / c, 1)`` of the played ``y`` and the arrivals of slot ``t + 1`` (revealed
   protocol) or ``t`` (hidden); the episode is truncated after ``T`` slots (:func:`step`).

Nothing here is fast; everything here is meant to be obvious. To change the model, change it
here first, then make :mod:`.dynamics` (and :mod:`.actions`) agree: ``tests/envs/gain_overhead/
test_reference.py`` compares them on random instances, modes and actions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schedgym.envs.gain_overhead.types import GainOverheadInstance


def utility(family: str, alpha: float, y: float, s: float) -> float:
    """``f(y)`` of one (instance, resource) (spec §2.2; ``s``: the reciprocal scale)."""
    if family == "linear":
        return alpha * y
    if family == "log":
        return alpha * np.log1p(y)
    if family == "reciprocal":
        return 1.0 / (s * alpha) - 1.0 / (y + s * alpha)
    return alpha * (np.sqrt(y + 1.0) - 1.0)  # poly


def slope_at_zero(family: str, alpha: float, s: float) -> float:
    """``f'(0)`` (the ``varpi`` of spec §2.1)."""
    return {"linear": alpha, "log": alpha, "reciprocal": 1.0 / (s * alpha) ** 2,
            "poly": alpha / 2.0}[family]


def best_response(family: str, alpha: float, price: float, cap: float, s: float) -> float:
    """``argmax_{0 <= y <= cap} f(y) - price * y``: ``cap`` for a non-positive price, else the
    ``y`` where ``f'(y) = price`` (all of ``cap`` or nothing for a linear ``f``), clipped."""
    if price <= 0.0:
        return cap
    if family == "linear":
        y = np.inf if alpha > price else 0.0
    elif family == "log":  # alpha / (1 + y) = price
        y = alpha / price - 1.0
    elif family == "poly":  # alpha / (2 sqrt(1 + y)) = price
        y = (alpha / (2.0 * price)) ** 2 - 1.0
    else:  # reciprocal: 1 / (y + s alpha)^2 = price
        y = 1.0 / np.sqrt(price) - s * alpha
    return float(min(max(y, 0.0), cap))


def decode(inst: GainOverheadInstance, mode: str, action: np.ndarray,
           served: np.ndarray | None = None) -> np.ndarray:
    """Target ``z`` ``(E, K)`` of an action of ``mode`` (:mod:`.actions`): each entry of the
    clipped action becomes ``u = (a + 1) / 2`` in ``[0, 1]``;

    - ``allocation`` (``E K`` entries): ``z_(l,r)^k = u_(l,r)^k a_l^k``;
    - ``fractions`` (``L K``): ``z_(l,r)^k = u_lk a_l^k`` on every channel of type ``l``;
    - ``prices`` (``L K``): the best response of each channel at the price ``u_lk pmax_lk``,
      ``pmax_lk = max_{r in R_l} f_r^k'(0)``.

    ``served`` bool ``(L,)``: channels of the other types get ``z = 0`` (``None``: all)."""
    E, K = inst.n_edges, inst.n_resources
    u = (np.clip(np.asarray(action, dtype=np.float64), -1.0, 1.0) + 1.0) / 2.0
    z = np.zeros((E, K))
    for e, (l, r) in enumerate(inst.edges):
        for k in range(K):
            cap = inst.requests[l, k]
            if mode == "allocation":
                z[e, k] = u[e * K + k] * cap
            elif mode == "fractions":
                z[e, k] = u[l * K + k] * cap
            else:  # prices
                pmax = max(slope_at_zero(inst.utility[rr, k], inst.alpha[rr, k],
                                         inst.reciprocal_scale)
                           for ll, rr in inst.edges if ll == l)
                z[e, k] = best_response(inst.utility[r, k], inst.alpha[r, k], u[l * K + k] * pmax,
                                        cap, inst.reciprocal_scale)
            if served is not None and not served[l]:
                z[e, k] = 0.0
    return z


def project_group(z: np.ndarray, a: np.ndarray, c: float) -> np.ndarray:
    """Euclidean projection of ``z`` ``(n,)`` onto ``{0 <= v <= a, sum v <= c}`` (spec §3.4):
    ``v = clip(z - theta, 0, a)`` with ``theta = 0`` if that is within ``c``, else the
    ``theta > 0`` with ``g(theta) = sum clip(z - theta, 0, a) = c``. ``g`` is continuous,
    non-increasing and linear between the breakpoints ``z_i - a_i`` and ``z_i``, so theta is
    found by linear interpolation between the two breakpoints whose ``g`` straddles ``c``."""
    def g(theta: float) -> float:
        return float(np.clip(z - theta, 0.0, a).sum())

    if g(0.0) <= c:
        return np.clip(z, 0.0, a)
    points = [0.0] + sorted(p for p in np.concatenate([z - a, z]) if p > 0.0)
    values = [g(p) for p in points]
    i = next(j for j, v in enumerate(values) if v <= c)  # exists: g(max z) = 0 <= c
    lo, hi, g_lo, g_hi = points[i - 1], points[i], values[i - 1], values[i]
    theta = lo + (g_lo - c) * (hi - lo) / (g_lo - g_hi)
    return np.clip(z - theta, 0.0, a)


def project(inst: GainOverheadInstance, z: np.ndarray) -> np.ndarray:
    """Euclidean projection of ``z`` ``(E, K)`` onto ``Y``: ``Y`` is the product of one
    capped simplex per (instance ``r``, resource ``k``) over the channels of ``r``."""
    y = np.zeros_like(z, dtype=np.float64)
    for r in range(inst.n_instances):
        channels = np.flatnonzero(inst.edges[:, 1] == r)
        for k in range(inst.n_resources):
            caps = inst.requests[inst.edges[channels, 0], k]
            y[channels, k] = project_group(z[channels, k], caps, inst.capacities[r, k])
    return y


@dataclass(frozen=True)
class Parts:
    """The reward of one slot and its parts; per-type arrays ``(L,)`` before the factor
    ``x_l``."""

    reward: float
    gain: float
    penalty: float
    type_gain: np.ndarray
    type_penalty: np.ndarray
    k_star: np.ndarray  # argmax_k beta_k Y_l^k, the lowest k on ties


def reward_parts(inst: GainOverheadInstance, x: np.ndarray, y: np.ndarray) -> Parts:
    """``q(x, y)`` and its parts (spec §1.6, the separable nice setup)."""
    L, K = inst.n_types, inst.n_resources
    type_gain, totals = np.zeros(L), np.zeros((L, K))
    for e, (l, r) in enumerate(inst.edges):
        for k in range(K):
            type_gain[l] += utility(inst.utility[r, k], inst.alpha[r, k], y[e, k],
                                    inst.reciprocal_scale)
            totals[l, k] += y[e, k]
    weighted = inst.beta * totals  # (L, K)
    type_penalty, k_star = weighted.max(axis=1), weighted.argmax(axis=1)
    gain = float(np.sum(x * type_gain))
    penalty = float(np.sum(x * type_penalty))
    return Parts(gain - penalty, gain, penalty, type_gain, type_penalty, k_star)


def utilization(inst: GainOverheadInstance, y: np.ndarray) -> np.ndarray:
    """``min(load / c, 1)`` ``(R, K)`` with ``load_r^k = sum_{l in L_r} y_(l,r)^k`` (0 where
    the capacity is 0)."""
    load = np.zeros((inst.n_instances, inst.n_resources))
    for e, (_, r) in enumerate(inst.edges):
        load[r] += y[e]
    c = inst.capacities
    return np.where(c > 0, np.minimum(load / np.where(c > 0, c, 1.0), 1.0), 0.0)


@dataclass(frozen=True)
class Step:
    """One slot: the reward, its parts, the played allocation and the next state."""

    reward: float
    gain: float
    penalty: float
    allocation: np.ndarray  # y (E, K), resource units
    projection_distance: float  # ||y - z||, resource units
    action_clip: float  # max |clip(a) - a|
    utilization: np.ndarray  # (R, K), the next observation's
    utilization_mean: float  # over the (instance, resource) pairs with a positive capacity
    next_slot: int
    next_arrivals: np.ndarray  # (L,), what the next observation shows
    truncated: bool


def step(inst: GainOverheadInstance, mode: str, action: np.ndarray, arrivals: np.ndarray,
         t: int, protocol: str = "revealed") -> Step:
    """Slot ``t`` of an episode with arrivals ``arrivals`` ``(T, L)``: decode ``action``
    (the learnable modes serve only the types the observation shows as arrived, under the
    revealed protocol), project, score against ``x(t)``, advance."""
    a = np.asarray(action, dtype=np.float64)
    T, x = arrivals.shape[0], arrivals[t]
    served = x > 0 if (mode != "allocation" and protocol == "revealed") else None
    z = decode(inst, mode, a, served)
    y = project(inst, z)
    parts = reward_parts(inst, x, y)
    util = utilization(inst, y)
    lag = 0 if protocol == "revealed" else 1
    shown = t + 1 - lag  # the slot whose arrivals the next observation shows
    next_x = arrivals[shown] if 0 <= shown < T else np.zeros(inst.n_types)
    return Step(parts.reward, parts.gain, parts.penalty, y, float(np.sqrt(np.sum((y - z) ** 2))),
                float(np.max(np.abs(np.clip(a, -1.0, 1.0) - a), initial=0.0)), util,
                float(util.sum() / max(int((inst.capacities > 0).sum()), 1)), t + 1, next_x,
                t + 1 >= T)
