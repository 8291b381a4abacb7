"""The real-cluster track (docs/learned-vs-classical.md, "Real-cluster track"), tiny: an
EntityPolicy trained on the trace's past (``split="train"``) at a small node sample, with
several node samples through ``instance_seeds``, then played on the trace's future
(``split="test"``) at other node counts, the whole cluster (``n_instances="all"``) included,
by the ``ppo:model.zip`` agent and by ``schedgym compare``; DeadlineWelfare-v0 (its
``demand_price`` learner), GainOverhead-v0 (its ``prices`` learner) and FluctuatingSpeed-v0
(its selection learner, played by its draws as it records)."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

from schedgym.agents import make
from schedgym.train import hyperparams as hp
from schedgym.train.training import TrainConfig, train

from .sweep_cli import main as cli

DW = "schedgym/DeadlineWelfare-v0"
TRACE = "alibaba-gpu-2023"
#: the track's learner: the demand_price mode started at the time-of-use rule
CONFIG = "deadline-welfare-demand-price-tou-ppo.yml"
#: the training world: 6 sampled nodes of the trace's first 70 %, 12 jobs a day
TRAIN = {"split": "train", "n_instances": 6, "n_jobs": 12}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A 256-step PPO run on two node samples of the training split."""
    return train(TrainConfig(
        "ppo", DW, policy="entity", timesteps=256, scenario=TRACE, overrides=dict(TRAIN),
        config=str(hp.config_dir() / "learned" / CONFIG), instance_seeds=(0, 1),
        hyperparams={"n_steps": 32, "batch_size": 64}, out=str(tmp_path_factory.mktemp("t")),
        eval_freq=0, checkpoint_freq=0))


def test_the_run_trained_on_the_training_split_at_its_node_sample(run):
    meta = json.loads((run.run_dir / "run.json").read_text())
    kw = meta["env_kwargs"]
    assert kw["scenario"] == TRACE
    assert (kw["split"], kw["n_instances"], kw["n_jobs"]) == ("train", 6, 12)
    assert kw["obs_mode"] == "entities" and kw["action_mode"] == "demand_price"
    assert meta["instance_seeds"] == [0, 1]
    assert run.model.num_timesteps >= 256


@pytest.mark.parametrize("nodes, horizon", [(20, 24), ("all", 3)])
def test_the_model_plays_the_test_split_at_other_node_counts(run, nodes, horizon):
    """The trained weights act on the test split at 20 nodes and on every node of the trace
    (a 3-slot window there, to stay fast), each action inside the env's space, every job
    decided, and the episode's welfare finite."""
    env = gym.make(DW, scenario=TRACE, split="test", n_instances=nodes, horizon=horizon,
                   n_jobs=None, obs_mode="entities", action_mode="demand_price")
    R = env.unwrapped.instance.n_instances
    assert R == (1523 if nodes == "all" else nodes) and R != TRAIN["n_instances"]
    agent = make(f"ppo:{run.model_path}", env)
    trained = sum(p.numel() for p in run.model.policy.parameters())
    assert sum(p.numel() for p in agent.policy.parameters()) == trained
    obs, _ = env.reset(seed=3)
    total, steps, done = 0.0, 0, False
    while not done:
        action, _ = agent.predict(obs, deterministic=True)
        assert env.action_space.contains(action)
        obs, reward, term, trunc, _ = env.step(action)
        total, steps, done = total + float(reward), steps + 1, term or trunc
    assert steps >= 1 and np.isfinite(total) and total > 0.0


def test_compare_races_the_model_on_the_test_split_with_more_nodes(run, tmp_path):
    spec = f"ppo:{run.model_path}"
    out = tmp_path / "cmp"
    assert cli(["compare", DW, "--agents", f"myopic-welfare,{spec}", "--seeds", "100",
                "--instance-seeds", "1000", "--scenario", TRACE, "--set", "split=test",
                "--set", "n_instances=20", "--set", "n_jobs=10", "--out", str(out),
                "--workers", "1", "--quiet", "--no-plots", "--no-benchmarks"]) == 0
    recs = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert {r["key"][1] for r in recs} == {"myopic-welfare", spec}
    assert all(r["status"] == "ok" for r in recs)
    played = next(r for r in recs if r["key"][1] == spec)
    assert played["env_kwargs"] == {"action_mode": "demand_price", "obs_mode": "entities"}
    assert played["steps"] == 10  # one step per job


