"""A tiny PPO run in the learnable ``pricing`` mode: trained, saved with its run.json, reloaded and
played by ``compare`` in its own mode beside a classical agent on the same seeds."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

from schedgym.envs.deadline_welfare import ENV_ID

from .conftest import SMALL


def test_tiny_ppo_in_pricing_mode_is_saved_reloaded_and_compared(tmp_path):
    sb3 = pytest.importorskip("stable_baselines3")
    from schedgym.train.compare import run_compare

    kw = {"action_mode": "pricing", **SMALL}
    model = sb3.PPO("MultiInputPolicy", gym.make(ENV_ID, **kw), n_steps=64, batch_size=32,
                    n_epochs=1, seed=0, device="cpu")
    # a logger with no outputs: SB3's default one makes an empty /tmp/SB3-<date> folder per run
    model.set_logger(sb3.common.logger.Logger(folder=None, output_formats=[]))
    model.learn(64)
    path = tmp_path / "model.zip"
    model.save(path)
    (tmp_path / "run.json").write_text(json.dumps({"env_kwargs": {"action_mode": "pricing"}}))
    spec = f"ppo:{path}[trusted=true]"  # a plain SB3 save has no schedgym record of its policy
    results, bench = run_compare(ENV_ID, ["max-first", spec], [100, 101],
                                 overrides=dict(SMALL), workers=1, show_progress=False)
    assert [r.agent for r in results] == ["max-first"] * 2 + [spec] * 2
    assert all(np.isfinite(r.metrics["reward"]) and r.metrics["reward"] > 0 for r in results)
    # played in its own mode: a pricing decision never needs the repair
    assert all(r.metrics["repair_l1"] < 1e-6 for r in results if r.agent != "max-first")
    assert set(bench) == {(0, 100), (0, 101)}  # the offline optimum of each seed
