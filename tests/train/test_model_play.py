"""A model plays as it was trained to be played: the play chosen at training (``eval_draws``)
is recorded in ``run.json`` and in the zip, and ``compare`` plays ``ALGO:model.zip`` that way
unless ``[deterministic=...]`` says otherwise."""

from __future__ import annotations

import json
import zipfile

import gymnasium as gym
import numpy as np
import pytest

from schedgym.agents import make, model_file
from schedgym.envs.fluctuating_speed import ENV_ID
from schedgym.train.training import train

from .sweep_cli import main as cli

SMALL = {"horizon": 20, "n_types": 3, "n_instances": 8, "edge_prob": 0.4}
SETS = sum((["--set", f"{k}={v}"] for k, v in SMALL.items()), [])


@pytest.fixture(scope="module", params=[False, True, None], ids=["mode", "sampled", "default"])
def run(request, tmp_path_factory):
    """A tiny ``--policy entity`` run, evaluated by its mode, (``eval_draws``) its draws, or
    as the env says by default (FluctuatingSpeed: its draws)."""
    result = train("ppo", ENV_ID, policy="entity", timesteps=64, overrides=SMALL,
                   hyperparams={"n_steps": 16, "batch_size": 32}, eval_draws=request.param,
                   out=tmp_path_factory.mktemp("play"), eval_freq=0, checkpoint_freq=0)
    result.asked = request.param  # type: ignore[attr-defined]
    return result


def test_an_entity_run_on_fluctuating_speed_records_its_draws_by_default(run):
    expected = {False: "mode", True: "sampled", None: "sampled"}[run.asked]
    assert json.loads((run.run_dir / "run.json").read_text())["play"] == expected


def test_the_default_play_is_the_envs_choice_for_the_policy():
    from schedgym.train.train_config import default_eval_draws

    assert default_eval_draws(ENV_ID, "entity") is True
    assert default_eval_draws(ENV_ID, "default") is False
    assert default_eval_draws("schedgym/GainOverhead-v0", "entity") is False
    assert default_eval_draws("schedgym/DeadlineWelfare-v0", "entity") is False


def _play_of(run) -> str:
    return "sampled" if json.loads((run.run_dir / "run.json").read_text())["eval_draws"] \
        else "mode"


def test_the_play_is_recorded_in_run_json_and_in_the_zip(run):
    meta = json.loads((run.run_dir / "run.json").read_text())
    with zipfile.ZipFile(run.model_path) as zf:
        entry = json.loads(zf.read(model_file.ENTRY))
    assert meta["play"] == entry["play"] == _play_of(run)
    assert entry["env_id"] == ENV_ID
    assert entry["env_kwargs"] == {"action_mode": "scores", "obs_mode": "entities"}


def test_the_recorded_play_is_the_play_compare_uses(run, tmp_path):
    """``ppo:model.zip`` gives, episode for episode, the same records as the spec that names
    the recorded play, and others than the other play's (both ways: a run recorded as mode
    and one recorded as sampled)."""
    recorded = _play_of(run)
    plain = f"ppo:{run.model_path}"
    same = f"{plain}[deterministic={'true' if recorded == 'mode' else 'false'}]"
    other = f"{plain}[deterministic={'false' if recorded == 'mode' else 'true'}]"
    out = tmp_path / "cmp"
    assert cli(["compare", ENV_ID, "--agents", f"{plain},{same},{other}", "--seeds", "100,101",
                *SETS, "--out", str(out), "--workers", "1", "--quiet", "--no-plots",
                "--no-benchmarks"]) == 0
    recs: dict[str, list] = {}
    for r in map(json.loads, (out / "episodes.jsonl").read_text().splitlines()):
        recs.setdefault(r["key"][1], []).append((r["key"], r["metrics"]))
    rewards = {k: [m["reward"] for _, m in sorted(v)] for k, v in recs.items()}
    assert rewards[plain] == rewards[same]
    assert rewards[plain] != rewards[other]
    env = gym.make(ENV_ID, obs_mode="entities", action_mode="scores", **SMALL)
    agent = make(plain, env)
    assert (agent.play, agent.source) == (recorded, "recorded")


def test_a_tiny_models_default_play_selects_something(run):
    """The default play of a run evaluated by its draws picks channels in most slots; an
    explicit play always wins over the record."""
    env = gym.make(ENV_ID, obs_mode="entities", action_mode="scores", **SMALL)
    agent = make(f"ppo:{run.model_path}", env)
    if agent.play == "mode":
        pytest.skip("the mode run: what its mode selects is the policy's, not the play's")
    obs, _ = env.reset(seed=0)
    agent.seed_episode(0)
    picked = []
    for _ in range(SMALL["horizon"]):
        action, _ = agent.predict(obs, deterministic=True)  # the record wins over the caller
        obs, _, term, trunc, info = env.step(action)
        picked.append(int(info["n_selected"]))
        if term or trunc:
            break
    assert np.mean(np.array(picked) > 0) > 0.5


def test_the_play_is_known_without_loading_the_model(run):
    from schedgym.agents.record import learned_play

    plain = f"ppo:{run.model_path}"
    assert learned_play(plain) == _play_of(run)
    assert learned_play(f"{plain}[deterministic=false]") == "sampled"
    assert learned_play(f"{plain}[deterministic=true]") == "mode"
    assert learned_play("hauf") is None


def test_compare_refuses_a_model_of_another_env_in_one_line(run, tmp_path, capsys):
    """A FluctuatingSpeed model in a GainOverhead compare: one line naming the model, the env
    and the mode it was trained in (not "action_mode='scores' is invalid")."""
    from schedgym.train.cli import main as schedgym

    go = "schedgym/GainOverhead-v0"
    code = schedgym(["compare", go, "--agents", f"ogasched,ppo:{run.model_path}", "--seeds", "0",
                     "--out", str(tmp_path / "cmp"), "--quiet", "--no-plots"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert f"cannot play {go}: the model was trained on {ENV_ID} with action_mode='scores', " \
           "obs_mode='entities'" in err[0] and str(run.model_path) in err[0]
    assert not (tmp_path / "cmp").exists()


def test_the_table_names_each_models_play(run):
    from schedgym.train.summary import display_names

    plain = f"ppo:{run.model_path}"
    label = display_names([plain, f"{plain}[deterministic=true]"])
    word = {"sampled": "draws", "mode": "mode"}[_play_of(run)]
    assert label[plain].endswith(f"(plays its {word})")
    assert "plays" not in label[f"{plain}[deterministic=true]"]
