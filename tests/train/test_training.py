"""Tiny training runs of every supported algorithm on every registered env.

Each run completes, writes the documented schedgym/* TensorBoard tags (read back from the event
file), and saves a model that ``agents.make("ALGO:model.zip", env)`` reloads with the same
deterministic actions. Resuming from a checkpoint continues the step count.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import schedgym
from schedgym import agents
from schedgym.envs.gain_overhead import ENV_ID as GO
from schedgym.train import hyperparams as hp
from schedgym.train.model_io import vecnormalize_path
from schedgym.train.tensorboard import documented_tags, metric_spec, read_scalars
from schedgym.train.training import train

from .conftest import small_overrides

#: a few hundred steps; small batches so that on/off-policy updates do happen
TINY = {
    "ppo": {"n_steps": 32, "batch_size": 32, "n_epochs": 2, "n_envs": 2},
    "a2c": {"n_steps": 8, "n_envs": 2},
    "sac": {"learning_starts": 32, "batch_size": 32, "buffer_size": 1000},
    "td3": {"learning_starts": 32, "batch_size": 32, "buffer_size": 1000},
}
STEPS = 160


def _cases():
    out = []
    for env_id in schedgym.ENV_IDS:
        env = gym.make(env_id)
        for algo in hp.supported_algos(env.action_space):
            out.append((env_id, algo))
        env.close()
    return out


def _run(tmp_path, env_id, algo, **kw):
    return train(algo, env_id, timesteps=kw.pop("timesteps", STEPS),
                 overrides=small_overrides(env_id), out=tmp_path, hyperparams=TINY[algo],
                 log_every=40, eval_freq=kw.pop("eval_freq", 80), eval_episodes=1, **kw)


@pytest.mark.parametrize("env_id, algo", _cases())
def test_tiny_training_logs_tags_and_reloads(tmp_path, env_id, algo):
    res = _run(tmp_path, env_id, algo)
    assert res.timesteps >= STEPS
    run = res.run_dir
    for f in ("model.zip", "config.yml", "run.json", "evaluations.npz", "best_model.zip"):
        assert (run / f).is_file(), f
    assert list((run / "checkpoints").glob("model_*_steps.zip"))
    assert vecnormalize_path(res.model_path).is_file()  # reward scaling is on in the configs

    scalars = read_scalars(run)
    env = gym.make(env_id, **small_overrides(env_id))
    spec = metric_spec(env)
    missing = set(documented_tags(spec)) - set(scalars)
    assert not missing, missing
    assert "eval/mean_reward" in scalars  # EvalCallback on held-out seeds
    # the schedgym/step/reward tag is the env's own reward scale, not VecNormalize's
    steps = [v for _, v in scalars["schedgym/step/reward"]]
    assert np.isfinite(steps).all()
    ep = [v for _, v in scalars["schedgym/episode/reward"]]
    ln = [v for _, v in scalars["schedgym/episode/length"]]
    avg = [v for _, v in scalars["schedgym/episode/avg_reward"]]
    assert ep and all(x > 0 for x in ln)
    # the x axis is the training step count
    xs = [s for s, _ in scalars["schedgym/step/reward"]]
    assert xs == sorted(xs) and xs[-1] <= res.timesteps
    assert np.all(np.isfinite(avg))

    # save -> reload through the agent registry gives the same deterministic actions
    loaded = agents.make(f"{algo}:{res.model_path}", env)
    obs, _ = env.reset(seed=123)
    for _ in range(5):
        a1, _ = res.model.predict(obs, deterministic=True)
        a2, _ = loaded.predict(obs, deterministic=True)
        np.testing.assert_array_equal(a1, a2)
        assert env.action_space.contains(np.asarray(a2, dtype=env.action_space.dtype))
        obs, _, term, trunc, _ = env.step(a2)
        if term or trunc:
            obs, _ = env.reset()
    env.close()


def test_episode_tags_use_raw_rewards(tmp_path):
    """With VecNormalize scaling rewards, schedgym/episode/reward must equal the Monitor's raw
    episode returns (what rollout/ep_rew_mean averages) in the env's units: with one env and a
    logging window of exactly one episode, the tag's values are those returns, one by one."""
    horizon = small_overrides(GO)["horizon"]
    res = train("ppo", GO, timesteps=STEPS, overrides=small_overrides(GO), out=tmp_path,
                hyperparams={**TINY["ppo"], "n_envs": 1}, log_every=horizon, eval_freq=0,
                checkpoint_freq=0)
    assert res.model.get_vec_normalize_env() is not None  # rewards were scaled in training
    ours = [v for _, v in read_scalars(res.run_dir)["schedgym/episode/reward"]]
    monitor = [ep["r"] for ep in res.model.ep_info_buffer]
    assert len(ours) == len(monitor) == STEPS // horizon
    np.testing.assert_allclose(ours, monitor, rtol=1e-6)
    assert abs(np.mean(ours)) > 10.0  # not the normalised scale (order 1)


@pytest.mark.parametrize("algo", ["ppo", "sac"])
def test_resume_continues_the_step_count(tmp_path, algo):
    env_id = GO
    first = _run(tmp_path, env_id, algo, name="first", checkpoint_freq=64, eval_freq=0)
    ckpts = sorted((first.run_dir / "checkpoints").glob("model_*_steps.zip"),
                   key=lambda p: int(p.stem.split("_")[1]))
    assert ckpts
    ckpt = ckpts[-1]
    done = int(ckpt.stem.split("_")[1])
    assert vecnormalize_path(ckpt).is_file()
    second = _run(tmp_path, env_id, algo, name="second", resume=ckpt, timesteps=64,
                  eval_freq=0, checkpoint_freq=0)
    assert second.timesteps >= done + 64
    assert second.timesteps < done + 64 + 64  # continued, not restarted nor doubled
    xs = [s for s, _ in read_scalars(second.run_dir)["schedgym/step/reward"]]
    assert min(xs) > done  # the TensorBoard x axis continues too


