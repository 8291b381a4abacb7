"""Rendering of DeadlineWelfare-v0: a text summary and a mesh utilisation heat map (numpy only).

Both renderers draw a :class:`RenderState`, the small frozen snapshot that
``DeadlineWelfareEnv.render_state()`` returns; they never read the env itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class RenderState:
    """What the viewer draws.

    Attributes:
        job_index: index of the job about to be decided (== ``n_jobs`` at the end).
        n_jobs: jobs in the episode.
        welfare, welfare_jobs, welfare_cluster: social welfare so far and its two parts.
        served_fraction: Σ x / Σ ρ over the jobs decided so far.
        utilization: float ``(R, T)``, reserved workload / capacity of every unit.
        current: bool ``(R, T)``, the arriving job's units ℛ_n, or ``None`` after the last job.
    """

    job_index: int
    n_jobs: int
    welfare: float
    welfare_jobs: float
    welfare_cluster: float
    served_fraction: float
    utilization: np.ndarray
    current: np.ndarray | None


SHADES = " .:-=+*#%@"


def render_ansi(state: RenderState) -> str:
    """Text summary: progress, welfare so far, and per-instance utilisation over the slots."""
    lines = [
        f"DeadlineWelfare-v0 job {state.job_index}/{state.n_jobs}  welfare "
        f"{state.welfare:.3f} (jobs {state.welfare_jobs:.3f}, cluster "
        f"{state.welfare_cluster:.3f})  served {state.served_fraction:.3f}",
        "utilisation per instance (rows) x slot (columns), ' ' = idle ... '@' = full:",
    ]
    top = len(SHADES) - 1
    for r, row in enumerate(state.utilization):
        idx = np.minimum((row * top).round().astype(int), top)
        lines.append(f"  r{r:<3d}|" + "".join(SHADES[i] for i in idx) + "|")
    return "\n".join(lines) + "\n"


def render_rgb(state: RenderState, cell: int = 12) -> np.ndarray:
    """Heat map of the mesh: rows = instances, columns = slots; dark blue = idle, yellow = full.
    The arriving job's units are outlined in white. Returns ``uint8 (R * cell, T * cell, 3)``."""
    util = np.clip(state.utilization, 0.0, 1.0)
    lo = np.array([30, 30, 90], dtype=np.float64)
    hi = np.array([250, 220, 40], dtype=np.float64)
    img = lo + util[..., None] * (hi - lo)
    img = np.repeat(np.repeat(img, cell, axis=0), cell, axis=1)
    if state.current is not None:
        m = np.repeat(np.repeat(state.current, cell, axis=0), cell, axis=1)
        edge = np.zeros_like(m)
        edge[::cell, :] = edge[cell - 1::cell, :] = True
        edge[:, ::cell] = edge[:, cell - 1::cell] = True
        img[m & edge] = 255
    return img.astype(np.uint8)
