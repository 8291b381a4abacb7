"""FluctuatingSpeed-v0 (ESDP problem), read in order: ``types`` (frozen instance, typed
parameters) -> ``generator`` (scenarios, synthetic generator) and ``trace`` (the
``alibaba-gpu-2023`` builder) -> ``actions`` (action modes) -> ``dynamics`` (pure functions)
-> ``env`` -> ``viewer``; ``reference`` states one slot in plain numpy (the compiled kernels
are tested against it), ``offline`` holds the oracle and ``vector`` the native batched env."""

from schedgym.envs.fluctuating_speed import trace as _trace  # noqa: F401  (registers "alibaba-gpu-2023")
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
