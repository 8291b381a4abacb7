"""The tag vocabulary, the tracker's aggregation, and the classical runner writing the same tags
as the training callback."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

from schedgym.train.runner import build_agent, run_episode
from schedgym.train.tensorboard import (
    EPISODE,
    STEP,
    MetricTracker,
    StepRecorder,
    documented_tags,
    log_classical,
    metric_spec,
    read_scalars,
    run_classical,
    run_name,
)
from schedgym.train.training import train

from .conftest import small_overrides


def test_tags_follow_episode_metrics(env_id):
    env = gym.make(env_id)
    spec = metric_spec(env)
    tags = documented_tags(spec)
    assert tags[0] == STEP + "reward"
    for key in env.unwrapped.episode_metrics:
        assert STEP + key in tags and EPISODE + key in tags
    assert EPISODE + "avg_reward" in tags and EPISODE + "length" in tags
    assert len(tags) == len(set(tags))
    env.close()


def test_tracker_aggregates_like_run_episode(env_id):
    """The episode metrics logged to TensorBoard are exactly compare's table entries."""
    env = gym.make(env_id, **small_overrides(env_id))
    agent = build_agent("random", env)
    spec = metric_spec(env)
    rec = StepRecorder(spec)
    res = run_episode(env, agent, seed=5, step_callback=rec)
    tracker = MetricTracker(spec)
    out = None
    for j, vals in enumerate(rec.steps):
        out = tracker.step_values(0, vals, done=j == len(rec.steps) - 1)
    assert out is not None and out["length"] == res.steps
    for key, val in res.metrics.items():
        if math.isnan(val):
            assert math.isnan(out[key])
        else:
            assert out[key] == pytest.approx(val, rel=1e-12, abs=1e-12), key
    env.close()


def test_window_means_by_hand():
    spec = {"reward": "sum", "gain": "sum", "util": "mean", "frac": "last"}
    tr = MetricTracker(spec, n_envs=2)
    tr.step(0, 1.0, {"gain": 2.0, "util": 0.5, "frac": 0.1})
    tr.step(1, 3.0, {"gain": 4.0, "util": 1.0, "frac": 0.2, "other": 9.0})
    m = tr.step(0, 5.0, {"gain": 6.0, "util": 0.0, "frac": 0.3, "alloc": np.ones(3)}, done=True)
    assert m == {"reward": 6.0, "gain": 8.0, "util": 0.25, "frac": 0.3, "avg_reward": 3.0,
                 "length": 2.0}
    sc = tr.pop_scalars()
    assert sc[STEP + "reward"] == pytest.approx(3.0)
    assert sc[STEP + "gain"] == pytest.approx(4.0)
    assert sc[STEP + "util"] == pytest.approx(0.5)
    assert sc[EPISODE + "reward"] == 6.0 and sc[EPISODE + "length"] == 2.0
    assert STEP + "other" not in sc and STEP + "alloc" not in sc
    # env 1's episode is still open; the next window starts empty
    tr.step(1, 1.0, {"gain": 0.0}, done=True)
    sc2 = tr.pop_scalars()
    assert sc2[EPISODE + "reward"] == 4.0 and sc2[EPISODE + "length"] == 2.0
    assert sc2[STEP + "reward"] == 1.0 and STEP + "util" not in sc2


def test_classical_runner_writes_the_same_tags_as_training(tmp_path, env_id):
    ov = small_overrides(env_id)
    res = train("ppo", env_id, timesteps=64, overrides=ov, out=tmp_path / "runs",
                hyperparams={"n_steps": 32, "batch_size": 32, "n_epochs": 1, "n_envs": 2},
                log_every=16, eval_freq=0, checkpoint_freq=0)
    learned = {t for t in read_scalars(res.run_dir) if t.startswith("schedgym/")}
    d = run_classical(env_id, "random", [100, 101], tmp_path / "runs" / "x" / "random",
                      overrides=ov, log_every=16)
    classical = read_scalars(d)
    assert set(classical) == learned
    env = gym.make(env_id, **ov)
    assert learned == set(documented_tags(metric_spec(env)))
    # x axis: steps played, episodes one after another
    xs = [s for s, _ in classical[STEP + "reward"]]
    assert xs == sorted(xs)
    played = sum(run_episode(env, build_agent("random", env), s).steps for s in (100, 101))
    assert xs[-1] == played
    # the learned model runs through the same classical runner too
    d2 = run_classical(env_id, f"ppo:{res.model_path}", [100], tmp_path / "runs" / "x" / "ppo",
                       overrides=ov, log_every=16)
    assert set(read_scalars(d2)) == learned


