"""What the three envs' ``obs_mode="entities"`` share: the mode names, the observation space of
the entity contract (and reading its sizes back), and the guarded ratio their features are built
from.

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
#: The observation keys of the entity contract, in order.
ENTITY_KEYS: tuple[str, ...] = ("entities", "mask", "context")


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


def entity_space_sizes(space: spaces.Space) -> tuple[int, int, int]:
    """``(N, F, C)`` of an entity-contract observation space (the inverse of
    :func:`entity_space`); ``ValueError`` for any other space.

    ``N`` is the mask's length and ``F = len(entities) // N`` (the ``entities`` vector holds
    ``N`` rows of ``F`` features, flattened row-major), so ``len(entities)`` must be a positive
    multiple of ``N``. The message names the policy that plays this contract,
    ``schedgym.train.policies.EntityPolicy``, whose models are checked with it.
    """
    shapes: list[tuple[int, ...]] = []
    if isinstance(space, spaces.Dict) and sorted(space.spaces) == sorted(ENTITY_KEYS):
        shapes = [tuple(space[k].shape or ()) for k in ENTITY_KEYS
                  if isinstance(space[k], spaces.Box)]
    if not (len(shapes) == 3 and all(len(s) == 1 for s in shapes) and shapes[1][0] >= 1
            and shapes[0][0] >= shapes[1][0] and shapes[0][0] % shapes[1][0] == 0):
        raise ValueError(f"observation_space={space} is invalid for EntityPolicy: must be the "
                         "entity contract's Dict(entities=(N * F,), mask=(N,), context=(C,)) "
                         "with N >= 1 and F >= 1 (build the env with obs_mode='entities')")
    n = int(shapes[1][0])
    return n, int(shapes[0][0]) // n, int(shapes[2][0])


def ratio(num: np.ndarray, den: np.ndarray | float) -> np.ndarray:
    """``num / den`` where ``den > 0``, else 0 (float64 of the broadcast shape)."""
    d = np.asarray(den, dtype=np.float64)
    out = np.zeros(np.broadcast_shapes(np.shape(num), d.shape))
    np.divide(num, d, out=out, where=d > 0)
    return out
