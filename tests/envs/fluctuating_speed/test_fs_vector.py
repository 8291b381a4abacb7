"""The native batched FluctuatingSpeed-v0 equals N single envs (``SyncVectorEnv``) bit for bit:
observations, rewards, terminated/truncated and infos, across autoresets and partial resets."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.utils.env_match import check_environments_match

from schedgym.envs.fluctuating_speed import ENV_ID
from schedgym.envs.fluctuating_speed.vector import FluctuatingSpeedVectorEnv

SMALL = {"n_types": 4, "n_instances": 10, "edge_prob": 0.4, "horizon": 5}


def _pair(n: int, **kw):
    kw = {**SMALL, **kw}
    sync = gym.make_vec(ENV_ID, num_envs=n, vectorization_mode="sync", **kw)
    native = gym.make_vec(ENV_ID, num_envs=n, vectorization_mode="vector_entry_point", **kw)
    return sync, native


def _assert_same(a, b, what: str) -> None:
    assert data_equivalence(a, b, exact=True), f"{what} differs: {a!r} vs {b!r}"


def _play(sync, native, steps: int, seed: int, density: float | None = None) -> None:
    _assert_same(sync.reset(seed=seed), native.reset(seed=seed), "reset")
    rng = np.random.default_rng(seed)
    shape = native.action_space.shape
    scores = isinstance(native.single_action_space, gym.spaces.Box)
    for t in range(steps):
        p = rng.random() if density is None else density
        acts = (rng.uniform(-1.3, 1.3, shape) if scores else
                (rng.random(shape) < p).astype(np.int8))
        got, want = native.step(acts), sync.step(acts)
        for name, a, b in zip(("obs", "reward", "terminated", "truncated", "info"), want, got,
                              strict=True):
            _assert_same(a, b, f"step {t} {name}")


@pytest.mark.parametrize("kw", [{}, {"compute_oracle": False}, {"capacity_scale": 1},
                                {"arrival_prob": 0.5, "horizon": 3},
                                {"action_mode": "scores", "instance_features": True},
                                {"instance_features": True, "compute_oracle": False},
                                {"feedback_stats": True},
                                {"action_mode": "scores", "instance_features": True,
                                 "feedback_stats": True}])
def test_vector_equals_sync_vector_env_across_autoresets(kw):
    sync, native = _pair(3, **kw)
    assert isinstance(native.unwrapped, FluctuatingSpeedVectorEnv)
    _play(sync, native, steps=3 * (kw.get("horizon", SMALL["horizon"]) + 1) + 1, seed=7)


def test_paper_default_batch_equals_sync_with_masking_and_repair():
    sync, native = _pair(4, n_types=8, n_instances=40, edge_prob=0.1, horizon=6)
    _play(sync, native, steps=14, seed=0, density=0.6)  # dense selections: repairs happen
    info = native.step(np.ones(native.action_space.shape, dtype=np.int8))[4]
    assert info["n_repaired"].sum() > 0 and info["n_masked"].sum() >= 0


class _OneCopy(gym.Env):
    """A one-copy native batch seen as a single env (for Gymnasium's env-match check)."""

    def __init__(self, venv: gym.vector.VectorEnv) -> None:
        self.venv = venv
        self.observation_space = venv.single_observation_space
        self.action_space = venv.single_action_space

    @staticmethod
    def _row(batch: dict) -> dict:
        return {k: (v[0].item() if v[0].ndim == 0 else v[0]) for k, v in batch.items()
                if not k.startswith("_")}

    def reset(self, *, seed=None, options=None):
        obs, info = self.venv.reset(seed=seed, options=options)
        return self._row(obs), self._row(info)

    def step(self, action):
        obs, r, term, trunc, info = self.venv.step(np.asarray(action)[None])
        return self._row(obs), float(r[0]), bool(term[0]), bool(trunc[0]), self._row(info)


@pytest.mark.parametrize("kw", [{}, {"compute_oracle": False}])
def test_check_environments_match(kw):
    single = gym.make(ENV_ID, **{**SMALL, **kw})
    one = _OneCopy(gym.make_vec(ENV_ID, num_envs=1, vectorization_mode="vector_entry_point",
                                **{**SMALL, **kw}))
    check_environments_match(single, one, num_steps=SMALL["horizon"], seed=3, skip_render=True,
                             info_comparison="equivalence")


@pytest.mark.parametrize("kw", [{}, {"feedback_stats": True}])
def test_seed_lists_none_and_reset_mask_follow_sync(kw):
    sync, native = _pair(3, **kw)
    _assert_same(sync.reset(seed=[5, 2, 9]), native.reset(seed=[5, 2, 9]), "reset")
    _assert_same(sync.reset(seed=[None, 1, None]), native.reset(seed=[None, 1, None]),
                 "reset with None: each copy goes on with its own generator")
    acts = np.ones(native.action_space.shape, dtype=np.int8)
    _assert_same(sync.step(acts), native.step(acts), "step")
    mask = np.array([False, True, False])
    _assert_same(sync.reset(seed=[None, 4, None], options={"reset_mask": mask.copy()}),
                 native.reset(seed=[None, 4, None], options={"reset_mask": mask.copy()}),
                 "masked reset")
    _assert_same(sync.step(acts), native.step(acts), "step after masked reset")
    with pytest.raises(ValueError, match="num_envs=3"):
        native.reset(seed=[1, 2])


def test_step_before_reset_render_mode_and_bad_input_are_refused():
    native = FluctuatingSpeedVectorEnv(2, **SMALL)
    E = native.single_action_space.n
    with pytest.raises(gym.error.ResetNeeded, match="before reset"):
        native.step(np.zeros((2, E), dtype=np.int8))
    with pytest.raises(ValueError, match="render_mode='rgb_array' is not supported"):
        gym.make_vec(ENV_ID, num_envs=2, vectorization_mode="vector_entry_point",
                     render_mode="rgb_array", **SMALL)
    with pytest.raises(ValueError, match="num_envs"):
        FluctuatingSpeedVectorEnv(0, **SMALL)
    native.reset(seed=0)
    bad = np.zeros((2, E))
    bad[1, 2] = 0.5
    with pytest.raises(ValueError, match="non-binary entry"):
        native.step(bad)
    with pytest.raises(ValueError, match="3 rows: must have num_envs=2"):
        native.step(np.zeros((3, E), dtype=np.int8))
    with pytest.raises(ValueError, match=rf"must have shape \({E},\)"):
        native.step(np.zeros((2, E + 1), dtype=np.int8))
    strict = FluctuatingSpeedVectorEnv(1, invalid_action="raise", arrival_prob=1.0, **{
        k: v for k, v in SMALL.items() if k != "arrival_prob"})
    strict.reset(seed=0)
    with pytest.raises(ValueError, match="breaks capacity"):
        strict.step(np.ones((1, strict.single_action_space.n), dtype=np.int8))


def test_max_episode_steps_truncates_like_time_limit():
    native = FluctuatingSpeedVectorEnv(2, max_episode_steps=2, **SMALL)
    native.reset(seed=0)
    acts = np.zeros((2, native.single_action_space.n), dtype=np.int8)
    flags = [native.step(acts)[3].tolist() for _ in range(3)]
    assert flags == [[False, False], [True, True], [False, False]]


# ------------------------------------------------------- the compiled slot path of a single env
def _seq_dot(x, v) -> float:
    """``sum_e x_e v_e`` accumulated in index order, as the compiled step sums (not BLAS)."""
    s = 0.0
    for a, b in zip(np.asarray(x).tolist(), np.asarray(v).tolist(), strict=True):
        s += a * b
    return s


def _reference_step(env, action, origin):
    """One step of ``env`` (unwrapped, default mode) composed from the per-formula helpers of
    ``dynamics`` (mask, repair, net utility, utilization, waits) instead of the compiled slot
    kernel the env runs; returns ``(obs, reward, info, origin after the step)``."""
    from schedgym.envs.fluctuating_speed import dynamics as dyn

    inst, t, T = env.instance, env.t, env.horizon
    arr, z = env.arrivals[t], env.utilities[t]
    x_req = dyn.validate_selection(action, inst.n_edges)
    x = x_req * dyn.edge_mask(inst, arr)
    n_masked = int(x_req.sum() - x.sum())
    x, n_rep = dyn.repair(inst, x)
    z_net = dyn.net_utility(z, inst.cost)
    reward = _seq_dot(x, z_net)
    x_star, v_star = env._oracle.solve(arr)
    info = {"selection": x, "slot_arrivals": arr.copy(),
            "slot_feedback": np.where(x > 0, z_net, 0.0), "raw_utility": _seq_dot(x, z - inst.cost),
            "expected_reward": _seq_dot(x, inst.theta), "n_selected": int(x_req.sum()),
            "n_masked": n_masked, "n_repaired": n_rep, "repaired": n_rep > 0,
            "mean_utilization": float(dyn.utilization(inst, x).mean()), "slot": t,
            "oracle_value": v_star, "pseudo_regret": v_star - _seq_dot(x, inst.theta),
            "realised_regret": _seq_dot(x_star, z_net) - reward}
    origin = dyn.close_waits(inst, origin, x)
    if t + 1 < T:
        origin = dyn.open_waits(origin, env.arrivals[t + 1], t + 1)
    f32 = np.float32
    obs = {"arrivals": (env.arrivals[t + 1] if t + 1 < T else np.zeros(inst.n_types)).astype(f32),
           "utilization": dyn.utilization(inst, x).astype(f32),
           "feedback": info["slot_feedback"].astype(f32), "used": x.astype(f32),
           "waiting": (dyn.waiting_times(origin, t + 1) / T).astype(f32),
           "progress": np.array([(t + 1) / T], dtype=f32)}
    return obs, reward, info, origin


@pytest.mark.parametrize("kw", [{"horizon": 40}, {"horizon": 30, "capacity_scale": 1},
                                {"horizon": 20, "n_types": 16, "n_instances": 80}])
def test_compiled_slot_path_equals_the_per_formula_helpers(kw):
    env = gym.make(ENV_ID, **kw).unwrapped
    env.reset(seed=11)
    from schedgym.envs.fluctuating_speed import dynamics as dyn

    origin = dyn.open_waits(-np.ones(env.instance.n_types), env.arrivals[0], 0)
    rng = np.random.default_rng(1)
    for _ in range(env.horizon):
        act = (rng.random(env.instance.n_edges) < rng.random()).astype(np.int8)
        want_obs, want_r, want_info, origin = _reference_step(env, act, origin)
        obs, r, term, trunc, info = env.step(act)
        what = f"slot {env.t - 1}"
        _assert_same(want_obs, obs, what)
        _assert_same(want_r, r, what)
        _assert_same(want_info, info, what)
        assert not term and trunc == (env.t == env.horizon)


def test_compiled_slot_path_refuses_what_the_env_refuses():
    from schedgym.envs.fluctuating_speed import dynamics as dyn

    env = gym.make(ENV_ID, arrival_prob=1.0).unwrapped
    env.reset(seed=0)
    tabs, E = dyn.slot_tables(env.instance), env.instance.n_edges
    arr, z = env.arrivals[0], env.utilities[0]
    with pytest.raises(ValueError, match="non-binary entry"):
        dyn.apply_slot(tabs, np.full(E, np.nan), arr, z)
    with pytest.raises(ValueError, match=r"must have shape"):
        dyn.apply_slot(tabs, np.zeros(E + 1), arr, z)
    with pytest.raises(ValueError, match="breaks capacity"):
        dyn.apply_slot(tabs, np.ones(E, dtype=np.int8), arr, z, repair_infeasible=False)
    o = dyn.apply_slot(tabs, [True] * E, arr, z)  # bools and lists are accepted
    assert dyn.is_feasible(env.instance, o.x) and o.out[dyn.N_REPAIRED] > 0


@pytest.mark.parametrize("n_types", [4, 70])  # bit-mask keys, and rows beyond 62 ports
def test_episode_oracle_equals_per_slot_solves(n_types):
    from schedgym.envs.fluctuating_speed.offline import OracleSolver
    from schedgym.envs.fluctuating_speed.vector import episode_oracle

    env = gym.make(ENV_ID, n_types=n_types, n_instances=6, edge_prob=0.3, horizon=40,
                   arrival_prob=0.5).unwrapped
    env.reset(seed=2)
    solver = OracleSolver(env.instance)
    xs, vs = episode_oracle(solver, env.arrivals)
    for t in range(env.horizon):
        x, v = OracleSolver(env.instance).solve(env.arrivals[t])
        assert xs[t].tolist() == x.tolist() and vs[t] == v
