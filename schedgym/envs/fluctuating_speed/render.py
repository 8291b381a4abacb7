"""Rendering of FluctuatingSpeed-v0: a text summary and a port x server picture (numpy only)."""

from __future__ import annotations

import numpy as np


def render_ansi(env) -> str:
    """Text summary of the previous slot: selection per port and device utilization."""
    inst = env.instance
    t = env.t
    arr = env._arrivals[t - 1] if t > 0 else np.zeros(inst.n_types)
    x = env._last_x
    util = env._obs()["utilization"]
    lines = [
        f"FluctuatingSpeed-v0 slot {t}/{env.horizon}  jobs {int(arr.sum())}/{inst.n_types}  "
        f"channels used {int(x.sum())}/{inst.n_edges}",
        "utilization: " + "  ".join(
            f"{n}={u:.2f}" for n, u in zip(inst.resource_names, util, strict=True)
        ),
    ]
    for l in range(inst.n_types):
        es = inst.edges_of_port[l]
        cells = " ".join(
            f"{'*' if x[e] else '.'}r{inst.server_of_edge[e]}" for e in es
        )
        lines.append(f"  port {l} [{'job' if arr[l] else '   '}] {cells}")
    return "\n".join(lines) + "\n"


def render_rgb(env, cell: int = 8) -> np.ndarray:
    """Picture of the previous slot: rows = ports, columns = servers, then one bar per device
    type. Dark = no edge, blue = edge, yellow = edge used, red tint = port had a job; the bars on
    the right show utilization. Returns ``uint8 (H, W, 3)``."""
    inst = env.instance
    t = env.t
    arr = env._arrivals[t - 1] if t > 0 else np.zeros(inst.n_types)
    L, R, K = inst.n_types, inst.n_instances, inst.n_resources
    grid = np.full((L, R, 3), 25.0)
    grid[inst.mask] = (40, 70, 160)
    used = env._last_x.astype(bool)
    grid[inst.port_of_edge[used], inst.server_of_edge[used]] = (250, 220, 40)
    grid[arr > 0, :, 0] += 40
    img = np.repeat(np.repeat(grid, cell, axis=0), cell, axis=1)
    util = env._obs()["utilization"]
    H = img.shape[0]
    bars = np.full((H, K * cell * 2, 3), 60.0)
    for k in range(K):
        h = int(round(float(util[k]) * H))
        if h:
            bars[H - h:, k * 2 * cell: k * 2 * cell + cell] = (80, 200, 90)
    return np.clip(np.concatenate([img, bars], axis=1), 0, 255).astype(np.uint8)
