"""Shared helpers for the train/ tests: tiny versions of every registered env.

Sizes are found generically: each candidate override is kept only if the env accepts it, so an
env registered later gets tested small with no change here (or at its own size if it shares none
of the vocabulary).
"""

from __future__ import annotations

import functools

import gymnasium as gym
import pytest

import schedgym

#: shared parameter vocabulary (DESIGN.md §2), small values
CANDIDATES = {"n_types": 3, "n_instances": 3, "n_resources": 2, "horizon": 12, "n_jobs": 6}


@functools.cache
def small_overrides(env_id: str) -> dict:
    kept: dict = {}
    for key, val in CANDIDATES.items():
        try:
            gym.make(env_id, **kept, **{key: val}).close()
        except (ValueError, TypeError):
            continue
        kept[key] = val
    return kept


def pytest_generate_tests(metafunc):
    marked = any(m.name == "parametrize" and "env_id" in str(m.args[0])
                 for m in metafunc.definition.iter_markers())
    if "env_id" in metafunc.fixturenames and not marked:
        metafunc.parametrize("env_id", schedgym.ENV_IDS)


@pytest.fixture(autouse=True)
def _one_torch_thread():
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
