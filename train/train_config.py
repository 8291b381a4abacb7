"""What a training run is to do: :class:`TrainConfig` (every knob of ``schedgym train``,
checked when it is built), its defaults, and :class:`TrainPlan` (what it resolves to).

The defaults that depend on the run: evaluation on held-out instances
(:data:`DEFAULT_EVAL_INSTANCE_SEEDS`), how many episodes per evaluation
(:func:`default_eval_episodes`) and how often (:func:`default_eval_freq`: at most
:data:`DEFAULT_EVALUATIONS` per run and one per rollout).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from schedgym.core.validation import check_bool
from schedgym.train import hyperparams as hp
from schedgym.train.cli_options import check_out_folder, check_run_name

#: Held-out evaluation instances when training on --instance-seeds (and none are given).
DEFAULT_EVAL_INSTANCE_SEEDS: tuple[int, ...] = (1000, 1001, 1002, 1003, 1004)
#: Evaluations per run by default (and at most one per rollout).
DEFAULT_EVALUATIONS = 5


@dataclass(frozen=True)
class TrainConfig:
    """Every knob of a training run (``schedgym train`` builds one from its flags).

    - ``algo``: ``ppo``, ``a2c``, ``sac`` or ``td3``; ``env_id``: registered env id.
    - ``config``: hyperparameter YAML (None: the shipped ``configs/<algo>.yml``);
      ``hyperparams``: entries replacing the config's (``--hp``), validated like the file.
    - ``timesteps``: env steps to train (None: the config's ``n_timesteps``; with ``resume``,
      the number of *additional* steps); ``n_envs``: parallel envs (None: the config's).
    - ``seed``: training seed; ``scenario``/``instance_seed``/``overrides``: the env
      (``gym.make(env_id, scenario=..., instance_seed=..., **overrides)``; ``overrides`` holds
      e.g. ``action_mode`` and ``instance_features``).
    - ``instance_seeds``: train on these instances (cycled, see :mod:`.instances`) instead of
      ``instance_seed``; ``eval_instance_seeds``: held-out evaluation instances (default
      :data:`DEFAULT_EVAL_INSTANCE_SEEDS` with ``instance_seeds``, else ``instance_seed``).
    - ``out``/``name``: run folder ``out/<Env-vN>/<name>`` (default name ``<algo>_s<seed>``);
      ``overwrite``: replace an existing run folder instead of writing beside it;
      ``resume``: model/checkpoint zip to continue from.
    - ``eval_freq``/``checkpoint_freq``: env steps between evaluations/checkpoints (0 = off,
      None = the bounded default); ``eval_episodes``: episodes per evaluation (None: 3, or one per
      evaluation instance); ``eval_seed``: episode seed of the evaluation env (None: 1e6+seed);
      ``eval_draws``: evaluate (and keep ``best_model.zip`` by) the policy's sampled actions
      instead of its mode, for a policy that is played with its draws; the saved model's
      recorded play follows it (``sampled`` or ``mode``). ``None``: the env's default for the
      policy (:func:`default_eval_draws`), or on resume the resumed run's own setting.
    - ``log_every``: schedgym/* TensorBoard window (env steps); ``beside``/``beside_seeds``:
      agents played afterwards on these episode seeds into the same TensorBoard root.
    - ``progress``, ``verbose``, ``device``, ``threads`` (torch CPU threads; None = torch's
      default), ``max_minutes`` (wall clock budget; the model is saved when it runs out).
    - ``policy``: ``"default"`` (the config's) or ``"entity"`` (the shared-weights EntityPolicy
      in ``obs_mode="entities"``; :mod:`schedgym.train.entity_training`).
    """

    algo: str
    env_id: str
    config: str | None = None
    hyperparams: Mapping[str, Any] = field(default_factory=dict)
    timesteps: int | None = None
    n_envs: int | None = None
    seed: int = 0
    scenario: str | None = None
    instance_seed: int = 0
    overrides: Mapping[str, Any] = field(default_factory=dict)
    instance_seeds: tuple[int, ...] | None = None
    eval_instance_seeds: tuple[int, ...] | None = None
    out: str = "runs"
    name: str | None = None
    overwrite: bool = False
    resume: str | None = None
    eval_freq: int | None = None
    eval_episodes: int | None = None
    eval_seed: int | None = None
    eval_draws: bool | None = None
    checkpoint_freq: int | None = None
    log_every: int = 1000
    beside: tuple[str, ...] = ()
    beside_seeds: tuple[int, ...] = (100, 101, 102, 103, 104)
    progress: bool = False
    verbose: int = 0
    device: str = "cpu"
    threads: int | None = 1
    max_minutes: float | None = None
    policy: str = "default"

    def __post_init__(self) -> None:
        for name in ("config", "out", "resume"):  # accept Path objects
            val = getattr(self, name)
            if val is not None and not isinstance(val, str):
                object.__setattr__(self, name, str(val))
        for name in ("instance_seeds", "eval_instance_seeds", "beside", "beside_seeds"):
            val = getattr(self, name)
            if val is not None and not isinstance(val, tuple):
                object.__setattr__(self, name, tuple(val))
        object.__setattr__(self, "hyperparams", dict(self.hyperparams or {}))
        object.__setattr__(self, "overrides", dict(self.overrides or {}))
        _validate_config(self)

    @property
    def run_name(self) -> str:
        """The run folder's name: ``name`` or ``<algo>_s<seed>``."""
        return self.name or f"{self.algo}_s{self.seed}"

    def training_instances(self) -> tuple[int, ...]:
        """Instance seeds played in training."""
        return self.instance_seeds or (self.instance_seed,)

    def evaluation_instances(self) -> tuple[int, ...]:
        """Instance seeds played in evaluation."""
        if self.eval_instance_seeds:
            return self.eval_instance_seeds
        return DEFAULT_EVAL_INSTANCE_SEEDS if self.instance_seeds else (self.instance_seed,)

    def env_kwargs(self) -> dict[str, Any]:
        """``gym.make`` keyword arguments except ``instance_seed`` (``--set`` + scenario)."""
        kw = dict(self.overrides)
        if self.scenario is not None:
            kw["scenario"] = self.scenario
        return kw


def _check_count(name: str, value: int | None, low: int) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                              or value < low):
        raise ValueError(f"{name}={value!r} is invalid: must be an integer >= {low}")


def _check_out(out: str) -> None:
    """``out`` must name a folder: not empty, and neither it nor a folder above it a symbolic
    link to nothing (the run folder could not be made there)."""
    from pathlib import Path

    if not str(out).strip():
        raise ValueError(f"out={out!r} is invalid: give the folder the runs go in (default "
                         "runs)")
    path = Path(out)
    for p in (path, *path.parents):
        if p.is_symlink() and not p.exists():
            import os

            raise ValueError(f"out={out!r} is invalid: {str(p)!r} is a symbolic link to "
                             f"{os.readlink(p)!r}, which does not exist")
    check_out_folder(out, "out")


def _validate_config(cfg: TrainConfig) -> None:
    """Raise ``ValueError`` naming the field, the value and what is allowed."""
    if cfg.algo not in hp.ALGOS:
        raise ValueError(f"algo={cfg.algo!r} is invalid: must be one of {', '.join(hp.ALGOS)}")
    for name, low in (("timesteps", 1), ("n_envs", 1), ("seed", 0), ("instance_seed", 0),
                      ("eval_freq", 0), ("eval_episodes", 0), ("eval_seed", 0),
                      ("checkpoint_freq", 0), ("log_every", 1), ("verbose", 0), ("threads", 1)):
        _check_count(name, getattr(cfg, name), low)
    for name in ("instance_seeds", "eval_instance_seeds", "beside_seeds"):
        for s in getattr(cfg, name) or ():
            _check_count(f"{name} entry", s, 0)
    if cfg.instance_seeds is not None and not cfg.instance_seeds:
        raise ValueError("instance_seeds=() is invalid: give at least one seed, or None")
    if cfg.max_minutes is not None and not cfg.max_minutes > 0:
        raise ValueError(f"max_minutes={cfg.max_minutes!r} is invalid: must be > 0 (minutes "
                         "of wall clock)")
    if "instance_seed" in cfg.overrides:
        raise ValueError("overrides['instance_seed'] is invalid: use instance_seed "
                         "(--instance-seed) or instance_seeds (--instance-seeds)")
    if cfg.name is not None:
        check_run_name(cfg.name, "name")  # a run never writes outside out
    _check_out(cfg.out)
    if cfg.policy not in ("default", "entity"):
        raise ValueError(f"policy={cfg.policy!r} is invalid: must be one of default, entity")
    if cfg.eval_draws is not None:
        check_bool("eval_draws", cfg.eval_draws)
    if cfg.overwrite and cfg.resume is not None:
        raise ValueError("overwrite=True with resume is invalid: resuming continues the run "
                         "folder; give one of them")


@dataclass
class TrainPlan:
    """What a :class:`TrainConfig` resolves to before anything is built: the hyperparameter
    entry and its split into algorithm kwargs and schedgym's settings
    (:func:`schedgym.train.hyperparams.split_entry`), the env's ``gym.make`` kwargs, its
    ``episode_metrics`` and its episode length."""

    entry: dict[str, Any]  # hyperparameter entry after --hp/--timesteps/--n-envs
    algo_kw: dict[str, Any]
    settings: dict[str, Any]
    env_kw: dict[str, Any]  # gym.make kwargs without instance_seed
    spec: dict[str, str]  # episode_metrics of the env
    horizon: int | None  # steps per episode, when the env states it


def default_eval_episodes(cfg: TrainConfig) -> int:
    """``eval_episodes``, else one episode per evaluation instance with ``instance_seeds`` and
    3 otherwise."""
    if cfg.eval_episodes is not None:
        return cfg.eval_episodes
    return len(cfg.evaluation_instances()) if cfg.instance_seeds else 3


def default_eval_freq(n_total: int, rollout: int, episodes: int, horizon: int | None) -> int:
    """Env steps between evaluations when ``--eval-freq`` is not given: ``max(n_total / 5,
    rollout)`` (at most :data:`DEFAULT_EVALUATIONS` per run and one per rollout), and 0 (off)
    when one evaluation (``episodes * horizon`` steps) is longer than the whole run."""
    if horizon is not None and episodes * horizon > n_total:
        return 0
    return max(-(-n_total // DEFAULT_EVALUATIONS), rollout, 1)


def default_eval_draws(env_id: str, policy: str) -> bool:
    """Whether a run of ``policy`` on ``env_id`` evaluates (and is then played by) its sampled
    actions when ``eval_draws`` is not given: true for the entity policy on an env whose
    metadata says ``entity_play = "sampled"`` (FluctuatingSpeed-v0, whose entity policy explores
    through its own action noise, so its mode can select nothing on unseen instances:
    docs/learned-vs-classical.md section 7c), false otherwise."""
    if policy != "entity":
        return False
    import gymnasium as gym

    from schedgym.train.cli_options import resolve_env_id

    entry = gym.spec(resolve_env_id(env_id)).entry_point
    if not isinstance(entry, str):
        return getattr(entry, "metadata", {}).get("entity_play") == "sampled"
    module, _, name = entry.partition(":")
    import importlib

    cls = getattr(importlib.import_module(module), name)
    return getattr(cls, "metadata", {}).get("entity_play") == "sampled"

