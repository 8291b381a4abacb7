"""A training run's saved files, written here and read back here: ``model.zip`` (SB3's zip),
``vecnormalize.pkl`` (the VecNormalize statistics, when the config normalises), ``config.yml``
(the hyperparameter entry used) and ``run.json`` (the run's record; its keys and its readers:
:mod:`schedgym.agents.record`).

Checkpoints follow SB3's names: ``checkpoints/model_<N>_steps.zip`` beside
``checkpoints/model_vecnormalize_<N>_steps.pkl`` (:func:`vecnormalize_path`).

Each saved zip of the run (``model.zip``, ``best_model.zip``, the checkpoints) also gets
schedgym's plain-JSON record of the model (:data:`schedgym.agents.model_file.ENTRY`: the
policy's class, spaces and arguments, the play and the mode), the same keys as ``run.json``,
so that the model is played without unpickling anything (:mod:`schedgym.agents.model_file`).

Security: SB3's ``data`` of the zip and ``vecnormalize.pkl`` hold cloudpickled Python objects
that run code when loaded: :func:`load_model` and :func:`load_vecnormalize` (``--resume``)
unpickle them, so resume only from your own runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from schedgym.agents import model_file
from schedgym.agents.record import PLAY_KEYS, RUN_RECORD
from schedgym.train import hyperparams as hp
from schedgym.train.train_config import TrainConfig, TrainPlan

#: The saved model of a run folder (the final one; ``best_model.zip`` is the evaluation's).
MODEL = "model.zip"
#: The VecNormalize statistics of a run folder's ``model.zip``.
VECNORMALIZE = "vecnormalize.pkl"
#: The hyperparameter entry a run used.
CONFIG = "config.yml"


def vecnormalize_path(model_path: str | Path) -> Path:
    """VecNormalize statistics belonging to a saved model: ``checkpoints/model_<N>_steps.zip`` ->
    ``checkpoints/model_vecnormalize_<N>_steps.pkl``; any other ``X.zip`` -> ``vecnormalize.pkl``
    in the same folder."""
    p = Path(model_path)
    stem = p.stem
    if stem.endswith("_steps") and "_" in stem[:-6]:
        prefix, _, rest = stem.rpartition("_steps")[0].rpartition("_")
        return p.with_name(f"{prefix}_vecnormalize_{rest}_steps.pkl")
    return p.with_name(VECNORMALIZE)


def load_model(algo: str, path: str | Path, venv: Any, device: str) -> Any:
    """The SB3 model saved at ``path`` (``algo``'s class), attached to ``venv`` to train on:
    what ``--resume`` continues."""
    return hp.algo_class(algo).load(str(path), env=venv, device=device)


def load_vecnormalize(model_path: str | Path, venv: Any) -> Any:
    """``venv`` wrapped in the VecNormalize statistics saved beside ``model_path``
    (:func:`vecnormalize_path`), in training mode; None when there are none."""
    from stable_baselines3.common.vec_env import VecNormalize

    stats = vecnormalize_path(model_path)
    if not stats.is_file():
        return None
    loaded = VecNormalize.load(str(stats), venv)
    loaded.training = True
    return loaded


def save_run(run_dir: Path, cfg: TrainConfig, plan: TrainPlan, model: Any, wall_s: float,
             interrupted: bool) -> Path:
    """Save the trained ``model`` into ``run_dir``: ``model.zip``, ``vecnormalize.pkl`` (when
    the config normalises), then ``config.yml`` and ``run.json`` (:func:`write_meta`); returns
    the model's path."""
    model_path = run_dir / MODEL
    with naming(model_path):
        model.save(str(model_path))
    if plan.settings["normalize"] is not None:
        with naming(run_dir / VECNORMALIZE):
            model.get_vec_normalize_env().save(str(run_dir / VECNORMALIZE))
    record = model_record(cfg, plan, model)
    for path in (model_path, run_dir / "best_model.zip",
                 *sorted((run_dir / "checkpoints").glob("model_*_steps.zip"))):
        if path.is_file():
            with naming(path):
                add_record(path, record)
    with naming(run_dir / RUN_RECORD):
        write_meta(run_dir, cfg, plan, model, wall_s, interrupted)
    return model_path


@contextmanager
def naming(path: Path) -> Iterator[None]:
    """An ``OSError`` raised inside names ``path`` (its ``filename``) when the writer did not
    (a full disk during ``model.save`` says only "[Errno 28]")."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None:
            exc.filename = str(path)
        raise


def play_of(cfg: TrainConfig) -> str:
    """How the run's model is meant to be played: ``"sampled"`` when its evaluations (and its
    ``best_model.zip``) judged the sampled actions (``eval_draws``), else ``"mode"``."""
    return "sampled" if cfg.eval_draws else "mode"


def model_record(cfg: TrainConfig, plan: TrainPlan, model: Any) -> dict[str, Any]:
    """schedgym's plain-JSON record of the trained ``model``
    (:mod:`schedgym.agents.model_file`): ``env_id``, the mode keys of ``env_kwargs``, ``play``
    and ``policy`` (None when the policy has arguments JSON cannot hold: then only a trusted
    load plays it)."""
    env_kw = _plain(plan.env_kw)
    return {"env_id": cfg.env_id, "algo": cfg.algo,
            "env_kwargs": {k: env_kw[k] for k in PLAY_KEYS if k in env_kw},
            "play": play_of(cfg), "policy": model_file.policy_record(model.policy)}


def add_record(path: Path, record: dict[str, Any]) -> None:
    """Write ``record`` into the zip at ``path`` as :data:`~schedgym.agents.model_file.ENTRY`
    (replacing an older, different one: the zip is rewritten to a temporary file, then moved
    over it; the same record leaves the file untouched)."""
    import os
    import zipfile

    text = json.dumps(record, indent=1)
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        if model_file.ENTRY in names and zf.read(model_file.ENTRY).decode() == text:
            return  # already recorded: the file is left as it is
    if model_file.ENTRY not in names:
        with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(model_file.ENTRY, text)
        return
    tmp = path.with_name(path.name + ".tmp")
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            if info.filename != model_file.ENTRY:
                dst.writestr(info, src.read(info.filename))
        dst.writestr(model_file.ENTRY, text)
    os.replace(tmp, path)


def write_meta(run_dir: Path, cfg: TrainConfig, plan: TrainPlan, model: Any, wall_s: float,
               interrupted: bool) -> None:
    """``config.yml`` (the hyperparameter entry used) and ``run.json`` (what ``compare`` needs to
    replay the model: ``env_kwargs`` for ``gym.make``, the instance seeds)."""
    import yaml

    (run_dir / CONFIG).write_text(yaml.safe_dump({cfg.env_id: _plain(plan.entry)},
                                                 sort_keys=False))
    meta = {"algo": cfg.algo, "env_id": cfg.env_id, "seed": cfg.seed,
            "env_kwargs": _plain(plan.env_kw),
            "instance_seed": cfg.training_instances()[0],
            "instance_seeds": list(cfg.training_instances()),
            "eval_instance_seeds": list(cfg.evaluation_instances()),
            "eval_draws": cfg.eval_draws, "play": play_of(cfg),
            "policy": model_file.policy_record(model.policy),
            "resumed_from": cfg.resume, "interrupted": interrupted,
            "num_timesteps": int(model.num_timesteps), "wall_s": wall_s}
    (run_dir / RUN_RECORD).write_text(json.dumps(meta, indent=2, default=str))


def _plain(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, (int, float, str, bool)) or obj is None:
        return obj
    return str(obj)
