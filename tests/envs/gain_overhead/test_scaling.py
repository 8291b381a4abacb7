"""GainOverhead-v0 grows with its channels, not with types x instances.

The reachable capacity is summed over the edges (the same bits as the dense-mask sum it
replaced), the generator draws the graph as an edge list, and an env's peak memory does not
grow with ``L`` when the number of channels stays the same.
"""

from __future__ import annotations

import tracemalloc

import gymnasium as gym
import numpy as np
import pytest

import schedgym  # noqa: F401  (registers the env ids)
from schedgym.core.graph import reachable_capacity
from schedgym.envs.gain_overhead import ENV_ID, GainOverheadInstance


@pytest.mark.parametrize("kw", [{}, {"scenario": "alibaba-gpu-2023", "horizon": 5},
                                {"n_types": 7, "n_instances": 33, "density": 3.0},
                                {"n_types": 30, "n_instances": 20, "degree_choices": [5, 9]}])
def test_reachable_capacity_by_edges_has_the_dense_sums_bits(kw):
    for seed in range(3):
        inst = gym.make(ENV_ID, instance_seed=seed, **kw).unwrapped.instance
        dense = reachable_capacity(inst.mask, inst.capacities)
        assert inst.reachable_capacity.tobytes() == dense.tobytes()


def test_reachable_capacity_by_hand():
    # type 0 on instances 0 and 2, type 1 on instance 1 only
    inst = GainOverheadInstance(
        edges=np.array([[0, 0], [0, 2], [1, 1]]), requests=np.ones((2, 2)),
        capacities=np.array([[1.0, 10.0], [2.0, 20.0], [4.0, 40.0]]), alpha=np.ones((3, 2)),
        beta=np.zeros(2), utility=np.full((3, 2), "linear"))
    np.testing.assert_array_equal(inst.reachable_capacity, [[5.0, 50.0], [2.0, 20.0]])


def _play(n_types: int, n_instances: int) -> gym.Env:
    """An env of these sizes (instance features and entity observations on), reset, a step."""
    env = gym.make(ENV_ID, n_types=n_types, n_instances=n_instances, n_resources=6, horizon=4,
                   degree_choices=[3, 4], instance_features=True, obs_mode="entities",
                   action_mode="prices")
    env.reset(seed=0)
    env.step(env.action_space.sample())
    return env


def _peak_bytes(n_types: int) -> tuple[int, int]:
    """Peak traced memory (bytes) of :func:`_play` on 2,000 instances, and its edge count."""
    tracemalloc.start()
    try:
        env = _play(n_types, 2000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak, env.unwrapped.instance.n_edges


def test_memory_does_not_grow_with_types_times_instances():
    """16x the types on the same instances (about the same channels): a dense ``(L, R, K)``
    float64 temporary would add 8 x 400 x 2000 x 6 bytes = 38 MB; the peak stays within 1.5x
    (the per-type arrays ``L K`` grow, but they are small)."""
    _play(4, 8)  # compile first: the compiler's own allocations are not the env's
    small, e_small = _peak_bytes(25)
    large, e_large = _peak_bytes(400)
    assert abs(e_large - e_small) < 0.1 * e_small
    assert large < 1.5 * small, (small, large)
