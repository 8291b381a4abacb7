"""Training work is never lost; train's typed config, instance distributions and per-seed
runs."""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from schedgym.envs.deadline_welfare import ENV_ID as DW
from schedgym.envs.gain_overhead import ENV_ID as GO
from schedgym.train.cli import main as cli
from schedgym.train.instances import InstanceCycler, split_instance_seeds
from schedgym.train.run_folder import check_resumed_evaluations, claim_run_dir
from schedgym.train.train_config import DEFAULT_EVAL_INSTANCE_SEEDS, default_eval_freq
from schedgym.train.trainer import run_one_seed
from schedgym.train.training import TrainConfig, next_command, train

from .conftest import small_overrides

TINY_A2C = {"n_steps": 8, "n_envs": 2}


def _cfg(tmp_path: Path, **kw) -> TrainConfig:
    base = dict(algo="a2c", env_id=GO, overrides=small_overrides(GO), out=str(tmp_path),
                hyperparams=TINY_A2C, timesteps=48, eval_freq=0, checkpoint_freq=0,
                log_every=16)
    base.update(kw)
    return TrainConfig(**base)


# ------------------------------------------------------------------ TrainConfig
@pytest.mark.parametrize("field, value, match", [
    ("algo", "dqn", "algo='dqn' is invalid: must be one of ppo, a2c, sac, td3"),
    ("timesteps", 0, "timesteps=0 is invalid: must be an integer >= 1"),
    ("seed", -1, "seed=-1 is invalid"),
    ("n_envs", True, "n_envs=True is invalid"),
    ("max_minutes", 0.0, "max_minutes=0.0 is invalid: must be > 0"),
    ("instance_seeds", (), "instance_seeds=\\(\\) is invalid"),
    ("eval_instance_seeds", (1, -2), "eval_instance_seeds entry=-2 is invalid"),
])
def test_train_config_rejects_bad_values(field, value, match):
    with pytest.raises(ValueError, match=match):
        TrainConfig("ppo", GO, **{field: value}) if field != "algo" else TrainConfig(value, GO)


def test_train_config_is_frozen_and_normalises_sequences(tmp_path):
    cfg = TrainConfig("ppo", GO, out=tmp_path, instance_seeds=[3, 4], beside=["drf"])
    assert cfg.out == str(tmp_path) and cfg.instance_seeds == (3, 4) and cfg.beside == ("drf",)
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign"):
        cfg.seed = 3  # type: ignore[misc]
    assert cfg.run_name == "ppo_s0"
    assert cfg.evaluation_instances() == DEFAULT_EVAL_INSTANCE_SEEDS
    assert TrainConfig("ppo", GO, instance_seed=7).evaluation_instances() == (7,)


def test_train_takes_either_a_config_or_keywords(tmp_path):
    with pytest.raises(ValueError, match="takes no further arguments"):
        train(_cfg(tmp_path), seed=3)
    with pytest.raises(ValueError, match="env_id is required"):
        train("ppo")


