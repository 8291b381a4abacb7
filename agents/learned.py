"""Play a saved SB3 model as an agent, checked against the env before any episode runs.

:func:`make_learned` is what ``agents.make("ALGO:path.zip[options]", env)`` does for a learned
agent: the options are checked (:meth:`~schedgym.agents.spec.AgentSpec.learned_options`), the
model is loaded by :func:`load_learned` and, with ``deterministic=false``, wrapped to play its
sampled actions (:class:`~schedgym.agents.played.StochasticModel`).

:func:`fit_spaces` reads the model's saved spaces and policy class (SB3's ``data`` of the zip)
and returns the ``custom_objects`` for ``ALGO.load``: the env's own spaces for a shared-weights
entity policy (any instance size), nothing for another policy whose spaces match the env
exactly. A model that cannot play the env (another env, another observation or action mode, a
flat model on another size) is a one-line ``ValueError`` naming what differs and what to do.

The entity policy, ``schedgym.train.policies.EntityPolicy``, is told apart by its class's
qualified name (:data:`ENTITY_POLICY`, along the saved class's MRO), not by importing it: the
agents never import ``schedgym.train`` (torch and the training code are not needed to check a
model), and the name is what a model's saved data records without running any code. Its
observation contract is :func:`schedgym.core.entities.entity_space_sizes`.

Security: SB3 model zips (and ``vecnormalize.pkl``) hold cloudpickled Python objects that run
code when loaded. Load only model files from a trusted source (your own training runs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gymnasium import spaces

from schedgym.agents.base import env_id_of
from schedgym.agents.record import trained_env_id
from schedgym.agents.spec import SB3_ALGOS, AgentSpec
from schedgym.core.entities import entity_space_sizes

#: The qualified name of the shared-weights entity policy that ``schedgym train --policy
#: entity`` trains (a subclass of it counts too).
ENTITY_POLICY = "schedgym.train.policies.EntityPolicy"


def is_entity_policy(policy: Any) -> bool:
    """True if ``policy`` (a saved model's policy class) is :data:`ENTITY_POLICY` or a subclass
    of it."""
    return isinstance(policy, type) and any(
        f"{c.__module__}.{c.__qualname__}" == ENTITY_POLICY for c in policy.__mro__)


def make_learned(spec: str | AgentSpec, env: Any) -> Any:
    """The learned agent ``spec`` (``ALGO:path.zip[options]``) for ``env``: the loaded model
    (its policy's mode), or with ``deterministic=false`` the model playing its sampled actions.
    The options are checked before anything is loaded."""
    agent = AgentSpec.parse(spec)
    options = agent.learned_options()
    model = load_learned(agent, env)
    if options["deterministic"]:
        return model
    from schedgym.agents.played import StochasticModel

    return StochasticModel(model)


def load_learned(spec: str | AgentSpec, env: Any = None) -> Any:
    """Load an SB3 model from ``"ALGO:path.zip"`` for ``env``; returns the model (it has
    ``predict``). Options of the spec are not read here (:func:`make_learned` does).

    With ``env`` given, the model is checked against it before anything is played (one-line
    ``ValueError``): the env id of the ``run.json`` beside the model, when there is one, must be
    the env's; a model whose policy is the entity policy (:data:`ENTITY_POLICY`, shared
    weights) is rebuilt with the env's own spaces, so it plays every instance size, provided the
    env is in ``obs_mode="entities"`` with the same entity/context features and an action of the
    same layout; any other model needs exactly the observation and action spaces it was
    trained on.

    SB3 zips hold pickled Python objects, which run code when loaded: load only model files
    from a trusted source.
    """
    agent = AgentSpec.parse(spec)
    name, path = agent.name, agent.path
    if agent.algo is None or path is None:
        raise ValueError(f"agent={name!r} is invalid: learned agents are ALGO:path.zip with ALGO "
                         f"one of {', '.join(SB3_ALGOS)}")
    if not path or not Path(path).is_file():
        raise ValueError(f"agent={name!r} is invalid: model file {path!r} does not exist")
    import stable_baselines3 as sb3

    cls = getattr(sb3, agent.algo.upper())
    if env is None:
        return cls.load(path, device="cpu")
    return cls.load(path, device="cpu", custom_objects=fit_spaces(name, path, env))


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
    env_id = env_id_of(env)
    trained_on = trained_env_id(path)
    if trained_on is not None and env_id is not None and trained_on != env_id:
        raise ValueError(f"agent={spec!r} cannot play {env_id}: it was trained on {trained_on} "
                         f"(run.json beside the model)")
    data = model_data(spec, path)
    m_obs, m_act = data["observation_space"], data["action_space"]
    e_obs, e_act = env_spaces(env)
    policy = data.get("policy_class")
    if not is_entity_policy(policy):
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
