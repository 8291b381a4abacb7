"""The ``obs_mode="entities"`` observation of FluctuatingSpeed-v0 (the entity contract of
:mod:`schedgym.core.entities`).

An entity is a (port, server) cell of the ``(L, R)`` grid, ``N = L * R``, cell ``l * R + r`` (the
order of the ``"scores"`` action: entity ``i`` <-> action entry ``i``). Each row carries what an
index rule for that cell reads (HAUF's and ESDP's per-edge index, a greedy optimistic index per
unit of capacity): whether it is an edge, whether its port has a job now, its requests as shares
of the capacities, its known cost, the previous slot's use and feedback, and the running
statistics of its observed net utility. Every feature lies in [0, 1].

The ``"entities"`` key is a 1-D ``Box(0, 1, (N * F,))``: the ``(N, F)`` rows flattened row-major,
cell ``i``'s features at ``[i * F:(i + 1) * F]`` (1-D so both env checkers accept it without a
warning; :class:`~schedgym.train.policies.EntityPolicy` reshapes it back, ``N`` from the mask's
length). Names and meanings: :data:`FEATURES` (``F = len(FEATURES)``) and :data:`CONTEXT`; a
feature is 0 on a cell that is not an edge except ``job`` and ``waiting`` (the port's). Mask: 1 on
the cells that are edges of ports with a job now (the cells whose score the decoder reads), else
0. What one observation is built from: :class:`EntityState`.

The builder works on a batch (leading axis of copies) so the single env (a batch of one) and the
native vector env run the same arithmetic (equal bits).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from gymnasium import spaces

from schedgym.core.entities import entity_space
from schedgym.envs.fluctuating_speed.types import FluctuatingSpeedInstance

#: Per-entity features of cell ``(l, r)``: (name, meaning). Every value lies in [0, 1].
FEATURES: tuple[tuple[str, str], ...] = (
    ("edge", "1 if (l, r) is an edge of the service-locality graph"),
    ("job", "1 if port l has a job in the slot about to be scheduled (arrivals[l])"),
    ("request_mean", "mean over device types k of min(a_k^e / c_k, 1) (share of capacity)"),
    ("request_max", "max over k of the same share (the binding type of a lone edge)"),
    ("cost", "the known cost min(C_e, 1)"),
    ("waiting", "port l's head-of-line waiting time w_l(t) / T"),
    ("last_used", "1 if the edge was used in the previous slot (after masking/repair)"),
    ("last_feedback", "previous slot's realised net utility clip(Z_e - C_e, 0, 1) (0 if "
                      "unused)"),
    ("seen", "1 if the edge was used at least once this episode"),
    ("mean", "running mean of its observed net utility this episode (0 if never used)"),
    ("count", "number of slots it was used this episode, divided by T"),
    ("bonus", "sqrt(min(ln(t + 2) / ln(T + 2), 1) / max(n_e, 1)): a UCB-style exploration "
              "width (n_e = slots used), scaled into (0, 1]"),
)

#: Context features (one vector per observation): (name, meaning), every value in [0, 1].
CONTEXT: tuple[tuple[str, str], ...] = (
    ("progress", "t / T, the slot fraction"),
    ("utilization_mean", "mean over device types of the previous slot's utilization"),
    ("utilization_max", "max over device types of the same"),
    ("jobs", "share of the ports with a job now"),
    ("edge_density", "|E| / (L R)"),
    ("waiting_mean", "mean over ports of w_l / T"),
)

ENTITY_FEATURES: tuple[str, ...] = tuple(name for name, _ in FEATURES)
CONTEXT_FEATURES: tuple[str, ...] = tuple(name for name, _ in CONTEXT)
#: Column of each entity feature in a row, and of each context feature.
COL: dict[str, int] = {name: j for j, name in enumerate(ENTITY_FEATURES)}
CTX: dict[str, int] = {name: j for j, name in enumerate(CONTEXT_FEATURES)}
#: The per-instance features :func:`tables` precomputes (the others change every slot).
STATIC: tuple[str, ...] = ("edge", "request_mean", "request_max", "cost")
_STATIC_COLS = np.array([COL[name] for name in STATIC])


class EntityState(NamedTuple):
    """What the entity observations of a batch of ``B`` copies are built from, at the start of
    their slots ``t`` (the single env is a batch of one).

    Attributes:
        arrivals: ``(B, L)`` jobs of the slot about to be scheduled (0 once ``t = T``).
        util: ``(B, K)`` previous slot's utilization per device type, in [0, 1].
        feedback, used: ``(B, E)`` previous slot's net utility / use per edge.
        waiting: ``(B, L)`` ``w_l(t) / T``.
        t: int ``(B,)`` slot index.
        horizon: ``T``.
        fsum, fcount: ``(B, E)`` running sum of the observed net utility and slots used.
    """

    arrivals: np.ndarray
    util: np.ndarray
    feedback: np.ndarray
    used: np.ndarray
    waiting: np.ndarray
    t: np.ndarray
    horizon: int
    fsum: np.ndarray
    fcount: np.ndarray


class EntityTables(NamedTuple):
    """Per-instance constants of the entity observation.

    ``static``: float64 ``(N, len(STATIC))``, the :data:`STATIC` features in that order;
    ``port_of_cell``: int64 ``(N,)``; ``cell_of_edge``: int64 ``(E,)``; ``is_edge``: float64
    ``(N,)``; ``density``: ``|E| / N``.
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
    static = np.zeros((N, len(STATIC)))
    col = {name: j for j, name in enumerate(STATIC)}
    static[:, col["edge"]] = inst.mask.reshape(-1)
    static[cell, col["request_mean"]] = share.mean(axis=0) if share.shape[0] else 0.0
    static[cell, col["request_max"]] = share.max(axis=0) if share.shape[0] else 0.0
    static[cell, col["cost"]] = np.minimum(inst.cost, 1.0)
    return EntityTables(static, np.repeat(np.arange(L, dtype=np.int64), R), cell,
                        static[:, col["edge"]].copy(), inst.n_edges / N)


