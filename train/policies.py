"""SB3 policies whose network rescales bounded observations into [0, 1] itself.

``BoundsScaledExtractor`` maps every ``Box`` entry of a Dict observation by its declared bounds,
``(x - low) / (high - low)`` where both bounds are finite (unchanged elsewhere), then flattens and
concatenates like SB3's ``CombinedExtractor``. Because the scaling lives in the policy, a saved
``model.zip`` is self-contained: ``agents.make("ppo:model.zip", env)`` and ``schedgym compare``
feed it raw observations, with no ``vecnormalize.pkl`` to carry around. Use it for envs whose
observations are not already in [0, 1] (DeadlineWelfare-v0), by name in ``configs/*.yml``:
``policy: schedgym.train.policies.BoundsScaledPolicy`` (PPO/A2C), ``BoundsScaledSACPolicy``,
``BoundsScaledTD3Policy``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.policies import MultiInputActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from stable_baselines3.sac.policies import MultiInputPolicy as SACMultiInputPolicy
from stable_baselines3.td3.policies import MultiInputPolicy as TD3MultiInputPolicy


class BoundsScaledExtractor(BaseFeaturesExtractor):
    """Flatten + concatenate a Dict of Boxes, each rescaled by its finite bounds to [0, 1]."""

    def __init__(self, observation_space: spaces.Dict) -> None:
        if not isinstance(observation_space, spaces.Dict):
            raise ValueError(f"observation_space={observation_space} is invalid: must be a Dict")
        self.keys = list(observation_space.spaces)
        lows, spans = [], []
        for key in self.keys:
            sub = observation_space.spaces[key]
            n = spaces.flatdim(sub)
            lo = np.zeros(n, dtype=np.float32)
            span = np.ones(n, dtype=np.float32)
            if isinstance(sub, spaces.Box):
                low = np.broadcast_to(sub.low, sub.shape).reshape(-1).astype(np.float64)
                high = np.broadcast_to(sub.high, sub.shape).reshape(-1).astype(np.float64)
                ok = np.isfinite(low) & np.isfinite(high) & (high > low)
                lo[ok] = low[ok]
                span[ok] = (high - low)[ok]
            lows.append(lo)
            spans.append(span)
        super().__init__(observation_space, int(sum(len(x) for x in lows)))
        self.low: th.Tensor
        self.span: th.Tensor
        self.register_buffer("low", th.as_tensor(np.concatenate(lows)))
        self.register_buffer("span", th.as_tensor(np.concatenate(spans)))

    def forward(self, observations: dict[str, th.Tensor]) -> th.Tensor:
        """``(batch, features)`` float tensor: every entry rescaled by its bounds."""
        x = th.cat([th.flatten(observations[k], start_dim=1).float() for k in self.keys], dim=1)
        return (x - self.low) / self.span


class BoundsScaledPolicy(MultiInputActorCriticPolicy):
    """PPO/A2C ``MultiInputPolicy`` with :class:`BoundsScaledExtractor` by default."""

    def __init__(self, *args: Any, features_extractor_class: type = BoundsScaledExtractor,
                 **kwargs: Any) -> None:
        kwargs["features_extractor_class"] = features_extractor_class
        super().__init__(*args, **kwargs)


class BoundsScaledSACPolicy(SACMultiInputPolicy):
    """SAC ``MultiInputPolicy`` with :class:`BoundsScaledExtractor` by default."""

    def __init__(self, *args: Any, features_extractor_class: type = BoundsScaledExtractor,
                 **kwargs: Any) -> None:
        kwargs["features_extractor_class"] = features_extractor_class
        super().__init__(*args, **kwargs)


class BoundsScaledTD3Policy(TD3MultiInputPolicy):
    """TD3 ``MultiInputPolicy`` with :class:`BoundsScaledExtractor` by default."""

    def __init__(self, *args: Any, features_extractor_class: type = BoundsScaledExtractor,
                 **kwargs: Any) -> None:
        kwargs["features_extractor_class"] = features_extractor_class
        super().__init__(*args, **kwargs)
