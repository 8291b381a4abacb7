"""The ``obs_mode="entities"`` observation of FluctuatingSpeed-v0 (issue 24's entity contract).

An entity is a (port, server) cell of the ``(L, R)`` grid, ``N = L * R``, cell ``l * R + r`` (the
order of the ``"scores"`` action: entity ``i`` <-> action entry ``i``). Each row carries what an
index rule for that cell reads (HAUF's and ESDP's per-edge index, a greedy optimistic index per
unit of capacity): whether it is an edge, whether its port has a job now, its requests as shares
of the capacities, its known cost, the previous slot's use and feedback, and the running
statistics of its observed net utility. Every feature lies in [0, 1].

The ``"entities"`` key is a 1-D ``Box(0, 1, (N * F,))``: the ``(N, F)`` rows flattened row-major,
cell ``i``'s features at ``[i * F:(i + 1) * F]`` (1-D so both env checkers accept it without a
warning; :class:`~schedgym.train.policies.EntityPolicy` reshapes it back, ``N`` from the mask's
length). Entity features (:data:`ENTITY_FEATURES`, ``F = 12``), 0 on a cell that is not an edge
except ``job`` and ``waiting`` (the port's):

==================  =============================================================================
``edge``            1 if ``(l, r)`` is an edge of the service-locality graph
``job``             1 if port ``l`` has a job in the slot about to be scheduled (``arrivals[l]``)
``request_mean``    mean over device types ``k`` of ``min(a_k^e / c_k, 1)`` (share of capacity)
``request_max``     max over ``k`` of the same share (the binding type of a lone edge)
``cost``            the known cost ``min(C_e, 1)``
``waiting``         port ``l``'s head-of-line waiting time ``w_l(t) / T``
``last_used``       1 if the edge was used in the previous slot (after masking/repair)
``last_feedback``   previous slot's realised net utility ``clip(Z_e - C_e, 0, 1)`` (0 if unused)
``seen``            1 if the edge was used at least once this episode
``mean``            running mean of its observed net utility this episode (0 if never used)
``count``           number of slots it was used this episode, divided by ``T``
``bonus``           ``sqrt((ln(t + 2) / ln(T + 2)) / max(n_e, 1))``: a UCB-style exploration
                    width (``n_e`` = slots used), scaled into (0, 1]
==================  =============================================================================

Mask: 1 on the cells that are edges of ports with a job now (the cells whose score the decoder
reads), else 0. Context (:data:`CONTEXT_FEATURES`, ``C = 6``): ``progress`` ``t / T``,
``utilization_mean`` / ``utilization_max`` of the previous slot over device types, ``jobs`` (share
of ports with a job now), ``edge_density`` ``|E| / (L R)``, ``waiting_mean`` (mean over ports of
``w_l / T``).

The builder works on a batch (leading axis of copies) so the single env (a batch of one) and the
native vector env run the same arithmetic (equal bits).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from gymnasium import spaces

from schedgym.core.entities import entity_space
from schedgym.envs.fluctuating_speed.types import FluctuatingSpeedInstance

ENTITY_FEATURES: tuple[str, ...] = (
    "edge", "job", "request_mean", "request_max", "cost", "waiting", "last_used",
    "last_feedback", "seen", "mean", "count", "bonus")
CONTEXT_FEATURES: tuple[str, ...] = (
    "progress", "utilization_mean", "utilization_max", "jobs", "edge_density", "waiting_mean")


class EntityTables(NamedTuple):
    """Per-instance constants of the entity observation.

    ``static``: float64 ``(N, 5)``, the columns ``edge``, (``job`` slot, 0), ``request_mean``,
    ``request_max``, ``cost``; ``port_of_cell``: int64 ``(N,)``; ``cell_of_edge``: int64
    ``(E,)``; ``is_edge``: float64 ``(N,)``; ``density``: ``|E| / N``.
    """

    static: np.ndarray
    port_of_cell: np.ndarray
    cell_of_edge: np.ndarray
    is_edge: np.ndarray
    density: float


def tables(inst: FluctuatingSpeedInstance) -> EntityTables:
    """The :class:`EntityTables` of ``inst``."""
    L, R = inst.n_types, inst.n_instances
    N = L * R
    c = inst.capacities.astype(np.float64)[:, None]
    share = np.where(c > 0, inst.requests / np.where(c > 0, c, 1.0),
                     (inst.requests > 0).astype(np.float64))
    share = np.minimum(share, 1.0)  # (K, E)
    cell = np.ascontiguousarray(inst.cell_of_edge, dtype=np.int64)
    static = np.zeros((N, 5))
    static[:, 0] = inst.mask.reshape(-1)
    static[cell, 2] = share.mean(axis=0) if share.shape[0] else 0.0
    static[cell, 3] = share.max(axis=0) if share.shape[0] else 0.0
    static[cell, 4] = np.minimum(inst.cost, 1.0)
    return EntityTables(static, np.repeat(np.arange(L, dtype=np.int64), R), cell,
                        static[:, 0].copy(), inst.n_edges / N)


def spaces_of(n_entities: int) -> spaces.Dict:
    """The ``"entities"`` observation space for ``N = n_entities`` cells: ``entities``
    ``(N * F,)`` (the rows flattened row-major), ``mask`` ``(N,)``, ``context`` ``(C,)``."""
    return entity_space(n_entities, len(ENTITY_FEATURES), len(CONTEXT_FEATURES))


def observation(tab: EntityTables, arrivals: np.ndarray, util: np.ndarray,
                feedback: np.ndarray, used: np.ndarray, waiting: np.ndarray,
                t: np.ndarray, horizon: int, fsum: np.ndarray,
                fcount: np.ndarray) -> dict[str, np.ndarray]:
    """The entity observations of a batch of ``B`` copies at the start of their slots ``t``.

    Args:
        arrivals: ``(B, L)`` jobs of the slot about to be scheduled (0 once ``t = T``).
        util: ``(B, K)`` previous slot's utilization per device type, in [0, 1].
        feedback, used: ``(B, E)`` previous slot's net utility / use per edge.
        waiting: ``(B, L)`` ``w_l(t) / T``.
        t: int ``(B,)`` slot index; ``horizon``: ``T``.
        fsum, fcount: ``(B, E)`` running sum of the observed net utility and slots used.

    Returns ``{"entities": (B, N * F), "mask": (B, N), "context": (B, C)}``, float32, the rows
    of ``entities`` flattened row-major (cell ``i``'s features at ``[i * F:(i + 1) * F]``).
    """
    B = arrivals.shape[0]
    N = tab.static.shape[0]
    cell = tab.cell_of_edge
    job = arrivals[:, tab.port_of_cell]  # (B, N)
    ent = np.zeros((B, N, len(ENTITY_FEATURES)))
    ent[:, :, 0] = tab.static[:, 0]
    ent[:, :, 1] = job
    ent[:, :, 2:5] = tab.static[:, 2:5]
    ent[:, :, 5] = waiting[:, tab.port_of_cell]
    ent[:, cell, 6] = used
    ent[:, cell, 7] = feedback
    seen = fcount > 0
    n = np.maximum(fcount, 1).astype(np.float64)
    ent[:, cell, 8] = seen
    ent[:, cell, 9] = np.where(seen, fsum / n, 0.0)
    ent[:, cell, 10] = fcount / horizon
    tt = np.asarray(t, dtype=np.float64)[:, None]
    ent[:, cell, 11] = np.sqrt(np.minimum(np.log(tt + 2.0) / np.log(horizon + 2.0), 1.0) / n)
    np.clip(ent, 0.0, 1.0, out=ent)
    ctx = np.empty((B, len(CONTEXT_FEATURES)))
    ctx[:, 0] = tt[:, 0] / horizon
    K = util.shape[1]
    ctx[:, 1] = util.mean(axis=1) if K else 0.0
    ctx[:, 2] = util.max(axis=1) if K else 0.0
    ctx[:, 3] = (arrivals > 0).mean(axis=1)
    ctx[:, 4] = tab.density
    ctx[:, 5] = waiting.mean(axis=1)
    np.clip(ctx, 0.0, 1.0, out=ctx)
    mask = (job > 0) & (tab.is_edge > 0)
    return {"entities": ent.astype(np.float32).reshape(B, -1), "mask": mask.astype(np.float32),
            "context": ctx.astype(np.float32)}
