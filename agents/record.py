"""The record beside a trained model: the ``run.json`` that ``schedgym train`` writes into its
run folder (:func:`schedgym.train.model_io.write_meta`), read here by everything that plays a
model or resumes its training.

Its keys: ``algo``, ``env_id``, ``seed``, ``env_kwargs`` (the ``gym.make`` keyword arguments,
the mode among them), ``instance_seed``, ``instance_seeds``, ``eval_instance_seeds``,
``eval_draws``, ``resumed_from``, ``interrupted``, ``num_timesteps``, ``wall_s``.

A model without a record (a zip from elsewhere) plays like any SB3 model: only its spaces are
checked. Of the record, playing uses the env id (a model is refused on another env) and the
:data:`PLAY_KEYS` of ``env_kwargs`` (the mode the model plays in, whatever the run's own).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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


def trained_env_id(model_path: str | Path) -> str | None:
    """The env id the record beside ``model_path`` names, or None (no record, no env id)."""
    env_id = (run_record(Path(model_path).parent) or {}).get("env_id")
    return env_id if isinstance(env_id, str) else None


def learned_env_kwargs(spec: str | AgentSpec) -> dict[str, Any]:
    """The mode kwargs a learned agent ``ALGO:path/model.zip`` was trained with: the
    :data:`PLAY_KEYS` of the ``env_kwargs`` in the ``run.json`` beside the model ({} for a
    classical agent or a model without ``run.json``); a ``run.json`` that is not JSON is a
    ``ValueError`` naming it."""
    agent = AgentSpec.parse(spec)
    if agent.path is None:
        return {}
    meta_path = Path(agent.path).parent / RUN_RECORD
    if not meta_path.is_file():
        return {}
    try:
        env_kw = json.loads(meta_path.read_text()).get("env_kwargs") or {}
    except (json.JSONDecodeError, AttributeError) as exc:
        raise ValueError(f"agent={str(agent)!r} is invalid: {meta_path} is not a run.json "
                         f"({exc})") from None
    return {k: env_kw[k] for k in PLAY_KEYS if k in env_kw}
