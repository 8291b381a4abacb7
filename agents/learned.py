"""Play a saved SB3 model as an agent, checked against the env before any episode runs, and
loaded without running any code of the file.

:func:`make_learned` is what ``agents.make("ALGO:path.zip[options]", env)`` does for a learned
agent: the options are checked (:meth:`~schedgym.agents.spec.AgentSpec.learned_options`), the
model's record is read (:func:`~schedgym.agents.record.model_record`: the zip's
``schedgym.json`` over the run folder's ``run.json``, plain JSON both), the env id checked,
the policy loaded by :func:`load_learned` and played as the record says
(:class:`~schedgym.agents.played.PlayedPolicy`: its mode or its sampled actions;
``[deterministic=...]`` overrides).

Security: an SB3 zip's ``data`` holds cloudpickled Python objects, which run code when loaded.
A model ``schedgym train`` saved is therefore rebuilt from its plain-JSON record (the policy's
class, spaces and arguments) with the weights read by ``torch.load(weights_only=True)``
(:mod:`schedgym.agents.model_file`): nothing is unpickled. A zip without that record is
refused unless its user writes ``ALGO:path.zip[trusted=true]``; only then SB3's own load,
which unpickles, is used.

:func:`check_fit` compares the model's spaces and policy class with the env's and returns the
spaces to rebuild it with: the env's own for a shared-weights entity policy (any instance
size), the model's for another policy, which must match the env exactly. A model that cannot
play the env (another env, another observation or action mode, a flat model on another size)
is a one-line ``ValueError`` naming what differs and what to do.

The entity policy, ``schedgym.train.policies.EntityPolicy``, is told apart by its class's
qualified name (:data:`ENTITY_POLICY`, along the class's MRO), not by importing it here: the
agents never import ``schedgym.train`` by name; the recorded class itself is resolved among
trusted library modules only (:func:`~schedgym.agents.model_file.resolve_class`). Its
observation contract is :func:`schedgym.core.entities.entity_space_sizes`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gymnasium import spaces

from schedgym.agents import model_file
from schedgym.agents.base import env_id_of
from schedgym.agents.played import PlayedPolicy
from schedgym.agents.record import describe_mode, model_record
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


def make_learned(spec: str | AgentSpec, env: Any) -> PlayedPolicy:
    """The learned agent ``spec`` (``ALGO:path.zip[options]``) for ``env``, played as its
    ``deterministic`` option says or, without it, as the model's record says (the mode when
    there is no record); its ``play`` names the play. The options are checked before anything
    is loaded."""
    agent = AgentSpec.parse(spec)
    options = agent.learned_options()
    policy = load_learned(agent, env)
    if options["deterministic"] is not None:
        return PlayedPolicy(policy, "mode" if options["deterministic"] else "sampled", "spec")
    recorded = model_record(agent.path or "").get("play")
    if recorded in model_file.PLAYS:
        return PlayedPolicy(policy, recorded, "recorded")
    return PlayedPolicy(policy, "mode", "default")


def load_learned(spec: str | AgentSpec, env: Any = None) -> Any:
    """The policy of ``"ALGO:path.zip[trusted=...]"`` (it has SB3's ``predict``), checked
    against ``env`` when given; the play options are not read here (:func:`make_learned` does).

    A model with schedgym's record (:func:`~schedgym.agents.record.model_record`) is rebuilt
    from it without unpickling anything; a zip without one is refused in one line unless the
    spec says ``trusted=true`` (then SB3's ``ALGO.load``, which unpickles, returns the model).
    With ``env`` given, the model is checked against it first (one-line ``ValueError``): the
    recorded env id must be the env's; an entity policy (:data:`ENTITY_POLICY`, shared
    weights) is rebuilt with the env's own spaces, so it plays every instance size, provided the
    env is in ``obs_mode="entities"`` with the same entity/context features and an action of the
    same layout; any other model needs exactly the observation and action spaces it was
    trained on.
    """
    agent = AgentSpec.parse(spec)
    name, path = agent.name, agent.path
    if agent.algo is None or path is None:
        raise ValueError(f"agent={name!r} is invalid: learned agents are ALGO:path.zip with ALGO "
                         f"one of {', '.join(SB3_ALGOS)}")
    if not path or not Path(path).is_file():
        raise ValueError(f"agent={name!r} is invalid: model file {path!r} does not exist")
    trusted = agent.learned_options()["trusted"]
    try:
        record = model_record(path)
    except ValueError as exc:  # a damaged zip: one line naming it
        raise ValueError(f"agent={name!r} is invalid: {exc}") from None
    _check_env_id(name, record, env)
    policy_rec = record.get("policy")
    if isinstance(policy_rec, dict):
        return _rebuild(name, path, policy_rec, env)
    if not trusted:
        raise ValueError(f"agent={name!r} is refused: {path} has no schedgym record of its "
                         "policy, and loading it would unpickle Python objects saved in the "
                         "zip, which can run any code; if you trust the file, write "
                         f"{agent.algo}:{path}[trusted=true]")
    import stable_baselines3 as sb3

    cls = getattr(sb3, agent.algo.upper())
    if env is None:
        return cls.load(path, device="cpu")
    data = model_data(name, path)
    fit = check_fit(name, data["observation_space"], data["action_space"],
                    data.get("policy_class"), data.get("policy_kwargs") or {}, env)
    custom = {} if fit is None else {"observation_space": fit[0], "action_space": fit[1]}
    return cls.load(path, device="cpu", custom_objects=custom)


def _check_env_id(name: str, record: dict[str, Any], env: Any) -> None:
    """Refuse a model whose record names another env than ``env``'s (one line)."""
    env_id = None if env is None else env_id_of(env)
    trained_on = record.get("env_id")
    if isinstance(trained_on, str) and env_id is not None and trained_on != env_id:
        env_kw = record.get("env_kwargs")
        mode = describe_mode(env_kw if isinstance(env_kw, dict) else {})
        raise ValueError(f"agent={name!r} cannot play {env_id}: it was trained on {trained_on} "
                         f"with {mode} (its record: run.json or schedgym.json of the zip)")


def _rebuild(name: str, path: str, record: dict[str, Any], env: Any) -> Any:
    """The policy of ``record`` with the zip's weights, fitted to ``env`` (without unpickling:
    :func:`schedgym.agents.model_file.build_policy`)."""
    try:
        cls = model_file.resolve_class(record.get("class"))
        m_obs = model_file.decode_space(record.get("observation_space"))
        m_act = model_file.decode_space(record.get("action_space"))
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"agent={name!r} is invalid: its record of the policy does not read "
                         f"back ({exc})") from None
    fit = None if env is None else check_fit(name, m_obs, m_act, cls,
                                              record.get("kwargs") or {}, env)
    obs, act = (m_obs, m_act) if fit is None else fit
    try:
        return model_file.build_policy(record, path, obs, act)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"agent={name!r} is invalid: {exc}") from None


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


def check_fit(spec: str, m_obs: Any, m_act: Any, policy: Any, policy_kwargs: dict[str, Any],
              env: Any) -> tuple[Any, Any] | None:
    """The ``(observation space, action space)`` a model of spaces ``m_obs``/``m_act`` and
    policy class ``policy`` is rebuilt with to play ``env``: the env's for a shared-weights
    entity policy, None (its own) for another policy whose spaces are the env's (see the module
    docstring); ``ValueError`` when it cannot play ``env``."""
    e_obs, e_act = env_spaces(env)
    if not is_entity_policy(policy):
        if m_obs != e_obs or m_act != e_act:
            raise ValueError(
                f"agent={spec!r} cannot play this env: the model was trained on observations "
                f"{describe(m_obs)} and actions {describe(m_act)}, the env gives "
                f"{describe(e_obs)} and {describe(e_act)} (a flat policy plays only the env, "
                "size and modes it was trained on; train with --policy entity to play every "
                "size)")
        return None
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
    layout = policy_kwargs.get("action_layout")
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
    return e_obs, e_act


def describe_shape(shape: tuple[int, ...]) -> str:
    """``Box(n,)`` for a 1-D shape."""
    return f"Box{shape}"
