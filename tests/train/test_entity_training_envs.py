"""``schedgym train ppo ENV --policy entity`` for GainOverhead-v0 (learnable ``prices``) and
DeadlineWelfare-v0 (``pricing``), the "tiny training run per env": each run picks its
shipped ``configs/learned/*-entity-ppo.yml``, is saved, reloaded by the ``ppo:model.zip`` agent
and played by ``compare`` on another size, and the same weights play two sizes with one
parameter count; DeadlineWelfare-v0's ``unit_prices`` and ``demand_price`` modes the same with
their own config files. (FluctuatingSpeed-v0: tests/train/test_entity_training.py.)"""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
import torch as th

from schedgym.agents import make
from schedgym.train import hyperparams as hp
from schedgym.train.entity_training import entity_config_path
from schedgym.train.policies import EntityPolicy
from schedgym.train.training import TrainConfig, train

from .sweep_cli import main as cli

GO = "schedgym/GainOverhead-v0"
DW = "schedgym/DeadlineWelfare-v0"

#: per env: the learnable mode, the policy's action layout, the shipped config's file and n_envs,
#: the training size, and two other sizes (the second one is what ``compare`` plays)
CASES = {
    GO: {"mode": "prices", "layout": "entity", "config": "gain-overhead-entity-ppo.yml",
         "n_envs": 4, "extra": {"utility": "mixed"},
         "train": {"n_types": 4, "n_instances": 6, "n_resources": 3, "horizon": 12},
         "sizes": ({"n_types": 2, "n_instances": 4, "n_resources": 2, "horizon": 6},
                   {"n_types": 5, "n_instances": 8, "n_resources": 4, "horizon": 6})},
    DW: {"mode": "pricing", "layout": "global", "config": "deadline-welfare-entity-ppo.yml",
         "n_envs": 2, "extra": {"scenario": "congested", "utility": "linear"},
         "train": {"n_instances": 3, "horizon": 6, "n_jobs": 8, "arrival_rate": 2.0},
         "sizes": ({"n_instances": 2, "horizon": 5, "n_jobs": 6, "arrival_rate": 2.0},
                   {"n_instances": 4, "horizon": 8, "n_jobs": 6, "arrival_rate": 2.0})},
}


def _settings(case: dict) -> tuple[dict, dict]:
    """(train's ``overrides`` without the scenario, the scenario kwarg if any)."""
    extra = dict(case["extra"])
    scenario = extra.pop("scenario", None)
    return {**extra, **case["train"]}, ({"scenario": scenario} if scenario else {})


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One tiny ``--policy entity`` PPO run per env (training instances 0-1), with no
    ``--config``: the shipped entity file of the env is what it trains with."""
    out = tmp_path_factory.mktemp("runs")
    done = {}
    for env_id, case in CASES.items():
        overrides, scenario = _settings(case)
        done[env_id] = train("ppo", env_id, policy="entity", timesteps=64, overrides=overrides,
                             instance_seeds=(0, 1), hyperparams={"n_steps": 16, "batch_size": 32},
                             out=out / env_id.split("/")[1], eval_freq=0, checkpoint_freq=0,
                             **scenario)
    return done


def _env(env_id: str, size: dict):
    case = CASES[env_id]
    return gym.make(env_id, obs_mode="entities", action_mode=case["mode"],
                    **{**case["extra"], **size})


@pytest.mark.parametrize("env_id", [GO, DW])
def test_policy_entity_trains_with_the_shipped_entity_config(runs, env_id):
    case, run = CASES[env_id], runs[env_id]
    path = entity_config_path("ppo", env_id)
    assert path is not None and path.name == case["config"]
    meta = json.loads((run.run_dir / "run.json").read_text())
    assert meta["env_kwargs"]["obs_mode"] == "entities"
    assert meta["env_kwargs"]["action_mode"] == case["mode"]
    assert isinstance(run.model.policy, EntityPolicy)
    assert run.model.policy.action_layout == case["layout"]
    assert run.model.n_envs == case["n_envs"]  # from the shipped entity file, not configs/ppo.yml
    assert run.model.gamma == hp.load_config("ppo", env_id, str(path))["gamma"]
    entry = hp.load_config("ppo", env_id, run.run_dir / "config.yml")
    assert entry["policy"] == "schedgym.train.policies.EntityPolicy"
    algo_kw, _ = hp.split_entry("ppo", entry)
    assert algo_kw["policy_kwargs"]["action_layout"] == case["layout"]


@pytest.mark.parametrize("env_id", [GO, DW])
def test_same_weights_play_two_sizes_with_one_parameter_count(runs, env_id):
    """The saved model, loaded by the ``ppo:model.zip`` agent for two sizes other than its
    training size, has the trained weights and the same parameter count, and acts in each."""
    run = runs[env_id]
    trained = list(run.model.policy.parameters())
    counts = []
    for size in CASES[env_id]["sizes"]:
        env = _env(env_id, size)
        agent = make(f"ppo:{run.model_path}", env)
        params = list(agent.policy.parameters())
        counts.append(sum(p.numel() for p in params))
        for a, b in zip(trained, params, strict=True):
            assert th.equal(a.detach().cpu(), b.detach().cpu())
        obs, _ = env.reset(seed=0)
        for _ in range(3):
            action, _ = agent.predict(obs, deterministic=True)
            assert env.action_space.contains(action)
            obs, _, term, trunc, _ = env.step(action)
            if term or trunc:
                break
    assert counts[0] == counts[1] == sum(p.numel() for p in trained)
    sizes = [_env(env_id, s).observation_space["mask"].shape for s in CASES[env_id]["sizes"]]
    assert sizes[0] != sizes[1]  # the two sizes really differ in the number of entities


@pytest.mark.parametrize("env_id", [GO, DW])
def test_compare_plays_the_model_on_another_size(runs, env_id, tmp_path):
    case, spec = CASES[env_id], f"ppo:{runs[env_id].model_path}"
    size = case["sizes"][1]
    extra = dict(case["extra"])
    scenario = ["--scenario", extra.pop("scenario")] if "scenario" in extra else []
    sets = [a for k, v in {**extra, **size}.items() for a in ("--set", f"{k}={v}")]
    out = tmp_path / "cmp"
    assert cli(["compare", env_id, "--agents", f"fixed-price,{spec}", "--seeds", "100",
                "--instance-seeds", "1000", *scenario, *sets, "--out", str(out), "--workers", "1",
                "--quiet", "--no-plots", "--no-benchmarks"]) == 0
    recs = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert {r["key"][1] for r in recs} == {"fixed-price", spec}
    assert all(r["status"] == "ok" for r in recs)
    played = next(r for r in recs if r["key"][1] == spec)
    assert played["env_kwargs"] == {"action_mode": case["mode"], "obs_mode": "entities"}
    # one step per slot (GainOverhead), per job (DeadlineWelfare)
    assert played["steps"] == size["horizon" if env_id == GO else "n_jobs"]
    assert all(np.isfinite(v) for v in played["metrics"].values() if isinstance(v, float))


#: DeadlineWelfare-v0's price modes with their own config files, which name the mode that
#: ``--policy entity --config FILE`` trains in: one head per unit (``unit_prices``) or one
#: scalar per job (``demand_price``).
PRICE_MODES = {
    "unit_prices": {**CASES[DW], "mode": "unit_prices", "layout": "entity", "n_envs": 4,
                    "config": "deadline-welfare-unit-prices-ppo.yml"},
    "demand_price": {**CASES[DW], "mode": "demand_price", "layout": "global", "n_envs": 4,
                     "config": "deadline-welfare-demand-price-ppo.yml"},
}


@pytest.fixture(scope="module", params=sorted(PRICE_MODES))
def price_run(request, tmp_path_factory):
    """A tiny ``--policy entity --config <the mode's file>`` run: ``(case, result)``."""
    case = PRICE_MODES[request.param]
    overrides, scenario = _settings(case)
    return case, train(TrainConfig(
        "ppo", DW, policy="entity", timesteps=64, overrides=overrides,
        config=str(hp.config_dir() / "learned" / case["config"]), instance_seeds=(0, 1),
        hyperparams={"n_steps": 16, "batch_size": 32}, out=str(tmp_path_factory.mktemp("p")),
        eval_freq=0, checkpoint_freq=0, **scenario))