# ------------------------------------------------------------- evaluation budget
def test_default_evaluation_is_bounded():
    # at most five per run, at most one per rollout
    assert default_eval_freq(100_000, 2048, 3, 2000) == 20_000
    assert default_eval_freq(10_000, 4096, 3, 100) == 4096
    # off when one evaluation (3 x 2,000 slots) is longer than the run: a tiny run stays tiny
    assert default_eval_freq(512, 2048, 3, 2000) == 0
    assert default_eval_freq(512, 2048, 0, 2000) == max(512 // 5 + 1, 2048)


def test_tiny_default_run_plays_no_evaluation(tmp_path):
    """``schedgym train ppo GainOverhead-v0 --timesteps 512`` used to evaluate every ~51 steps on
    2,000-slot episodes (> 10 min); with the bounded default it trains one rollout and plays no
    evaluation episode (shorter than one evaluation), so it takes seconds (not timed here)."""
    res = train("ppo", GO, timesteps=512, out=tmp_path, hyperparams={"n_steps": 256})
    assert res.timesteps == 512 and not (res.run_dir / "evaluations.npz").exists()


# ------------------------------------------------------------------ run folders
def test_rerun_never_mixes_event_files(tmp_path):
    first = train(_cfg(tmp_path, name="r"))
    second = train(_cfg(tmp_path, name="r"))
    assert second.run_dir == first.run_dir.with_name("r-2")
    for run in (first.run_dir, second.run_dir):
        assert len(list(run.glob("events.out.tfevents.*"))) == 1
    again = train(_cfg(tmp_path, name="r", overwrite=True))
    assert again.run_dir == first.run_dir
    assert len(list(first.run_dir.glob("events.out.tfevents.*"))) == 1


def test_claim_run_dir_is_atomic_per_name(tmp_path):
    cfg = _cfg(tmp_path)
    dirs = {claim_run_dir(cfg) for _ in range(3)}
    assert len(dirs) == 3  # three claims, three folders (never shared)


def test_a_start_that_fails_gives_its_folder_back(tmp_path):
    """A run whose model cannot be built (a policy keyword out of range, refused by the
    policy's constructor) writes nothing and releases its claim: the next run of that name
    trains in the same folder, not in NAME-2."""
    tiny = {"n_steps": 16, "batch_size": 16, "n_envs": 2}
    cfg = _cfg(tmp_path, name="r", algo="ppo", policy="entity",
               hyperparams={**tiny, "policy_kwargs": {"action_mean_init": 5.0}})
    with pytest.raises(ValueError, match="action_mean_init=5.0 is invalid"):
        train(cfg)
    folder = tmp_path / "GainOverhead-v0" / "r"
    assert folder.is_dir() and not any(folder.iterdir())
    again = train(dataclasses.replace(cfg, hyperparams=tiny))
    assert again.run_dir == folder and (folder / "model.zip").is_file()


def test_resume_appends_evaluations_and_keeps_the_best_model(tmp_path):
    cfg = _cfg(tmp_path, name="r", timesteps=64, eval_freq=16, eval_episodes=1)
    first = train(cfg)
    with np.load(first.run_dir / "evaluations.npz") as f:
        n_first = len(f["timesteps"])
        best = float(np.max(np.mean(f["results"], axis=1)))
    assert n_first >= 3
    best_bytes = (first.run_dir / "best_model.zip").read_bytes()
    second = train(dataclasses.replace(cfg, resume=str(first.model_path), timesteps=32))
    assert second.run_dir == first.run_dir
    with np.load(first.run_dir / "evaluations.npz") as f:
        steps = list(f["timesteps"])
        means = np.mean(f["results"], axis=1)
    assert len(steps) >= n_first + 1 and steps == sorted(steps)
    if np.max(means[n_first:]) <= best:  # not beaten: the old best model stays
        assert (first.run_dir / "best_model.zip").read_bytes() == best_bytes
    # evaluations of the other kind (sampled actions) would be ranked with these: refused
    # before anything is written
    with pytest.raises(ValueError, match=r"eval_draws=True is invalid for resume=.*resume "
                                         r"with eval_draws=False$"):
        train(dataclasses.replace(cfg, resume=str(second.model_path), eval_draws=True))
    with np.load(first.run_dir / "evaluations.npz") as f:
        assert list(f["timesteps"]) == steps


def test_resume_check_reads_the_runs_record(tmp_path):
    """The eval-draws check reads ``run.json`` beside the evaluations (no evaluations, or no
    record: nothing to compare); a damaged record is refused
    (``tests/train/test_resume_checks.py``)."""
    run = tmp_path / "run"
    run.mkdir()
    cfg = _cfg(tmp_path, resume=str(run / "model.zip"), eval_draws=True)
    check_resumed_evaluations(cfg)  # neither evaluations nor record
    np.savez(run / "evaluations.npz", timesteps=np.array([8]), results=np.zeros((1, 2)),
             ep_lengths=np.full((1, 2), 12))
    check_resumed_evaluations(cfg)  # evaluations of a run killed before it wrote its record
    (run / "run.json").write_text(json.dumps({"eval_draws": False}))
    with pytest.raises(ValueError, match="resume with eval_draws=False"):
        check_resumed_evaluations(cfg)
    check_resumed_evaluations(dataclasses.replace(cfg, eval_draws=False))


def test_interrupt_saves_model_config_and_run_json(tmp_path):
    """Ctrl-C during ``schedgym train``: exit 130 with model.zip, config.yml and run.json saved,
    and a runnable resume command."""
    sets = sum((["--set", f"{k}={v}"] for k, v in small_overrides(GO).items()), [])
    args = ["train", "a2c", GO, *sets, "--timesteps", "10000000", "--out", str(tmp_path),
            "--hp", "n_steps=8", "--no-progress", "--eval-freq", "0"]
    # faulthandler on SIGUSR1: if the run does not stop, the failure shows where it hangs;
    # SIGINT restored as in a terminal (a runner started with `&` by a non-interactive shell
    # ignores it, and children inherit that: then nothing would stop the run)
    code = ("import faulthandler, signal, sys; faulthandler.register(signal.SIGUSR1); "
            "signal.signal(signal.SIGINT, signal.default_int_handler); "
            f"from schedgym.train.cli import main; sys.exit(main({args!r}))")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": str(Path.cwd())})
    run = tmp_path / "GainOverhead-v0" / "a2c_s0"
    deadline = time.monotonic() + 240
    while not list(run.glob("events.out.tfevents.*")):
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        assert time.monotonic() < deadline, "training did not start within 240 s"
        time.sleep(0.5)
    time.sleep(2.0)
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGUSR1)
        time.sleep(3.0)
        proc.kill()
        raise AssertionError("no exit 120 s after SIGINT; stacks:\n"
                             + proc.communicate()[1][-6000:]) from None
    assert proc.returncode == 130, err[-2000:]
    for f in ("model.zip", "config.yml", "run.json"):
        assert (run / f).is_file(), f
    meta = json.loads((run / "run.json").read_text())
    assert meta["interrupted"] is True and meta["num_timesteps"] > 0
    assert "interrupted" in out
    resume = next(line for line in err.splitlines() if line.startswith("resume:"))
    cmd = shlex.split(resume.partition(":")[2])
    assert cmd[:4] == ["schedgym", "train", "a2c", GO] and "--resume" in cmd
    assert all(s in cmd for s in sets)


