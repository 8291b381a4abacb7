"""FluctuatingSpeed-v0 (ESDP problem), read in order: ``types`` (frozen instance, typed
parameters) -> ``generator`` (scenarios, synthetic generator) and ``trace`` (the
``alibaba-gpu-2023`` builder) -> ``dynamics`` (pure functions) -> ``env`` -> ``viewer``;
``offline`` holds the oracle."""

from schedgym.envs.fluctuating_speed.env import FluctuatingSpeedEnv
from schedgym.envs.fluctuating_speed.generator import SCENARIOS, generate
from schedgym.envs.fluctuating_speed.types import (
    FluctuatingSpeedInstance,
    FluctuatingSpeedParams,
)

#: The Gymnasium id of this env.
ENV_ID = "schedgym/FluctuatingSpeed-v0"

__all__ = ["ENV_ID", "SCENARIOS", "FluctuatingSpeedEnv", "FluctuatingSpeedInstance",
           "FluctuatingSpeedParams", "generate"]
