"""Env ids resolve in a fresh process that never imported schedgym: SB3's
``SubprocVecEnv`` (forkserver workers) and spawn-based ``AsyncVectorEnv`` started from
``python -c`` work with Gymnasium's module-prefixed id ``schedgym:schedgym/<Env>-v0``, and the
command line accepts that form too."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from schedgym.envs.fluctuating_speed import ENV_ID as FS
from schedgym.train.cli_options import MODULE_PREFIX, resolve_env_id

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = f"""
import sys
import gymnasium as gym
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import SubprocVecEnv
assert "schedgym" not in sys.modules
env_id = "{MODULE_PREFIX}{FS}"
venv = make_vec_env(env_id, n_envs=2, vec_env_cls=SubprocVecEnv,
                    env_kwargs={{"horizon": 4}})
venv.reset()
venv.close()
aenv = gym.make_vec(env_id, num_envs=2, vectorization_mode="async",
                    vector_kwargs={{"context": "spawn"}}, horizon=4)
aenv.reset(seed=0)
aenv.close()
print("ok")
"""


def test_subproc_and_spawn_workers_resolve_the_prefixed_id(tmp_path):
    proc = subprocess.run([sys.executable, "-c", SCRIPT], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env={"PYTHONPATH": str(ROOT),
                                                       "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().endswith("ok")


def test_cli_accepts_the_prefixed_id():
    assert resolve_env_id(f"{MODULE_PREFIX}{FS}") == FS