# ---------------------------------------------------------- next commands, run.json
def test_next_command_is_runnable_and_keeps_the_env_settings(tmp_path):
    cfg = _cfg(tmp_path, overrides={**small_overrides(GO), "utility": "mixed"})
    cmd = shlex.split(next_command(cfg, tmp_path / "m.zip"))
    assert "<" not in " ".join(cmd)
    assert cmd[:3] == ["schedgym", "compare", GO]
    # raced against every classical agent and the ceiling, not the paper's agent only
    from schedgym.agents import registry

    agents = cmd[cmd.index("--agents") + 1].split(",")
    classical = [n for n in registry.names_for(GO)
                 if n != "random" and not registry.is_benchmark(n)]
    assert agents == [*classical, f"a2c:{tmp_path / 'm.zip'}"]
    assert {"ogasched", "drf", "fairness", "binpacking", "spreading", "myopic-opt"} <= set(agents)
    assert "--no-benchmarks" not in cmd  # the oracle / OPT ceiling is a benchmark elsewhere
    assert "utility=mixed" in cmd
    from schedgym.envs.fluctuating_speed import ENV_ID as FS

    fs = shlex.split(next_command(_cfg(tmp_path, env_id=FS, overrides={}), tmp_path / "m.zip"))
    fs_agents = fs[fs.index("--agents") + 1].split(",")
    assert "esdp-aa" in fs_agents and "oracle" not in fs_agents and "random" not in fs_agents
    entity = shlex.split(next_command(_cfg(tmp_path, env_id=FS, overrides={}, policy="entity"),
                                      tmp_path / "m.zip"))
    entity_agents = entity[entity.index("--agents") + 1].split(",")
    model = f"a2c:{tmp_path / 'm.zip'}"
    assert entity_agents[-2:] == [model, f"{model}[deterministic=false]"]


def test_run_json_records_env_kwargs_and_instances(tmp_path):
    # DeadlineWelfare's spaces depend only on the scenario's sizes, so it trains on many
    # instances in its default mode
    res = train(_cfg(tmp_path, env_id=DW, overrides=small_overrides(DW),
                     scenario="paper-default", instance_seeds=(0, 1, 2),
                     eval_instance_seeds=(9,)))
    meta = json.loads((res.run_dir / "run.json").read_text())
    assert meta["env_kwargs"] == {**small_overrides(DW), "scenario": "paper-default"}
    assert meta["instance_seeds"] == [0, 1, 2] and meta["eval_instance_seeds"] == [9]
    assert meta["interrupted"] is False and meta["num_timesteps"] == res.timesteps


