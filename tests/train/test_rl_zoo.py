"""``rl_zoo3 train --gym-packages schedgym`` works with the shipped YAML (slow: a subprocess)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from schedgym.envs.deadline_welfare import ENV_ID as DW
from schedgym.envs.gain_overhead import ENV_ID as GO

from .conftest import small_overrides

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.parametrize("algo, env_id", [("ppo", GO),
                                          ("ppo", DW),
                                          ("sac", GO)])
def test_rl_zoo3_trains_with_the_shipped_config(tmp_path, algo, env_id):
    pytest.importorskip("rl_zoo3")
    env_kwargs = [f"{k}:{v}" for k, v in small_overrides(env_id).items()]
    small = {"ppo": ["n_steps:32", "batch_size:32", "n_envs:1"],
             "sac": ["learning_starts:16", "batch_size:16"]}[algo]
    cmd = [sys.executable, "-m", "rl_zoo3.train", "--algo", algo, "--env", env_id,
           "--gym-packages", "schedgym", "-conf", str(ROOT / "configs" / f"{algo}.yml"),
           "-n", "64", "-f", str(tmp_path), "--eval-freq", "-1", "--env-kwargs", *env_kwargs,
           "-params", *small]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    models = list(tmp_path.rglob(env_id.replace("/", "-") + ".zip"))
    assert models, list(tmp_path.rglob("*"))


def test_rl_zoo3_enjoy_imports_with_the_pinned_stack():
    """``python -m rl_zoo3.enjoy`` crashed on import (``No module named 'requests'``): the train
    extra pins what it needs."""
    proc = subprocess.run([sys.executable, "-c", "import rl_zoo3.enjoy, rl_zoo3.train"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
