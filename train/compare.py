"""``schedgym compare``: agents head to head on common random numbers.

Every agent plays the same episodes: one per seed, each ``reset(seed=s)`` on an env built with the
same ``instance_seed`` (so the same instance and the same pre-drawn arrivals). Episodes run in
parallel worker processes. Prints a table (mean ± 95% CI over seeds), and writes
``episodes.csv`` (one row per agent and seed), ``summary.csv``, ``summary.json`` and
``curves.npz`` (cumulative reward per step) into ``--out``, with ``compare.png``/``compare.svg``
beside them (cumulative reward vs time with 95% bands, and the ratio to the best classical agent,
or to ``--reference`` when given; ``--no-plots`` skips them).

Learned agents (``ppo:path/model.zip``) play next to classical ones on the same seeds.
``--tensorboard runs/`` also writes every agent's ``schedgym/*`` tags (the same tags as
``schedgym train``) to ``runs/<Env-vN>/<agent>/``, so ``tensorboard --logdir runs/`` shows them
beside the training curves. ``--record`` saves an image strip and a GIF of each agent's first
episode (``render_mode="rgb_array"``) into ``<out>/record/``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any

import numpy as np

from schedgym.train.runner import EpisodeResult, build_agent, make_env, parse_value, run_episode
from schedgym.train.stats import fmt_ci, mean_ci, parse_seeds


def parse_overrides(items: list[str] | None) -> dict[str, Any]:
    """``["horizon=500", "beta_range=0.4:0.6"]`` -> dict."""
    out: dict[str, Any] = {}
    for item in items or []:
        key, eq, val = item.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"--set {item!r} is invalid: must be key=value")
        out[key.strip()] = parse_value(val.strip())
    return out


def _episode_job(env_id: str, scenario: str | None, instance_seed: int, overrides: dict,
                 spec: str, seed: int, queue: Any = None,
                 record_steps: bool = False) -> EpisodeResult:
    from schedgym.train.plots import is_learned

    if is_learned(spec):
        import torch

        torch.set_num_threads(1)  # one small network per worker process
    env = make_env(env_id, scenario, instance_seed, overrides)
    agent = build_agent(spec, env)
    prog = (lambda n: queue.put(n)) if queue is not None else None
    rec = None
    if record_steps:
        from schedgym.train.tensorboard import StepRecorder, metric_spec

        rec = StepRecorder(metric_spec(env))
    res = run_episode(env, agent, seed, label=spec, progress=prog, step_callback=rec)
    if rec is not None:
        res.extra["steps"] = rec.steps
    env.close()
    return res


def _benchmark_job(env_id: str, scenario: str | None, instance_seed: int, overrides: dict,
                   seed: int) -> tuple[int, dict[str, float]]:
    from schedgym import offline

    env = make_env(env_id, scenario, instance_seed, overrides)
    env.reset(seed=seed)
    return seed, offline.episode_benchmarks(env)


def run_compare(
    env_id: str,
    agent_specs: list[str],
    seeds: list[int],
    scenario: str | None = None,
    instance_seed: int = 0,
    overrides: dict[str, Any] | None = None,
    workers: int | None = None,
    benchmarks: bool = True,
    show_progress: bool = True,
    record_steps: bool = False,
) -> tuple[list[EpisodeResult], dict[int, dict[str, float]]]:
    """Run every (agent, seed) episode; returns the results and the offline benchmark values.

    ``record_steps``: keep every step's reward and scalar info in ``result.extra["steps"]``
    (for :func:`schedgym.train.tensorboard.log_classical`)."""
    overrides = dict(overrides or {})
    # Fail fast, in this process, on a bad env id, scenario, override or agent name.
    env = make_env(env_id, scenario, instance_seed, overrides)
    horizon = int(getattr(env.unwrapped, "horizon", 0) or 0)
    for spec in agent_specs:
        build_agent(spec, env)
    env.close()
    jobs = [(spec, s) for s in seeds for spec in agent_specs]
    workers = workers or min(os.cpu_count() or 1, len(jobs))
    results: list[EpisodeResult] = []
    bench: dict[int, dict[str, float]] = {}
    total = len(jobs) * horizon if horizon else len(jobs)
    bar = _progress(total, show_progress, f"{env_id.split('/')[-1]}: {len(agent_specs)} agents "
                    f"x {len(seeds)} seeds")
    if workers <= 1:
        for spec, s in jobs:
            r = _episode_job(env_id, scenario, instance_seed, overrides, spec, s, None,
                             record_steps)
            results.append(r)
            bar.update(r.steps if horizon else 1)
        if benchmarks:
            for s in seeds:
                bench[s] = _benchmark_job(env_id, scenario, instance_seed, overrides, s)[1]
    else:
        import multiprocessing as mp

        ctx = mp.get_context("spawn")
        manager = ctx.Manager()
        queue = manager.Queue() if horizon else None
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            futs = {pool.submit(_episode_job, env_id, scenario, instance_seed, overrides, spec,
                                s, queue, record_steps): "episode" for spec, s in jobs}
            if benchmarks:
                for s in seeds:
                    futs[pool.submit(_benchmark_job, env_id, scenario, instance_seed, overrides,
                                     s)] = "bench"
            pending = set(futs)
            while pending:
                done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                while queue is not None and not queue.empty():
                    bar.update(queue.get())
                for f in done:
                    out = f.result()
                    if futs[f] == "episode":
                        results.append(out)
                        if not horizon:
                            bar.update(1)
                    else:
                        bench[out[0]] = out[1]
        manager.shutdown()
    bar.close()
    order = {spec: i for i, spec in enumerate(agent_specs)}
    results.sort(key=lambda r: (order[r.agent], r.seed))
    return results, bench


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, show: bool, desc: str):
    if not show:
        return _NoBar()
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="step", smoothing=0.1, mininterval=1.0)


def summarise(results: list[EpisodeResult], bench: dict[int, dict[str, float]],
              reference: str | None) -> list[dict[str, Any]]:
    """One row per agent: mean, CI half-width for every metric, ratio to the reference agent,
    and gap/ratio to each offline benchmark."""
    agents_ = list(dict.fromkeys(r.agent for r in results))
    ref = reference or agents_[0]
    by = {(r.agent, r.seed): r for r in results}
    rows = []
    for a in agents_:
        rs = [r for r in results if r.agent == a]
        row: dict[str, Any] = {"agent": a, "episodes": len(rs)}
        for m in rs[0].metrics:
            row[m], row[m + "_ci"] = mean_ci([r.metrics[m] for r in rs])
        ratios = [r.metrics["reward"] / by[(ref, r.seed)].metrics["reward"]
                  for r in rs if (ref, r.seed) in by and by[(ref, r.seed)].metrics["reward"] != 0]
        row[f"ratio_to_{ref}"], row[f"ratio_to_{ref}_ci"] = mean_ci(ratios)
        for name in sorted({k for b in bench.values() for k in b}):
            gaps = [bench[r.seed][name] - r.metrics["reward"] for r in rs if name in bench.get(
                r.seed, {})]
            rat = [bench[r.seed][name] / r.metrics["reward"] for r in rs
                   if name in bench.get(r.seed, {}) and r.metrics["reward"] > 0]
            row[f"{name}_gap"], row[f"{name}_gap_ci"] = mean_ci(gaps)
            row[f"{name}_ratio"], row[f"{name}_ratio_ci"] = mean_ci(rat)
        row["decision_ms"] = 1e3 * float(np.mean([r.decision_time for r in rs]))
        rows.append(row)
    return rows


def print_table(rows: list[dict[str, Any]], env_id: str, title_extra: str = "") -> None:
    """Render the summary as a rich table on stdout."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    skip = {"agent", "episodes", "decision_ms"}
    cols = [k for k in rows[0] if not k.endswith("_ci") and k not in skip]
    # cumulative reward first, then the average, then the rest in their order.
    head = ["reward", "avg_reward"]
    cols = head + [c for c in cols if c not in head]
    names = {"reward": "cum. reward", "avg_reward": "avg reward/step"}
    table = Table(title=f"{env_id} {title_extra}".strip(), show_lines=False)
    table.add_column("agent", style="bold")
    for c in cols:
        table.add_column(names.get(c, c.replace("_", " ")), justify="right")
    table.add_column("ms/decision", justify="right")
    for row in rows:
        table.add_row(escape(row["agent"]), *[fmt_ci(row[c], row.get(c + "_ci", float("nan")))
                                      for c in cols], f"{row['decision_ms']:.3f}")
    Console(width=max(160, 24 * (len(cols) + 2))).print(table)
    print(f"mean ± 95% CI over {rows[0]['episodes']} seeds (Student t); ratio_to_X = "
          "per-seed ratio of cumulative rewards; *_gap = offline benchmark - cumulative reward.")


