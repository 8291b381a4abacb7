"""Check a saved SB3 model against the env it is to play, before any episode runs.

:func:`fit_spaces` reads the model's saved spaces and policy class (SB3's ``data`` of the zip)
and returns the ``custom_objects`` for ``ALGO.load``: the env's own spaces for a shared-weights
:class:`~schedgym.train.policies.EntityPolicy` (any instance size), nothing for another policy
whose spaces match the env exactly. A model that cannot play the env (another env, another
observation or action mode, a flat model on another size) is a one-line ``ValueError`` naming
what differs and what to do.

Security: SB3 model zips (and ``vecnormalize.pkl``) hold cloudpickled Python objects that run
code when loaded. Load only model files from a trusted source (your own training runs).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gymnasium import spaces


def describe(space: Any) -> str:
    """A short one-line description of a space (Dict keys with their shapes)."""
    if isinstance(space, spaces.Dict):
        return "Dict(" + ", ".join(f"{k}={tuple(s.shape or ())}" for k, s in
                                   space.spaces.items()) + ")"
    if isinstance(space, spaces.Box):
        return f"Box{tuple(space.shape)}"
    return str(space)


def env_spaces(env: Any) -> tuple[Any, Any]:
    """``(observation space, action space)`` of one copy of ``env`` (plain, wrapped, Gymnasium
    vector env or SB3 ``VecEnv``)."""
    obs = getattr(env, "single_observation_space", None) or env.observation_space
    act = getattr(env, "single_action_space", None) or env.action_space
    return obs, act


def run_record(folder: str | Path) -> dict[str, Any] | None:
    """The ``run.json`` that ``schedgym train`` writes into a run folder, as a dict; None when
    the file is missing, unreadable or not a JSON object (a run without a record)."""
    meta = Path(folder) / "run.json"
    if not meta.is_file():
        return None
    try:
        record = json.loads(meta.read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _trained_env_id(path: Path) -> str | None:
    env_id = (run_record(path.parent) or {}).get("env_id")
    return env_id if isinstance(env_id, str) else None


def model_data(spec: str, path: str | Path) -> dict[str, Any]:
    """SB3's saved ``data`` of the zip (spaces, policy class, policy kwargs); ``ValueError``
    when the file is not an SB3 model."""
    from stable_baselines3.common.save_util import load_from_zip_file

    try:
        data, _, _ = load_from_zip_file(str(path), load_data=True, device="cpu",
                                        print_system_info=False)
    except Exception as exc:  # a damaged or foreign file: one line, not SB3's traceback
        raise ValueError(f"agent={spec!r} is invalid: {path} is not a Stable-Baselines3 model "
                         f"zip ({type(exc).__name__}: {exc})") from None
    if not isinstance(data, dict) or "observation_space" not in data \
            or "action_space" not in data:
        raise ValueError(f"agent={spec!r} is invalid: {path} has no saved observation/action "
                         "spaces")
    return data


def fit_spaces(spec: str, path: str | Path, env: Any) -> dict[str, Any]:
    """The ``custom_objects`` that let the model of ``path`` play ``env`` (see the module
    docstring); ``ValueError`` when it cannot."""
    from schedgym.agents.registry import _env_id
    from schedgym.train.policies import EntityPolicy, entity_space_sizes

    env_id = _env_id(env)
    trained_on = _trained_env_id(Path(path))
    if trained_on is not None and env_id is not None and trained_on != env_id:
        raise ValueError(f"agent={spec!r} cannot play {env_id}: it was trained on {trained_on} "
                         f"(run.json beside the model)")
    data = model_data(spec, path)
    m_obs, m_act = data["observation_space"], data["action_space"]
    e_obs, e_act = env_spaces(env)
    policy = data.get("policy_class")
    if not (isinstance(policy, type) and issubclass(policy, EntityPolicy)):
        if m_obs != e_obs or m_act != e_act:
            raise ValueError(
                f"agent={spec!r} cannot play this env: the model was trained on observations "
                f"{describe(m_obs)} and actions {describe(m_act)}, the env gives "
                f"{describe(e_obs)} and {describe(e_act)} (a flat policy plays only the env, "
                "size and modes it was trained on; train with --policy entity to play every "
                "size)")
        return {}
    try:
        _, f_m, c_m = entity_space_sizes(m_obs)
    except ValueError:  # e.g. entity rows saved 2-D (N, F): the contract's entities are 1-D
        raise ValueError(f"agent={spec!r} is invalid: its EntityPolicy was saved with "
                         f"observations {describe(m_obs)}, not the entity contract's "
                         "Dict(entities=(N * F,), mask=(N,), context=(C,)): train it again "
                         "with --policy entity") from None
    try:
        n, f_e, c_e = entity_space_sizes(e_obs)
    except ValueError:
        raise ValueError(f"agent={spec!r} cannot play this env: the model is an EntityPolicy "
                         f"(obs_mode='entities'), the env gives {describe(e_obs)}: build it "
                         "with obs_mode='entities' and the model's action_mode") from None
    if (f_m, c_m) != (f_e, c_e):
        raise ValueError(f"agent={spec!r} cannot play this env: the model reads {f_m} entity "
                         f"and {c_m} context features, the env gives {f_e} and {c_e} (another "
                         "env?)")
    layout = (data.get("policy_kwargs") or {}).get("action_layout")
    if layout is None:
        layout = "entity" if m_act.shape == m_obs["mask"].shape else "global"
    want = (n,) if layout == "entity" else tuple(m_act.shape)
    same_kind = isinstance(e_act, spaces.Box) and isinstance(m_act, spaces.Box) and \
        float(e_act.low.min()) == float(m_act.low.min()) and \
        float(e_act.high.max()) == float(m_act.high.max())
    if not same_kind or tuple(e_act.shape) != want:
        raise ValueError(f"agent={spec!r} cannot play this env: the model acts with "
                         f"{describe(m_act)} ({layout} layout: expects {describe_shape(want)} "
                         f"here), the env's action space is {describe(e_act)} (another "
                         "action_mode?)")
    return {"observation_space": e_obs, "action_space": e_act}


def describe_shape(shape: tuple[int, ...]) -> str:
    """``Box(n,)`` for a 1-D shape."""
    return f"Box{shape}"