def test_resume_into_the_same_run_keeps_the_old_progress_csv(tmp_path):
    env_id = GO
    first = _run(tmp_path, env_id, "ppo", name="r", timesteps=64, eval_freq=0,
                 checkpoint_freq=0)
    again = _run(tmp_path, env_id, "ppo", name="r", resume=first.model_path, timesteps=64,
                 eval_freq=0, checkpoint_freq=0)
    assert again.run_dir == first.run_dir
    kept = list(first.run_dir.glob("progress.until-*.csv"))
    assert len(kept) == 1 and kept[0].stat().st_size > 0
    assert again.timesteps >= first.timesteps + 64


def test_vecnormalize_path_naming(tmp_path):
    assert vecnormalize_path("a/checkpoints/model_128_steps.zip").name == \
        "model_vecnormalize_128_steps.pkl"
    assert vecnormalize_path("a/model.zip").name == "vecnormalize.pkl"
    assert vecnormalize_path("a/best_model.zip").name == "vecnormalize.pkl"


def test_unsupported_algo_for_the_action_space_is_refused(tmp_path):
    for env_id in schedgym.ENV_IDS:
        env = gym.make(env_id)
        bad = [a for a in hp.ALGOS if a not in hp.supported_algos(env.action_space)]
        env.close()
        for algo in bad:
            with pytest.raises(ValueError, match="algo"):
                _run(tmp_path, env_id, algo)


def test_bad_env_override_fails_fast(tmp_path):
    with pytest.raises(ValueError, match="no_such_param"):
        train("ppo", GO, timesteps=10, out=tmp_path,
              overrides={"no_such_param": 1})


def test_wall_clock_budget_stops_and_saves(tmp_path):
    res = _run(tmp_path, GO, "a2c", timesteps=10**7, max_minutes=0.05,
               eval_freq=0, checkpoint_freq=0)
    assert res.model_path.is_file() and res.timesteps < 10**7


def test_the_final_model_is_evaluated_when_the_wall_clock_stops_training(tmp_path):
    """With --max-minutes the evaluations stopped at 80k of 106k steps."""
    res = _run(tmp_path, GO, "a2c", timesteps=10**7, max_minutes=0.05,
               eval_freq=10**6, checkpoint_freq=0)
    with np.load(res.run_dir / "evaluations.npz") as ev:
        assert int(ev["timesteps"][-1]) == res.timesteps < 10**6


def test_the_final_model_is_evaluated_once_when_steps_end_between_evaluations(tmp_path):
    res = _run(tmp_path, GO, "a2c", timesteps=48, eval_freq=32, checkpoint_freq=0)
    with np.load(res.run_dir / "evaluations.npz") as ev:
        assert list(ev["timesteps"]) == [32, 48]  # the one at 32, then the final model


def test_the_progress_bar_aims_at_the_budget_that_binds():
    from schedgym.train.callbacks import BudgetProgressBar

    steps_only = BudgetProgressBar(1000)
    assert steps_only.aim(100, 10.0) == 1000
    timed = BudgetProgressBar(1000, seconds=60.0)
    assert timed.aim(100, 10.0) == 600  # 10 steps/s for 50 s more: the time limit binds
    assert timed.aim(500, 10.0) == 1000  # the step count binds
    assert timed.aim(700, 61.0) == 700  # past the limit: what was done
    assert timed.aim(5, 0.5) == 1000  # no rate yet


def test_beside_puts_classical_agents_on_the_same_board(tmp_path):
    env_id = GO
    res = _run(tmp_path, env_id, "a2c", timesteps=48, eval_freq=0, checkpoint_freq=0,
               beside=["random"], beside_seeds=[100])
    learned = {t for t in read_scalars(res.run_dir) if t.startswith("schedgym/")}
    other = read_scalars(res.run_dir.parent / "random")
    assert set(other) == learned
    # a classical agent is a flat reference line across the learner's whole range,
    # not a few points at the left edge
    for tag, points in other.items():
        steps = [s for s, _ in points]
        assert steps[0] == 0 and steps[-1] == res.timesteps == 48, tag
        assert len(points) > 2 and len({v for _, v in points}) == 1, tag
    with pytest.raises(ValueError, match="nosuchagent"):
        _run(tmp_path, env_id, "a2c", timesteps=48, beside=["nosuchagent"])


def test_observation_normalisation_warns(tmp_path):
    with pytest.warns(UserWarning, match="norm_obs"):
        train("a2c", GO, timesteps=16, out=tmp_path,
              overrides=small_overrides(GO), eval_freq=0,
              checkpoint_freq=0, hyperparams={"normalize": True, "n_envs": 1})


def test_training_steps_the_env_once_under_the_compile_notice(tmp_path, monkeypatch):
    """The first use compiled for a minute with nothing said; train now steps its env once
    inside the compile notice (which speaks when that takes long)."""
    import contextlib

    from schedgym.train import preflight

    entered = []

    @contextlib.contextmanager
    def notice():
        entered.append(True)
        yield

    monkeypatch.setattr(preflight, "compile_notice", notice)
    _run(tmp_path, GO, "a2c", timesteps=16, eval_freq=0, checkpoint_freq=0)
    assert entered == [True]
