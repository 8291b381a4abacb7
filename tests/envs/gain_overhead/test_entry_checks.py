"""Every public function of :mod:`schedgym.envs.gain_overhead.dynamics` (and the ``allocation``
decode of :mod:`.actions`) checks the shapes and dtypes of its arrays before a kernel runs: a
wrong size is a ``ValueError`` naming the argument, the shape got and the shape expected (the
kernels index without bounds checks: a short array was read past its end)."""

from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pytest

from schedgym.envs.gain_overhead import actions, dynamics
from tests.envs.gain_overhead.conftest import ENV_ID, SMALL


@pytest.fixture(scope="module")
def inst():
    env = gym.make(ENV_ID, **SMALL).unwrapped
    return env.instance


def _shapes(inst):
    E, K, L = inst.n_edges, inst.n_resources, inst.n_types
    return E, K, L, np.zeros((E, K)), np.ones(L), np.zeros(E * K)


def _calls(inst):
    """``(name, call with a wrong argument, the argument's name, its expected shape)``."""
    E, K, L, y, x, a = _shapes(inst)
    short_y, short_x, short_a = np.zeros((E - 1, K)), np.ones(L - 1), np.zeros(E * K - 1)
    return [
        ("reward/x", lambda: dynamics.reward(inst, short_x, y), "x", (L,)),
        ("reward/y", lambda: dynamics.reward(inst, x, short_y), "y", (E, K)),
        ("reward_parts/y", lambda: dynamics.reward_parts(inst, x, y.ravel()), "y", (E, K)),
        ("supergradient/x", lambda: dynamics.supergradient(inst, short_x, y), "x", (L,)),
        ("supergradient/y", lambda: dynamics.supergradient(inst, x, short_y), "y", (E, K)),
        ("ascent_step/y", lambda: dynamics.ascent_step(inst, x, short_y, 0.5), "y", (E, K)),
        ("ascent_step/x", lambda: dynamics.ascent_step(inst, short_x, y, 0.5), "x", (L,)),
        ("project/z", lambda: dynamics.project(inst, short_y), "z", (E, K)),
        ("project paper/z", lambda: dynamics.project(inst, short_y, "paper"), "z", (E, K)),
        ("score_action/a", lambda: dynamics.score_action(inst, short_a, x), "a", (E * K,)),
        ("score_action/x", lambda: dynamics.score_action(inst, a, short_x), "x", (L,)),
        ("step_one/a", lambda: dynamics.step_one(inst, short_a, x, True), "a", (E * K,)),
        ("step_one/target", lambda: dynamics.step_one(inst, short_a, x, False), "a", (E * K,)),
        ("step_one/x", lambda: dynamics.step_one(inst, a, short_x, True), "x", (L,)),
        ("step_batch/a", lambda: dynamics.step_batch(inst, short_a[None], np.zeros(1, int),
                                                     x[None], True), "a", (1, E * K)),
        ("step_batch/x", lambda: dynamics.step_batch(inst, a[None], np.zeros(1, int),
                                                     short_x[None], True), "x", (1, L)),
        ("step_batch/x rows", lambda: dynamics.step_batch(inst, a[None], np.zeros(2, int),
                                                          x[None], True), "x", (2, L)),
        ("score_batch/z", lambda: dynamics.score_batch(inst, short_y[None], x[None]), "z",
         None),
        ("score_batch/x", lambda: dynamics.score_batch(inst, y[None], short_x[None]), "x",
         (1, L)),
        ("instance_load/y", lambda: dynamics.instance_load(inst, short_y), "y", (E, K)),
        ("utilization/y", lambda: dynamics.utilization(inst, short_y), "y", (E, K)),
        ("feasibility_violation/y", lambda: dynamics.feasibility_violation(inst, short_y), "y",
         (E, K)),
        ("type_totals/y", lambda: dynamics.type_totals(inst, short_y), "y", (E, K)),
        ("decode/action", lambda: actions.decode(inst, "allocation", short_a), "a", (E * K,)),
    ]


def test_every_wrong_size_is_a_value_error_naming_the_argument(inst):
    for name, call, arg, shape in _calls(inst):
        with pytest.raises(ValueError, match=rf"^{arg} has shape") as err:
            call()
        if shape is not None:
            assert re.escape(str(shape)) in re.escape(str(err.value)), (name, str(err.value))


def test_rows_outside_the_action_array_are_refused(inst):
    E, K, L, y, x, a = _shapes(inst)
    for rows in (np.array([1]), np.array([-1]), np.array([0, 5])):
        with pytest.raises(ValueError, match=r"^rows has entries"):
            dynamics.step_batch(inst, a[None], rows, np.ones((rows.size, L)), True)
    with pytest.raises(ValueError, match=r"^rows has shape"):
        dynamics.step_batch(inst, a[None], np.array([0.5]), x[None], True)


def test_non_numeric_arrays_are_a_type_error(inst):
    E, K, L, y, x, a = _shapes(inst)
    with pytest.raises(TypeError, match=r"^y has dtype"):
        dynamics.reward(inst, x, np.full((E, K), "a"))
    with pytest.raises(TypeError, match=r"^x has dtype"):
        dynamics.supergradient(inst, x.astype(complex), y)


def test_other_dtypes_and_layouts_are_converted_not_misread(inst):
    """int arrivals, float32 allocations, a transposed (non-contiguous) allocation and a
    read-only one: the values, converted; the same results as float64 C arrays."""
    E, K, L, _, _, _ = _shapes(inst)
    rng = np.random.default_rng(0)
    y = dynamics.project(inst, rng.uniform(0, 1, (E, K)) * inst.edge_caps)
    x = (rng.random(L) < 0.6).astype(np.int8)
    want = dynamics.reward(inst, x.astype(np.float64), y)
    assert dynamics.reward(inst, x, y) == want
    y_t = np.asfortranarray(y)
    y_ro = y.copy()
    y_ro.setflags(write=False)
    for yy in (y_t, y_ro):
        assert dynamics.reward(inst, x, yy) == want
        np.testing.assert_array_equal(dynamics.supergradient(inst, x, yy),
                                      dynamics.supergradient(inst, x.astype(float), y))
    a32 = rng.uniform(-1, 1, E * K).astype(np.float32)
    got = dynamics.score_action(inst, a32, x)
    ref = dynamics.score_action(inst, a32.astype(np.float64), x.astype(np.float64))
    np.testing.assert_array_equal(got[1], ref[1])
    np.testing.assert_array_equal(got[3], ref[3])


def test_the_vector_envs_helpers_refuse_rows_and_buffers_of_the_wrong_size():
    from schedgym.envs.gain_overhead import batch_actions

    a = np.zeros((3, 5), dtype=np.float32)
    with pytest.raises(ValueError, match=r"^rows has entries"):
        batch_actions.first_nonfinite(a, np.array([0, 3]))
    with pytest.raises(ValueError, match=r"^out has shape \(2, 4\)"):
        batch_actions.clip_rows(a, np.array([0, 1]), np.empty((2, 4)), np.empty(2))
    with pytest.raises(ValueError, match=r"^clip has shape \(1,\)"):
        batch_actions.clip_rows(a, np.array([0, 1]), np.empty((2, 5)), np.empty(1))
    a[2, 4] = np.nan
    assert batch_actions.first_nonfinite(a, np.array([0, 2])) == 14
    assert not dynamics.all_finite(a) and dynamics.all_finite(a[:2, ::2])