def test_the_config_files_mode_is_the_one_trained(price_run):
    case, run = price_run
    meta = json.loads((run.run_dir / "run.json").read_text())
    assert meta["env_kwargs"]["obs_mode"] == "entities"
    assert meta["env_kwargs"]["action_mode"] == case["mode"]
    assert run.model.policy.action_layout == case["layout"]
    assert run.model.n_envs == case["n_envs"]


def test_the_price_mode_model_plays_two_other_sizes(price_run, tmp_path):
    case, run = price_run
    trained = sum(p.numel() for p in run.model.policy.parameters())
    for size in case["sizes"]:
        env = gym.make(DW, obs_mode="entities", action_mode=case["mode"],
                       **{**case["extra"], **size})
        agent = make(f"ppo:{run.model_path}", env)
        assert sum(p.numel() for p in agent.policy.parameters()) == trained
        obs, _ = env.reset(seed=0)
        action, _ = agent.predict(obs, deterministic=True)
        assert env.action_space.contains(action)
        env.step(action)
    extra = dict(case["extra"])
    sets = [a for k, v in {**extra, **case["sizes"][1]}.items() if k != "scenario"
            for a in ("--set", f"{k}={v}")]
    out = tmp_path / "cmp"
    spec = f"ppo:{run.model_path}"
    assert cli(["compare", DW, "--agents", f"time-of-use,{spec}", "--seeds", "100",
                "--instance-seeds", "1000", "--scenario", extra["scenario"], *sets,
                "--out", str(out), "--workers", "1", "--quiet", "--no-plots",
                "--no-benchmarks"]) == 0
    recs = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    played = next(r for r in recs if r["key"][1] == spec)
    assert played["status"] == "ok"
    assert played["env_kwargs"] == {"action_mode": case["mode"], "obs_mode": "entities"}


def test_config_action_mode_reads_the_file(tmp_path):
    from schedgym.train.entity_training import config_action_mode

    for mode, case in PRICE_MODES.items():
        path = str(hp.config_dir() / "learned" / case["config"])
        assert config_action_mode("ppo", path, DW) == mode
    assert config_action_mode("ppo", str(hp.config_dir() / "learned" / CASES[DW]["config"]),
                              DW) == "pricing"
    (tmp_path / "c.yml").write_text("schedgym/DeadlineWelfare-v0:\n  policy: MultiInputPolicy\n"
                                   "  n_envs: 2\n")
    assert config_action_mode("ppo", str(tmp_path / "c.yml"), DW) is None
    with pytest.raises(ValueError, match="has no entry"):
        config_action_mode("ppo", str(tmp_path / "c.yml"), "schedgym/GainOverhead-v0")
    with pytest.raises(ValueError, match="config=.*does not exist"):
        config_action_mode("ppo", str(tmp_path / "none.yml"), DW)
    (tmp_path / "bad.yml").write_text("a: [\n")
    with pytest.raises(ValueError, match="config=.*is invalid"):
        config_action_mode("ppo", str(tmp_path / "bad.yml"), DW)
