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

Progress: a line per evaluation (steps, steps/s, its mean return and, with --beside, the ratio
to the best classical agent of --beside), and without the bar (--no-progress, --seeds) one a
minute; the closing line says which limit ended the run (its step target, --max-minutes,
Ctrl-C) and how many of its steps it reached.

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
import sys
from pathlib import Path

from schedgym.agents.spec import AgentSpec, split_specs
from schedgym.train import hyperparams as hp
from schedgym.train import multiseed
from schedgym.train.cli_options import (
    add_env_options,
    add_parallel_options,
    env_options,
    parse_overrides,
)
from schedgym.train.stats import parse_seeds
from schedgym.train.train_config import TrainConfig
from schedgym.train.train_report import stop_reason
from schedgym.train.trainer import TrainResult, train

#: The training API, kept importable from here (the command's own module):
#: ``from schedgym.train.training import train, TrainConfig, TrainResult``.
__all__ = ["TrainConfig", "TrainResult", "add_parser", "config_from_args", "main",
           "next_command", "resume_command", "train"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``schedgym train`` and its options."""
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
    draws = p.add_mutually_exclusive_group()
    draws.add_argument("--eval-draws", dest="eval_draws", action="store_const", const=True,
                       default=None,
                       help="evaluate the policy's sampled actions instead of its mode, keep "
                       "best_model.zip by them, and record 'sampled' as the model's play "
                       "(ppo:model.zip then plays its draws; default: the env's choice for the "
                       "policy, draws for FluctuatingSpeed's entity policy, else the mode; on "
                       "--resume the resumed run's)")
    draws.add_argument("--eval-mode", dest="eval_draws", action="store_const", const=False,
                       help="evaluate the policy's mode and record 'mode' as the model's play")
    p.add_argument("--checkpoint-freq", type=int, default=None,
                   help="checkpoint every N env steps (default timesteps/5; 0 = off)")
    p.add_argument("--log-every", type=int, default=1000,
                   help="schedgym/* TensorBoard window, env steps (default 1000)")
    p.add_argument("--max-minutes", type=float, default=None,
                   help="stop and save after this many minutes of wall clock")
    p.add_argument("--beside", default=None, metavar="AGENTS",
                   help="after training, play these agents (comma-separated, e.g. ogasched) on "
                   "--beside-seeds into the same TensorBoard root, as flat reference lines "
                   "beside the learner; before training, the best classical one of them is "
                   "played on the evaluation instances (or the first training instances) as "
                   "the reference of the progress lines' ratios (before --max-minutes starts)")
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
    env = env_options(args)

    def seeds(text: str | None, flag: str) -> tuple[int, ...] | None:
        return tuple(parse_seeds(text, flag)) if text is not None else None

    return TrainConfig(
        args.algo, env.env_id, config=args.config,
        hyperparams=parse_overrides(args.hparams, "--hp"), timesteps=args.timesteps,
        n_envs=args.n_envs, seed=args.seed, scenario=env.scenario,
        instance_seed=env.instance_seed, overrides=env.overrides,
        instance_seeds=seeds(args.instance_seeds, "--instance-seeds"),
        eval_instance_seeds=seeds(args.eval_instance_seeds, "--eval-instance-seeds"),
        out=args.out, name=args.name,
        overwrite=args.overwrite, resume=args.resume, eval_freq=args.eval_freq,
        eval_episodes=args.eval_episodes, eval_seed=args.eval_seed, eval_draws=args.eval_draws,
        checkpoint_freq=args.checkpoint_freq, log_every=args.log_every,
        beside=tuple(split_specs(args.beside)) if args.beside else (),
        beside_seeds=tuple(parse_seeds(args.beside_seeds, "--beside-seeds")),
        progress=not args.no_progress,
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

    rivals = [n for n in registry.names_for(cfg.env_id)
              if n != "random" and not registry.is_benchmark(n)]
    learner = [str(AgentSpec.learned(cfg.algo, model_path))]  # the play it recorded
    if cfg.policy == "entity":  # and the other play (docs/learned-vs-classical.md, 7c)
        from schedgym.agents.record import learned_play

        recorded = learned_play(learner[0])
        learner.append(str(AgentSpec.learned(cfg.algo, model_path,
                                             deterministic=recorded == "sampled")))
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
    """Stage of ``--seeds``: one :func:`~schedgym.train.trainer.run_one_seed` per seed through
    ``schedgym.train.multiseed`` (local process pool, or Ray tasks with ``ray``)."""
    configs = [dataclasses.replace(cfg, seed=s, progress=False,
                                   name=f"{cfg.name}_s{s}" if cfg.name else None)
               for s in seeds]
    return list(multiseed.train_seeds(configs, ray=ray, workers=workers))


def main(args: argparse.Namespace) -> int:
    """``schedgym train``: exit status 0, or 130 when interrupted (files saved)."""
    cfg = config_from_args(args)
    if args.seeds is not None:
        if args.resume is not None:
            raise ValueError("--seeds with --resume is invalid: resume one run at a time")
        dirs = _train_seeds(cfg, parse_seeds(args.seeds, "--seeds"), args.ray, args.workers)
        for d in dirs:
            print(f"trained: {d / 'model.zip'}")
        print(f"monitor: tensorboard --logdir {args.out}")
        return 0
    if args.ray is not None:
        raise ValueError("--ray is invalid without --seeds: a single run trains in this process")
    res = train(cfg)
    why = stop_reason(res.interrupted, res.timesteps, res.target_timesteps, cfg.max_minutes)
    print(f"done: {cfg.algo} on {cfg.env_id} {why}, in {res.wall_s:.0f} s; saved "
          f"{res.model_path}, config.yml, run.json in {res.run_dir}", flush=True)
    for agent, folder in zip(cfg.beside, res.beside_dirs, strict=False):
        print(f"beside: played {agent} on episode seeds "
              f"{','.join(map(str, cfg.beside_seeds))} -> {folder}")
    print(f"compare: {next_command(cfg, res.model_path)}")
    print(f"monitor: tensorboard --logdir {cfg.out}")
    if res.interrupted:
        print(f"resume:  {resume_command(cfg, res)}", file=sys.stderr)
        return 130
    return 0
