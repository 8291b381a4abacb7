"""The native batched GainOverhead-v0 is a drop-in for ``SyncVectorEnv`` over N single envs:
identical observations, rewards (bit for bit), flags and infos, across autoresets and in every
action mode, arrival protocol and observation option."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.utils.env_match import check_environments_match

from tests.envs.gain_overhead.conftest import ENV_ID, SMALL

SHORT = {**SMALL, "horizon": 5}


def _pair(n: int, **kw: Any) -> tuple[gym.vector.VectorEnv, gym.vector.VectorEnv]:
    native = gym.make_vec(ENV_ID, num_envs=n, vectorization_mode="vector_entry_point", **kw)
    sync = gym.make_vec(ENV_ID, num_envs=n, vectorization_mode="sync", **kw)
    return native, sync


def _assert_same(native_out: tuple, sync_out: tuple, where: str) -> None:
    """Bit-for-bit equality (values and dtypes) of observations, rewards, flags and infos."""
    names = ("obs", "reward", "terminated", "truncated", "info") if len(native_out) == 5 \
        else ("obs", "info")
    for name, a, b in zip(names, native_out, sync_out, strict=True):
        assert data_equivalence(a, b, exact=True), f"{where}: {name} differs:\n{a}\n{b}"


@pytest.mark.parametrize("kw", [
    {},
    {"utility": "mixed"},
    {"action_mode": "fractions", "arrivals": "hidden"},
    {"action_mode": "fractions", "arrivals": "revealed"},
    {"action_mode": "prices", "utility": "mixed", "instance_features": True},
], ids=["allocation", "mixed", "fractions-hidden", "fractions-revealed", "prices-features"])
def test_native_equals_sync_vector_env_across_autoresets(kw):
    native, sync = _pair(3, **SHORT, **kw)
    _assert_same(native.reset(seed=7), sync.reset(seed=7), "reset")
    rng = np.random.default_rng(0)
    for t in range(3 * SHORT["horizon"] + 2):  # crosses three autoresets
        act = rng.uniform(-1.3, 1.3, native.action_space.shape).astype(np.float32)
        _assert_same(native.step(act), sync.step(act), f"step {t}")


def test_native_equals_sync_on_paper_default_with_reset_mask_and_seed_list():
    native, sync = _pair(2, horizon=4)
    _assert_same(native.reset(seed=[5, 11]), sync.reset(seed=[5, 11]), "reset")
    rng = np.random.default_rng(1)
    for t in range(6):
        act = rng.uniform(-1, 1, native.action_space.shape).astype(np.float32)
        _assert_same(native.step(act), sync.step(act), f"step {t}")
        if t == 2:  # reset copy 1 only, mid-episode
            opts = {"reset_mask": np.array([False, True])}
            _assert_same(native.reset(seed=3, options=opts), sync.reset(seed=3, options=opts),
                         "masked reset")


def test_reset_info_of_a_new_episode_is_fresh():
    """Regression: the autoreset step returned the previous episode's arrivals and slot -1."""
    native, _ = _pair(2, **SHORT)
    native.reset(seed=0)
    zeros = np.zeros(native.action_space.shape, dtype=np.float32)
    for _ in range(SHORT["horizon"]):
        native.step(zeros)
    obs, reward, _, trunc, info = native.step(zeros)
    assert not trunc.any() and np.all(reward == 0.0)
    assert set(info) == {"slot_arrivals", "_slot_arrivals", "slot", "_slot"}
    assert np.all(info["slot"] == 0) and info["_slot"].all()
    for i, copy_env in enumerate(native.unwrapped.envs):  # the new episodes' first slot
        np.testing.assert_array_equal(info["slot_arrivals"][i], copy_env.arrivals[0])
        np.testing.assert_array_equal(obs["arrivals"][i], copy_env.arrivals[0])
        assert copy_env.t == 0


