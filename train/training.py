"""``schedgym train ALGO ENV_ID``: train an SB3 learner on any schedgym env.

Hyperparameters come from the shipped ``configs/<algo>.yml`` (rl-baselines3-zoo format, keyed by
env id, with a ``default`` entry for envs without their own; see ``schedgym.train.hyperparams``),
or from --config FILE. Everything is written to one run folder, OUT/ENV/NAME/ (default
runs/GainOverhead-v0/ppo_s0/):

- TensorBoard events: SB3's own tags (rollout/, train/, eval/, time/) and schedgym's per-step
  metrics (schedgym/step/*, schedgym/episode/*; docs/tensorboard.md); progress.csv holds SB3's
  tags too;
- model.zip (final), best_model.zip and evaluations.npz (evaluation on held-out episode seeds),
  checkpoints/model_<steps>_steps.zip (+ model_vecnormalize_<steps>_steps.pkl);
- vecnormalize.pkl when the config normalises (reward scaling only by default: it changes
  training, not predict, so model.zip is self-contained for schedgym compare);
- config.yml (the entry used, after command-line changes) and run.json (algo, env id, the
  gym.make env_kwargs incl. action_mode, instance seeds, steps, wall clock, interrupted or not).

A run folder is never mixed with another run: if NAME exists, the run goes to NAME-2, NAME-3, ...
unless --overwrite (replace it) or --resume (continue the run whose model is given).
Ctrl-C stops training and still saves model.zip, config.yml and run.json (exit status 130).

Seeds: training env i is seeded SEED + i once and then draws each episode's 63-bit episode seed
from its own generator; the evaluation env is seeded --eval-seed (default 1000000 + SEED), so
small explicit seeds (e.g. schedgym compare --seeds 100-104) are held out.

Instances: by default every episode plays --instance-seed. With --instance-seeds 0-99 the
sub-envs cycle through those instances (sub-env r plays seeds r, r + n_envs, ...), and evaluation
runs on the held-out --eval-instance-seeds (default 1000-1004), one episode each unless
--eval-episodes says more. Use a learnable action mode with instance features
(--set action_mode=... --set instance_features=true) so that the spaces do not depend on the
instance.

Evaluation (default): every max(TIMESTEPS/5, one rollout) steps, so at most five times per run
and at most once per rollout; off when the run is shorter than one evaluation (evaluation
episodes are full episodes, e.g. 2,000 slots).

--resume CKPT.zip continues a run: the model (and its VecNormalize statistics, looked up beside
the checkpoint) is loaded and trained for --timesteps more steps; the step count continues,
evaluations.npz is appended to and best_model.zip is replaced only when beaten (so a run is
resumed with the --eval-draws setting it was evaluated with; another is refused).

--policy entity trains the shared-weights EntityPolicy on obs_mode=entities and the env's
learnable action mode (config: configs/learned/*-entity-<algo>.yml when one has the env); the
model plays every instance size (schedgym compare rebuilds its spaces for the env it is given).

--seeds 0-4 trains one run per seed (NAME_s<seed>), in parallel worker processes, or as Ray
tasks with --ray [ADDRESS].
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym

import schedgym  # noqa: F401  (registers the env ids)
from schedgym.core.validation import check_bool
from schedgym.train import hyperparams as hp
from schedgym.train.cli_options import check_out_folder, check_run_name
from schedgym.train.tensorboard import env_folder, metric_spec

#: Held-out evaluation instances when training on --instance-seeds (and none are given).
DEFAULT_EVAL_INSTANCE_SEEDS: tuple[int, ...] = (1000, 1001, 1002, 1003, 1004)
#: Evaluations per run by default (and at most one per rollout).
DEFAULT_EVALUATIONS = 5
#: Files of a run folder that belong to one training run (removed by ``overwrite``).
#: Marker file claiming a run folder for one run.
CLAIM = ".schedgym-run"
RUN_FILES = (CLAIM, "model.zip", "best_model.zip", "evaluations.npz", "vecnormalize.pkl",
             "config.yml", "run.json", "progress.csv")


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
      instead of its mode, for a policy that is played with its draws.
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
    eval_draws: bool = False
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
    check_out_folder(cfg.out, "out")
    if cfg.policy not in ("default", "entity"):
        raise ValueError(f"policy={cfg.policy!r} is invalid: must be one of default, entity")
    check_bool("eval_draws", cfg.eval_draws)
    if cfg.overwrite and cfg.resume is not None:
        raise ValueError("overwrite=True with resume is invalid: resuming continues the run "
                         "folder; give one of them")


@dataclass
class TrainResult:
    """Where a training run put its files, and the trained model.

    ``interrupted``: training stopped on Ctrl-C (the files were saved all the same);
    ``target_timesteps``: the step count training was asked to reach; ``beside_dirs``: the
    TensorBoard folders ``beside`` agents were played into.
    """

    run_dir: Path
    model_path: Path
    model: Any
    timesteps: int
    wall_s: float
    interrupted: bool = False
    target_timesteps: int = 0
    beside_dirs: list[Path] = field(default_factory=list)


@dataclass
class _Plan:
    """What the config resolves to before anything is built."""

    entry: dict[str, Any]  # hyperparameter entry after --hp/--timesteps/--n-envs
    algo_kw: dict[str, Any]
    settings: dict[str, Any]
    env_kw: dict[str, Any]  # gym.make kwargs without instance_seed
    spec: dict[str, str]  # episode_metrics of the env
    horizon: int | None  # steps per episode, when the env states it


def vecnormalize_path(model_path: str | Path) -> Path:
    """VecNormalize statistics belonging to a saved model: ``checkpoints/model_<N>_steps.zip`` ->
    ``checkpoints/model_vecnormalize_<N>_steps.pkl``; any other ``X.zip`` -> ``vecnormalize.pkl``
    in the same folder."""
    p = Path(model_path)
    stem = p.stem
    if stem.endswith("_steps") and "_" in stem[:-6]:
        prefix, _, rest = stem.rpartition("_steps")[0].rpartition("_")
        return p.with_name(f"{prefix}_vecnormalize_{rest}_steps.pkl")
    return p.with_name("vecnormalize.pkl")


def run_folder_of(model_path: str | Path) -> Path:
    """The run folder a saved model belongs to (``.../run/checkpoints/x.zip`` -> ``.../run``)."""
    p = Path(model_path).resolve().parent
    return p.parent if p.name == "checkpoints" else p


def check_resumed_evaluations(cfg: TrainConfig) -> None:
    """Refuse to resume a run whose evaluations judged the other kind of action
    (``eval_draws``): the resumed run appends to its ``evaluations.npz``, keeps
    ``best_model.zip`` by the best of them all and records its own setting in ``run.json``, so
    the two kinds would be compared as one."""
    if cfg.resume is None:
        return
    from schedgym.agents.record import run_record

    folder = run_folder_of(cfg.resume)
    record = run_record(folder)
    if record is None or not (folder / "evaluations.npz").is_file():
        return  # no evaluations, or no readable record of their kind
    before = bool(record.get("eval_draws", False))
    if before != cfg.eval_draws:
        kind = {True: "sampled actions (--eval-draws)", False: "the policy's mode"}
        raise ValueError(f"eval_draws={cfg.eval_draws} is invalid for resume={cfg.resume!r}: "
                         f"that run evaluated {kind[before]}, and best_model.zip is kept by "
                         f"the best of all its evaluations; resume with eval_draws={before}")


def train(config: TrainConfig | str, env_id: str | None = None, **kwargs: Any) -> TrainResult:
    """Train as ``config`` says; see the module docstring for the files written.

    ``train(TrainConfig(...))``, or the keyword form ``train("ppo", "schedgym/X-v0", seed=1,
    ...)`` with :class:`TrainConfig`'s fields as keyword arguments.
    """
    if isinstance(config, str):
        if env_id is None:
            raise ValueError("env_id is required when train() is given an algorithm name")
        config = TrainConfig(config, env_id, **kwargs)
    elif env_id is not None or kwargs:
        raise ValueError("train(TrainConfig) takes no further arguments: use "
                         "dataclasses.replace(config, ...)")
    return _Trainer(config).run()


def run_one_seed(config: TrainConfig) -> Path:
    """Train one run and return its run folder: the per-seed task of ``--seeds`` (picklable
    argument, no progress bar; worker processes use one torch thread)."""
    return train(dataclasses.replace(config, progress=False)).run_dir


def _plan(cfg: TrainConfig) -> _Plan:
    """Stage 1: hyperparameters (file + ``--hp``), env kwargs, and a probe env that fails fast on
    bad overrides, an algorithm the action space rejects, or an unknown ``--beside`` agent."""
    from schedgym.core.validation import check_known_keys
    from schedgym.train import entity_training as ent

    mode = cfg.overrides.get("action_mode")
    if cfg.policy == "entity" and mode is None and cfg.config is not None:
        mode = ent.config_action_mode(cfg.algo, cfg.config, cfg.env_id)  # the file names its mode
    entity_kw = (ent.entity_env_kwargs(cfg.algo, cfg.env_id, mode) if cfg.policy == "entity"
                 else {})
    mode = entity_kw.get("action_mode", mode)
    config = cfg.config
    if entity_kw and config is None:  # the shipped entity config of the env, when there is one
        found = ent.entity_config_path(cfg.algo, cfg.env_id)
        config = str(found) if found is not None else None
    source = config or str(hp.default_config_path(cfg.algo))
    entry = hp.load_config(cfg.algo, cfg.env_id, config,
                           str(mode) if mode is not None else None)
    if cfg.hyperparams:
        check_known_keys("--hp", cfg.hyperparams, hp.allowed_keys(cfg.algo))
        entry.update(cfg.hyperparams)
        source += " + --hp"
    if cfg.n_envs is not None:
        entry["n_envs"] = cfg.n_envs
    if cfg.timesteps is not None:
        entry["n_timesteps"] = cfg.timesteps
    algo_kw, settings = hp.split_entry(cfg.algo, entry, source=source)
    env_kw = {**settings["env_kwargs"], **cfg.env_kwargs(), **entity_kw}
    probe = gym.make(cfg.env_id, instance_seed=cfg.training_instances()[0], **env_kw)
    try:
        if entity_kw:
            algo_kw = ent.entity_algo_kwargs(algo_kw, probe)
            entry = ent.entity_entry(entry, algo_kw)
        allowed = hp.supported_algos(probe.action_space)
        if cfg.algo not in allowed:
            raise ValueError(f"algo={cfg.algo!r} is invalid for {cfg.env_id} (action space "
                             f"{probe.action_space}): must be one of {', '.join(allowed)}")
        from schedgym.train import preflight

        with preflight.compile_notice():  # the env's kernels compile here on first use
            probe.reset(seed=0)
            probe.step(probe.action_space.sample())
        if cfg.beside:
            from schedgym.train.runner import build_agent
            from schedgym.train.tensorboard import make_agent_env

            for agent_spec in cfg.beside:
                preflight.check_agent_name(agent_spec)  # "did you mean" for a misspelt name
                own = make_agent_env(cfg.env_id, agent_spec, cfg.scenario,
                                     cfg.training_instances()[0], env_kw)
                try:
                    build_agent(agent_spec, own)  # in its own mode, as play_beside plays it
                finally:
                    own.close()
        spec = metric_spec(probe)
        horizon = getattr(probe.spec, "max_episode_steps", None) or getattr(
            probe.unwrapped, "horizon", None)
    finally:
        probe.close()
    return _Plan(entry, algo_kw, settings, env_kw, spec,
                 int(horizon) if isinstance(horizon, int) else None)


def claim_run_dir(cfg: TrainConfig) -> Path:
    """Stage 2: the run folder, created now. An existing non-empty folder is continued only by
    ``resume`` (of a model inside it or when ``name`` is given), replaced only with
    ``overwrite``, and otherwise left alone: the run goes to ``NAME-2``, ``NAME-3``, ..."""
    root = Path(cfg.out) / env_folder(cfg.env_id)
    base = root / cfg.run_name
    if cfg.resume is not None and (cfg.name is not None
                                   or run_folder_of(cfg.resume) == base.resolve()):
        base.mkdir(parents=True, exist_ok=True)
        return base
    if cfg.overwrite and base.is_dir():
        _clear_run(base)
    for k in range(1, 10_000):
        cand = base if k == 1 else root / f"{cfg.run_name}-{k}"
        cand.mkdir(parents=True, exist_ok=True)
        if any(p.name != CLAIM for p in cand.iterdir()):
            continue  # holds another run
        try:
            (cand / CLAIM).open("x").close()  # atomic: concurrent runs never share a folder
        except FileExistsError:
            continue
        return cand
    raise ValueError(f"out={cfg.out!r}: too many runs named {cfg.run_name!r}; give --name")


def release_unused_claim(run_dir: Path) -> None:
    """Give back the claim on ``run_dir`` when nothing else was written there, so that a run
    that failed to start leaves a folder the next run of that name takes (a claimed folder is
    skipped: a stale claim cannot be told from a live one). The empty folder stays: removing it
    could pull it from under a concurrent claim that has just made it."""
    if {p.name for p in run_dir.iterdir()} == {CLAIM}:
        (run_dir / CLAIM).unlink(missing_ok=True)


def _clear_run(run_dir: Path) -> None:
    """Remove one run's files (events, models, evaluations, checkpoints) from ``run_dir``."""
    for p in run_dir.glob("events.out.tfevents.*"):
        p.unlink()
    for p in run_dir.glob("progress*.csv"):
        p.unlink()
    for name in RUN_FILES:
        (run_dir / name).unlink(missing_ok=True)
    shutil.rmtree(run_dir / "checkpoints", ignore_errors=True)