def write_outputs(out: Path, results: list[EpisodeResult], rows: list[dict[str, Any]],
                  bench: dict[int, dict[str, float]], meta: dict[str, Any]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    metric_names = list(results[0].metrics)
    bench_names = sorted({k for b in bench.values() for k in b})
    with open(out / "episodes.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["agent", "seed", "steps", *metric_names, *bench_names, "decision_ms",
                    "wall_s"])
        for r in results:
            w.writerow([r.agent, r.seed, r.steps, *[r.metrics[m] for m in metric_names],
                        *[bench.get(r.seed, {}).get(b, "") for b in bench_names],
                        1e3 * r.decision_time, r.wall_time])
    with open(out / "summary.csv", "w", newline="") as fh:
        keys = list(rows[0])
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    (out / "summary.json").write_text(json.dumps({"meta": meta, "summary": rows,
                                                  "benchmarks": bench}, indent=2, default=str))
    np.savez_compressed(out / "curves.npz", **{f"{r.agent}|{r.seed}": r.curve for r in results})


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare",
        help="run agents head to head on common random numbers and print a table",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("env_id", help="e.g. schedgym/GainOverhead-v0")
    p.add_argument("--agents", required=True,
                   help="comma-separated agents: a name, name[key=value,...] for options, or "
                   "ALGO:path.zip for a saved SB3 model, e.g. "
                   "ogasched,ogasched[timing=lookahead],fairness,ppo:runs/model.zip")
    p.add_argument("--seeds", default=None, help="episode seeds, e.g. 0-4 or 0,3,7 (default 0-2)")
    p.add_argument("--episodes", type=int, default=None,
                   help="number of episodes = seeds 0..N-1 (alternative to --seeds)")
    p.add_argument("--scenario", default=None, help="scenario name (default: the paper default)")
    p.add_argument("--instance-seed", type=int, default=0, help="seed of the instance (default 0)")
    p.add_argument("--set", dest="overrides", action="append", metavar="KEY=VALUE",
                   help="override a scenario parameter, e.g. --set horizon=500 (repeatable)")
    p.add_argument("--reference", default=None,
                   help="agent the ratios are taken to (default: the first of --agents)")
    p.add_argument("--workers", type=int, default=None,
                   help="parallel worker processes (default: number of CPUs)")
    p.add_argument("--no-benchmarks", action="store_true",
                   help="skip the offline benchmark (hindsight optimum / oracle / OPT)")
    p.add_argument("--out", default=None,
                   help="output folder (default results/compare/<env>-<scenario>)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--plots", action=argparse.BooleanOptionalAction, default=True,
                   help="write compare.png/.svg beside the CSV (default on; --no-plots)")
    p.add_argument("--tensorboard", default=None, metavar="DIR",
                   help="also write every agent's schedgym/* TensorBoard tags to "
                   "DIR/<Env-vN>/<agent>/ (same tags as schedgym train), e.g. runs/")
    p.add_argument("--log-every", type=int, default=1000,
                   help="TensorBoard window in env steps (default 1000, as schedgym train)")
    p.add_argument("--record", action="store_true",
                   help="save an image strip (PNG) and GIF of each agent's first episode to "
                   "<out>/record/")
    p.add_argument("--record-frames", type=int, default=8,
                   help="frames in the --record strip (default 8)")
    p.set_defaults(func=main)


