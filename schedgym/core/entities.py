"""What the three envs' ``obs_mode="entities"`` share: the mode names, the observation space of
the entity contract and the guarded ratio their features are built from.

The space is a ``Dict`` with the keys ``entities`` (the ``(N, F)`` feature rows flattened
row-major to ``(N * F,)``, 1-D so both env checkers accept it), ``mask`` ``(N,)`` and
``context`` ``(C,)``, in that order (a plain ``dict`` would be sorted by Gymnasium).
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
from gymnasium import spaces

#: Observation modes: the flat ``Dict`` (default) or the per-entity ``Dict``.
OBS_MODES: tuple[str, ...] = ("flat", "entities")


def entity_space(n_entities: int, n_features: int, n_context: int,
                 feature_low: np.ndarray | None = None) -> spaces.Dict:
    """The entity observation space of ``n_entities`` rows of ``n_features`` features in
    ``[0, 1]`` (or ``[feature_low[j], 1]`` for feature ``j``), a 0/1 mask and ``n_context``
    context values in ``[0, 1]``."""
    low = (np.zeros(n_features, np.float32) if feature_low is None
           else np.asarray(feature_low, np.float32))
    return spaces.Dict(OrderedDict([
        ("entities", spaces.Box(np.tile(low, n_entities), np.ones(n_entities * n_features,
                                                                    np.float32),
                                dtype=np.float32)),
        ("mask", spaces.Box(0.0, 1.0, (n_entities,), np.float32)),
        ("context", spaces.Box(0.0, 1.0, (n_context,), np.float32)),
    ]))


def ratio(num: np.ndarray, den: np.ndarray | float) -> np.ndarray:
    """``num / den`` where ``den > 0``, else 0 (float64 of the broadcast shape)."""
    d = np.asarray(den, dtype=np.float64)
    out = np.zeros(np.broadcast_shapes(np.shape(num), d.shape))
    np.divide(num, d, out=out, where=d > 0)
    return out
