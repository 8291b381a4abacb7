"""Small DeadlineWelfare instances shared by the env tests."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import schedgym  # noqa: F401  (registers the env ids)
from schedgym.envs.deadline_welfare import ENV_ID
from schedgym.envs.deadline_welfare.env import DeadlineWelfareEnv
from schedgym.envs.deadline_welfare.types import DeadlineWelfareInstance, Jobs

__all__ = ["ENV_ID", "SMALL", "make_tiny"]
#: A small but non-trivial configuration: fast enough for every-step checks.
SMALL = {"n_instances": 3, "horizon": 6, "n_jobs": 8, "arrival_rate": 2.0}


def make_tiny(capacity: float = 10.0, utility: str = "linear",
              **kwargs: object) -> DeadlineWelfareEnv:
    """1 instance x 2 slots; two identical jobs (a=2, beta=0.5, xbar=3, rho=5, window [0, 1])."""
    jobs = Jobs(arrival=[0, 0], deadline=[1, 1], workload=[5.0, 5.0],
                allowed=np.ones((2, 1), bool), capability=[3.0, 3.0], coef=[2.0, 2.0],
                weight=[0.5, 0.5], n_slots_hint=2)
    inst = DeadlineWelfareInstance(capacity=np.full((1, 2), capacity), utility=utility,
                                   jobs=jobs)
    return DeadlineWelfareEnv(instance=inst, **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def tiny_env() -> Callable[..., DeadlineWelfareEnv]:
    """Factory of the tiny hand-computable env (see :func:`make_tiny`)."""
    return make_tiny
