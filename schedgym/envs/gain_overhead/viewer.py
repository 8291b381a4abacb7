"""Rendering of GainOverhead-v0: a text summary and a utilization heat map (numpy only).

Both renderers draw a :class:`RenderState`, the small frozen snapshot returned by
``GainOverheadEnv.render_state()``; they never read the env itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class RenderState:
    """What the viewer draws.

    Attributes:
        slot: slots already scheduled in the episode (``t``).
        horizon: ``T``.
        n_arrived: jobs that arrived in the last scheduled slot (0 before the first step).
        n_types: ``L``.
        utilization: float ``(R, K)`` in [0, 1], fraction of each capacity used in the last slot.
        has_capacity: bool ``(R, K)``, ``c_r^k > 0``.
        resource_names: the K resource names.
    """

    slot: int
    horizon: int
    n_arrived: int
    n_types: int
    utilization: np.ndarray
    has_capacity: np.ndarray
    resource_names: tuple[str, ...]


def render_ansi(state: RenderState) -> str:
    """One-paragraph text summary of the last slot."""
    used = state.utilization.mean(axis=0)
    lines = [
        f"GainOverhead-v0 slot {state.slot}/{state.horizon}  arrivals "
        f"{state.n_arrived}/{state.n_types}",
        "mean utilization: " + "  ".join(
            f"{n}={u:.2f}" for n, u in zip(state.resource_names, used, strict=True)
        ),
    ]
    return "\n".join(lines) + "\n"


def render_rgb(state: RenderState, cell: int = 6) -> np.ndarray:
    """Heat map of the last slot's utilization, instances (rows) x resources (columns).

    Returns ``uint8 (H, W, 3)``; dark blue = idle, yellow = full, grey = zero capacity.
    """
    lo = np.array([30, 30, 90], dtype=np.float64)
    hi = np.array([250, 220, 40], dtype=np.float64)
    img = lo + state.utilization[..., None] * (hi - lo)
    img[~state.has_capacity] = 120
    img = np.repeat(np.repeat(img, max(1, cell // 2), axis=0), cell * 4, axis=1)
    return img.astype(np.uint8)
