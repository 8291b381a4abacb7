"""Load and validate the SB3 hyperparameter files ``configs/<algo>.yml`` (rl-baselines3-zoo format).

Each file is keyed by env id (``schedgym/GainOverhead-v0: {...}``) with an optional ``default``
entry used for env ids that have no entry of their own (rl_zoo3 does the same), so an env added
later trains with no change here. An entry keyed ``"<env id> action_mode=<mode>"`` holds the
hyperparameters of a learnable action mode (``schedgym train --set action_mode=<mode>`` uses it;
rl_zoo3 ignores it). Every key of every entry must be understood, otherwise loading
fails (a typo such as ``n_step`` is an error, never silently ignored). Understood keys are:

- rl_zoo3's own keys (:data:`ZOO_KEYS`): ``n_timesteps``, ``policy``, ``n_envs``, ``normalize``,
  ``env_kwargs``, ``env_wrapper``, ``vec_env_wrapper``, ``frame_stack``, ``callback``,
  ``monitor_kwargs``, ``noise_type``/``noise_std`` (off-policy only);
- the algorithm constructor's arguments (``inspect.signature(PPO.__init__)`` etc.), minus those
  set by the trainer (``env``, ``seed``, ``verbose``, ``device``, ``tensorboard_log``).

String values follow rl_zoo3: ``learning_rate: lin_3e-4`` is a linear schedule,
``normalize: "dict(norm_obs=False, norm_reward=True)"`` and ``policy_kwargs: "dict(net_arch=[64,
64])"`` are Python expressions (evaluated with only ``dict``, ``nn`` (torch.nn) and ``th``
(torch) in scope); their keys are checked too (VecNormalize's and the policy class's arguments).
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from typing import Any

from schedgym.core.validation import check_known_keys

#: SB3 algorithms ``schedgym train`` supports: name -> SB3 class name.
ALGOS: dict[str, str] = {"ppo": "PPO", "a2c": "A2C", "sac": "SAC", "td3": "TD3"}
#: Algorithms that need a continuous ``Box`` action space.
BOX_ONLY = ("sac", "td3")
#: Keys rl_zoo3 consumes itself (not passed to the algorithm).
ZOO_KEYS = ("n_timesteps", "policy", "n_envs", "normalize", "env_kwargs", "env_wrapper",
            "vec_env_wrapper", "frame_stack", "callback", "monitor_kwargs")
OFF_POLICY_ZOO_KEYS = ("noise_type", "noise_std")
#: Constructor arguments the trainer sets itself (not allowed in a config).
TRAINER_ARGS = ("self", "policy", "env", "tensorboard_log", "verbose", "seed", "device",
                "_init_setup_model")
SCHEDULE_KEYS = ("learning_rate", "clip_range", "clip_range_vf")


def config_dir() -> Path:
    """The shipped ``configs/`` folder: ``schedgym/configs`` inside the installed package (a link
    to the repository's top-level ``configs/`` in a checkout)."""
    from importlib.resources import files

    return Path(str(files("schedgym") / "configs"))


def default_config_path(algo: str) -> Path:
    """The shipped hyperparameter file of ``algo`` (``configs/<algo>.yml``)."""
    return config_dir() / f"{algo}.yml"


def algo_class(algo: str) -> Any:
    """The SB3 class of ``algo`` (``"ppo"`` -> ``stable_baselines3.PPO``)."""
    from schedgym.core.validation import check_choice

    check_choice("algo", algo, ALGOS)
    import stable_baselines3 as sb3

    return getattr(sb3, ALGOS[algo])


def supported_algos(action_space: Any) -> tuple[str, ...]:
    """Algorithms usable with ``action_space``: all four for ``Box``; PPO and A2C for
    ``MultiBinary``/``MultiDiscrete``/``Discrete``."""
    from gymnasium import spaces

    if isinstance(action_space, spaces.Box):
        return tuple(ALGOS)
    return tuple(a for a in ALGOS if a not in BOX_ONLY)


def allowed_keys(algo: str) -> set[str]:
    """Every key a config entry for ``algo`` may hold."""
    cls = algo_class(algo)
    ctor = set(inspect.signature(vars(cls)["__init__"]).parameters) - set(TRAINER_ARGS)
    keys = ctor | set(ZOO_KEYS)
    if algo in BOX_ONLY:
        keys |= set(OFF_POLICY_ZOO_KEYS)
    return keys


def _eval_expr(name: str, text: str) -> Any:
    import torch as th
    from torch import nn

    try:
        return eval(text, {"__builtins__": {}, "dict": dict, "nn": nn, "th": th})  # noqa: S307
    except Exception as exc:  # noqa: BLE001
        raise ValueError(f"{name}={text!r} is invalid: not a Python expression of dict/nn/th "
                         f"({exc})") from None


def resolve_policy(policy: Any, algo: str) -> Any:
    """``"MultiInputPolicy"`` stays a name; ``"pkg.module.Class"`` is imported (as rl_zoo3)."""
    if isinstance(policy, str) and "." in policy:
        mod, _, cls = policy.rpartition(".")
        try:
            return getattr(importlib.import_module(mod), cls)
        except (ImportError, AttributeError):
            raise ValueError(f"policy={policy!r} is invalid: cannot import it") from None
    if isinstance(policy, str):
        aliases = algo_class(algo).policy_aliases
        if policy not in aliases:
            raise ValueError(f"policy={policy!r} is invalid: must be one of "
                             f"{', '.join(sorted(aliases))} or a dotted class path")
    return policy


def normalize_kwargs(value: Any, where: str = "normalize") -> dict[str, Any] | None:
    """rl_zoo3's ``normalize`` value -> VecNormalize keyword arguments (``None`` = off)."""
    if value is None or value is False:
        return None
    if value is True:
        return {}
    if isinstance(value, str):
        value = _eval_expr(where, value)
    if not isinstance(value, dict):
        raise ValueError(f"{where}={value!r} is invalid: must be true/false, a dict or a "
                         "'dict(...)' string")
    from stable_baselines3.common.vec_env import VecNormalize

    check_known_keys(where, value,
                     set(inspect.signature(VecNormalize.__init__).parameters) - {"self", "venv"})
    return dict(value)


def _policy_class(algo: str, policy: Any) -> Any:
    if isinstance(policy, type):
        return policy
    return algo_class(algo).policy_aliases[policy]


def _init_params(cls: type) -> set[str]:
    """Named ``__init__`` arguments of ``cls``, following ``**kwargs`` up the MRO."""
    names: set[str] = set()
    for klass in cls.__mro__:
        if "__init__" not in vars(klass):
            continue
        params = inspect.signature(vars(klass)["__init__"]).parameters.values()
        names |= {p.name for p in params if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
        if not any(p.kind == p.VAR_KEYWORD for p in params):
            break
    return names


def validate_entry(algo: str, name: str, entry: Any, source: str | None = None) -> None:
    """Raise ``ValueError`` naming the source and entry if any key or value is not understood.

    ``source``: where the entry came from, as the user gave it (the YAML file, or a command-line
    flag such as ``--hp``); default the shipped ``configs/<algo>.yml``.
    """
    where = f"{source or f'configs/{algo}.yml'}[{name!r}]"
    if not isinstance(entry, dict):
        raise ValueError(f"{where} is invalid: must be a mapping of hyperparameters")
    check_known_keys(where, entry, allowed_keys(algo))
    if "policy" not in entry:
        raise ValueError(f"{where} is invalid: 'policy' is required")
    policy = resolve_policy(entry["policy"], algo)
    normalize_kwargs(entry.get("normalize"), f"{where}.normalize")
    pk = entry.get("policy_kwargs")
    if pk is not None:
        pk = _eval_expr(f"{where}.policy_kwargs", pk) if isinstance(pk, str) else pk
        if not isinstance(pk, dict):
            raise ValueError(f"{where}.policy_kwargs={pk!r} is invalid: must be a dict")
        check_known_keys(f"{where}.policy_kwargs", pk, _init_params(_policy_class(algo, policy))
                         - {"self", "observation_space", "action_space", "lr_schedule"})
    for key in SCHEDULE_KEYS:
        val = entry.get(key)
        if isinstance(val, str) and not _is_schedule(val):
            raise ValueError(f"{where}.{key}={val!r} is invalid: must be a number or "
                             "'lin_<initial value>'")
    for key in ("n_timesteps", "n_envs"):
        if key in entry and (not isinstance(entry[key], (int, float)) or entry[key] < 1):
            raise ValueError(f"{where}.{key}={entry[key]!r} is invalid: must be a number >= 1")


def _is_schedule(text: str) -> bool:
    kind, _, val = text.partition("_")
    try:
        float(val)
    except ValueError:
        return False
    return kind == "lin"


def load_file(algo: str, path: str | Path | None = None) -> dict[str, dict[str, Any]]:
    """Read and validate every entry of ``configs/<algo>.yml`` (or ``path``); errors name the
    file read."""
    from schedgym.train.safe_yaml import load_yaml

    algo_class(algo)
    path = Path(path) if path is not None else default_config_path(algo)
    data = load_yaml(path, "config") or {}
    if not isinstance(data, dict):
        raise ValueError(f"config={str(path)!r} is invalid: must map env ids to hyperparameters")
    for name, entry in data.items():
        validate_entry(algo, str(name), entry, source=str(path))
    return data


def mode_key(env_id: str, action_mode: str) -> str:
    """The config entry of ``env_id`` in a learnable action mode: ``"<env_id> action_mode=<m>"``
    (rl_zoo3 ignores such keys; ``schedgym train --set action_mode=<m>`` prefers them)."""
    return f"{env_id} action_mode={action_mode}"


def load_config(algo: str, env_id: str, path: str | Path | None = None,
                action_mode: str | None = None) -> dict[str, Any]:
    """The (validated) entry for ``env_id`` in ``configs/<algo>.yml`` (or ``path``): the
    ``"<env_id> action_mode=<mode>"`` entry when ``action_mode`` is given and has one, else the
    env's own entry, else ``default``."""
    data = load_file(algo, path)
    keys = ([mode_key(env_id, action_mode)] if action_mode is not None else []) + [env_id,
                                                                                   "default"]
    for key in keys:
        if key in data:
            return dict(data[key])
    raise ValueError(f"env_id={env_id!r} has no entry in the {algo} config and there is no "
                     f"'default' entry: add one (entries: {', '.join(map(str, data))})")


def linear_schedule(initial: float) -> Any:
    """rl_zoo3's ``lin_X``: ``X * progress_remaining`` (1 -> 0 over training)."""
    from stable_baselines3.common.utils import LinearSchedule

    return LinearSchedule(float(initial), 0.0, 1.0)


def split_entry(algo: str, entry: dict[str, Any], source: str = "the merged config entry"
                ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Validated entry -> ``(algorithm kwargs incl. policy, trainer settings)``.

    Trainer settings: ``n_timesteps``, ``n_envs``, ``normalize`` (VecNormalize kwargs or None),
    ``env_kwargs``, ``noise`` (``(type, std)`` or None). Wrapper/callback/frame-stack keys are
    honoured by rl_zoo3 only; ``schedgym train`` rejects them with a clear error if set.
    """
    validate_entry(algo, "entry", entry, source=source)
    kw = dict(entry)
    for key in ("env_wrapper", "vec_env_wrapper", "frame_stack", "callback", "monitor_kwargs"):
        if kw.pop(key, None) is not None:
            raise ValueError(f"{key} is only supported through rl_zoo3 (rl_zoo3 train "
                             "--gym-packages schedgym); remove it for schedgym train")
    settings: dict[str, Any] = {
        "n_timesteps": int(kw.pop("n_timesteps", 100_000)),
        "n_envs": int(kw.pop("n_envs", 1)),
        "normalize": normalize_kwargs(kw.pop("normalize", None)),
        "env_kwargs": dict(kw.pop("env_kwargs", None) or {}),
        "noise": None,
    }
    if "noise_type" in kw:
        settings["noise"] = (kw.pop("noise_type"), float(kw.pop("noise_std", 0.1)))
    kw.pop("noise_std", None)
    kw["policy"] = resolve_policy(kw["policy"], algo)
    if isinstance(kw.get("policy_kwargs"), str):
        kw["policy_kwargs"] = _eval_expr("policy_kwargs", kw["policy_kwargs"])
    for key in SCHEDULE_KEYS:
        if isinstance(kw.get(key), str):
            kw[key] = linear_schedule(float(kw[key].partition("_")[2]))
    if isinstance(kw.get("train_freq"), list):
        kw["train_freq"] = tuple(kw["train_freq"])
    return kw, settings
