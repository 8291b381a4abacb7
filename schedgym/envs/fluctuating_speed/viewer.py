"""Rendering of FluctuatingSpeed-v0: a text summary and a port x server picture (numpy only).

Both renderers draw a :class:`RenderState`, the small frozen snapshot returned by
``env.render_state()``; they never read the env itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class RenderState:
    """What the viewer draws: the slot just scheduled.

    Attributes:
        slot: ``t``, slots scheduled so far; horizon: ``T``.
        arrivals: float ``(L,)``: jobs of the previous slot (zeros before the first step).
        selection: int8 ``(E,)``: channels used in the previous slot.
        utilization: float ``(K,)`` in [0, 1]: ``(A x)_k / c_k`` of that selection.
        edges: int ``(E, 2)`` ``(l, r)``; n_types: ``L``; n_instances: ``R``.
        resource_names: the ``K`` device names.
    """

    slot: int
    horizon: int
    arrivals: np.ndarray
    selection: np.ndarray
    utilization: np.ndarray
    edges: np.ndarray
    n_types: int
    n_instances: int
    resource_names: tuple[str, ...]


def render_ansi(view: RenderState) -> str:
    """Text summary of the previous slot: selection per port and device utilization."""
    x, arr = view.selection, view.arrivals
    lines = [
        f"FluctuatingSpeed-v0 slot {view.slot}/{view.horizon}  jobs {int(arr.sum())}/"
        f"{view.n_types}  channels used {int(x.sum())}/{x.shape[0]}",
        "utilization: " + "  ".join(
            f"{n}={u:.2f}" for n, u in zip(view.resource_names, view.utilization, strict=True)
        ),
    ]
    for l in range(view.n_types):
        es = np.flatnonzero(view.edges[:, 0] == l)
        cells = " ".join(f"{'*' if x[e] else '.'}r{view.edges[e, 1]}" for e in es)
        lines.append(f"  port {l} [{'job' if arr[l] else '   '}] {cells}")
    return "\n".join(lines) + "\n"


def render_rgb(view: RenderState, cell: int = 8) -> np.ndarray:
    """Picture of the previous slot: rows = ports, columns = servers, then one bar per device
    type. Dark = no edge, blue = edge, yellow = edge used, red tint = port had a job; the bars on
    the right show utilization. Returns ``uint8 (H, W, 3)``."""
    L, R, K = view.n_types, view.n_instances, len(view.resource_names)
    grid = np.full((L, R, 3), 25.0)
    grid[view.edges[:, 0], view.edges[:, 1]] = (40, 70, 160)
    used = view.selection.astype(bool)
    grid[view.edges[used, 0], view.edges[used, 1]] = (250, 220, 40)
    grid[view.arrivals > 0, :, 0] += 40
    img = np.repeat(np.repeat(grid, cell, axis=0), cell, axis=1)
    H = img.shape[0]
    bars = np.full((H, K * cell * 2, 3), 60.0)
    for k in range(K):
        h = int(round(float(view.utilization[k]) * H))
        if h:
            bars[H - h:, k * 2 * cell: k * 2 * cell + cell] = (80, 200, 90)
    return np.asarray(np.clip(np.concatenate([img, bars], axis=1), 0, 255).astype(np.uint8))
