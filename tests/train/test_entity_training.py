"""``schedgym train ... --policy entity`` and the ``ppo:model.zip`` agent on another size: a
tiny run saved, reloaded and played by ``compare`` on another size; models that cannot play an
env are refused in one line before any episode."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3 import PPO

from schedgym.agents import make
from schedgym.envs.fluctuating_speed import ENV_ID
from schedgym.train.entity_training import entity_config_path, entity_env_kwargs
from schedgym.train.policies import EntityPolicy
from schedgym.train.training import train

from .sweep_cli import main as cli

SMALL = {"horizon": 20, "n_types": 3, "n_instances": 8, "edge_prob": 0.4}
OTHER = ["--set", "horizon=20", "--set", "n_types=5", "--set", "n_instances=12",
         "--set", "edge_prob=0.3"]


@pytest.fixture(scope="module")
def entity_run(tmp_path_factory):
    """A tiny ``--policy entity`` PPO run (training instances 0-1)."""
    out = tmp_path_factory.mktemp("runs")
    return train("ppo", ENV_ID, policy="entity", timesteps=64, overrides=SMALL,
                 instance_seeds=(0, 1), hyperparams={"n_steps": 16, "batch_size": 32},
                 out=out, eval_freq=0, checkpoint_freq=0)


def test_policy_entity_trains_the_entity_policy_in_the_entity_mode(entity_run):
    meta = json.loads((entity_run.run_dir / "run.json").read_text())
    assert meta["env_kwargs"]["obs_mode"] == "entities"
    assert meta["env_kwargs"]["action_mode"] == "scores"
    assert isinstance(entity_run.model.policy, EntityPolicy)
    assert entity_run.model.policy.action_layout == "entity"
    assert entity_run.model.n_envs == 4  # from the shipped configs/learned entity file
    # config.yml records the policy trained, as an entry that loads back
    from schedgym.train import hyperparams as hp

    entry = hp.load_config("ppo", ENV_ID, entity_run.run_dir / "config.yml")
    assert entry["policy"] == "schedgym.train.policies.EntityPolicy"
    algo_kw, _ = hp.split_entry("ppo", entry)
    assert algo_kw["policy"] is EntityPolicy
    assert algo_kw["policy_kwargs"]["action_layout"] == "entity"


def test_compare_plays_the_model_on_another_size(entity_run, tmp_path):
    spec = f"ppo:{entity_run.model_path}"
    out = tmp_path / "cmp"
    assert cli(["compare", ENV_ID, "--agents", f"hauf,{spec}", "--seeds", "100",
                "--instance-seeds", "1000", *OTHER, "--out", str(out), "--workers", "1",
                "--quiet", "--no-plots", "--no-benchmarks"]) == 0
    recs = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert {r["key"][1] for r in recs} == {"hauf", spec}
    assert all(r["status"] == "ok" and r["steps"] == 20 for r in recs)
    played = next(r for r in recs if r["key"][1] == spec)
    assert played["env_kwargs"] == {"action_mode": "scores", "obs_mode": "entities"}


def test_stochastic_play_is_its_own_agent_and_reproducible(entity_run, tmp_path):
    """``ppo:model.zip[deterministic=false]`` plays sampled actions, seeded by the episode
    seed: two compares give the same records, and they differ from the mode's."""
    model = f"ppo:{entity_run.model_path}"
    spec, drawn = f"{model}[deterministic=true]", f"{model}[deterministic=false]"
    recs = []
    for run in ("a", "b"):
        out = tmp_path / run
        assert cli(["compare", ENV_ID, "--agents", f"{spec},{drawn}", "--seeds", "100,101",
                    "--instance-seeds", "1000", *OTHER, "--out", str(out), "--workers", "1",
                    "--quiet", "--no-plots", "--no-benchmarks"]) == 0
        lines = (out / "episodes.jsonl").read_text().splitlines()
        recs.append({tuple(r["key"]): r for r in map(json.loads, lines)})
    a, b = recs
    assert {k[1] for k in a} == {spec, drawn}
    assert all(a[k]["metrics"] == b[k]["metrics"] for k in a)  # reproducible, bit for bit
    assert all(a[k]["env_kwargs"] == {"action_mode": "scores", "obs_mode": "entities"} for k in a)
    mode = [a[k]["metrics"]["reward"] for k in sorted(a) if k[1] == spec]
    sampled = [a[k]["metrics"]["reward"] for k in sorted(a) if k[1] == drawn]
    assert mode != sampled


