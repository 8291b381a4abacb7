"""The training loop of ``schedgym train``: :func:`train` runs a :class:`TrainConfig` in stages.

1. plan (:func:`_plan`): the hyperparameters (file + ``--hp``), the env kwargs, and a probe env
   that fails fast on bad overrides, an algorithm the action space rejects or an unknown
   ``--beside`` agent (and compiles the env's kernels, :mod:`schedgym.train.preflight`);
2. claim the run folder (:mod:`schedgym.train.run_folder`, with the resume checks);
3. build the training envs and the model, new or resumed (:func:`build_vec_env`);
4. learn, with the callbacks (:mod:`schedgym.train.callbacks`): schedgym's TensorBoard tags,
   evaluations, checkpoints, the wall-clock limit, the progress bar; Ctrl-C stops learning;
5. save (:mod:`schedgym.train.model_io`), then play the ``--beside`` agents.

What the run writes and the rules it follows are in ``schedgym train --help``
(:mod:`schedgym.train.training`, the command).
"""

from __future__ import annotations

import dataclasses
import errno
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym

import schedgym  # noqa: F401  (registers the env ids)
from schedgym.train import hyperparams as hp
from schedgym.train import preflight
from schedgym.train.model_io import load_model, load_vecnormalize, save_run
from schedgym.train.run_folder import (
    check_resumed_evaluations,
    claim_run_dir,
    evaluation_history,
    keep_progress_log,
    release_unused_claim,
    resolve_eval_draws,
)
from schedgym.train.tensorboard import metric_spec
from schedgym.train.train_config import (
    TrainConfig,
    TrainPlan,
    default_eval_episodes,
    default_eval_freq,
)


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


