"""``schedgym train ALGO ENV_ID``: train an SB3 learner on any schedgym env.

Hyperparameters come from ``configs/<algo>.yml`` (rl-baselines3-zoo format, keyed by env id, with a
``default`` entry for envs without their own; see :mod:`schedgym.train.hyperparams`).
Everything is written to one run folder, ``<out>/<Env-vN>/<name>/`` (default
``runs/GainOverhead-v0/ppo_s0/``):

- TensorBoard events: SB3's own tags (``rollout/``, ``train/``, ``eval/``, ``time/``) and
  schedgym's per-step metrics (``schedgym/step/*``, ``schedgym/episode/*``, see
  ``docs/tensorboard.md``); ``progress.csv`` holds SB3's tags too;
- ``model.zip`` (final), ``best_model.zip`` and ``evaluations.npz`` (``EvalCallback`` on held-out
  episode seeds), ``checkpoints/model_<steps>_steps.zip`` (+
  ``model_vecnormalize_<steps>_steps.pkl``);
- ``vecnormalize.pkl`` when the config normalises (reward scaling only by default: it changes
  training, not ``predict``, so ``model.zip`` is self-contained for ``schedgym compare``);
- ``config.yml`` (the entry used, after command-line changes) and ``run.json``.

Seeds: training env ``i`` is seeded ``seed + i`` once and then draws each episode's 63-bit episode
seed from its own generator; the evaluation env is seeded ``eval_seed`` (default ``1_000_000 +
seed``). Small explicit seeds (e.g. ``schedgym compare --seeds 100-104``) are therefore held out.

``--resume ckpt.zip`` continues a run: the model (and its VecNormalize statistics, looked up beside
the checkpoint) is loaded and trained for ``--timesteps`` more steps; the step count continues.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym

import schedgym  # noqa: F401  (registers the env ids)
from schedgym.train import hyperparams as hp
from schedgym.train.tensorboard import env_folder, metric_spec


@dataclass
class TrainResult:
    """Where a training run put its files, and the trained model."""

    run_dir: Path
    model_path: Path
    model: Any
    timesteps: int
    wall_s: float


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


def _env_kwargs(settings: dict[str, Any], scenario: str | None, instance_seed: int,
                overrides: dict[str, Any] | None) -> dict[str, Any]:
    kw = dict(settings.get("env_kwargs") or {})
    kw.update(overrides or {})
    if scenario is not None:
        kw["scenario"] = scenario
    kw["instance_seed"] = instance_seed
    return kw


def train(
    algo: str,
    env_id: str,
    *,
    config: str | Path | None = None,
    timesteps: int | None = None,
    seed: int = 0,
    n_envs: int | None = None,
    scenario: str | None = None,
    instance_seed: int = 0,
    overrides: dict[str, Any] | None = None,
    out: str | Path = "runs",
    name: str | None = None,
    resume: str | Path | None = None,
    eval_freq: int | None = None,
    eval_episodes: int = 5,
    eval_seed: int | None = None,
    checkpoint_freq: int | None = None,
    log_every: int = 1000,
    beside: list[str] | None = None,
    beside_seeds: list[int] | None = None,
    hyperparams: dict[str, Any] | None = None,
    progress: bool = False,
    verbose: int = 0,
    device: str = "cpu",
    threads: int | None = 1,
    max_minutes: float | None = None,
) -> TrainResult:
    """Train ``algo`` on ``env_id``; see the module docstring for the files written.

    ``timesteps``: env steps to train (default the config's ``n_timesteps``; with ``resume``,
    the number of *additional* steps). ``eval_freq``/``checkpoint_freq``: in env steps (0 = off;
    default a tenth / a fifth of ``timesteps``). ``hyperparams``: entries replacing the config's
    (validated like the file). ``overrides``: env parameters (``--set``). ``threads``: torch
    CPU threads (default 1: the networks are small, and more threads on a shared machine are
    several times slower; ``None`` leaves torch's default). ``max_minutes``: stop (and save) after
    this much wall clock even if ``timesteps`` are not reached. ``beside``: agent specs (e.g.
    ``["ogasched"]``) played afterwards on ``beside_seeds`` (default 100-104) into
    ``<out>/<Env-vN>/<agent>/`` with the same TensorBoard tags, so one command puts the learner
    and its classical competitors on one board.
    """
    from stable_baselines3.common.callbacks import CheckpointCallback, EvalCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.logger import configure
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    from schedgym.train.callbacks import SchedgymMetricsCallback, WallClockLimit

    t0 = time.perf_counter()
    if threads is not None:
        import torch

        torch.set_num_threads(int(threads))
    cls = hp.algo_class(algo)
    entry = hp.load_config(algo, env_id, config)
    entry.update(hyperparams or {})
    if n_envs is not None:
        entry["n_envs"] = n_envs
    if timesteps is not None:
        entry["n_timesteps"] = timesteps
    algo_kw, settings = hp.split_entry(algo, entry)
    n_total = settings["n_timesteps"]
    n_envs = settings["n_envs"]
    env_kw = _env_kwargs(settings, scenario, instance_seed, overrides)

    probe = gym.make(env_id, **env_kw)  # fails fast on bad overrides
    if algo not in hp.supported_algos(probe.action_space):
        raise ValueError(f"algo={algo!r} is invalid for {env_id} (action space "
                         f"{probe.action_space}): must be one of "
                         f"{', '.join(hp.supported_algos(probe.action_space))}")
    spec = metric_spec(probe)
    if beside:
        from schedgym.train.runner import build_agent

        for agent_spec in beside:  # fail before training, not after
            build_agent(agent_spec, probe)
    probe.close()

    run_dir = Path(out) / env_folder(env_id) / (name or f"{algo}_s{seed}")
    run_dir.mkdir(parents=True, exist_ok=True)
    venv = make_vec_env(env_id, n_envs=n_envs, seed=seed, env_kwargs=env_kw,
                        vec_env_cls=DummyVecEnv)
    norm = settings["normalize"]
    gamma = float(algo_kw.get("gamma", 0.99))
    if norm is not None and norm.get("norm_obs", True):
        import warnings

        warnings.warn("normalize has norm_obs=True: the saved model.zip then expects normalised "
                      "observations, which 'schedgym compare ALGO:model.zip' does not apply; "
                      "prefer norm_obs=False with schedgym.train.policies.BoundsScaledPolicy",
                      UserWarning, stacklevel=2)
    if norm is not None:
        stats = vecnormalize_path(resume) if resume is not None else None
        if stats is not None and stats.is_file():
            venv = VecNormalize.load(str(stats), venv)
            venv.training = True
        else:
            venv = VecNormalize(venv, **{"gamma": gamma, **norm})

    if resume is not None:
        if not Path(resume).is_file():
            raise ValueError(f"resume={str(resume)!r} is invalid: file does not exist")
        model = cls.load(str(resume), env=venv, device=device)
    else:
        if settings["noise"] is not None:
            from stable_baselines3.common.noise import (
                NormalActionNoise,
                OrnsteinUhlenbeckActionNoise,
            )

            kind, std = settings["noise"]
            n_act = venv.action_space.shape[0]
            import numpy as np

            noise_cls = {"normal": NormalActionNoise,
                         "ornstein-uhlenbeck": OrnsteinUhlenbeckActionNoise}.get(kind)
            if noise_cls is None:
                raise ValueError(f"noise_type={kind!r} is invalid: must be normal or "
                                 "ornstein-uhlenbeck")
            algo_kw["action_noise"] = noise_cls(np.zeros(n_act), std * np.ones(n_act))
        model = cls(env=venv, seed=seed, device=device, verbose=verbose, **algo_kw)
    old_csv = run_dir / "progress.csv"
    if resume is not None and old_csv.is_file():  # SB3's CSV writer would truncate it
        old_csv.rename(run_dir / f"progress.until-{int(model.num_timesteps)}.csv")
    model.set_logger(configure(str(run_dir), ["tensorboard", "csv"]
                               + (["stdout"] if verbose else [])))

    callbacks: list[Any] = [SchedgymMetricsCallback(spec, log_every=log_every)]
    eval_env = None
    eval_freq = max(n_total // 10, 1) if eval_freq is None else eval_freq
    if eval_freq > 0 and eval_episodes > 0:
        eval_env = make_vec_env(env_id, n_envs=1, env_kwargs=env_kw, vec_env_cls=DummyVecEnv,
                                seed=1_000_000 + seed if eval_seed is None else eval_seed)
        if norm is not None:
            eval_env = VecNormalize(eval_env, training=False, norm_reward=False,
                                    **{"gamma": gamma, **{k: v for k, v in norm.items()
                                                          if k != "norm_reward"}})
        callbacks.append(EvalCallback(eval_env, n_eval_episodes=eval_episodes,
                                      eval_freq=max(eval_freq // n_envs, 1),
                                      best_model_save_path=str(run_dir),
                                      log_path=str(run_dir), deterministic=True, verbose=0))
    checkpoint_freq = max(n_total // 5, 1) if checkpoint_freq is None else checkpoint_freq
    if checkpoint_freq > 0:
        callbacks.append(CheckpointCallback(max(checkpoint_freq // n_envs, 1),
                                            str(run_dir / "checkpoints"), name_prefix="model",
                                            save_vecnormalize=norm is not None))
    if max_minutes is not None:
        callbacks.append(WallClockLimit(60.0 * max_minutes))
    model.learn(total_timesteps=n_total, callback=callbacks, progress_bar=progress,
                reset_num_timesteps=resume is None)
    model_path = run_dir / "model.zip"
    model.save(str(model_path))
    if norm is not None:
        model.get_vec_normalize_env().save(str(run_dir / "vecnormalize.pkl"))
    _write_meta(run_dir, algo, env_id, entry, env_kw, seed, resume, model, t0)
    venv.close()
    if eval_env is not None:
        eval_env.close()
    if beside:
        from schedgym.train.tensorboard import run_classical, run_name

        for spec in beside:
            run_classical(env_id, spec, beside_seeds or list(range(100, 105)),
                          Path(out) / env_folder(env_id) / run_name(spec), scenario,
                          instance_seed, {k: v for k, v in env_kw.items()
                                          if k not in ("scenario", "instance_seed")}, log_every)
    return TrainResult(run_dir, model_path, model, int(model.num_timesteps),
                       time.perf_counter() - t0)


def _write_meta(run_dir: Path, algo: str, env_id: str, entry: dict[str, Any],
                env_kw: dict[str, Any], seed: int, resume: Any, model: Any, t0: float) -> None:
    import yaml

    (run_dir / "config.yml").write_text(yaml.safe_dump({env_id: _plain(entry)},
                                                       sort_keys=False))
    meta = {"algo": algo, "env_id": env_id, "seed": seed, "env_kwargs": _plain(env_kw),
            "resumed_from": str(resume) if resume else None,
            "num_timesteps": int(model.num_timesteps), "wall_s": time.perf_counter() - t0}
    (run_dir / "run.json").write_text(json.dumps(meta, indent=2, default=str))


def _plain(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, (int, float, str, bool)) or obj is None:
        return obj
    return str(obj)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "train",
        help="train an SB3 learner (ppo, sac, td3, a2c) on a schedgym env",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("algo", choices=sorted(hp.ALGOS), help="SB3 algorithm")
    p.add_argument("env_id", help="e.g. schedgym/GainOverhead-v0")
    p.add_argument("--config", default=None,
                   help="hyperparameter YAML (default configs/<algo>.yml)")
    p.add_argument("--timesteps", type=int, default=None,
                   help="env steps to train (default: the config's n_timesteps; with --resume, "
                   "additional steps)")
    p.add_argument("--seed", type=int, default=0, help="training seed (default 0)")
    p.add_argument("--n-envs", type=int, default=None, help="parallel envs (default: config)")
    p.add_argument("--scenario", default=None, help="scenario name (default: paper default)")
    p.add_argument("--instance-seed", type=int, default=0, help="instance seed (default 0)")
    p.add_argument("--set", dest="overrides", action="append", metavar="KEY=VALUE",
                   help="override an env parameter, e.g. --set horizon=500 (repeatable)")
    p.add_argument("--hp", dest="hparams", action="append", metavar="KEY=VALUE",
                   help="override a hyperparameter of the config, e.g. --hp n_steps=256")
    p.add_argument("--out", default="runs", help="root of the run folders (default runs/)")
    p.add_argument("--name", default=None, help="run folder name (default ALGO_sSEED)")
    p.add_argument("--resume", default=None, metavar="CKPT.zip",
                   help="continue training from a saved model/checkpoint")
    p.add_argument("--eval-freq", type=int, default=None,
                   help="evaluate every N env steps (default timesteps/10; 0 = off)")
    p.add_argument("--eval-episodes", type=int, default=5, help="episodes per evaluation")
    p.add_argument("--eval-seed", type=int, default=None,
                   help="seed of the evaluation env (default 1000000 + seed)")
    p.add_argument("--checkpoint-freq", type=int, default=None,
                   help="checkpoint every N env steps (default timesteps/5; 0 = off)")
    p.add_argument("--log-every", type=int, default=1000,
                   help="schedgym/* TensorBoard window, env steps (default 1000)")
    p.add_argument("--max-minutes", type=float, default=None,
                   help="stop and save after this much wall clock (a CPU budget)")
    p.add_argument("--beside", default=None, metavar="AGENTS",
                   help="after training, play these agents (comma-separated, e.g. ogasched) on "
                   "--beside-seeds into the same TensorBoard root, to see them beside the learner")
    p.add_argument("--beside-seeds", default="100-104",
                   help="episode seeds of --beside (default 100-104, held out from training)")
    p.add_argument("--device", default="cpu", help="torch device (default cpu)")
    p.add_argument("--threads", type=int, default=1,
                   help="torch CPU threads (default 1; small networks run fastest on one)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--verbose", type=int, default=0, help="SB3 verbosity (0, 1, 2)")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from schedgym.train.compare import parse_overrides, split_agents
    from schedgym.train.stats import parse_seeds

    res = train(args.algo, args.env_id, config=args.config, timesteps=args.timesteps,
                seed=args.seed, n_envs=args.n_envs, scenario=args.scenario,
                instance_seed=args.instance_seed, overrides=parse_overrides(args.overrides),
                out=args.out, name=args.name, resume=args.resume, eval_freq=args.eval_freq,
                eval_episodes=args.eval_episodes, eval_seed=args.eval_seed,
                checkpoint_freq=args.checkpoint_freq, log_every=args.log_every,
                beside=split_agents(args.beside) if args.beside else None,
                beside_seeds=parse_seeds(args.beside_seeds),
                hyperparams=parse_overrides(args.hparams), progress=not args.no_progress,
                verbose=args.verbose, device=args.device, threads=args.threads,
                max_minutes=args.max_minutes)
    print(f"trained {args.algo} on {args.env_id} for {res.timesteps} steps in {res.wall_s:.0f} s"
          f"; model: {res.model_path}")
    print(f"compare: schedgym compare {args.env_id} --agents <classical>,"
          f"{args.algo}:{res.model_path} --seeds 100-104")
    print(f"monitor: tensorboard --logdir {args.out}")
    return 0
