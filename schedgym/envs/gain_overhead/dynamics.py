"""Pure functions of GainOverhead-v0: reward, supergradient, projection, feasibility.

Shared by the environment, the OgaSched agent, the offline solver and the tests. An allocation
``y`` is a float64 array ``(E, K)`` in resource units, rows in the instance's edge order. Arrivals
``x`` are ``(L,)`` (0/1 per slot, or arrival *counts* over a horizon: the reward is linear in x).

Reward (spec ogasched §1.6, the separable "nice setup")::

    q(x, y) = sum_l x_l [ sum_k sum_{r in R_l} f_r^k(y_(l,r)^k)  -  max_k beta_k Y_l^k ]
    Y_l^k   = sum_{r in R_l} y_(l,r)^k
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schedgym.core import utilities
from schedgym.core.projection import project_capped_simplex, project_paper
from schedgym.envs.gain_overhead.instance import GainOverheadInstance

#: Absolute tolerance used by :func:`is_feasible` (resource units).
FEASIBILITY_TOL = 1e-6


@dataclass(frozen=True)
class RewardParts:
    """Reward of one slot and its parts; per-type arrays have shape ``(L,)``."""

    reward: float
    gain: float
    penalty: float
    type_gain: np.ndarray  # sum_k sum_r f(y) per type, before multiplying by x
    type_penalty: np.ndarray  # max_k beta_k Y_l^k per type, before multiplying by x
    k_star: np.ndarray  # argmax of the penalty per type (lowest index on ties)


def type_totals(inst: GainOverheadInstance, y: np.ndarray) -> np.ndarray:
    """``Y_l^k = sum_{r in R_l} y_(l,r)^k``, shape ``(L, K)``."""
    return inst.type_incidence @ y


def reward_parts(inst: GainOverheadInstance, x: np.ndarray, y: np.ndarray) -> RewardParts:
    """Reward, gain and penalty of allocation ``y`` (E, K) against arrivals ``x`` (L,)."""
    f = utilities.value(inst.edge_codes, inst.edge_alpha, y, inst.reciprocal_scale)
    type_gain = inst.type_incidence @ f.sum(axis=1)
    weighted = type_totals(inst, y) * inst.beta  # (L, K)
    k_star = np.argmax(weighted, axis=1)  # first maximum = lowest index on ties
    type_pen = weighted[np.arange(inst.n_types), k_star]
    gain = float(x @ type_gain)
    penalty = float(x @ type_pen)
    return RewardParts(gain - penalty, gain, penalty, type_gain, type_pen, k_star)


def reward(inst: GainOverheadInstance, x: np.ndarray, y: np.ndarray) -> float:
    """``q(x, y)``; with ``x`` = arrival counts over a horizon it is the cumulative reward."""
    return reward_parts(inst, x, y).reward


def supergradient(inst: GainOverheadInstance, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Supergradient of ``q(x, .)`` at ``y``, spec ogasched (30), shape ``(E, K)``.

    ``dq/dy_(l,r)^k = x_l (f_r^k'(y) - beta_k 1{k == k*_l})`` with ``k*_l`` the lowest-index
    maximiser of ``beta_k Y_l^k`` (applied to every channel of type ``l``).
    """
    g = utilities.derivative(inst.edge_codes, inst.edge_alpha, y, inst.reciprocal_scale)
    k_star = np.argmax(type_totals(inst, y) * inst.beta, axis=1)
    ks_e = k_star[inst.edge_type]
    g[np.arange(inst.n_edges), ks_e] -= inst.beta[ks_e]
    return g * x[inst.edge_type][:, None]


def _grouped(inst: GainOverheadInstance, y: np.ndarray):
    """Gather ``y`` (E, K) into padded groups ``(R, K, D)`` with caps and capacities."""
    slots = inst.instance_slots  # (R, D)
    valid = slots >= 0
    idx = np.where(valid, slots, 0)
    zg = np.where(valid[:, :, None], y[idx], 0.0).transpose(0, 2, 1)  # (R, K, D)
    ag = np.where(valid[:, :, None], inst.edge_caps[idx], 0.0).transpose(0, 2, 1)
    return zg, ag, valid, idx


def _scatter(inst: GainOverheadInstance, vg: np.ndarray, valid: np.ndarray, idx: np.ndarray):
    out = np.zeros((inst.n_edges, inst.n_resources))
    v = vg.transpose(0, 2, 1)  # (R, D, K)
    out[idx[valid]] = v[valid]
    return out


def project(inst: GainOverheadInstance, z: np.ndarray, method: str = "exact") -> np.ndarray:
    """Projection of ``z`` (E, K) onto Y, over all (instance, resource) pairs at once.

    ``method="exact"``: the Euclidean projection (spec §3.4.2). ``method="paper"``: the paper's
    procedure (spec §3.4.1, an ablation; may be infeasible, see
    :func:`schedgym.core.projection.project_paper`).
    """
    zg, ag, valid, idx = _grouped(inst, np.asarray(z, dtype=np.float64))
    if method == "exact":
        vg = project_capped_simplex(zg, ag, inst.capacities)
    elif method == "paper":
        vg, _ = project_paper(zg, ag, inst.capacities)
    else:
        raise ValueError(f"method={method!r} is invalid: must be one of 'exact', 'paper'")
    return _scatter(inst, vg, valid, idx)


def instance_load(inst: GainOverheadInstance, y: np.ndarray) -> np.ndarray:
    """``sum_{l in L_r} y_(l,r)^k``, shape ``(R, K)``, resource units."""
    slots = inst.instance_slots
    valid = slots >= 0
    return np.where(valid[:, :, None], np.asarray(y)[np.where(valid, slots, 0)], 0.0).sum(axis=1)


def utilization(inst: GainOverheadInstance, y: np.ndarray) -> np.ndarray:
    """Fraction of each capacity in use, ``(R, K)`` in [0, 1] (0 where the capacity is 0)."""
    cap = inst.capacities
    load = instance_load(inst, y)
    with np.errstate(divide="ignore", invalid="ignore"):
        u = np.where(cap > 0, load / np.where(cap > 0, cap, 1.0), 0.0)
    return np.clip(u, 0.0, 1.0)


def feasibility_violation(inst: GainOverheadInstance, y: np.ndarray) -> float:
    """Largest violation of Y's constraints (0 when feasible), resource units."""
    y = np.asarray(y, dtype=np.float64)
    box = max(float(np.max(-y, initial=0.0)), float(np.max(y - inst.edge_caps, initial=0.0)))
    cap = float(np.max(instance_load(inst, y) - inst.capacities, initial=0.0))
    return max(box, cap, 0.0)


def is_feasible(inst: GainOverheadInstance, y: np.ndarray, tol: float = FEASIBILITY_TOL) -> bool:
    """``y`` in Y up to ``tol`` (box constraints (5) and capacities (6))."""
    y = np.asarray(y)
    return y.shape == (inst.n_edges, inst.n_resources) and feasibility_violation(inst, y) <= tol