class _OneCopy(gym.Env):
    """A 1-copy vector env seen as a single env (unbatched), for ``check_environments_match``."""

    def __init__(self, venv: gym.vector.VectorEnv) -> None:
        self.venv = venv
        self.observation_space = venv.single_observation_space
        self.action_space = venv.single_action_space
        self.render_mode = venv.render_mode

    @staticmethod
    def _first(tree: Any) -> Any:
        if isinstance(tree, dict):
            return {k: _OneCopy._first(v) for k, v in tree.items() if not k.startswith("_")}
        return tree[0].item() if np.ndim(tree) == 1 else tree[0]

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, info = self.venv.reset(seed=seed, options=options)
        return self._first(obs), self._first(info)

    def step(self, action):
        obs, r, term, trunc, info = self.venv.step(np.asarray(action)[None])
        return self._first(obs), float(r[0]), bool(term[0]), bool(trunc[0]), self._first(info)

    def render(self):
        return self.venv.render()[0]


@pytest.mark.parametrize("kw", [{"utility": "mixed"},
                                {"action_mode": "prices", "utility": "mixed"}])
def test_check_environments_match_single_env(kw):
    single = gym.make(ENV_ID, render_mode="rgb_array", **SHORT, **kw).unwrapped
    venv = gym.make_vec(ENV_ID, num_envs=1, vectorization_mode="vector_entry_point",
                        render_mode="rgb_array", **SHORT, **kw)
    check_environments_match(single, _OneCopy(venv), num_steps=SHORT["horizon"], seed=3)


def test_render_modes_match_sync():
    native, sync = _pair(2, render_mode="ansi", **SHORT)
    native.reset(seed=1)
    sync.reset(seed=1)
    act = np.full(native.action_space.shape, 0.3, dtype=np.float32)
    native.step(act)
    sync.step(act)
    assert native.render() == sync.render()
    with pytest.raises(ValueError, match="render_mode"):
        _pair(1, render_mode="human")


def test_vector_rejects_bad_actions_config_and_step_before_reset():
    venv, _ = _pair(2, **SMALL)
    with pytest.raises(gym.error.ResetNeeded, match="before reset"):
        venv.step(np.zeros(venv.action_space.shape))
    venv.reset(seed=0)
    n = venv.single_action_space.shape[0]
    with pytest.raises(ValueError, match="actions has shape"):
        venv.step(np.zeros((3, n)))
    bad = np.zeros((2, n))
    bad[1, 4] = np.nan
    with pytest.raises(ValueError, match=r"non-finite entry \(env 1, index 4"):
        venv.step(bad)
    with pytest.raises(ValueError, match="num_envs"):
        _pair(0)
    with pytest.raises(ValueError, match="arrival_prob"):
        _pair(2, arrival_prob=2.0)
    with pytest.raises(ValueError, match="seed has 3 entries"):
        venv.reset(seed=[1, 2, 3])


def test_action_of_a_resetting_copy_is_ignored_as_in_sync():
    native, sync = _pair(2, **SHORT)
    native.reset(seed=0)
    sync.reset(seed=0)
    zeros = np.zeros(native.action_space.shape, dtype=np.float32)
    for _ in range(SHORT["horizon"]):
        native.step(zeros)
        sync.step(zeros)
    nan = np.full(native.action_space.shape, np.nan, dtype=np.float32)  # both copies reset now
    _assert_same(native.step(nan), sync.step(nan), "autoreset step")


@pytest.mark.parametrize("utility", ["linear", "mixed"])
def test_score_batch_against_numpy(utility):
    """The batched kernel: projection per copy, Euclidean distance, utilization and reward, each
    against an independent numpy computation (the reward against reward_parts, which the
    hand-computed tests of test_reward_math check)."""
    from schedgym.envs.gain_overhead import dynamics

    inst = gym.make(ENV_ID, **SMALL, utility=utility).unwrapped.instance
    rng = np.random.default_rng(3)
    z = rng.uniform(-0.2, 1.2, (4, *inst.edge_caps.shape)) * inst.edge_caps
    x = (rng.random((4, inst.n_types)) < 0.6).astype(float)
    out = dynamics.score_batch(inst, z, x)
    for i in range(4):
        y = dynamics.project(inst, z[i])
        np.testing.assert_array_equal(out.y[i], y)
        assert out.distance[i] == pytest.approx(np.sqrt(((y - z[i]) ** 2).sum()), rel=1e-13)
        load = np.zeros(inst.capacities.shape)
        np.add.at(load, inst.edge_instance, y)
        util = np.divide(load, inst.capacities, out=np.zeros_like(load),
                         where=inst.capacities > 0)
        np.testing.assert_allclose(out.utilization[i], np.minimum(util, 1.0), rtol=1e-13,
                                   atol=1e-15)
        parts = dynamics.reward_parts(inst, x[i], y)
        assert (out.gain[i], out.penalty[i]) == (parts.gain, parts.penalty)
        assert out.reward[i] == parts.reward