def test_learned_agent_options_are_checked(entity_run):
    env = gym.make(ENV_ID, obs_mode="entities", action_mode="scores", **SMALL)
    spec = f"ppo:{entity_run.model_path}"
    with pytest.raises(ValueError, match="has no option temperature"):
        make(spec, env, temperature=2.0)
    with pytest.raises(ValueError, match="deterministic='no' is invalid: must be true or false"):
        make(spec, env, deterministic="no")
    mode = make(spec, env, deterministic=True)
    assert (mode.play, mode.source) == ("mode", "spec")
    assert isinstance(mode.policy, EntityPolicy)  # rebuilt from the record, nothing unpickled
    agent = make(spec, env, deterministic=False)
    assert (agent.play, agent.source) == ("sampled", "spec")
    obs, _ = env.reset(seed=3)
    agent.seed_episode(3)
    first = agent.predict(obs, deterministic=True)[0]  # the spec wins: still a draw
    agent.seed_episode(3)
    np.testing.assert_array_equal(agent.predict(obs)[0], first)
    assert not np.array_equal(first, agent.model.predict(obs, deterministic=True)[0])


def test_agent_rebuilds_the_spaces_for_any_size(entity_run):
    for n_types, n_instances in ((2, 3), (6, 20)):
        env = gym.make(ENV_ID, obs_mode="entities", action_mode="scores", horizon=5,
                       n_types=n_types, n_instances=n_instances)
        agent = make(f"ppo:{entity_run.model_path}", env)
        obs, _ = env.reset(seed=0)
        action, _ = agent.predict(obs, deterministic=True)
        assert action.shape == (n_types * n_instances,)


def test_entity_model_on_the_flat_mode_is_refused(entity_run):
    env = gym.make(ENV_ID, action_mode="scores", horizon=5, **{k: v for k, v in SMALL.items()
                                                               if k != "horizon"})
    with pytest.raises(ValueError, match="EntityPolicy.*obs_mode='entities'"):
        make(f"ppo:{entity_run.model_path}", env)


def test_entity_model_saved_with_2d_rows_is_refused(entity_run, monkeypatch):
    """A zip whose EntityPolicy saved ``(N, F)`` entity rows (not the contract's 1-D vector) is
    refused in one line naming the saved spaces."""
    import numpy as np
    from gymnasium import spaces

    from schedgym.agents import learned, model_file

    record = learned.model_record(entity_run.model_path)
    old = model_file.decode_space(record["policy"]["observation_space"])
    n = old["mask"].shape[0]
    rows = spaces.Box(0, 1, (n, old["entities"].shape[0] // n), np.float32)
    record["policy"]["observation_space"] = model_file.encode_space(spaces.Dict(
        {"entities": rows, "mask": old["mask"], "context": old["context"]}))
    monkeypatch.setattr(learned, "model_record", lambda path: record)
    env = gym.make(ENV_ID, obs_mode="entities", action_mode="scores", horizon=5)
    with pytest.raises(ValueError, match=r"saved with observations Dict\(.*entities=\(\d+, 12\)"
                                         ".*train it again"):
        make(f"ppo:{entity_run.model_path}", env)


def test_model_of_another_env_is_refused(entity_run, tmp_path):
    """The env id of the model's record is checked first: the run.json beside it, or the
    zip's own record when the zip was copied out of its run folder."""
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "model.zip").write_bytes(entity_run.model_path.read_bytes())
    go = "schedgym/GainOverhead-v0"
    with pytest.raises(ValueError, match=rf"^agent='ppo:.*model.zip' cannot play {go}: it was "
                                         rf"trained on {ENV_ID} with action_mode='scores', "
                                         r"obs_mode='entities' \(its record"):
        make(f"ppo:{folder / 'model.zip'}", gym.make(go, horizon=5))


def test_flat_model_on_another_size_is_refused_before_the_sweep(tmp_path, capsys):
    kw = {"action_mode": "scores", "compute_oracle": False, **SMALL}
    model = PPO("MultiInputPolicy", gym.make(ENV_ID, **kw), n_steps=16, batch_size=16,
                device="cpu", seed=0)
    path = tmp_path / "flat.zip"
    model.save(path)
    (tmp_path / "run.json").write_text(json.dumps({"env_id": ENV_ID, "env_kwargs": kw}))
    assert make(f"ppo:{path}", gym.make(ENV_ID, **kw), trusted=True) is not None  # its size
    out = tmp_path / "cmp"
    code = cli(["compare", ENV_ID, "--agents", f"hauf,ppo:{path}[trusted=true]", "--seeds", "0",
                *OTHER, "--out", str(out), "--workers", "1",
                "--quiet", "--no-plots", "--no-benchmarks"])
    # the compile notice (printed when the warm-up outlasts preflight.NOTICE_AFTER_S on a busy
    # machine) is progress, not the error: the refusal itself is one line
    err = "\n".join(line for line in capsys.readouterr().err.strip().splitlines()
                    if not line.startswith("preparing the agents"))
    assert code == 2 and len(err.splitlines()) == 1
    assert "flat policy plays only the env, size and modes it was trained on" in err
    assert not out.exists()  # refused before the run folder and the sweep


def test_not_a_model_file_is_one_line(tmp_path):
    bad = tmp_path / "x.zip"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match=r"x.zip is damaged or not a model zip \(File is not a "
                                         r"zip file\): train it again"):
        make(f"ppo:{bad}", gym.make(ENV_ID, horizon=5))


