"""FluctuatingSpeed-v0 (ESDP problem): env, instance and generator, dynamics, oracle."""

from schedgym.envs.fluctuating_speed.env import FluctuatingSpeedEnv
from schedgym.envs.fluctuating_speed.instance import (
    SCENARIOS,
    FluctuatingSpeedInstance,
    generate,
)

__all__ = ["FluctuatingSpeedEnv", "FluctuatingSpeedInstance", "SCENARIOS", "generate"]
