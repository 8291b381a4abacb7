"""Saved models load without running any code of the file.

A model ``schedgym train`` saved is rebuilt from its plain-JSON record (the zip's
``schedgym.json`` and ``run.json``) with weights read by ``torch.load(weights_only=True)``; a zip
without that record needs ``[trusted=true]``. The crafted zips here write a file when
unpickled: by default the file must never appear.
"""

from __future__ import annotations

import base64
import io
import json
import zipfile
from pathlib import Path

import cloudpickle
import gymnasium as gym
import numpy as np
import pytest
import torch
from stable_baselines3 import PPO

from schedgym.agents import make, model_file
from schedgym.envs.gain_overhead import ENV_ID as GO
from schedgym.train.training import train

from .conftest import small_overrides


class _WritesAFile:
    """Unpickled, it writes ``target``: the code a hostile model file would run."""

    def __init__(self, target: Path) -> None:
        self.target = str(target)

    def __reduce__(self):
        return (exec, (f"open({self.target!r}, 'w').write('ran')",))


def _env():
    return gym.make(GO, **small_overrides(GO))


def _rewrite(path: Path, replace: dict[str, bytes]) -> None:
    """Rewrite the zip at ``path`` with the entries of ``replace`` swapped in."""
    with zipfile.ZipFile(path) as zf:
        entries = {n: zf.read(n) for n in zf.namelist()}
    entries.update(replace)
    with zipfile.ZipFile(path, "w") as zf:
        for name, raw in entries.items():
            zf.writestr(name, raw)


def _hostile_plain_zip(tmp_path: Path, keys: tuple[str, ...]) -> tuple[gym.Env, Path, Path]:
    """``(env, path, target)``: a plain SB3 save of a fresh PPO at ``tmp_path / "model.zip"``
    (no schedgym record) whose serialized ``keys`` of its ``data`` entry are each replaced by a
    pickle that writes ``target`` when loaded."""
    env = _env()
    path = tmp_path / "model.zip"
    PPO("MultiInputPolicy", env, n_steps=16, batch_size=16, device="cpu").save(path)
    target = tmp_path / "pwned"
    with zipfile.ZipFile(path) as zf:
        data = json.loads(zf.read("data"))
    for key in keys:
        data[key][":serialized:"] = base64.b64encode(
            cloudpickle.dumps(_WritesAFile(target))).decode()
    _rewrite(path, {"data": json.dumps(data).encode()})
    return env, path, target


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("safe")
    return train("ppo", GO, timesteps=32, overrides=small_overrides(GO), out=out,
                 hyperparams={"n_steps": 16, "batch_size": 16, "n_epochs": 1, "n_envs": 2},
                 eval_freq=0, checkpoint_freq=0)


def test_a_crafted_zip_runs_no_code_unless_trusted(tmp_path):
    """A plain SB3 zip whose saved observation space is a hostile pickle: refused in one line
    naming ``trusted=true``, and the file is not written; with ``trusted=true`` SB3's own load
    unpickles it and the file appears (the payload is live)."""
    env, path, target = _hostile_plain_zip(tmp_path, ("observation_space",))
    with pytest.raises(ValueError, match=r"^agent='ppo:.*model.zip' is refused: .*model.zip has "
                                         r"no schedgym record of its policy, and loading it "
                                         r"would unpickle Python objects .* write "
                                         r"ppo:.*model.zip\[trusted=true\]$") as err:
        make(f"ppo:{path}", env)
    assert len(str(err.value).splitlines()) == 1
    assert not target.exists()
    with pytest.raises(ValueError):  # the payload replaced the space: refused after it ran
        make(f"ppo:{path}", env, trusted=True)
    assert target.read_text() == "ran"


def test_a_schedgym_model_loads_without_unpickling(trained, monkeypatch):
    """The run's model.zip carries its record; loading it never calls SB3's loader nor
    cloudpickle, and plays the trained policy's actions exactly."""
    import stable_baselines3.common.save_util as save_util

    def refuse(*args, **kwargs):
        raise AssertionError("unpickled")

    monkeypatch.setattr(save_util, "load_from_zip_file", refuse)
    monkeypatch.setattr(cloudpickle, "loads", refuse)
    with zipfile.ZipFile(trained.model_path) as zf:
        record = json.loads(zf.read(model_file.ENTRY))
    assert record["env_id"] == GO and record["play"] == "mode"
    assert record["policy"]["class"].endswith("MultiInputActorCriticPolicy")
    env = _env()
    agent = make(f"ppo:{trained.model_path}", env)
    obs, _ = env.reset(seed=5)
    for _ in range(4):
        want, _ = trained.model.predict(obs, deterministic=True)
        got, _ = agent.predict(obs)
        np.testing.assert_array_equal(got, want)
        obs, *_ = env.step(got)


def test_hostile_weights_in_a_recorded_zip_are_refused(trained, tmp_path):
    """A zip with a valid-looking record whose ``policy.pth`` is a hostile pickle: the weights
    are read with ``weights_only=True``, so the load is refused and nothing runs."""
    path = tmp_path / "model.zip"
    path.write_bytes(trained.model_path.read_bytes())
    target = tmp_path / "pwned"
    buf = io.BytesIO()
    torch.save({"w": _WritesAFile(target)}, buf)
    _rewrite(path, {"policy.pth": buf.getvalue()})
    with pytest.raises(ValueError, match=r"policy.pth is not plain weights, so it is not "
                                         r"loaded"):
        make(f"ppo:{path}", _env())
    assert not target.exists()


def test_a_record_cannot_name_other_code(trained, tmp_path):
    """The recorded policy class is resolved among library modules only."""
    path = tmp_path / "model.zip"
    path.write_bytes(trained.model_path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        record = json.loads(zf.read(model_file.ENTRY))
    record["policy"]["class"] = "os.system"
    _rewrite(path, {model_file.ENTRY: json.dumps(record).encode()})
    with pytest.raises(ValueError, match=r"class 'os.system' is not one schedgym rebuilds"):
        make(f"ppo:{path}", _env())


def test_a_bit_rotted_zip_is_one_line_naming_it(trained, tmp_path):
    """Flipped bytes inside the weights: a one-line message naming the file, not SB3's
    "wasn't a zip-file"."""
    path = tmp_path / "model.zip"
    raw = bytearray(trained.model_path.read_bytes())
    with zipfile.ZipFile(trained.model_path) as zf:
        info = zf.getinfo("policy.pth")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra) + 8
    for k in range(start, start + 64):
        raw[k] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match=rf"{path} is damaged: its policy.pth does not read "
                                         r"back .*: train it again") as err:
        make(f"ppo:{path}", _env())
    assert len(str(err.value).splitlines()) == 1


def test_compare_with_a_crafted_zip_runs_no_code(tmp_path, capsys):
    """The reviewer's case: ``schedgym compare`` given a hostile zip (plain SB3 save, no
    record) refuses it in one line and the file is never written."""
    from schedgym.train.cli import main as schedgym

    _, path, target = _hostile_plain_zip(tmp_path, ("observation_space", "action_space",
                                                     "policy_class"))
    sets = sum((["--set", f"{k}={v}"] for k, v in small_overrides(GO).items()), [])
    code = schedgym(["compare", GO, "--agents", f"ogasched,ppo:{path}", "--seeds", "0", *sets,
                     "--out", str(tmp_path / "cmp"), "--quiet", "--no-plots"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "[trusted=true]" in err[0], err
    assert not target.exists()