def test_entity_setup_choices():
    assert entity_env_kwargs("ppo", ENV_ID) == {"obs_mode": "entities", "action_mode": "scores"}
    with pytest.raises(ValueError, match="actor-critic"):
        entity_env_kwargs("sac", ENV_ID)
    with pytest.raises(ValueError, match="learnable action mode"):
        entity_env_kwargs("ppo", ENV_ID, "selection")
    path = entity_config_path("ppo", ENV_ID)
    assert path is not None and path.name == "fluctuating-speed-entity-ppo.yml"


def test_command_line_policy_flag(entity_run):
    from schedgym.train.cli import build_parser
    from schedgym.train.training import TrainResult, config_from_args, resume_command

    args = build_parser().parse_args(["train", "ppo", ENV_ID, "--policy", "entity"])
    cfg = config_from_args(args)
    assert cfg.policy == "entity"
    res = TrainResult(entity_run.run_dir, entity_run.model_path, None, 10, 1.0, True, 20)
    assert "--policy entity" in resume_command(cfg, res)
    with pytest.raises(ValueError, match="policy='mlp' is invalid"):
        train("ppo", ENV_ID, policy="mlp")


def test_policy_entity_without_an_entity_config_replaces_the_policy(tmp_path, monkeypatch):
    """An env with no configs/learned entity file (DeadlineWelfare with its file hidden): its
    mode entry is used with the policy replaced (the MLP's net_arch dropped, log_std_init kept)
    and the env's global layout."""
    from schedgym.train import entity_training

    dw = "schedgym/DeadlineWelfare-v0"
    monkeypatch.setattr(entity_training, "entity_config_path", lambda algo, env_id: None)
    res = train("ppo", dw, policy="entity", timesteps=32, overrides={"n_jobs": 10},
                hyperparams={"n_steps": 16, "batch_size": 16}, out=tmp_path, eval_freq=0,
                checkpoint_freq=0)
    pol = res.model.policy
    assert isinstance(pol, EntityPolicy) and pol.action_layout == "global"
    assert set(res.model.policy_kwargs) == {"log_std_init", "action_layout"}
    env = gym.make(dw, n_jobs=10, obs_mode="entities", action_mode="pricing")
    action, _ = make(f"ppo:{res.model_path}", env).predict(env.reset(seed=0)[0])
    assert env.action_space.contains(action)


def test_eval_draws_evaluates_the_sampled_actions(tmp_path):
    """``--eval-draws``: the evaluation callback plays the policy's draws, not its mode: same
    seed and steps, other evaluation returns; recorded in run.json; a non-bool is refused."""
    runs = {}
    for draws in (False, True):
        run = train("ppo", ENV_ID, policy="entity", timesteps=64, overrides=SMALL,
                    instance_seeds=(0, 1), hyperparams={"n_steps": 16, "batch_size": 32},
                    out=tmp_path / str(draws), eval_freq=32, eval_episodes=2,
                    checkpoint_freq=0, eval_draws=draws)
        assert json.loads((run.run_dir / "run.json").read_text())["eval_draws"] is draws
        runs[draws] = np.load(run.run_dir / "evaluations.npz")["results"]
    assert runs[False].shape == runs[True].shape
    assert not np.array_equal(runs[False], runs[True])
    with pytest.raises(ValueError, match="eval_draws"):
        train("ppo", ENV_ID, policy="entity", timesteps=64, overrides=SMALL,
              out=tmp_path / "bad", eval_draws="yes")
