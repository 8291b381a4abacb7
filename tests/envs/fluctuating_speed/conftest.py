"""Shared fixtures of the FluctuatingSpeed-v0 tests."""

from __future__ import annotations

import numpy as np
import pytest

from schedgym.envs.fluctuating_speed import FluctuatingSpeedInstance


def tiny_instance() -> FluctuatingSpeedInstance:
    """2 ports, 3 servers, 4 edges, 2 device types, capacity (3, 2).

    edges (0,0) (0,2) (1,1) (1,2); requests A = [[1,2,1,1],[1,1,1,2]].
    """
    return FluctuatingSpeedInstance(
        edges=np.array([[0, 0], [0, 2], [1, 1], [1, 2]]),
        requests=np.array([[1, 2, 1, 1], [1, 1, 1, 2]]),
        capacities=np.array([3, 2]),
        cost=np.array([0.1, 0.2, 0.15, 0.05]),
        mean=np.array([0.5, 0.9, 0.3, 0.7]),
        std=np.array([0.25, 0.45, 0.15, 0.35]),
        n_types=2,
        n_instances=3,
        resource_names=("cpu", "gpu"),
    )


@pytest.fixture
def tiny() -> FluctuatingSpeedInstance:
    return tiny_instance()
