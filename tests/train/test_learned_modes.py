"""A tiny training run in every env x learnable action mode is saved, reloaded and
played by ``compare`` in its own mode, next to the env's paper agent on the same seeds."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import schedgym
from schedgym.train.cli import main as cli
from schedgym.train.training import train

from .conftest import small_overrides

PAPER = {"schedgym/GainOverhead-v0": "ogasched", "schedgym/FluctuatingSpeed-v0": "esdp",
         "schedgym/DeadlineWelfare-v0": "onsocmax"}
CASES = [(env_id, mode) for env_id in schedgym.ENV_IDS
         for mode in gym.make(env_id).unwrapped.metadata["action_modes"][1:]]


def test_every_env_has_a_learnable_mode():
    assert {env_id for env_id, _ in CASES} == set(schedgym.ENV_IDS)


@pytest.mark.parametrize(("env_id", "mode"), CASES)
def test_tiny_run_in_a_learnable_mode_is_played_by_compare(tmp_path, env_id, mode):
    small = small_overrides(env_id)
    res = train("a2c", env_id, timesteps=16, overrides={**small, "action_mode": mode},
                out=tmp_path / "runs", eval_freq=0, checkpoint_freq=0)
    assert json.loads((res.model_path.parent / "run.json").read_text())[
        "env_kwargs"]["action_mode"] == mode
    spec = f"a2c:{res.model_path}"
    sets = [arg for k, v in small.items() for arg in ("--set", f"{k}={v}")]
    out = tmp_path / "cmp"
    assert cli(["compare", env_id, "--agents", f"{PAPER[env_id]},{spec}", "--seeds", "100",
                *sets, "--out", str(out), "--workers", "1", "--quiet", "--no-plots",
                "--no-benchmarks"]) == 0
    recs = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    by_agent = {r["key"][1]: r for r in recs}
    assert by_agent[spec]["env_kwargs"]["action_mode"] == mode
    assert by_agent[PAPER[env_id]]["env_kwargs"] == {}
    assert all(r.get("error") is None for r in recs)