def train(config: TrainConfig | str, env_id: str | None = None, **kwargs: Any) -> TrainResult:
    """Train as ``config`` says; the files written are listed in the ``schedgym train`` help
    (the docstring of :mod:`schedgym.train.training`).

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


def _plan(cfg: TrainConfig) -> TrainPlan:
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
    return TrainPlan(entry, algo_kw, settings, env_kw, spec,
                 int(horizon) if isinstance(horizon, int) else None)


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
        if cfg.resume is not None:
            from schedgym.agents.model_file import check_zip

            try:
                check_zip(cfg.resume)  # a damaged zip: one line now, not SB3's later
            except ValueError as exc:
                raise ValueError(f"resume={cfg.resume!r} is invalid: {exc}") from None
        cfg = self.cfg = resolve_eval_draws(cfg)
        plan = _plan(cfg)
        check_resumed_evaluations(cfg)
        run_dir = claim_run_dir(cfg)
        try:
            try:
                model = self._build(plan, run_dir)
            except BaseException:
                release_unused_claim(run_dir)  # a failed start leaves no stale claim
                raise
            try:
                interrupted = self._learn(model, plan, run_dir)
                model_path = self._save(model, plan, run_dir, interrupted)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                raise disk_full(exc, run_dir, cfg) from None
        finally:
            for env in (self.venv, self.eval_env):
                if env is not None:
                    env.close()
        beside = (play_beside(cfg, plan.env_kw, int(model.num_timesteps))
                  if cfg.beside and not interrupted else [])
        target = plan.settings["n_timesteps"] + (self.start_steps if cfg.resume else 0)
        return TrainResult(run_dir, model_path, model, int(model.num_timesteps),
                           time.perf_counter() - self.t0, interrupted, target, beside)

    def _build(self, plan: TrainPlan, run_dir: Path) -> Any:
        """Stage 3: training envs (VecNormalize when configured) and the model (new or loaded)."""
        from stable_baselines3.common.logger import configure

        cfg = self.cfg
        n_envs = plan.settings["n_envs"]
        self.venv = _normalized(build_vec_env(cfg.env_id, plan.env_kw, cfg.training_instances(),
                                              n_envs, cfg.seed), plan, cfg.resume)
        if cfg.resume is not None:
            model = load_model(cfg.algo, cfg.resume, self.venv, cfg.device)
        else:
            kw = dict(plan.algo_kw)
            if plan.settings["noise"] is not None:
                kw["action_noise"] = _action_noise(plan.settings["noise"],
                                                   self.venv.action_space.shape[0])
            model = hp.algo_class(cfg.algo)(env=self.venv, seed=cfg.seed, device=cfg.device,
                                            verbose=cfg.verbose, **kw)
        self.start_steps = int(model.num_timesteps)
        keep_progress_log(run_dir, self.start_steps)  # a resumed run: SB3 would truncate it
        model.set_logger(configure(str(run_dir), ["tensorboard", "csv"]
                                   + (["stdout"] if cfg.verbose else [])))
        return model

    def _learn(self, model: Any, plan: TrainPlan, run_dir: Path) -> bool:
        """Stage 4: ``model.learn`` with the callbacks; True if stopped by Ctrl-C."""
        callbacks = self._callbacks(model, plan, run_dir)
        try:
            model.learn(total_timesteps=plan.settings["n_timesteps"], callback=callbacks,
                        reset_num_timesteps=self.cfg.resume is None)
        except KeyboardInterrupt:
            return True
        return False

    def _callbacks(self, model: Any, plan: TrainPlan, run_dir: Path) -> list[Any]:
        from stable_baselines3.common.callbacks import CheckpointCallback

        from schedgym.train.callbacks import (
            BudgetProgressBar,
            ResumableEvalCallback,
            SchedgymMetricsCallback,
            WallClockLimit,
        )
        from schedgym.train.train_report import train_report

        cfg = self.cfg
        n_envs = plan.settings["n_envs"]
        n_total = plan.settings["n_timesteps"]
        out: list[Any] = [SchedgymMetricsCallback(plan.spec, log_every=cfg.log_every)]
        episodes = default_eval_episodes(cfg)
        freq = cfg.eval_freq if cfg.eval_freq is not None else default_eval_freq(
            n_total, rollout_steps(cfg.algo, plan.algo_kw, n_envs), episodes, plan.horizon)
        evaluation = None
        if freq > 0 and episodes > 0:
            self.eval_env = self._eval_env(plan)
            evaluation = ResumableEvalCallback(
                self.eval_env, history=evaluation_history(cfg, run_dir), n_eval_episodes=episodes,
                eval_freq=max(freq // n_envs, 1), best_model_save_path=str(run_dir),
                log_path=str(run_dir), deterministic=not cfg.eval_draws, verbose=0)
            out.append(evaluation)
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
        out.append(train_report(cfg, plan.env_kw, evaluation, n_total, seconds, episodes))
        return out

    def _eval_env(self, plan: TrainPlan) -> Any:
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

    def _save(self, model: Any, plan: TrainPlan, run_dir: Path, interrupted: bool) -> Path:
        """Stage 5: model.zip, vecnormalize.pkl, config.yml and run.json."""
        return save_run(run_dir, self.cfg, plan, model, time.perf_counter() - self.t0,
                        interrupted)


class DiskFullError(OSError):
    """The device holding the run folder is full: its message names the file and how to go on
    (``str`` is the message alone, without ``[Errno 28]``)."""

    def __str__(self) -> str:
        return str(self.args[1]) if len(self.args) > 1 else super().__str__()


def disk_full(exc: OSError, run_dir: Path, cfg: TrainConfig) -> DiskFullError:
    """The one-line error of a full disk during training: the file being written (or the run
    folder, when the writer did not say) and the checkpoint to resume from."""
    where = exc.filename or f"a file in {run_dir}"
    ckpts = sorted((run_dir / "checkpoints").glob("model_*_steps.zip"),
                   key=lambda p: int(p.stem.split("_")[1]) if p.stem.split("_")[1].isdigit()
                   else -1)
    done = ckpts[-1] if ckpts else None
    hint = (f"free some space, then continue with: schedgym train {cfg.algo} {cfg.env_id} "
            f"--resume {done} --name {run_dir.name} --out {cfg.out}" if done is not None else
            "free some space, then train again (no checkpoint was saved)")
    return DiskFullError(errno.ENOSPC, f"no space left on the device writing {where}: {hint}")


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


def _normalized(venv: Any, plan: TrainPlan, resume: str | None) -> Any:
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
    loaded = load_vecnormalize(resume, venv) if resume is not None else None
    if loaded is not None:
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


def play_beside(cfg: TrainConfig, env_kw: dict[str, Any], span: int | None = None
                ) -> list[Path]:
    """Play ``cfg.beside`` on ``cfg.beside_seeds`` into ``out/<Env-vN>/<agent>/`` (same tags as
    training), as flat reference lines across the learner's ``0..span`` steps; returns the
    folders written. Every agent plays in its own mode (:func:`run_classical`), not the
    learner's."""
    from schedgym.train.tensorboard import env_folder, run_classical, run_name

    kw = {k: v for k, v in env_kw.items() if k != "scenario"}
    written = []
    for agent in cfg.beside:
        folder = Path(cfg.out) / env_folder(cfg.env_id) / run_name(agent)
        written.append(run_classical(cfg.env_id, agent, list(cfg.beside_seeds), folder,
                                     cfg.scenario, cfg.training_instances()[0], kw,
                                     cfg.log_every, span))
    return written