def test_log_classical_windows_and_values(tmp_path):
    spec = {"reward": "sum", "gain": "mean"}
    eps = [[{"reward": 1.0, "gain": 1.0}] * 3, [{"reward": 2.0, "gain": 0.0}] * 3]
    d = log_classical(tmp_path / "r", spec, eps, log_every=3)
    sc = read_scalars(d)
    assert sc[STEP + "reward"] == [(3, 1.0), (6, 2.0)]
    assert sc[EPISODE + "reward"] == [(3, 3.0), (6, 6.0)]
    assert sc[EPISODE + "gain"] == [(3, 1.0), (6, 0.0)]


def test_run_name_is_file_system_safe():
    assert run_name("ppo:runs/GainOverhead-v0/ppo_s0/model.zip") == \
        "ppo-runs-GainOverhead-v0-ppo_s0-model"
    assert run_name("ogasched[timing=lookahead,eta0=5]") == "ogasched-timing=lookahead-eta0=5"
    assert run_name("///") == "agent"


def test_log_classical_never_deletes_an_earlier_run(tmp_path):
    from schedgym.train.tensorboard import fresh_run_folder, has_events

    spec = {"reward": "sum"}
    eps = [[{"reward": 1.0}] * 3]
    first = log_classical(tmp_path / "ogasched", spec, eps, log_every=3)
    files = sorted(first.glob("events.out.tfevents.*"))
    second = log_classical(tmp_path / "ogasched", spec, eps, log_every=3)
    assert first == tmp_path / "ogasched" and second == tmp_path / "ogasched-2"
    assert sorted(first.glob("events.out.tfevents.*")) == files and has_events(second)
    assert fresh_run_folder(tmp_path / "ogasched") == tmp_path / "ogasched-3"


def test_compare_tensorboard_keeps_what_train_beside_wrote(tmp_path, capsys):
    from schedgym.envs.gain_overhead import ENV_ID as GO
    from schedgym.train.cli import main

    ov = small_overrides(GO)
    res = train("a2c", GO, timesteps=16, overrides=ov, out=tmp_path / "runs",
                hyperparams={"n_steps": 8, "n_envs": 2}, eval_freq=0, checkpoint_freq=0,
                beside=["random"], beside_seeds=[100])
    beside = res.beside_dirs[0]
    kept = sorted(beside.glob("events.out.tfevents.*"))
    assert kept
    sets = sum((["--set", f"{k}={v}"] for k, v in ov.items()), [])
    rc = main(["compare", GO, "--agents", "random", "--seeds", "0", *sets, "--quiet",
               "--no-benchmarks", "--workers", "1", "--out", str(tmp_path / "cmp"),
               "--tensorboard", str(tmp_path / "runs")])
    assert rc == 0, capsys.readouterr().err
    assert sorted(beside.glob("events.out.tfevents.*")) == kept
    assert any((beside.parent / "random-2").glob("events.out.tfevents.*"))


def test_train_beside_plays_every_agent_in_its_own_mode(tmp_path):
    """An entity-policy learner in the prices mode, beside OgaSched (the default allocation
    mode) and fixed-price (the prices mode, flat observations): each plays in its own mode,
    as in compare, and both folders get their reference lines."""
    from schedgym.envs.gain_overhead import ENV_ID as GO

    ov = small_overrides(GO)
    res = train("ppo", GO, policy="entity", timesteps=32, overrides=ov, out=tmp_path / "runs",
                hyperparams={"n_steps": 16, "batch_size": 32}, eval_freq=0, checkpoint_freq=0,
                beside=["ogasched", "fixed-price"], beside_seeds=[100])
    assert [d.name for d in res.beside_dirs] == ["ogasched", "fixed-price"]
    for d in res.beside_dirs:
        assert "schedgym/episode/reward" in read_scalars(d)