# ------------------------------------------------------------ instance distributions
def test_split_instance_seeds_uses_every_seed_once():
    groups = split_instance_seeds(list(range(10)), 4)
    assert sorted(s for g in groups for s in g) == list(range(10))
    assert split_instance_seeds([5], 3) == [(5,), (5,), (5,)]
    with pytest.raises(ValueError, match="at least one"):
        split_instance_seeds([], 2)


def test_instance_cycler_cycles_and_is_reproducible():
    kw = small_overrides(DW)
    env = InstanceCycler(DW, kw, (0, 1, 2))
    played, firsts = [], []
    obs, info = env.reset(seed=5)
    for _ in range(4):
        played.append(info["instance_seed"])
        firsts.append(obs)
        obs, info = env.reset()
    assert played == [0, 1, 2, 0]
    again = InstanceCycler(DW, kw, (0, 1, 2))
    obs2, _ = again.reset(seed=5)
    for k in range(4):
        for key in obs2:
            np.testing.assert_array_equal(obs2[key], firsts[k][key])
        obs2, _ = again.reset()
    assert any(not np.array_equal(firsts[0][k], firsts[1][k]) for k in firsts[0])


def test_instance_dependent_spaces_are_refused(tmp_path):
    """GainOverhead's default action space is one entry per (edge, resource) of the instance's
    graph: training on several instances needs a mode with fixed spaces."""
    env = InstanceCycler(GO, {}, (0, 1))
    env.reset(seed=0)
    with pytest.raises(ValueError, match="instance_seeds is invalid.*action_mode"):
        env.reset()
    with pytest.raises(ValueError, match="instance_seeds is invalid.*instance_seed=1"):
        train(_cfg(tmp_path, overrides={}, instance_seeds=(0, 1)))


def test_training_on_many_instances_evaluates_on_held_out_ones(tmp_path):
    res = train(_cfg(tmp_path, env_id=DW, overrides=small_overrides(DW),
                     instance_seeds=(0, 1, 2, 3), eval_instance_seeds=(100, 101), eval_freq=16))
    with np.load(res.run_dir / "evaluations.npz") as f:
        assert f["results"].shape[1] == 2  # one episode per held-out instance


# ---------------------------------------------------------------------- --seeds
def test_run_one_seed_is_picklable_and_returns_the_run_folder(tmp_path):
    import pickle

    cfg = pickle.loads(pickle.dumps(_cfg(tmp_path, seed=3)))
    run = run_one_seed(cfg)
    assert run.name == "a2c_s3" and (run / "model.zip").is_file()


def test_cli_seeds_trains_one_run_per_seed(tmp_path, capsys):
    sets = sum((["--set", f"{k}={v}"] for k, v in small_overrides(GO).items()), [])
    rc = cli(["train", "a2c", GO, *sets, "--timesteps", "16", "--hp", "n_steps=8",
              "--out", str(tmp_path), "--seeds", "0-1", "--workers", "1", "--no-progress",
              "--eval-freq", "0", "--checkpoint-freq", "0"])
    assert rc == 0
    for s in (0, 1):
        assert (tmp_path / "GainOverhead-v0" / f"a2c_s{s}" / "model.zip").is_file()


@pytest.mark.slow  # starts a local Ray (tens of seconds on the shared machine)
def test_cli_seeds_on_ray_equal_the_local_pool(tmp_path):
    import torch

    sets = sum((["--set", f"{k}={v}"] for k, v in small_overrides(GO).items()), [])
    common = ["train", "a2c", GO, *sets, "--timesteps", "16", "--hp", "n_steps=8",
              "--seeds", "0-1", "--workers", "2", "--no-progress", "--eval-freq", "0",
              "--checkpoint-freq", "0"]
    assert cli([*common, "--out", str(tmp_path / "pool")]) == 0
    assert cli([*common, "--out", str(tmp_path / "ray"), "--ray"]) == 0
    from stable_baselines3 import A2C

    for s in (0, 1):
        a, b = (A2C.load(tmp_path / where / "GainOverhead-v0" / f"a2c_s{s}" / "model.zip")
                for where in ("pool", "ray"))
        for pa, pb in zip(a.policy.parameters(), b.policy.parameters(), strict=True):
            assert torch.equal(pa, pb)