class _Trainer:
    """One training run, in the stages :meth:`run` names."""

    def __init__(self, cfg: TrainConfig) -> None:
        self.cfg = cfg
        self.t0 = time.perf_counter()
        self.venv: Any = None
        self.eval_env: Any = None
        self.start_steps = 0

    def run(self) -> TrainResult:
        cfg = self.cfg
        if cfg.threads is not None:
            import torch

            torch.set_num_threads(int(cfg.threads))
        if cfg.resume is not None and not Path(cfg.resume).is_file():
            raise ValueError(f"resume={cfg.resume!r} is invalid: file does not exist")
        plan = _plan(cfg)
        check_resumed_evaluations(cfg)
        run_dir = claim_run_dir(cfg)
        try:
            try:
                model = self._build(plan, run_dir)
            except BaseException:
                release_unused_claim(run_dir)  # a failed start leaves no stale claim
                raise
            interrupted = self._learn(model, plan, run_dir)
            model_path = self._save(model, plan, run_dir, interrupted)
        finally:
            for env in (self.venv, self.eval_env):
                if env is not None:
                    env.close()
        beside = (play_beside(cfg, plan.env_kw, int(model.num_timesteps))
                  if cfg.beside and not interrupted else [])
        target = plan.settings["n_timesteps"] + (self.start_steps if cfg.resume else 0)
        return TrainResult(run_dir, model_path, model, int(model.num_timesteps),
                           time.perf_counter() - self.t0, interrupted, target, beside)

    def _build(self, plan: _Plan, run_dir: Path) -> Any:
        """Stage 3: training envs (VecNormalize when configured) and the model (new or loaded)."""
        from stable_baselines3.common.logger import configure

        cfg = self.cfg
        n_envs = plan.settings["n_envs"]
        self.venv = _normalized(build_vec_env(cfg.env_id, plan.env_kw, cfg.training_instances(),
                                              n_envs, cfg.seed), plan, cfg.resume)
        if cfg.resume is not None:
            model = hp.algo_class(cfg.algo).load(cfg.resume, env=self.venv, device=cfg.device)
        else:
            kw = dict(plan.algo_kw)
            if plan.settings["noise"] is not None:
                kw["action_noise"] = _action_noise(plan.settings["noise"],
                                                   self.venv.action_space.shape[0])
            model = hp.algo_class(cfg.algo)(env=self.venv, seed=cfg.seed, device=cfg.device,
                                            verbose=cfg.verbose, **kw)
        self.start_steps = int(model.num_timesteps)
        old_csv = run_dir / "progress.csv"
        if old_csv.is_file():  # resumed into the same run: SB3's CSV writer would truncate it
            old_csv.rename(run_dir / f"progress.until-{int(model.num_timesteps)}.csv")
        model.set_logger(configure(str(run_dir), ["tensorboard", "csv"]
                                   + (["stdout"] if cfg.verbose else [])))
        return model

    def _learn(self, model: Any, plan: _Plan, run_dir: Path) -> bool:
        """Stage 4: ``model.learn`` with the callbacks; True if stopped by Ctrl-C."""
        callbacks = self._callbacks(model, plan, run_dir)
        try:
            model.learn(total_timesteps=plan.settings["n_timesteps"], callback=callbacks,
                        reset_num_timesteps=self.cfg.resume is None)
        except KeyboardInterrupt:
            return True
        return False

    def _callbacks(self, model: Any, plan: _Plan, run_dir: Path) -> list[Any]:
        from stable_baselines3.common.callbacks import CheckpointCallback

        from schedgym.train.callbacks import (
            BudgetProgressBar,
            ResumableEvalCallback,
            SchedgymMetricsCallback,
            WallClockLimit,
        )

        cfg = self.cfg
        n_envs = plan.settings["n_envs"]
        n_total = plan.settings["n_timesteps"]
        out: list[Any] = [SchedgymMetricsCallback(plan.spec, log_every=cfg.log_every)]
        episodes = default_eval_episodes(cfg)
        freq = cfg.eval_freq if cfg.eval_freq is not None else default_eval_freq(
            n_total, rollout_steps(cfg.algo, plan.algo_kw, n_envs), episodes, plan.horizon)
        if freq > 0 and episodes > 0:
            self.eval_env = self._eval_env(plan)
            history = run_dir if (run_dir / "evaluations.npz").is_file() or cfg.resume is None \
                else run_folder_of(cfg.resume)
            out.append(ResumableEvalCallback(
                self.eval_env, history=history, n_eval_episodes=episodes,
                eval_freq=max(freq // n_envs, 1), best_model_save_path=str(run_dir),
                log_path=str(run_dir), deterministic=not cfg.eval_draws, verbose=0))
        ckpt = max(n_total // 5, 1) if cfg.checkpoint_freq is None else cfg.checkpoint_freq
        if ckpt > 0:
            out.append(CheckpointCallback(max(ckpt // n_envs, 1), str(run_dir / "checkpoints"),
                                          name_prefix="model",
                                          save_vecnormalize=plan.settings["normalize"] is not None))
        seconds = None if cfg.max_minutes is None else 60.0 * cfg.max_minutes
        if seconds is not None:
            out.append(WallClockLimit(seconds))
        if cfg.progress:
            out.append(BudgetProgressBar(n_total, seconds))
        return out

    def _eval_env(self, plan: _Plan) -> Any:
        """The evaluation vec env: one sub-env per evaluation instance, never normalising
        rewards (``eval/mean_reward`` is in the env's own units)."""
        from stable_baselines3.common.vec_env import VecNormalize

        cfg = self.cfg
        seeds = cfg.evaluation_instances()
        env = build_vec_env(cfg.env_id, plan.env_kw, seeds, len(seeds),
                            1_000_000 + cfg.seed if cfg.eval_seed is None else cfg.eval_seed)
        norm = plan.settings["normalize"]
        if norm is None:
            return env
        kw = {"gamma": float(plan.algo_kw.get("gamma", 0.99)),
              **{k: v for k, v in norm.items() if k != "norm_reward"}}
        return VecNormalize(env, training=False, norm_reward=False, **kw)

    def _save(self, model: Any, plan: _Plan, run_dir: Path, interrupted: bool) -> Path:
        """Stage 5: model.zip, vecnormalize.pkl, config.yml and run.json."""
        model_path = run_dir / "model.zip"
        model.save(str(model_path))
        if plan.settings["normalize"] is not None:
            model.get_vec_normalize_env().save(str(run_dir / "vecnormalize.pkl"))
        write_meta(run_dir, self.cfg, plan, model, time.perf_counter() - self.t0, interrupted)
        return model_path


def build_vec_env(env_id: str, env_kw: dict[str, Any], instance_seeds: Sequence[int],
                  n_envs: int, seed: int) -> Any:
    """A ``DummyVecEnv`` of ``n_envs`` Monitor-wrapped envs seeded ``seed + rank`` (as SB3's
    ``make_vec_env``); sub-env ``rank`` plays the instance seeds
    ``split_instance_seeds(instance_seeds, n_envs)[rank]`` (cycled when several)."""
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv

    from schedgym.train.instances import InstanceCycler, check_same_spaces, split_instance_seeds

    groups = split_instance_seeds(instance_seeds, n_envs)

    def make(rank: int) -> Any:
        def _init() -> gym.Env:
            group = groups[rank]
            env = (gym.make(env_id, instance_seed=group[0], **env_kw) if len(group) == 1
                   else InstanceCycler(env_id, env_kw, group))
            env.action_space.seed(seed + rank)
            return Monitor(env)
        return _init

    venv = DummyVecEnv([make(r) for r in range(n_envs)])
    for rank in range(1, n_envs):
        try:
            check_same_spaces(env_id, env_kw, (groups[0][0], venv.envs[0]),
                              (groups[rank][0], venv.envs[rank]))
        except ValueError:
            venv.close()
            raise
    venv.seed(seed)
    return venv


def _normalized(venv: Any, plan: _Plan, resume: str | None) -> Any:
    """Wrap ``venv`` in VecNormalize when the config says so (statistics of ``resume`` loaded)."""
    import warnings

    from stable_baselines3.common.vec_env import VecNormalize

    norm = plan.settings["normalize"]
    if norm is None:
        return venv
    if norm.get("norm_obs", True):
        warnings.warn("normalize has norm_obs=True: the saved model.zip then expects normalised "
                      "observations, which 'schedgym compare ALGO:model.zip' does not apply; "
                      "prefer norm_obs=False with schedgym.train.policies.BoundsScaledPolicy",
                      UserWarning, stacklevel=4)
    stats = vecnormalize_path(resume) if resume is not None else None
    if stats is not None and stats.is_file():
        loaded = VecNormalize.load(str(stats), venv)
        loaded.training = True
        return loaded
    return VecNormalize(venv, **{"gamma": float(plan.algo_kw.get("gamma", 0.99)), **norm})


def _action_noise(noise: tuple[str, float], n_act: int) -> Any:
    """rl_zoo3's ``noise_type``/``noise_std`` -> an SB3 action-noise object."""
    import numpy as np
    from stable_baselines3.common.noise import NormalActionNoise, OrnsteinUhlenbeckActionNoise

    kind, std = noise
    classes = {"normal": NormalActionNoise, "ornstein-uhlenbeck": OrnsteinUhlenbeckActionNoise}
    if kind not in classes:
        raise ValueError(f"noise_type={kind!r} is invalid: must be normal or ornstein-uhlenbeck")
    return classes[kind](np.zeros(n_act), std * np.ones(n_act))


def rollout_steps(algo: str, algo_kw: Mapping[str, Any], n_envs: int) -> int:
    """Env steps between two policy updates: ``n_steps * n_envs`` (PPO/A2C, SB3's defaults
    2048/5), ``train_freq * n_envs`` for SAC/TD3 (default 1)."""
    if algo in ("ppo", "a2c"):
        return int(algo_kw.get("n_steps", 2048 if algo == "ppo" else 5)) * n_envs
    freq = algo_kw.get("train_freq", 1)
    return int(freq[0] if isinstance(freq, (tuple, list)) else freq) * n_envs


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


def write_meta(run_dir: Path, cfg: TrainConfig, plan: _Plan, model: Any, wall_s: float,
               interrupted: bool) -> None:
    """``config.yml`` (the hyperparameter entry used) and ``run.json`` (what ``compare`` needs to
    replay the model: ``env_kwargs`` for ``gym.make``, the instance seeds)."""
    import yaml

    (run_dir / "config.yml").write_text(yaml.safe_dump({cfg.env_id: _plain(plan.entry)},
                                                       sort_keys=False))
    meta = {"algo": cfg.algo, "env_id": cfg.env_id, "seed": cfg.seed,
            "env_kwargs": _plain(plan.env_kw),
            "instance_seed": cfg.training_instances()[0],
            "instance_seeds": list(cfg.training_instances()),
            "eval_instance_seeds": list(cfg.evaluation_instances()),
            "eval_draws": cfg.eval_draws,
            "resumed_from": cfg.resume, "interrupted": interrupted,
            "num_timesteps": int(model.num_timesteps), "wall_s": wall_s}
    (run_dir / "run.json").write_text(json.dumps(meta, indent=2, default=str))


def _plain(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, (int, float, str, bool)) or obj is None:
        return obj
    return str(obj)


def play_beside(cfg: TrainConfig, env_kw: dict[str, Any], span: int | None = None
                ) -> list[Path]:
    """Play ``cfg.beside`` on ``cfg.beside_seeds`` into ``out/<Env-vN>/<agent>/`` (same tags as
    training), as flat reference lines across the learner's ``0..span`` steps; returns the
    folders written. Every agent plays in its own mode (:func:`run_classical`), not the
    learner's."""
    from schedgym.train.tensorboard import run_classical, run_name

    kw = {k: v for k, v in env_kw.items() if k != "scenario"}
    written = []
    for agent in cfg.beside:
        folder = Path(cfg.out) / env_folder(cfg.env_id) / run_name(agent)
        written.append(run_classical(cfg.env_id, agent, list(cfg.beside_seeds), folder,
                                     cfg.scenario, cfg.training_instances()[0], kw,
                                     cfg.log_every, span))
    return written


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``schedgym train`` and its options."""
    from schedgym.train.cli_options import add_env_options, add_parallel_options

    p = sub.add_parser(
        "train",
        help="train an SB3 learner (ppo, a2c, sac, td3) on a schedgym env",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("algo", choices=sorted(hp.ALGOS), help="SB3 algorithm")
    add_env_options(p)
    p.add_argument("--config", default=None,
                   help="hyperparameter YAML (default: the shipped configs/<algo>.yml)")
    p.add_argument("--hp", dest="hparams", action="append", metavar="KEY=VALUE",
                   help="override a hyperparameter of the config, e.g. --hp n_steps=256")
    p.add_argument("--timesteps", type=int, default=None,
                   help="env steps to train (default: the config's n_timesteps; with --resume, "
                   "additional steps)")
    p.add_argument("--seed", type=int, default=0, help="training seed (default 0)")
    p.add_argument("--seeds", default=None, metavar="SEEDS",
                   help="train one run per seed, e.g. 0-4 (runs NAME_s<seed>, in parallel)")
    add_parallel_options(p, "the seeds", condition="with --seeds: ")
    p.add_argument("--n-envs", type=int, default=None, help="parallel envs (default: config)")
    p.add_argument("--instance-seeds", default=None, metavar="SEEDS",
                   help="train on these instances, cycled over episodes, e.g. 0-99 "
                   "(needs a mode whose spaces do not depend on the instance)")
    p.add_argument("--eval-instance-seeds", default=None, metavar="SEEDS",
                   help="held-out evaluation instances (default 1000-1004 with --instance-seeds, "
                   "else --instance-seed)")
    p.add_argument("--out", default="runs", help="root of the run folders (default runs/)")
    p.add_argument("--name", default=None, help="run folder name (default ALGO_sSEED)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing run folder of the same name (default: write "
                   "NAME-2, NAME-3, ... beside it)")
    p.add_argument("--resume", default=None, metavar="CKPT.zip",
                   help="continue training from a saved model/checkpoint")
    p.add_argument("--eval-freq", type=int, default=None,
                   help="evaluate every N env steps (default max(timesteps/5, one rollout), "
                   "off for runs shorter than one evaluation; 0 = off)")
    p.add_argument("--eval-episodes", type=int, default=None,
                   help="episodes per evaluation (default 3, or one per evaluation instance)")
    p.add_argument("--eval-seed", type=int, default=None,
                   help="seed of the evaluation env (default 1000000 + seed)")
    p.add_argument("--eval-draws", action="store_true",
                   help="evaluate the policy's sampled actions instead of its mode, and keep "
                   "best_model.zip by them (for a policy played as ppo:model.zip"
                   "[deterministic=false])")
    p.add_argument("--checkpoint-freq", type=int, default=None,
                   help="checkpoint every N env steps (default timesteps/5; 0 = off)")
    p.add_argument("--log-every", type=int, default=1000,
                   help="schedgym/* TensorBoard window, env steps (default 1000)")
    p.add_argument("--max-minutes", type=float, default=None,
                   help="stop and save after this many minutes of wall clock")
    p.add_argument("--beside", default=None, metavar="AGENTS",
                   help="after training, play these agents (comma-separated, e.g. ogasched) on "
                   "--beside-seeds into the same TensorBoard root, to see them beside the learner")
    p.add_argument("--beside-seeds", default="100-104",
                   help="episode seeds of --beside (default 100-104, held out from training)")
    p.add_argument("--policy", choices=("default", "entity"), default="default",
                   help="'entity': the shared-weights EntityPolicy on obs_mode=entities and the "
                   "env's learnable action mode; plays every instance size (default: the "
                   "config's policy)")
    p.add_argument("--device", default="cpu", help="torch device (default cpu)")
    p.add_argument("--threads", type=int, default=1,
                   help="torch CPU threads (default 1; small networks run fastest on one)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--verbose", type=int, default=0, help="SB3 verbosity (0, 1, 2)")
    p.set_defaults(func=main)


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    """The :class:`TrainConfig` of ``schedgym train``'s parsed arguments."""
    from schedgym.agents.spec import split_specs as split_agents
    from schedgym.train.cli_options import env_options, parse_overrides
    from schedgym.train.stats import parse_seeds

    env = env_options(args)

    def seeds(text: str | None) -> tuple[int, ...] | None:
        return tuple(parse_seeds(text)) if text is not None else None

    return TrainConfig(
        args.algo, env.env_id, config=args.config,
        hyperparams=parse_overrides(args.hparams, "--hp"), timesteps=args.timesteps,
        n_envs=args.n_envs, seed=args.seed, scenario=env.scenario,
        instance_seed=env.instance_seed, overrides=env.overrides,
        instance_seeds=seeds(args.instance_seeds),
        eval_instance_seeds=seeds(args.eval_instance_seeds), out=args.out, name=args.name,
        overwrite=args.overwrite, resume=args.resume, eval_freq=args.eval_freq,
        eval_episodes=args.eval_episodes, eval_seed=args.eval_seed, eval_draws=args.eval_draws,
        checkpoint_freq=args.checkpoint_freq, log_every=args.log_every,
        beside=tuple(split_agents(args.beside)) if args.beside else (),
        beside_seeds=tuple(parse_seeds(args.beside_seeds)), progress=not args.no_progress,
        verbose=args.verbose, device=args.device, threads=args.threads,
        max_minutes=args.max_minutes, policy=args.policy)


def _env_flags(cfg: TrainConfig, compare: bool) -> list[str]:
    """Command-line flags reproducing ``cfg``'s env (``compare``: for ``schedgym compare``,
    which plays the model in its own action mode and evaluates held-out instances)."""
    parts: list[str] = []
    if cfg.scenario is not None:
        parts += ["--scenario", cfg.scenario]
    if cfg.instance_seeds and compare:
        parts += ["--instance-seeds", ",".join(map(str, cfg.evaluation_instances()))]
    elif cfg.instance_seeds and not compare:
        parts += ["--instance-seeds", ",".join(map(str, cfg.instance_seeds))]
    elif cfg.instance_seed:
        parts += ["--instance-seed", str(cfg.instance_seed)]
    for key, val in cfg.overrides.items():
        if not (compare and key == "action_mode"):
            text = ":".join(map(str, val)) if isinstance(val, tuple) else str(val)
            parts += ["--set", f"{key}={text}"]
    return parts


def next_command(cfg: TrainConfig, model_path: Path) -> str:
    """A runnable ``schedgym compare`` line racing the trained model against every classical
    agent of the env (the table's ratios then run to the best of them, whichever it is in this
    setting, not to the paper's algorithm) and its ceiling (``myopic-opt`` as an agent; the
    oracle or OPT as the run's benchmark), on the same env settings and held-out episode seeds
    100-104; an entity policy is raced both as its mode and as its sampled actions. ``random``
    and clairvoyant agents are left out."""
    import shlex

    from schedgym.agents import registry
    from schedgym.agents.spec import AgentSpec

    rivals = [n for n in registry.names_for(cfg.env_id)
              if n != "random" and not registry.is_benchmark(n)]
    learner = [str(AgentSpec.learned(cfg.algo, model_path))]
    if cfg.policy == "entity":  # its mode and its draws (docs/learned-vs-classical.md, 7c)
        learner.append(str(AgentSpec.learned(cfg.algo, model_path, deterministic=False)))
    return shlex.join(["schedgym", "compare", cfg.env_id, "--agents",
                       ",".join([*rivals, *learner]), "--seeds", "100-104",
                       *_env_flags(cfg, compare=True)])


def resume_command(cfg: TrainConfig, res: TrainResult) -> str:
    """A runnable ``schedgym train ... --resume`` line finishing an interrupted run."""
    import shlex

    left = max(res.target_timesteps - res.timesteps, 1)
    extra = ["--name", res.run_dir.name, "--out", cfg.out]
    if cfg.policy != "default":
        extra += ["--policy", cfg.policy]
    return shlex.join(["schedgym", "train", cfg.algo, cfg.env_id, *_env_flags(cfg, False),
                       "--resume", str(res.model_path), "--timesteps", str(left), *extra])


def _train_seeds(cfg: TrainConfig, seeds: list[int], ray: str | None,
                 workers: int | None) -> list[Path]:
    """Stage of ``--seeds``: one :func:`run_one_seed` per seed through
    ``schedgym.train.multiseed`` (local process pool, or Ray tasks with ``ray``)."""
    from schedgym.train import multiseed

    configs = [dataclasses.replace(cfg, seed=s, progress=False,
                                   name=f"{cfg.name}_s{s}" if cfg.name else None)
               for s in seeds]
    return list(multiseed.train_seeds(configs, ray=ray, workers=workers))


def main(args: argparse.Namespace) -> int:
    """``schedgym train``: exit status 0, or 130 when interrupted (files saved)."""
    from schedgym.train.stats import parse_seeds

    cfg = config_from_args(args)
    if args.seeds is not None:
        if args.resume is not None:
            raise ValueError("--seeds with --resume is invalid: resume one run at a time")
        dirs = _train_seeds(cfg, parse_seeds(args.seeds), args.ray, args.workers)
        for d in dirs:
            print(f"trained: {d / 'model.zip'}")
        print(f"monitor: tensorboard --logdir {args.out}")
        return 0
    if args.ray is not None:
        raise ValueError("--ray is invalid without --seeds: a single run trains in this process")
    res = train(cfg)
    state = "interrupted (Ctrl-C) after" if res.interrupted else "trained"
    print(f"{state} {cfg.algo} on {cfg.env_id} for {res.timesteps} steps in {res.wall_s:.0f} s; "
          f"saved {res.model_path}, config.yml, run.json in {res.run_dir}")
    for agent, folder in zip(cfg.beside, res.beside_dirs, strict=False):
        print(f"beside: played {agent} on episode seeds "
              f"{','.join(map(str, cfg.beside_seeds))} -> {folder}")
    print(f"compare: {next_command(cfg, res.model_path)}")
    print(f"monitor: tensorboard --logdir {cfg.out}")
    if res.interrupted:
        print(f"resume:  {resume_command(cfg, res)}", file=sys.stderr)
        return 130
    return 0
