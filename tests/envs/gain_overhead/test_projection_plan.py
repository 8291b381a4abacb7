"""The instance's :class:`ProjectionPlan` (the block layout of the exact projection): every
(instance, resource) group appears exactly once with its own caps and capacity, and instances
without channels get no usage. Written by hand on a tiny instance and checked on generated
ones against the plain per-group projection of :mod:`schedgym.core.projection`."""

from __future__ import annotations

import numpy as np
import pytest

from schedgym.core.projection import project_capped_simplex
from schedgym.envs.gain_overhead import GainOverheadInstance, dynamics
from schedgym.envs.gain_overhead.generator import DEFAULTS, generate


def three_instances() -> GainOverheadInstance:
    """Instance 0 has channels of types 0 and 1, instance 1 none, instance 2 type 1 only."""
    return GainOverheadInstance(
        edges=np.array([(0, 0), (1, 0), (1, 2)]), requests=np.array([[2.0, 3.0], [4.0, 1.0]]),
        capacities=np.array([[3.0, 2.0], [7.0, 7.0], [5.0, 0.5]]),
        alpha=np.ones((3, 2)), beta=np.array([0.1, 0.2]), utility=np.full((3, 2), "linear"),
        resource_names=("cpu", "mem"))


def test_plan_by_hand():
    plan = three_instances().projection_plan
    # sizes: instance 0 has 2 channels (edges 0, 1), 1 has none, 2 has one (edge 2)
    assert plan.per_size.tolist() == [1, 1, 1]
    assert plan.groups.tolist() == [4, 5, 0, 1]  # (r, k) -> r K + k: block n=1 then n=2
    # block n=1: edge 2 (e K + k = 4, 5); block n=2: row d=0 edge 0 (0, 1), d=1 edge 1 (2, 3)
    assert plan.entries.tolist() == [4, 5, 0, 1, 2, 3]
    # block n=1 (1, 2): caps of edge 2 (type 1); block n=2 (2, 2): edge 0's then edge 1's
    assert plan.caps.tolist() == [4.0, 1.0, 2.0, 3.0, 4.0, 1.0]
    assert plan.capacity.tolist() == [5.0, 0.5, 3.0, 2.0]
    for a in plan:
        assert not a.flags.writeable


def test_projection_by_hand_with_an_empty_instance():
    inst = three_instances()
    z = np.array([[2.0, 3.0], [4.0, -1.0], [9.0, 0.25]])  # instance 0 cpu: 2 + 4 > 3
    y, load = dynamics.project_grouped(inst, z)
    # instance 0, cpu: theta = 1.5 -> (0.5, 2.5); mem: 3 (capped at 3 > 2) -> theta 1 -> 2, 0
    # instance 2: cpu capped at 4 (<= 5); mem 0.25 <= 0.5
    np.testing.assert_allclose(y, [[0.5, 2.0], [2.5, 0.0], [4.0, 0.25]], atol=1e-12)
    np.testing.assert_allclose(load, [[3.0, 2.0], [0.0, 0.0], [4.0, 0.25]], atol=1e-12)


@pytest.mark.parametrize("density", [2.0, 2.5, 3.0])
def test_entries_is_a_permutation_of_whole_channels(density):
    """Every entry ``e K + k`` of an allocation has exactly one block position (the step
    scatters the projected block buffer back through ``entries``, so each is written once),
    and a channel's ``K`` resources sit side by side in one block row."""
    inst = generate({**DEFAULTS, "n_instances": 40, "density": density}, 3)
    plan, K = inst.projection_plan, inst.n_resources
    np.testing.assert_array_equal(np.sort(plan.entries), np.arange(inst.n_edges * K))
    position = np.empty_like(plan.entries)
    position[plan.entries] = np.arange(plan.entries.size)
    start = position[::K]  # block position of each channel's resource 0
    np.testing.assert_array_equal(position.reshape(-1, K), start[:, None] + np.arange(K))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("density", [2.0, 2.5, 3.0])
def test_plan_projection_equals_per_group_projection(seed, density):
    inst = generate({**DEFAULTS, "n_instances": 24, "density": density},
                    seed)
    rng = np.random.default_rng(100 + seed)
    z = rng.uniform(-0.5, 1.5, size=inst.edge_caps.shape) * inst.edge_caps
    y, load = dynamics.project_grouped(inst, z)
    for r in range(inst.n_instances):
        e = inst.instance_slots[r][inst.instance_slots[r] >= 0]
        if e.size == 0:
            assert np.all(load[r] == 0.0)
            continue
        ref = project_capped_simplex(z[e].T, inst.edge_caps[e].T, inst.capacities[r])
        assert y[e].T.tobytes() == ref.tobytes()  # the same kernel: the same bits
        np.testing.assert_allclose(load[r], y[e].sum(axis=0), rtol=1e-15, atol=1e-15)


def test_kernel_arrays_are_copies_the_kernels_leave_unchanged():
    inst = generate({**DEFAULTS, "n_instances": 16, "utility": "mixed"}, 1)
    k = inst.kernel_arrays
    rng = np.random.default_rng(0)
    a = rng.uniform(-1.5, 1.5, inst.edge_caps.size)
    x = np.ones(inst.n_types)
    dynamics.score_action(inst, a, x)
    dynamics.ascent_step(inst, x, dynamics.project(inst, inst.edge_caps), 0.3)
    dynamics.score_batch(inst, np.stack([inst.edge_caps] * 3), np.ones((3, inst.n_types)))
    pairs = [(k.inverse_capacities, inst.inverse_capacities), (k.codes, inst.edge_codes),
             (k.alpha, inst.edge_alpha), (k.type_starts, inst.type_starts), (k.beta, inst.beta)]
    pairs += list(zip(k.plan, inst.projection_plan, strict=True))
    for mine, theirs in pairs:
        assert mine.tobytes() == theirs.tobytes() and mine.dtype == theirs.dtype
        assert not np.shares_memory(mine, theirs) and not theirs.flags.writeable
    assert k.reciprocal_scale == inst.reciprocal_scale
