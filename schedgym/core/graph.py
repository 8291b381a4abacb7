"""The bipartite service-locality graph shared by GainOverhead-v0 and FluctuatingSpeed-v0.

Job types (ports) ``l`` and computing instances (servers) ``r`` are joined by edges (channels)
``(l, r)``, stored as an int64 ``(E, 2)`` array sorted lexicographically; actions and per-edge
quantities follow that order.
"""

from __future__ import annotations

import numpy as np

from schedgym.core.arrays import readonly
from schedgym.core.validation import check_array


def check_edges(
    edges: np.ndarray,
    n_types: int,
    n_instances: int,
    type_word: str = "job type",
    instance_word: str = "instance",
) -> np.ndarray:
    """``edges`` as an int64 ``(E, 2)`` array after checking it is a valid locality graph.

    Raises ``ValueError`` (naming ``edges``) when it is empty, has an endpoint outside
    ``[0, n_types)`` x ``[0, n_instances)``, is not unique and sorted by ``(l, r)``, or leaves a
    type without an edge. ``type_word``/``instance_word`` name the two sides in messages
    (``"port"``/``"server"`` in the ESDP vocabulary).
    """
    arr = check_array("edges", edges, shape=(None, 2), dtype=np.int64)
    if arr.shape[0] == 0:
        raise ValueError(
            f"edges is empty: the graph needs at least one ({type_word}, {instance_word}) edge"
        )
    if arr[:, 0].min() < 0 or arr[:, 0].max() >= n_types:
        raise ValueError(f"edges has a {type_word} outside [0, {n_types - 1}]")
    if arr[:, 1].min() < 0 or arr[:, 1].max() >= n_instances:
        raise ValueError(f"edges has a {instance_word} outside [0, {n_instances - 1}]")
    keys = arr[:, 0] * n_instances + arr[:, 1]
    if np.any(np.diff(keys) <= 0):
        raise ValueError("edges must be unique and sorted lexicographically by (l, r)")
    missing = np.setdiff1d(np.arange(n_types), arr[:, 0])
    if missing.size:
        raise ValueError(
            f"edges leaves {type_word}(s) {missing.tolist()} with no {instance_word}: every "
            f"{type_word} needs at least one edge"
        )
    return arr


def edge_mask(edges: np.ndarray, n_types: int, n_instances: int) -> np.ndarray:
    """Read-only bool ``(L, R)``: ``mask[l, r]`` iff ``(l, r)`` is an edge."""
    m = np.zeros((n_types, n_instances), dtype=bool)
    m[edges[:, 0], edges[:, 1]] = True
    return readonly(m)


def reachable_capacity(mask: np.ndarray, capacities: np.ndarray) -> np.ndarray:
    """``(L, K)`` total capacity ``sum_{r: mask[l, r]} c_r^k`` that each type can reach.

    ``mask`` ``(L, R)`` bool, ``capacities`` ``(R, K)``. Summed in instance order by numpy's
    plain axis reduction, not a BLAS product, whose summation order depends on the CPU's kernel.
    """
    picked = np.where(np.asarray(mask, dtype=bool)[:, :, None], capacities[None, :, :], 0.0)
    return picked.sum(axis=1)
