"""DeadlineWelfare-v0 (OnSocMax problem): env, instance and generators, dynamics, pricing,
offline optimum."""

from schedgym.envs.deadline_welfare import trace as _trace  # noqa: F401  (registers "alibaba-gpu-2023")
from schedgym.envs.deadline_welfare.env import DeadlineWelfareEnv
from schedgym.envs.deadline_welfare.instance import (
    SCENARIOS,
    DeadlineWelfareInstance,
    Jobs,
    generate,
    job_sampler,
)

__all__ = ["DeadlineWelfareEnv", "DeadlineWelfareInstance", "Jobs", "SCENARIOS", "generate",
           "job_sampler"]
