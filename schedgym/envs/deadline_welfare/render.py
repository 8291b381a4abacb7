"""Rendering of DeadlineWelfare-v0: a text summary and a mesh utilisation heat map (numpy only)."""

from __future__ import annotations

import numpy as np


def render_ansi(env) -> str:
    """Text summary: progress, welfare so far, and per-instance utilisation over the slots."""
    inst = env.instance
    jobs = env.jobs
    last = env._last or {}
    util = env.usage / inst.capacity
    shades = " .:-=+*#%@"
    lines = [
        f"DeadlineWelfare-v0 job {env.job_index}/{jobs.n_jobs}  welfare "
        f"{last.get('welfare', 0.0):.3f} (jobs {last.get('welfare_jobs', 0.0):.3f}, cluster "
        f"{last.get('welfare_cluster', 0.0):.3f})  served {last.get('served_fraction', 0.0):.3f}",
        "utilisation per instance (rows) x slot (columns), ' ' = idle ... '@' = full:",
    ]
    for r in range(inst.n_instances):
        idx = np.minimum((util[r] * (len(shades) - 1)).round().astype(int), len(shades) - 1)
        lines.append(f"  r{r:<3d}|" + "".join(shades[i] for i in idx) + "|")
    return "\n".join(lines) + "\n"


def render_rgb(env, cell: int = 12) -> np.ndarray:
    """Heat map of the mesh: rows = instances, columns = slots; dark blue = idle, yellow = full.
    The arriving job's units are outlined in white. Returns ``uint8 (H, W, 3)``."""
    inst = env.instance
    util = np.clip(env.usage / inst.capacity, 0.0, 1.0)
    lo = np.array([30, 30, 90], dtype=np.float64)
    hi = np.array([250, 220, 40], dtype=np.float64)
    img = lo + util[..., None] * (hi - lo)
    img = np.repeat(np.repeat(img, cell, axis=0), cell, axis=1)
    jobs = env.jobs
    if env.job_index < jobs.n_jobs:
        m = np.repeat(np.repeat(jobs.mask[env.job_index], cell, axis=0), cell, axis=1)
        edge = np.zeros_like(m)
        edge[::cell, :] = edge[cell - 1::cell, :] = True
        edge[:, ::cell] = edge[:, cell - 1::cell] = True
        img[m & edge] = 255
    return img.astype(np.uint8)
