"""Unknown keywords raise a TypeError that clients can recognise; integer parameters refuse
values no int64 holds (or floats that are no exact integer) with a ValueError naming them."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import schedgym
from schedgym.core.validation import (
    INT64_MAX,
    UnknownParameterError,
    check_int,
    check_int_range,
    check_known_keys,
    check_seed,
)


def _torchrl_style_make(env_id: str, **kwargs: Any) -> gym.Env:
    """What TorchRL's GymEnv does: pass ``frameskip`` and drop it only on the TypeError Python
    raises for an unexpected keyword."""
    try:
        return gym.make(env_id, frameskip=4, **kwargs)
    except TypeError as err:
        if "unexpected keyword argument 'frameskip'" not in str(err):
            raise
        return gym.make(env_id, **kwargs)


@pytest.mark.parametrize("env_id", schedgym.ENV_IDS)
def test_unknown_keyword_is_a_type_error_naming_it(env_id):
    with pytest.raises(TypeError, match="unexpected keyword argument 'frameskip'") as err:
        gym.make(env_id, frameskip=4)
    assert isinstance(err.value, ValueError)  # still the ValueError of every bad parameter
    env = _torchrl_style_make(env_id)
    assert env.unwrapped.spec.id == env_id
    env.close()


@pytest.mark.parametrize("env_id", schedgym.ENV_IDS)
def test_unknown_keyword_of_the_native_vector_env_is_a_type_error(env_id):
    with pytest.raises(TypeError, match="unexpected keyword argument 'frameskip'"):
        gym.make_vec(env_id, num_envs=2, vectorization_mode="vector_entry_point", frameskip=4)


def test_unknown_keyword_suggests_the_closest_one():
    with pytest.raises(UnknownParameterError, match="did you mean 'horizon'"):
        check_known_keys("scenario", ["horizn"], ["horizon", "n_types"])


@pytest.mark.parametrize("env_id,key", [
    ("schedgym/GainOverhead-v0", "n_types"),
    ("schedgym/GainOverhead-v0", "horizon"),
    ("schedgym/GainOverhead-v0", "n_instances"),
    ("schedgym/FluctuatingSpeed-v0", "n_types"),
    ("schedgym/FluctuatingSpeed-v0", "n_instances"),
    ("schedgym/DeadlineWelfare-v0", "n_jobs"),
])
@pytest.mark.parametrize("value", [1e308, -1e308, 10**30, 2.0**60])
def test_huge_integer_parameters_are_a_value_error_naming_them(env_id, key, value):
    with pytest.raises(ValueError, match=f"{key}="):
        gym.make(env_id, **{key: value})


def test_huge_integer_range_is_a_value_error_naming_it():
    with pytest.raises(ValueError, match="capacity_range="):
        gym.make("schedgym/FluctuatingSpeed-v0", capacity_range=[1e308, 1e308])


@pytest.mark.parametrize("value", [1e308, 2.0**53 + 2, float("inf"), float("nan"), 2**63,
                                   np.uint64(2**64 - 1), 1.5, True, "3"])
def test_check_int_refuses_what_no_int64_or_exact_float_holds(value):
    with pytest.raises(ValueError, match="x=.* is invalid: must be an integer in"):
        check_int("x", value, min_value=0)


@pytest.mark.parametrize("value,expected", [(3.0, 3), (2.0**53, 2**53), (INT64_MAX, INT64_MAX),
                                            (np.int64(7), 7)])
def test_check_int_takes_integers_and_exact_integral_floats(value, expected):
    got = check_int("x", value, min_value=0)
    assert got == expected and type(got) is int


def test_seeds_stay_unbounded_but_refuse_inexact_floats():
    assert check_seed("seed", 2**70) == 2**70
    assert check_seed("seed", 5.0) == 5
    for bad in (1e308, -1, 0.5):
        with pytest.raises(ValueError, match="seed="):
            check_seed("seed", bad)


def test_check_int_range():
    assert check_int_range("r", (1.0, 2), low=0) == (1, 2)
    for bad in [(2, 1), (1.5, 2), (1e308, 1e308), (-1, 1), (1,), "12"]:
        with pytest.raises(ValueError, match="r="):
            check_int_range("r", bad, low=0)
