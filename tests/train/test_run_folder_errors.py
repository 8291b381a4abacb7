"""A run folder that cannot be written is one accurate line: an empty or dangling ``--out``,
a full disk (naming the file and how to go on), a damaged checkpoint to resume from."""

from __future__ import annotations

import errno
import os

import pytest

from schedgym.envs.gain_overhead import ENV_ID as GO
from schedgym.train.cli import main as cli
from schedgym.train.training import TrainConfig, train

from .conftest import small_overrides

TINY = dict(overrides=small_overrides(GO), hyperparams={"n_steps": 8, "n_envs": 2},
            timesteps=32, eval_freq=0, log_every=16)


def test_an_empty_out_is_named(tmp_path):
    with pytest.raises(ValueError, match=r"^out='' is invalid: give the folder the runs go in"):
        TrainConfig("a2c", GO, out="")


def test_out_on_a_dangling_link_is_named(tmp_path):
    link = tmp_path / "gone"
    os.symlink(tmp_path / "nowhere", link)
    with pytest.raises(ValueError, match=r"is a symbolic link to .*nowhere', which does not "
                                         r"exist$"):
        TrainConfig("a2c", GO, out=str(link / "runs"))


def test_a_full_disk_names_the_file_and_the_resume(tmp_path, monkeypatch, capsys):
    """``model.save`` fails with errno 28 after the checkpoints were written: one line naming
    model.zip and the checkpoint to resume from."""
    from stable_baselines3.common.base_class import BaseAlgorithm

    real = BaseAlgorithm.save

    def save(self, path, *args, **kwargs):
        if str(path).endswith(os.sep + "model.zip"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, path, *args, **kwargs)

    monkeypatch.setattr(BaseAlgorithm, "save", save)
    sets = sum((["--set", f"{k}={v}"] for k, v in small_overrides(GO).items()), [])
    code = cli(["train", "a2c", GO, "--timesteps", "32", "--n-envs", "2", "--hp", "n_steps=8",
                "--eval-freq", "0", "--checkpoint-freq", "16", "--out", str(tmp_path),
                "--no-progress", *sets])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert "no space left on the device writing " in err[0] and "model.zip" in err[0]
    assert "[Errno 28]" not in err[0]
    assert "--resume " in err[0] and "checkpoints/model_" in err[0]


def test_resume_from_a_bit_rotted_zip_is_one_line(tmp_path):
    first = train("a2c", GO, out=tmp_path, name="r", checkpoint_freq=0, **TINY)
    raw = bytearray(first.model_path.read_bytes())
    for k in range(200, 264):
        raw[k] ^= 0xFF
    bad = tmp_path / "bad.zip"
    bad.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match=r"^resume='.*bad.zip' is invalid: .*bad.zip is "
                                         r"damaged.*: train it again or restore it") as err:
        train("a2c", GO, out=tmp_path, name="r2", resume=str(bad), checkpoint_freq=0, **TINY)
    assert "wasn't a zip-file" not in str(err.value)