def split_agents(text: str) -> list[str]:
    """Split ``a,b[x=1,y=2],c`` at top-level commas only."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += ch == "["
        depth -= ch == "]"
        cur += ch
    out.append(cur)
    specs = [s.strip() for s in out if s.strip()]
    if not specs:
        raise ValueError(f"agents={text!r} is invalid: give at least one agent name")
    return specs


def main(args: argparse.Namespace) -> int:
    specs = split_agents(args.agents)
    if args.seeds is not None and args.episodes is not None:
        raise ValueError("give either --seeds or --episodes, not both")
    if args.episodes is not None:
        if args.episodes < 1:
            raise ValueError(f"episodes={args.episodes} is invalid: must be >= 1")
        seeds = list(range(args.episodes))
    else:
        seeds = parse_seeds(args.seeds or "0-2")
    overrides = parse_overrides(args.overrides)
    t0 = time.perf_counter()
    tb = getattr(args, "tensorboard", None)
    results, bench = run_compare(args.env_id, specs, seeds, args.scenario, args.instance_seed,
                                 overrides, args.workers, not args.no_benchmarks, not args.quiet,
                                 record_steps=tb is not None)
    rows = summarise(results, bench, args.reference)
    scen = args.scenario or "paper-default"
    print_table(rows, args.env_id, f"[{scen}, instance_seed={args.instance_seed}"
                + "".join(f", {k}={v}" for k, v in overrides.items()) + "]")
    out = Path(args.out or f"results/compare/{args.env_id.split('/')[-1]}-{scen}")
    meta = {"env_id": args.env_id, "scenario": scen, "instance_seed": args.instance_seed,
            "overrides": overrides, "agents": specs, "seeds": seeds,
            "wall_s": time.perf_counter() - t0}
    write_outputs(out, results, rows, bench, meta)
    print(f"wrote {out}/episodes.csv, summary.csv, summary.json, curves.npz "
          f"({time.perf_counter() - t0:.1f} s)")
    if getattr(args, "plots", True):
        from schedgym.train.plots import curves_from_results, plot_curves

        paths = plot_curves(curves_from_results(results), out, f"{args.env_id} [{scen}, "
                            f"instance_seed={args.instance_seed}]", reference=args.reference)
        print("wrote " + ", ".join(str(p) for p in paths))
    if tb is not None:
        for d in write_tensorboard(tb, args.env_id, results, args.scenario, args.instance_seed,
                                   overrides, getattr(args, "log_every", 1000)):
            print(f"tensorboard run: {d}")
    if getattr(args, "record", False):
        for spec in specs:
            paths = record_episode(args.env_id, spec, seeds[0], out / "record", args.scenario,
                                   args.instance_seed, overrides,
                                   getattr(args, "record_frames", 8))
            print("wrote " + ", ".join(str(p) for p in paths))
    return 0


def write_tensorboard(logdir: str | Path, env_id: str, results: list[EpisodeResult],
                      scenario: str | None, instance_seed: int, overrides: dict[str, Any],
                      log_every: int = 1000) -> list[Path]:
    """One TensorBoard run per agent, ``logdir/<Env-vN>/<agent>``, episodes in seed order."""
    from schedgym.train.tensorboard import env_folder, log_classical, metric_spec, run_name

    env = make_env(env_id, scenario, instance_seed, overrides)
    spec = metric_spec(env)
    env.close()
    dirs = []
    for agent in dict.fromkeys(r.agent for r in results):
        eps = [r.extra["steps"] for r in sorted(results, key=lambda r: r.seed)
               if r.agent == agent]
        d = Path(logdir) / env_folder(env_id) / run_name(agent)
        if d.exists():  # a fresh run, not appended to an older one
            for f in d.glob("events.out.tfevents.*"):
                f.unlink()
        dirs.append(log_classical(d, spec, eps, log_every))
    return dirs


def record_episode(env_id: str, spec: str, seed: int, folder: str | Path,
                   scenario: str | None = None, instance_seed: int = 0,
                   overrides: dict[str, Any] | None = None, n_frames: int = 8) -> list[Path]:
    """Play one episode with ``render_mode="rgb_array"`` and save about ``n_frames`` evenly
    spaced frames as ``<folder>/<agent>-seed<seed>.png`` (strip) and ``.gif``."""
    from schedgym.train.plots import FrameSampler, save_strip
    from schedgym.train.tensorboard import run_name

    env = make_env(env_id, scenario, instance_seed, overrides, render_mode="rgb_array")
    agent = build_agent(spec, env)
    sampler = FrameSampler(n_frames)

    def grab(step: int, reward: float, info: dict) -> None:
        if sampler.wants(step):
            sampler.add(step, env.render())

    res = run_episode(env, agent, seed, label=spec, step_callback=grab)
    frames = sampler.result(last=(res.steps, env.render()))
    env.close()
    return save_strip(frames, Path(folder) / f"{run_name(spec)}-seed{seed}.png",
                      f"{env_id} {spec} seed {seed}")