# ------------------------------------------------- batched helpers of the vector env's step
def test_batch_action_kernels_against_numpy():
    """The compiled batch helpers against numpy: clipping with the clip amount ``max |clip(a) -
    a|`` of each listed row, and the first non-finite entry of the listed rows."""
    from schedgym.envs.gain_overhead import batch_actions

    rng = np.random.default_rng(4)
    rows = np.array([0, 2, 3])
    for dtype in (np.float32, np.float64):
        a = rng.uniform(-1.5, 1.5, (4, 11)).astype(dtype)
        a[2] = np.clip(a[2], -1, 1)  # a row inside the box: clip amount 0
        ref = np.clip(a[rows].astype(np.float64), -1.0, 1.0)
        out, clip = np.empty((3, 11)), np.empty(3)
        batch_actions.clip_rows(a, rows, out, clip)
        np.testing.assert_array_equal(out, ref)
        np.testing.assert_array_equal(clip, np.abs(ref - a[rows]).max(axis=1))
        assert clip[1] == 0.0 and clip[0] > 0.0
        assert batch_actions.first_nonfinite(a, rows) == -1
        a[1, 2] = np.nan  # row 1 is not listed: ignored
        assert batch_actions.first_nonfinite(a, rows) == -1
        a[3, 7], a[2, 9] = np.inf, -np.inf
        assert batch_actions.first_nonfinite(a, rows) == 2 * 11 + 9
        assert batch_actions.first_nonfinite(a, np.arange(4)) == 1 * 11 + 2


@pytest.mark.parametrize("mode", ["fractions", "prices"])
def test_decode_batch_rows_are_the_single_decode(mode):
    """Row i of the batched decode has the bits of ``decode`` of action i (with and without the
    served-types gate), so the vector env decodes as N single envs."""
    from schedgym.envs.gain_overhead import actions

    inst = gym.make(ENV_ID, **SMALL, utility="mixed").unwrapped.instance
    rng = np.random.default_rng(5)
    a = rng.uniform(-1, 1, (5, inst.n_types * inst.n_resources))
    served = rng.random((5, inst.n_types)) < 0.5
    for gate in (None, served):
        z = actions.decode_batch(inst, mode, a, None, gate)
        assert z.shape == (5, *inst.edge_caps.shape)
        for i in range(5):
            ref = actions.decode(inst, mode, a[i], None, None if gate is None else gate[i])
            np.testing.assert_array_equal(z[i], ref, strict=True)
    assert np.all(z[~served[:, inst.edge_type]] == 0.0)
    with pytest.raises(ValueError, match="action_mode='bogus' is invalid"):
        actions.decode_batch(inst, "bogus", a)


@pytest.mark.parametrize("action_mode", ["allocation", "prices"])
def test_action_dtypes_give_the_same_step(action_mode):
    """float32 actions are taken as they are, float64/int/lists converted: the same bits."""
    runs = []
    for convert in (lambda a: a, lambda a: a.astype(np.float64), lambda a: a.tolist()):
        native, _ = _pair(2, **SHORT, action_mode=action_mode)
        single = gym.make(ENV_ID, **SHORT, action_mode=action_mode)
        out = [native.reset(seed=1), single.reset(seed=1)]
        rng = np.random.default_rng(2)
        for _ in range(3):
            act = rng.uniform(-1.2, 1.2, native.action_space.shape).astype(np.float32)
            out += [native.step(convert(act)), single.step(convert(act[0]))]
        runs.append(out)
    for other in runs[1:]:
        assert data_equivalence(runs[0], other, exact=True)
    native, _ = _pair(2, **SHORT, action_mode=action_mode)
    native.reset(seed=0)
    ints = np.zeros(native.action_space.shape, dtype=np.int64)
    _, _, _, _, info = native.step(ints)
    assert info["action_clip"].dtype == np.float64 and np.all(info["action_clip"] == 0.0)