GO = "schedgym/GainOverhead-v0"
#: GainOverhead's track: the prices mode, 6 sampled nodes of the training split, 12-slot episodes
GO_TRAIN = {"split": "train", "n_instances": 6, "horizon": 12, "utility": "mixed"}


@pytest.fixture(scope="module")
def go_run(tmp_path_factory):
    """A 128-step PPO run of GainOverhead's entity policy on two node samples of the
    training split (the shipped entity config)."""
    return train(TrainConfig(
        "ppo", GO, policy="entity", timesteps=128, scenario=TRACE, overrides=dict(GO_TRAIN),
        instance_seeds=(0, 1), hyperparams={"n_steps": 16, "batch_size": 32},
        out=str(tmp_path_factory.mktemp("g")), eval_freq=0, checkpoint_freq=0))


@pytest.mark.parametrize("nodes", [20, "all"])
def test_gain_overhead_model_plays_the_test_split_at_other_node_counts(go_run, nodes):
    """The weights trained at 6 nodes price every channel of the test split at 20 nodes and
    at every node of the trace: actions inside the space, finite rewards."""
    meta = json.loads((go_run.run_dir / "run.json").read_text())
    assert meta["env_kwargs"]["split"] == "train" and meta["env_kwargs"]["n_instances"] == 6
    env = gym.make(GO, scenario=TRACE, split="test", n_instances=nodes, horizon=4,
                   utility="mixed", obs_mode="entities", action_mode="prices")
    R = env.unwrapped.instance.n_instances
    assert R == (1523 if nodes == "all" else nodes)
    agent = make(f"ppo:{go_run.model_path}", env)
    obs, _ = env.reset(seed=5)
    for _ in range(4):
        action, _ = agent.predict(obs, deterministic=True)
        assert env.action_space.contains(action)
        obs, reward, term, trunc, _ = env.step(action)
        assert np.isfinite(reward)
        if term or trunc:
            break


FS = "schedgym/FluctuatingSpeed-v0"
#: FluctuatingSpeed's track: 6 sampled nodes of the training split, 12-slot episodes
FS_TRAIN = {"split": "train", "n_instances": 6, "horizon": 12}


@pytest.fixture(scope="module")
def fs_run(tmp_path_factory):
    """A 128-step PPO run of FluctuatingSpeed's entity policy on two node samples of the
    training split (the shipped entity config)."""
    return train(TrainConfig(
        "ppo", FS, policy="entity", timesteps=128, scenario=TRACE, overrides=dict(FS_TRAIN),
        instance_seeds=(0, 1), hyperparams={"n_steps": 16, "batch_size": 32},
        out=str(tmp_path_factory.mktemp("f")), eval_freq=0, checkpoint_freq=0))


@pytest.mark.parametrize("nodes", [20, "all"])
def test_fluctuating_speed_model_plays_the_test_split_at_other_node_counts(fs_run, nodes):
    """The weights trained at 6 nodes score the cells of the test split at 20 nodes and at
    every node (1,216 channels there with ``degree_cap="auto"``), played by their draws as
    the run recorded: scores inside the space, decoded to selections within every capacity
    (nothing for the env to repair), finite rewards, and the same draws again from the same
    seeds."""
    meta = json.loads((fs_run.run_dir / "run.json").read_text())
    assert meta["env_kwargs"]["split"] == "train" and meta["env_kwargs"]["n_instances"] == 6
    assert meta["play"] == "sampled"

    def play(seed: int) -> list[np.ndarray]:
        env = gym.make(FS, scenario=TRACE, split="test", n_instances=nodes, horizon=4,
                       obs_mode="entities", action_mode="scores")
        R = env.unwrapped.instance.n_instances
        assert R == (1523 if nodes == "all" else nodes)
        agent = make(f"ppo:{fs_run.model_path}", env)
        obs, _ = env.reset(seed=seed)
        agent.seed_episode(seed)  # the draws' generator, as the episode runner seeds it
        chosen = []
        for _ in range(4):
            action, _ = agent.predict(obs)
            assert env.action_space.contains(action)
            obs, reward, term, trunc, info = env.step(action)
            assert np.isfinite(reward) and info["n_repaired"] == 0
            chosen.append(np.asarray(action).copy())
            if term or trunc:
                break
        return chosen

    first, again = play(5), play(5)
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
