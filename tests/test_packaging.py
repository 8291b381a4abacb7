"""The built wheel works installed, not only from the checkout.

The wheel is built from a copy of the working tree, installed with ``pip install --no-deps
--target`` into a fresh folder (dependencies come from the test environment), and the
``schedgym`` command is run from an unrelated working directory: ``train`` finds the shipped
``configs/ppo.yml``, ``compare`` plays the trained model, ``reproduce --list`` lists the shipped
experiments, and the wheel's top level holds only ``schedgym``. Building and inspecting the
wheel is fast; running it installed is marked slow (over a minute here: the installed copy
compiles its numba kernels afresh).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from schedgym.envs.fluctuating_speed import ENV_ID as FS

ROOT = Path(__file__).resolve().parents[1]
IGNORE = shutil.ignore_patterns(".venv", ".git", "build", "dist", "*.egg-info", "runs", "results",
                                "__pycache__", ".pytest_cache", ".ruff_cache", ".mypy_cache",
                                ".hypothesis", "tests", "docs")


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict[str, Path]:
    """Build the wheel from a copy of the tree and install it into a fresh folder."""
    tmp = tmp_path_factory.mktemp("pkg")
    src = tmp / "src"
    shutil.copytree(ROOT, src, symlinks=True, ignore=IGNORE)
    dist = tmp / "dist"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(dist),
                    str(src)], check=True, capture_output=True, timeout=600)
    wheel = next(dist.glob("schedgym-*.whl"))
    target = tmp / "site"
    subprocess.run([*pip, "install", "--no-deps", "--target", str(target), str(wheel)],
                   check=True, capture_output=True, timeout=600)
    work = tmp / "elsewhere"
    work.mkdir()
    return {"wheel": wheel, "target": target, "work": work}


def _schedgym(installed: dict[str, Path], *args: str) -> subprocess.CompletedProcess[str]:
    """``schedgym ARGS`` with the installed copy first on the path, from an unrelated folder."""
    env = {**os.environ, "PYTHONPATH": str(installed["target"])}
    code = ("import sys, schedgym; assert schedgym.__file__.startswith(sys.argv[1]), "
            "schedgym.__file__; from schedgym.train.cli import main; sys.exit(main(sys.argv[2:]))")
    return subprocess.run([sys.executable, "-c", code, str(installed["target"]), *args],
                          cwd=installed["work"], env=env, capture_output=True, text=True,
                          timeout=600)


def test_wheel_top_level_is_only_schedgym(installed):
    with zipfile.ZipFile(installed["wheel"]) as zf:
        tops = {n.split("/")[0] for n in zf.namelist()}
        names = set(zf.namelist())
    assert {t for t in tops if not t.endswith(".dist-info")} == {"schedgym"}
    for must in ("schedgym/configs/ppo.yml", "schedgym/agents/registry.py",
                 "schedgym/train/cli.py", "schedgym/py.typed"):
        assert must in names, must
    assert any(n.startswith("schedgym/configs/experiments/") for n in names)


@pytest.mark.slow  # 64-103 s on the shared 2-core machine (numba compiles the installed copy)
def test_installed_train_compare_and_reproduce_list(installed):
    small = ["--set", "horizon=8"]
    proc = _schedgym(installed, "train", "ppo", FS, *small, "--timesteps", "64", "--hp",
                     "n_steps=32", "--hp", "batch_size=32", "--no-progress", "--out", "runs")
    assert proc.returncode == 0, proc.stderr[-3000:]
    model = installed["work"] / "runs" / "FluctuatingSpeed-v0" / "ppo_s0" / "model.zip"
    assert model.is_file()
    proc = _schedgym(installed, "compare", FS, "--agents", f"esdp,ppo:{model}", *small,
                     "--seeds", "0", "--workers", "1", "--quiet", "--no-benchmarks", "--out",
                     "cmp")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ppo" in proc.stdout
    proc = _schedgym(installed, "reproduce", "--list")
    assert proc.returncode == 0, proc.stderr[-3000:]
    shipped = sorted(p.stem for p in (ROOT / "configs" / "experiments").glob("*.yml"))
    assert shipped and all(name in proc.stdout for name in shipped)
