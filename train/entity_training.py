"""``schedgym train ALGO ENV --policy entity``: train the shared-weights
:class:`~schedgym.train.policies.EntityPolicy` on the entity observations
(:mod:`schedgym.core.entities`).

``--policy entity`` means, for the env it is given:

- the env is built with ``obs_mode="entities"`` and its learnable action mode (the ``--set
  action_mode=...`` given, else the ``action_mode`` of the ``--config`` file's ``env_kwargs``,
  else the env's ``metadata["entity_action_mode"]``, else the first non-default entry of
  ``metadata["action_modes"]``: FluctuatingSpeed ``scores``);
- the hyperparameters come from ``--config``, else from the shipped
  ``configs/learned/*-entity-<algo>.yml`` holding an entry for the env, else from the default
  config (``configs/<algo>.yml``, the mode's entry) with its policy replaced;
- the policy is ``EntityPolicy`` with ``action_layout`` = the env's
  ``metadata["entity_action"]`` (saved in the zip with the rest of ``policy_kwargs``). Where the
  config names another policy, its ``policy_kwargs`` are dropped but for ``log_std_init``,
  ``activation_fn`` and ``ortho_init`` (an MLP's ``net_arch`` means nothing here).

Only the actor-critic algorithms (``ppo``, ``a2c``) take it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: ``schedgym train --policy`` choices.
POLICY_CHOICES = ("default", "entity")
#: The policy ``--policy entity`` trains, by import path (as configs name it).
ENTITY_POLICY = "schedgym.train.policies.EntityPolicy"
#: Algorithms whose policies are actor-critic (EntityPolicy's base class).
ENTITY_ALGOS = ("ppo", "a2c")
#: ``policy_kwargs`` kept when the config's policy is replaced.
KEPT_POLICY_KWARGS = ("log_std_init", "activation_fn", "ortho_init")


def _env_metadata(env_id: str) -> dict[str, Any]:
    """The env class's ``metadata`` (without building an env)."""
    import gymnasium as gym
    from gymnasium.envs.registration import load_env_creator

    entry = gym.spec(env_id).entry_point
    creator = load_env_creator(entry) if isinstance(entry, str) else entry
    return dict(getattr(creator, "metadata", {}) or {})


def entity_env_kwargs(algo: str, env_id: str, action_mode: Any = None) -> dict[str, Any]:
    """``{"obs_mode": "entities", "action_mode": <learnable mode>}`` for ``env_id``;
    ``ValueError`` where the env or the algorithm cannot train an EntityPolicy."""
    if algo not in ENTITY_ALGOS:
        raise ValueError(f"--policy entity is invalid with algo={algo!r}: EntityPolicy is an "
                         f"actor-critic policy, for {', '.join(ENTITY_ALGOS)}")
    meta = _env_metadata(env_id)
    if "entities" not in tuple(meta.get("obs_modes", ())):
        raise ValueError(f"--policy entity is invalid for {env_id}: the env has no "
                         "obs_mode='entities' (one row of features per entity)")
    modes = tuple(meta.get("action_modes", ()))
    if action_mode is None:
        action_mode = meta.get("entity_action_mode") or (modes[1] if len(modes) > 1 else None)
    if action_mode is None or (modes and action_mode == modes[0]):
        raise ValueError(f"--policy entity is invalid with action_mode={action_mode!r} for "
                         f"{env_id}: it needs a learnable action mode (one of "
                         f"{', '.join(map(str, modes[1:])) or 'none'})")
    return {"obs_mode": "entities", "action_mode": str(action_mode)}


def config_action_mode(algo: str, config: str, env_id: str) -> str | None:
    """The ``action_mode`` of the ``env_kwargs`` of ``env_id``'s entry in the config file
    ``config`` (read and checked as :func:`~schedgym.train.hyperparams.load_config` reads it,
    so a missing or malformed file is its one-line ``ValueError``), or None."""
    from schedgym.train.hyperparams import load_config

    kwargs = load_config(algo, env_id, config).get("env_kwargs")
    mode = kwargs.get("action_mode") if isinstance(kwargs, dict) else None
    return None if mode is None else str(mode)


def entity_config_path(algo: str, env_id: str) -> Path | None:
    """The shipped ``configs/learned/*-entity-<algo>.yml`` with an entry for ``env_id``, if
    any (the first in name order)."""
    import yaml

    from schedgym.train.hyperparams import config_dir

    for path in sorted((config_dir() / "learned").glob(f"*-entity-{algo}.yml")):
        data = yaml.safe_load(path.read_text()) or {}
        if isinstance(data, dict) and env_id in data:
            return path
    return None


def entity_entry(entry: dict[str, Any], algo_kw: dict[str, Any]) -> dict[str, Any]:
    """The hyperparameter ``entry`` as trained (for ``config.yml``): ``policy`` and
    ``policy_kwargs`` (an rl_zoo3 expression) those of ``algo_kw``."""
    from torch import nn

    def expr(v: Any) -> str:
        if isinstance(v, type) and issubclass(v, nn.Module):
            return f"nn.{v.__name__}"
        return repr(v)

    pk = algo_kw.get("policy_kwargs") or {}
    return {**entry, "policy": ENTITY_POLICY,
            "policy_kwargs": "dict(" + ", ".join(f"{k}={expr(v)}" for k, v in pk.items()) + ")"}


def entity_algo_kwargs(algo_kw: dict[str, Any], probe: Any) -> dict[str, Any]:
    """``algo_kw`` with ``policy`` = EntityPolicy and ``policy_kwargs["action_layout"]`` = the
    env's ``metadata["entity_action"]`` (``probe``: an env built in the entity mode)."""
    from schedgym.train.policies import EntityPolicy

    layout = probe.unwrapped.metadata.get("entity_action")
    kw = dict(algo_kw)
    pk = dict(kw.get("policy_kwargs") or {})
    policy = kw.get("policy")
    if not (isinstance(policy, type) and issubclass(policy, EntityPolicy)):
        kw["policy"] = EntityPolicy
        pk = {k: v for k, v in pk.items() if k in KEPT_POLICY_KWARGS}
    if layout is not None:
        if pk.get("action_layout", layout) != layout:
            raise ValueError(f"policy_kwargs action_layout={pk['action_layout']!r} is invalid: "
                             f"the env's entity_action is {layout!r}")
        pk["action_layout"] = layout
    kw["policy_kwargs"] = pk
    return kw
