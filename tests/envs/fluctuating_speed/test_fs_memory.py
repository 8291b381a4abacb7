"""FluctuatingSpeed-v0's memory check counts what the action and observation modes hold per
(port, server) cell (the ``scores`` grids, the entity observation's tables and rows), before the
generator draws anything, and the estimate is at least the measured peak."""

from __future__ import annotations

import time
import tracemalloc

import gymnasium as gym
import numpy as np
import pytest

import schedgym  # noqa: F401
from schedgym.envs.fluctuating_speed import ENV_ID, FluctuatingSpeedEnv, FluctuatingSpeedParams
from schedgym.envs.fluctuating_speed.types import CELL_BYTES, cell_bytes

ENTITIES = {"obs_mode": "entities", "action_mode": "scores"}


def test_entity_mode_at_ten_million_servers_is_refused_at_once():
    # the flat selection mode fits the default limit at these sizes (its (L, R) grids only);
    # the entity observation's tables and rows do not, and the check says so before drawing
    kw = {"n_instances": 10**7, "horizon": 1, "edge_prob": 0.0, "compute_oracle": False}
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"^these sizes need an estimated [\d,]+ MiB \(.*"
                                         r"416 bytes per \(port, server\) cell for the action "
                                         r"and observation modes\): above memory_limit_mb=4096"
                                         r"[^\n]*$"):
        gym.make(ENV_ID, **kw, **ENTITIES)
    with pytest.raises(ValueError, match=r"64 bytes per \(port, server\) cell"):
        gym.make(ENV_ID, **kw, action_mode="scores")
    assert time.perf_counter() - t0 < 5.0  # refused before the generator's grids are drawn
    assert FluctuatingSpeedParams(**{k: v for k, v in kw.items() if k != "compute_oracle"}
                                  ).memory_estimate() < 4096  # flat selection mode: accepted


def test_cell_bytes_by_mode():
    assert cell_bytes("selection", "flat", False, False, 3) == 0.0
    assert cell_bytes("scores", "flat", False, False, 3) == CELL_BYTES["scores"]
    assert cell_bytes("scores", "entities", False, False, 3) == \
        CELL_BYTES["scores"] + CELL_BYTES["entities"]
    assert cell_bytes("scores", "flat", True, True, 3) == \
        CELL_BYTES["scores"] + 5 * CELL_BYTES["instance_features"] + CELL_BYTES["feedback_stats"]
    p = FluctuatingSpeedParams(n_instances=1000)
    # the per-cell term adds exactly per_cell x L x R bytes
    assert (p.memory_estimate(per_cell=100.0) - p.memory_estimate()) * 2**20 == \
        pytest.approx(100.0 * 8 * 1000)


def _peak_bytes(R: int, kw: dict) -> tuple[int, float]:
    """tracemalloc's peak of construction, reset and three steps, and the env's estimate."""
    tracemalloc.start()
    try:
        env = FluctuatingSpeedEnv(n_instances=R, horizon=5, compute_oracle=False, **kw)
        env.reset(seed=0)
        for _ in range(3):
            env.step(env.action_space.sample())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    inst = env.instance
    est = env.params.memory_estimate(
        n_edges=inst.n_edges, capacities=inst.capacities.tolist(),
        per_cell=cell_bytes(env.action_mode, env.obs_mode, env.instance_features,
                            env.feedback_stats, inst.n_resources))
    return peak, est * 2**20


@pytest.mark.parametrize("kw", [{}, {"action_mode": "scores"}, ENTITIES,
                                {"action_mode": "scores", "instance_features": True,
                                 "feedback_stats": True}])
def test_estimate_covers_the_measured_growth(kw):
    _peak_bytes(400, kw)  # imports, compiled kernels: not per cell
    small, est_small = _peak_bytes(5_000, kw)
    big, est_big = _peak_bytes(40_000, kw)
    assert big - small <= est_big - est_small  # what grows with the cells is covered
    assert np.isfinite(est_big)
