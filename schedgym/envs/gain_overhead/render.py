"""Rendering of GainOverhead-v0: a text summary and a utilization heat map (numpy only)."""

from __future__ import annotations

import numpy as np


def render_ansi(env) -> str:
    """One-paragraph text summary of the last slot."""
    inst = env.instance
    util = env._util.reshape(inst.n_instances, inst.n_resources)
    used = util.mean(axis=0)
    x = env._arrivals[env.t - 1] if env.t > 0 else np.zeros(inst.n_types)
    lines = [
        f"GainOverhead-v0 slot {env.t}/{env.horizon}  arrivals {int(x.sum())}/{inst.n_types}",
        "mean utilization: " + "  ".join(
            f"{n}={u:.2f}" for n, u in zip(inst.resource_names, used, strict=True)
        ),
    ]
    return "\n".join(lines) + "\n"


def render_rgb(env, cell: int = 6) -> np.ndarray:
    """Heat map of the previous slot's utilization, instances (rows) x resources (columns).

    Returns ``uint8 (H, W, 3)``; dark blue = idle, yellow = full, grey = zero capacity.
    """
    inst = env.instance
    util = env._util.reshape(inst.n_instances, inst.n_resources)
    has = inst.capacities > 0
    lo = np.array([30, 30, 90], dtype=np.float64)
    hi = np.array([250, 220, 40], dtype=np.float64)
    img = lo + util[..., None] * (hi - lo)
    img[~has] = 120
    img = np.repeat(np.repeat(img, max(1, cell // 2), axis=0), cell * 4, axis=1)
    return img.astype(np.uint8)
