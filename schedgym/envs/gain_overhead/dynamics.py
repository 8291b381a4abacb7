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
from schedgym.core.projection import project_columns, project_paper
from schedgym.envs.gain_overhead.types import GainOverheadInstance

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
    return np.add.reduceat(y, inst.type_starts, axis=0)


def reward_parts(inst: GainOverheadInstance, x: np.ndarray, y: np.ndarray) -> RewardParts:
    """Reward, gain and penalty of allocation ``y`` (E, K) against arrivals ``x`` (L,)."""
    codes = inst.single_family if inst.single_family is not None else inst.edge_codes
    f = utilities.value(codes, inst.edge_alpha, y, inst.reciprocal_scale)
    type_gain = np.add.reduceat(f.sum(axis=1), inst.type_starts)
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
    codes = inst.single_family if inst.single_family is not None else inst.edge_codes
    g = utilities.derivative(codes, inst.edge_alpha, y, inst.reciprocal_scale)
    k_star = np.argmax(type_totals(inst, y) * inst.beta, axis=1)
    ks_e = k_star[inst.edge_type]
    g[np.arange(inst.n_edges), ks_e] -= inst.beta[ks_e]
    return g * x[inst.edge_type][:, None]


def _gather(inst: GainOverheadInstance, y: np.ndarray) -> np.ndarray:
    """``y`` (E, K) -> groups in the (entries, groups) layout ``(D, R*K)``; padding holds
    arbitrary values (mask with ``inst.group_valid``, or rely on its zero caps)."""
    return np.asarray(y, dtype=np.float64).ravel()[inst.group_gather]


def project_grouped(
    inst: GainOverheadInstance, z: np.ndarray, method: str = "exact"
) -> tuple[np.ndarray, np.ndarray]:
    """Projection of ``z`` (E, K) onto Y; returns ``(y (E, K), load (R, K))`` where ``load`` is
    the per-instance usage ``sum_{l in L_r} y``. See :func:`project`."""
    zt = _gather(inst, z)
    if method == "exact":
        vt = project_columns(zt, inst.group_caps, inst.capacities.ravel())
    elif method == "paper":
        v, _ = project_paper(zt.T, inst.group_caps.T, inst.capacities.ravel())
        vt = np.ascontiguousarray(v.T)
    else:
        raise ValueError(f"method={method!r} is invalid: must be one of 'exact', 'paper'")
    y = vt.ravel()[inst.group_scatter].reshape(inst.n_edges, inst.n_resources)
    return y, vt.sum(axis=0).reshape(inst.n_instances, inst.n_resources)


def project(inst: GainOverheadInstance, z: np.ndarray, method: str = "exact") -> np.ndarray:
    """Projection of ``z`` (E, K) onto Y, over all (instance, resource) pairs at once.

    ``method="exact"``: the Euclidean projection (spec §3.4.2). ``method="paper"``: the paper's
    procedure (spec §3.4.1, an ablation; may be infeasible, see
    :func:`schedgym.core.projection.project_paper`).
    """
    return project_grouped(inst, z, method)[0]


def instance_load(inst: GainOverheadInstance, y: np.ndarray) -> np.ndarray:
    """``sum_{l in L_r} y_(l,r)^k``, shape ``(R, K)``, resource units."""
    g = np.where(inst.group_valid, _gather(inst, y), 0.0)
    return g.sum(axis=0).reshape(inst.n_instances, inst.n_resources)


def utilization_from_load(inst: GainOverheadInstance, load: np.ndarray) -> np.ndarray:
    """Fraction of each capacity in use, ``(R, K)`` in [0, 1] (0 where the capacity is 0)."""
    return np.minimum(load * inst.inverse_capacities, 1.0)


def utilization(inst: GainOverheadInstance, y: np.ndarray) -> np.ndarray:
    """Fraction of each capacity in use, ``(R, K)`` in [0, 1] (0 where the capacity is 0)."""
    return utilization_from_load(inst, instance_load(inst, y))


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
