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


def test_native_vector_env_checks_the_whole_batch(monkeypatch):
    """The native vector env counts every copy's estimate plus its batch buffers against
    memory_limit_mb, and refuses before building the other copies (one line)."""
    import schedgym.envs.fluctuating_speed.vector as vec_mod

    env = gym.make(ENV_ID, memory_limit_mb=3).unwrapped  # one copy fits (about 1.09 MiB)
    inst, T = env.instance, env.horizon
    L, E, K = inst.n_types, inst.n_edges, inst.n_resources
    caps = np.prod(np.asarray(inst.capacities, dtype=np.float64) + 1.0)
    one = (8.0 * (K + 3) * L * inst.n_instances + 8.0 * T * (L + 2.0 * E)
           + caps * (E + 8.0)) / 2**20  # the single env's estimate, written out
    assert env.memory_estimate_mb() == pytest.approx(one, rel=1e-12) and one < 3

    def batch(n: int) -> float:  # n copies, plus arrivals, utilities, oracle rows per copy
        return n * one + n * T * (8.0 * (L + E + 1) + 1.0 * E) / 2**20

    assert batch(1) < 3 < batch(2)
    gym.make_vec(ENV_ID, num_envs=1, vectorization_mode="vector_entry_point", memory_limit_mb=3)
    built = []

    class Counting(FluctuatingSpeedEnv):
        def __init__(self, **kw):
            built.append(1)
            super().__init__(**kw)

    monkeypatch.setattr(vec_mod, "FluctuatingSpeedEnv", Counting)
    with pytest.raises(ValueError, match=rf"^num_envs=2 copies need about {batch(2):,.0f} MiB: "
                                         r"more than memory_limit_mb=3 \(pass fewer copies or "
                                         r"a larger memory_limit_mb=\)$"):
        gym.make_vec(ENV_ID, num_envs=2, vectorization_mode="vector_entry_point",
                     memory_limit_mb=3)
    assert len(built) == 1  # refused before the second copy was built
    vec = gym.make_vec(ENV_ID, num_envs=2, vectorization_mode="vector_entry_point",
                       memory_limit_mb=4)
    assert vec.num_envs == 2 and len(built) == 3
