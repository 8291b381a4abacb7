"""GainOverhead-v0 (OgaSched problem): env, instance and generators, dynamics, offline optimum."""

from schedgym.envs.gain_overhead import trace as _trace  # noqa: F401 (registers alibaba-gpu-2023)
from schedgym.envs.gain_overhead.env import GainOverheadEnv
from schedgym.envs.gain_overhead.instance import SCENARIOS, GainOverheadInstance, generate

__all__ = ["GainOverheadEnv", "GainOverheadInstance", "SCENARIOS", "generate"]
