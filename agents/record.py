"""The record beside a trained model: the ``run.json`` that ``schedgym train`` writes into its
run folder (:func:`schedgym.train.model_io.write_meta`), read here by everything that plays a
model or resumes its training.

Its keys: ``algo``, ``env_id``, ``seed``, ``env_kwargs`` (the ``gym.make`` keyword arguments,
the mode among them), ``instance_seed``, ``instance_seeds``, ``eval_instance_seeds``,
``eval_draws``, ``play`` (``"mode"`` or ``"sampled"``: how the model is meant to be played),
``policy`` (the plain-JSON record that rebuilds the policy, :mod:`schedgym.agents.model_file`),
``resumed_from``, ``interrupted``, ``num_timesteps``, ``wall_s``. The zip itself carries
``env_id``, ``env_kwargs``' mode keys, ``play`` and ``policy`` too (its ``schedgym.json``), so
a model copied out of its run folder keeps them: :func:`model_record` reads the zip's first,
then the run folder's.

Of the record, playing uses the env id (a model is refused on another env), the
:data:`PLAY_KEYS` of ``env_kwargs`` (the mode the model plays in, whatever the run's own), the
play and the policy record. A model without a record (a zip from elsewhere) plays only when
its user says it is trusted (``ALGO:model.zip[trusted=true]``: SB3's own load, which unpickles).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from schedgym.agents import model_file
from schedgym.agents.spec import AgentSpec

#: The record's file name, in the run folder beside ``model.zip``.
RUN_RECORD = "run.json"

#: env kwargs of a learned agent's record that ``compare`` applies when playing it: how the
#: agent sees and acts on the env (mode), not which world it faces (scenario, overrides, seeds
#: stay the run's, so common random numbers are kept).
PLAY_KEYS = ("action_mode", "obs_mode", "instance_features", "arrivals", "feedback_stats")


def run_record(folder: str | Path) -> dict[str, Any] | None:
    """The ``run.json`` that ``schedgym train`` writes into a run folder, as a dict; None when
    the file is missing, unreadable or not a JSON object (a run without a record)."""
    meta = Path(folder) / RUN_RECORD
    if not meta.is_file():
        return None
    try:
        record = json.loads(meta.read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def model_folder(model_path: str | Path) -> Path:
    """The run folder of a saved model (``run/checkpoints/x.zip`` -> ``run``; else its
    folder)."""
    p = Path(model_path).parent
    return p.parent if p.name == "checkpoints" else p


def model_record(model_path: str | Path) -> dict[str, Any]:
    """What schedgym recorded about the model at ``model_path``: the zip's own record
    (:data:`~schedgym.agents.model_file.ENTRY`) over the run folder's ``run.json``; {} when
    there is neither. ``ValueError`` naming the file when it is no readable zip."""
    path = Path(model_path)
    folder = run_record(model_folder(path)) or {}
    own = model_file.read_entry(path) if path.is_file() else None
    return {**folder, **(own or {})}


def trained_env_id(model_path: str | Path) -> str | None:
    """The env id the model's record names (:func:`model_record`), or None."""
    env_id = model_record(model_path).get("env_id")
    return env_id if isinstance(env_id, str) else None


def describe_mode(env_kwargs: dict[str, Any]) -> str:
    """The mode keys of ``env_kwargs`` as ``action_mode='scores', obs_mode='entities'`` (the
    env's defaults when there are none)."""
    kw = [f"{k}={env_kwargs[k]!r}" for k in PLAY_KEYS if k in env_kwargs]
    return ", ".join(kw) or "the default modes"


def learned_env_kwargs(spec: str | AgentSpec, env_id: str | None = None) -> dict[str, Any]:
    """The mode kwargs a learned agent ``ALGO:path/model.zip`` was trained with: the
    :data:`PLAY_KEYS` of the ``env_kwargs`` of its record (:func:`model_record`; {} for a
    classical agent or a model without a record). With ``env_id``, a model trained on another
    env is a one-line ``ValueError`` naming the model, its env and its mode (before its mode is
    tried on an env that has no such mode)."""
    agent = AgentSpec.parse(spec)
    if agent.path is None:
        return {}
    meta_path = model_folder(agent.path) / RUN_RECORD
    if meta_path.is_file():
        try:
            json.loads(meta_path.read_text()).get("env_kwargs")
        except (json.JSONDecodeError, AttributeError) as exc:
            raise ValueError(f"agent={str(agent)!r} is invalid: {meta_path} is not a run.json "
                             f"({exc})") from None
    try:
        record = model_record(agent.path)
    except ValueError as exc:
        raise ValueError(f"agent={str(agent)!r} is invalid: {exc}") from None
    env_kw = record.get("env_kwargs")
    env_kw = env_kw if isinstance(env_kw, dict) else {}
    trained = record.get("env_id")
    if env_id is not None and isinstance(trained, str) and trained != env_id:
        raise ValueError(f"agent={str(agent)!r} cannot play {env_id}: the model was trained "
                         f"on {trained} with {describe_mode(env_kw)} (its record: "
                         f"{agent.path}); give a model trained on {env_id}")
    return {k: env_kw[k] for k in PLAY_KEYS if k in env_kw}


def learned_play(spec: str | AgentSpec) -> str | None:
    """How the learned agent ``spec`` plays, without loading it: ``"mode"`` or ``"sampled"``
    from its ``deterministic`` option, else the model's recorded ``play``, else ``"mode"``;
    None for a classical agent. For a table naming each learned agent's play."""
    agent = AgentSpec.parse(spec)
    if not agent.is_learned or agent.path is None:
        return None
    given = agent.learned_options()["deterministic"]
    if given is not None:
        return "mode" if given else "sampled"
    try:
        recorded = model_record(agent.path).get("play")
    except ValueError:
        recorded = None
    return recorded if recorded in model_file.PLAYS else "mode"
