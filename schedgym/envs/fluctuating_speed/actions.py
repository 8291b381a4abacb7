"""Action modes of FluctuatingSpeed-v0 and the decoder of the learnable ``"scores"`` mode.

- ``"selection"`` (default, what the classical agents play): ``MultiBinary(|E|)``, the raw
  channel selection, masked and repaired by the env (see the env docstring).
- ``"scores"`` (learnable): ``Box(-1, 1, (L * R,), float32)``, one score per (port, server) cell
  of the ``(L, R)`` grid, row-major (entry ``l * R + r``); cells that are not edges are ignored.
  The space depends only on the sizes ``L, R``, never on the instance seed, so one policy can be
  trained over many instances (``--instance-seeds``).

Decoding rule of ``"scores"`` (deterministic, always feasible, no repair needed): among the edges
of the ports with a job in this slot whose score is **strictly positive**, visit the edges by
descending score (exact ties: lower edge index first) and select an edge iff its requests fit in
what the already selected edges leave of the capacity (``A[:, e] <= c - A x``). Scores outside
[-1, 1] are clipped first (``info["action_clip"]``); NaN/inf or a wrong shape raise ``ValueError``.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from schedgym.core.envbase import clip_unit, unit_box, validate_action
from schedgym.envs.fluctuating_speed.types import FluctuatingSpeedInstance

#: The action modes, default first.
ACTION_MODES: tuple[str, ...] = ("selection", "scores")


def scores_space(n_types: int, n_instances: int) -> spaces.Box:
    """The ``"scores"`` action space ``Box(-1, 1, (L * R,), float32)``."""
    return unit_box(n_types * n_instances)


def check_scores(inst: FluctuatingSpeedInstance, action: object) -> tuple[np.ndarray, float]:
    """``action`` as float64 ``(L * R,)`` clipped to [-1, 1] and the amount clipped (max absolute
    change); raises ``ValueError`` on a wrong shape or a NaN/inf entry."""
    a = validate_action(action, inst.n_types * inst.n_instances)
    return clip_unit(a)


def decode_scores(inst: FluctuatingSpeedInstance, scores: np.ndarray,
                  arrivals: np.ndarray) -> np.ndarray:
    """The selection int8 ``(E,)`` of the ``"scores"`` decoding rule (module docstring).

    Args:
        scores: float ``(L * R,)`` grid scores (already checked, any real values).
        arrivals: ``(L,)``, > 0 where the port has a job this slot.
    """
    s = np.asarray(scores, dtype=np.float64)[inst.cell_of_edge]
    present = np.asarray(arrivals)[inst.port_of_edge] > 0
    cand = np.flatnonzero(present & (s > 0.0))
    order = cand[np.argsort(-s[cand], kind="stable")]
    x = np.zeros(inst.n_edges, dtype=np.int8)
    remaining = inst.capacities.astype(np.int64)
    req = inst.requests
    for e in order:
        a = req[:, e]
        if np.all(a <= remaining):
            x[e] = 1
            remaining = remaining - a
    return x


def to_grid(inst: FluctuatingSpeedInstance, values: np.ndarray) -> np.ndarray:
    """Per-edge ``values`` ``(E,)`` scattered onto the row-major ``(L * R,)`` grid (0 off the
    edges)."""
    out = np.zeros(inst.n_types * inst.n_instances, dtype=np.float64)
    out[inst.cell_of_edge] = values
    return out


def instance_features(inst: FluctuatingSpeedInstance) -> np.ndarray:
    """float32 ``((K + 2) L R,)`` in [0, 1]: what a policy may know of the instance, on the
    ``(L, R)`` grid so its size never depends on the instance seed.

    Blocks, each row-major ``(l, r)``: the edge indicator; for every device type ``k`` the
    request as a share of the capacity ``min(a_k^e / c_k, 1)`` (1 where ``c_k = 0`` and the edge
    requests type ``k``); the known cost ``min(C_e, 1)``. The utility means are hidden.
    """
    K = inst.n_resources
    c = inst.capacities.astype(np.float64)[:, None]
    share = np.where(c > 0, inst.requests / np.where(c > 0, c, 1.0),
                     (inst.requests > 0).astype(np.float64))
    blocks = [inst.mask.reshape(-1).astype(np.float64)]
    blocks += [to_grid(inst, np.minimum(share[k], 1.0)) for k in range(K)]
    blocks.append(to_grid(inst, np.minimum(inst.cost, 1.0)))
    return np.concatenate(blocks).astype(np.float32)