def test_staggered_copies_ignore_a_resetting_copys_nan_and_refuse_an_acting_one():
    """Copies out of phase (a masked reset): one copy autoresets while the other acts. A NaN
    in the resetting copy's row is ignored (as SyncVectorEnv ignores it); in the acting copy's
    row it raises naming that copy, before anything changes."""
    native, sync = _pair(2, **SHORT)
    native.reset(seed=0)
    sync.reset(seed=0)
    rng = np.random.default_rng(3)
    opts = {"reset_mask": np.array([False, True])}
    for t in range(SHORT["horizon"]):
        act = rng.uniform(-1, 1, native.action_space.shape).astype(np.float32)
        _assert_same(native.step(act), sync.step(act), f"step {t}")
        if t == 1:
            _assert_same(native.reset(seed=4, options=opts), sync.reset(seed=4, options=opts),
                         "masked reset")
    assert native.unwrapped._autoreset.tolist() == [True, False]  # copy 0 resets next
    act = rng.uniform(-1, 1, native.action_space.shape).astype(np.float32)
    bad = act.copy()
    bad[1, 3] = np.inf
    with pytest.raises(ValueError, match=r"non-finite entry \(env 1, index 3: np.float64\(inf"):
        native.step(bad)
    act[0, :] = np.nan
    _assert_same(native.step(act), sync.step(act), "copy 0 resets, copy 1 acts")
    for t in range(2 * SHORT["horizon"]):
        act = rng.uniform(-1, 1, native.action_space.shape).astype(np.float32)
        _assert_same(native.step(act), sync.step(act), f"later step {t}")


def test_envs_are_up_to_date_copies():
    """``envs`` hands out the copies with their slot and utilization current (the batched step
    keeps them in the vector env's arrays)."""
    native, sync = _pair(3, **SHORT, render_mode="ansi")
    native.reset(seed=2)
    sync.reset(seed=2)
    rng = np.random.default_rng(0)
    for k in range(1, SHORT["horizon"] + 3):
        act = rng.uniform(-1, 1, native.action_space.shape).astype(np.float32)
        obs, *_ = native.step(act)
        sync.step(act)
        for i, (mine, theirs) in enumerate(zip(native.unwrapped.envs, sync.envs, strict=True)):
            assert mine.t == theirs.unwrapped.t
            np.testing.assert_array_equal(mine.arrivals, theirs.unwrapped.arrivals)
            np.testing.assert_array_equal(mine._obs()["utilization"], obs["utilization"][i])
        assert native.render() == sync.render(), f"render after step {k}"


def test_the_vector_envs_state_api_checks_what_it_is_given():
    """share_arrivals / sync_state are how GainOverheadVectorEnv touches a copy's state: the
    values it sets are what the copy then reports, and a wrong shape or slot is refused."""
    env = gym.make(ENV_ID, horizon=5).unwrapped
    env.reset(seed=3)
    before = env.arrivals.copy()
    row = np.full((5, env.instance.n_types), -1.0)
    env.share_arrivals(row)
    np.testing.assert_array_equal(row, before)
    np.testing.assert_array_equal(env.arrivals, before)
    util = np.full(env.instance.n_instances * env.instance.n_resources, 0.25)
    env.sync_state(2, util)
    assert env.t == 2
    np.testing.assert_array_equal(env.observed_arrivals(), env.arrivals[2 - env._lag])
    with pytest.raises(ValueError, match="row has shape"):
        env.share_arrivals(np.zeros((4, env.instance.n_types)))
    with pytest.raises(ValueError, match=r"t=6 is invalid: must be in \[0, 5\]"):
        env.sync_state(6, util)
