"""One check of an entity observation against an independent reference, shared by the envs'
entity tests: inside the space, the (N, F) rows flattened row-major, the mask exact, the float32
features and context within float32 rounding of the reference."""

from __future__ import annotations

from typing import Any

import numpy as np


def assert_entity_obs(env: Any, obs: dict[str, np.ndarray], rows: np.ndarray, mask: np.ndarray,
                      context: np.ndarray) -> None:
    assert env.observation_space.contains(obs), {k: (v.min(), v.max()) for k, v in obs.items()}
    assert obs["entities"].shape == (rows.size,)  # the (N, F) rows flattened row-major
    np.testing.assert_allclose(obs["entities"], rows.reshape(-1), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(obs["mask"], mask)
    np.testing.assert_allclose(obs["context"], context, rtol=1e-5, atol=1e-6)
