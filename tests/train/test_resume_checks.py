"""``--resume`` checks its run folder's files before anything there changes: a damaged
``evaluations.npz`` or ``run.json`` is one line naming the file, and the run folder is left as
it was."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from schedgym.envs.gain_overhead import ENV_ID as GO
from schedgym.train.run_folder import check_resumed_evaluations, read_evaluations
from schedgym.train.training import TrainConfig, train

from .conftest import small_overrides


def _good(path: Path) -> None:
    np.savez(path, timesteps=np.array([16, 32]), results=np.ones((2, 3)),
             ep_lengths=np.full((2, 3), 12))


def _write_truncated(path: Path) -> None:
    _good(path)
    path.write_bytes(path.read_bytes()[:100])


DAMAGED = {
    "truncated": _write_truncated,
    "empty": lambda p: p.write_bytes(b""),
    "random bytes": lambda p: p.write_bytes(np.random.default_rng(0).bytes(512)),
    "pickled objects": lambda p: np.savez(p, timesteps=np.array([1]), ep_lengths=np.ones((1, 1)),
                                          results=np.array([[{"x": 1}]], dtype=object)),
    "wrong shapes": lambda p: np.savez(p, timesteps=np.array([16, 32]), results=np.ones((3,)),
                                       ep_lengths=np.ones((2, 3))),
    "NaN": lambda p: np.savez(p, timesteps=np.array([16]), results=np.full((1, 2), np.nan),
                              ep_lengths=np.ones((1, 2))),
    "missing array": lambda p: np.savez(p, timesteps=np.array([16])),
}


@pytest.mark.parametrize("kind", list(DAMAGED))
def test_a_damaged_evaluations_file_is_one_line_naming_it(tmp_path, kind):
    DAMAGED[kind](tmp_path / "evaluations.npz")
    with pytest.raises(ValueError, match=r"evaluations.npz is damaged \(.+\): nothing was "
                                         r"changed; restore it, or move it away") as err:
        read_evaluations(tmp_path)
    assert len(str(err.value).splitlines()) == 1
    assert str(tmp_path / "evaluations.npz") in str(err.value)


def test_a_good_evaluations_file_reads_back(tmp_path):
    _good(tmp_path / "evaluations.npz")
    ev = read_evaluations(tmp_path)
    assert ev is not None and ev.timesteps == [16, 32] and ev.lengths[1] == [12, 12, 12]
    assert read_evaluations(tmp_path / "none") is None


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("resume")
    cfg = TrainConfig("a2c", GO, overrides=small_overrides(GO), out=str(out), name="r",
                      hyperparams={"n_steps": 8, "n_envs": 2}, timesteps=48, eval_freq=16,
                      eval_episodes=1, checkpoint_freq=0, log_every=16)
    return cfg, train(cfg)


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


@pytest.mark.parametrize("kind", ["truncated", "empty", "random bytes", "wrong shapes"])
def test_resume_with_damaged_evaluations_changes_nothing(first_run, kind):
    cfg, res = first_run
    npz = res.run_dir / "evaluations.npz"
    good = npz.read_bytes()
    try:
        DAMAGED[kind](npz)
        before = _snapshot(res.run_dir)
        with pytest.raises(ValueError, match=r"evaluations.npz is damaged"):
            train(dataclasses.replace(cfg, resume=str(res.model_path), timesteps=16))
        assert _snapshot(res.run_dir) == before  # nothing in the run folder changed
    finally:
        npz.write_bytes(good)


@pytest.mark.parametrize("text, match", [
    ('{"eval_draws": fal', "does not read back as a run record"),
    ("[]", "does not read back as a run record"),
    ('{"eval_draws": "yes"}', "has eval_draws='yes': must be true or false"),
])
def test_a_damaged_run_json_does_not_skip_the_eval_draws_check(tmp_path, text, match):
    run = tmp_path / "run"
    run.mkdir()
    _good(run / "evaluations.npz")
    (run / "run.json").write_text(text)
    cfg = TrainConfig("a2c", GO, out=str(tmp_path), resume=str(run / "model.zip"))
    with pytest.raises(ValueError, match=rf"^resume=.* is refused: .*run.json {match}"):
        check_resumed_evaluations(cfg)
    (run / "run.json").write_text(json.dumps({"eval_draws": False}))
    check_resumed_evaluations(cfg)