def spaces_of(n_entities: int) -> spaces.Dict:
    """The ``"entities"`` observation space for ``N = n_entities`` cells: ``entities``
    ``(N * F,)`` (the rows flattened row-major), ``mask`` ``(N,)``, ``context`` ``(C,)``."""
    return entity_space(n_entities, len(FEATURES), len(CONTEXT))


def observation(tab: EntityTables, st: EntityState) -> dict[str, np.ndarray]:
    """The entity observations of a batch of copies in state ``st`` (:class:`EntityState`).

    Returns ``{"entities": (B, N * F), "mask": (B, N), "context": (B, C)}``, float32, the rows
    of ``entities`` flattened row-major (cell ``i``'s features at ``[i * F:(i + 1) * F]``).
    """
    B = st.arrivals.shape[0]
    cell, T = tab.cell_of_edge, st.horizon
    job = st.arrivals[:, tab.port_of_cell]  # (B, N)
    ent = np.zeros((B, job.shape[1], len(FEATURES)))
    ent[:, :, _STATIC_COLS] = tab.static
    ent[:, :, COL["job"]] = job
    ent[:, :, COL["waiting"]] = st.waiting[:, tab.port_of_cell]
    ent[:, cell, COL["last_used"]] = st.used
    ent[:, cell, COL["last_feedback"]] = st.feedback
    seen = st.fcount > 0
    n = np.maximum(st.fcount, 1).astype(np.float64)
    ent[:, cell, COL["seen"]] = seen
    ent[:, cell, COL["mean"]] = np.where(seen, st.fsum / n, 0.0)
    ent[:, cell, COL["count"]] = st.fcount / T
    tt = np.asarray(st.t, dtype=np.float64)[:, None]
    ent[:, cell, COL["bonus"]] = np.sqrt(np.minimum(np.log(tt + 2.0) / np.log(T + 2.0), 1.0) / n)
    np.clip(ent, 0.0, 1.0, out=ent)
    ctx = np.empty((B, len(CONTEXT)))
    ctx[:, CTX["progress"]] = tt[:, 0] / T
    K = st.util.shape[1]
    ctx[:, CTX["utilization_mean"]] = st.util.mean(axis=1) if K else 0.0
    ctx[:, CTX["utilization_max"]] = st.util.max(axis=1) if K else 0.0
    ctx[:, CTX["jobs"]] = (st.arrivals > 0).mean(axis=1)
    ctx[:, CTX["edge_density"]] = tab.density
    ctx[:, CTX["waiting_mean"]] = st.waiting.mean(axis=1)
    np.clip(ctx, 0.0, 1.0, out=ctx)
    mask = (job > 0) & (tab.is_edge > 0)
    return {"entities": ent.astype(np.float32).reshape(B, -1), "mask": mask.astype(np.float32),
            "context": ctx.astype(np.float32)}
