"""DeadlineWelfare-v0 (OnSocMax problem): types (instance, jobs, parameters), generator
(scenarios), trace scenario, dynamics, env, viewer, pricing and the offline optimum."""

from schedgym.envs.deadline_welfare import trace as _trace  # noqa: F401  (registers "alibaba-gpu-2023")
from schedgym.envs.deadline_welfare.env import DeadlineWelfareEnv
from schedgym.envs.deadline_welfare.generator import SCENARIOS, generate, job_sampler
from schedgym.envs.deadline_welfare.types import (
    DeadlineWelfareInstance,
    DeadlineWelfareParams,
    Jobs,
)

#: The Gymnasium id of this env.
ENV_ID = "schedgym/DeadlineWelfare-v0"

__all__ = ["DeadlineWelfareEnv", "DeadlineWelfareInstance", "DeadlineWelfareParams", "ENV_ID",
           "Jobs", "SCENARIOS", "generate", "job_sampler"]
