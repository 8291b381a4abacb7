"""Resuming never loses a saved log: SB3's ``progress.csv`` of each earlier part is kept under
a name no later resume takes, even when two resumes start from the same checkpoint."""

from __future__ import annotations

from pathlib import Path

from schedgym.envs.gain_overhead import ENV_ID as GO
from schedgym.train.run_folder import keep_progress_log
from schedgym.train.training import train

from .conftest import small_overrides


def test_a_saved_log_is_never_replaced(tmp_path: Path):
    """A first resume that failed left an empty ``progress.csv`` beside the saved
    ``progress.until-64.csv``: the second resume keeps the saved log byte for byte."""
    saved = b"time/iterations,train/loss\n" + b"1,0.5\n" * 30
    (tmp_path / "progress.until-64.csv").write_bytes(saved)
    (tmp_path / "progress.csv").write_bytes(b"")
    keep_progress_log(tmp_path, 64)
    assert (tmp_path / "progress.until-64.csv").read_bytes() == saved
    assert not (tmp_path / "progress.csv").exists()  # an empty log holds nothing to keep
    # a non-empty log of a second part from the same step goes beside it, under a new name
    (tmp_path / "progress.csv").write_bytes(b"a\n1\n")
    keep_progress_log(tmp_path, 64)
    assert (tmp_path / "progress.until-64.csv").read_bytes() == saved
    assert (tmp_path / "progress.until-64-2.csv").read_bytes() == b"a\n1\n"
    assert not (tmp_path / "progress.csv").exists()


def test_two_resumes_from_one_checkpoint_keep_both_logs(tmp_path: Path):
    """Two ``train --resume`` from the same checkpoint into the run's own folder: the first
    run's log and the first resume's log are both still there, unchanged."""
    kw = dict(overrides=small_overrides(GO), out=tmp_path, name="r", eval_freq=0,
              hyperparams={"n_steps": 16, "batch_size": 32, "n_epochs": 1, "n_envs": 2},
              log_every=16)
    first = train("ppo", GO, timesteps=96, checkpoint_freq=64, **kw)
    ckpt = sorted((first.run_dir / "checkpoints").glob("model_*_steps.zip"))[0]
    original = (first.run_dir / "progress.csv").read_bytes()
    assert original
    train("ppo", GO, timesteps=32, checkpoint_freq=0, resume=ckpt, **kw)
    logs = {p.name: p.read_bytes() for p in first.run_dir.glob("progress.until-*.csv")}
    assert list(logs.values()) == [original]
    train("ppo", GO, timesteps=32, checkpoint_freq=0, resume=ckpt, **kw)
    after = {p.name: p.read_bytes() for p in first.run_dir.glob("progress.until-*.csv")}
    assert len(after) == 2 and all(after.values())
    assert {k: after[k] for k in logs} == logs  # the first saved log is unchanged
