"""DeadlineWelfare-v0 at growing sizes, up to a week of the whole Alibaba cluster: per agent,
CPU milliseconds per job (decision + env step) and the peak resident memory of one episode,
each (size, agent) in a fresh process.

Sizes (:func:`scale_case`): ``1x``, ``4x``, ``16x``, ``64x`` the paper-default mesh (10
instances x 24 one-hour slots, 20 jobs; ``k x``: ``10 k`` instances, and with ``--jobs
scaled`` also ``20 k`` jobs) and ``cluster``: every node of the shipped Alibaba trace over one
week of its test split (``scenario="alibaba-gpu-2023", n_instances="all", split="test",
horizon=168, n_jobs=None``: 1,523 nodes x 168 slots = 255,864 units, about 1,600 jobs).

Usage::

    python benchmarks/dw_scale.py                       # every size, every classical agent
    python benchmarks/dw_scale.py --sizes cluster --agents onsocmax,max-first
    python benchmarks/dw_scale.py --obs-mode entities --agents fixed-price

Agents play in the action mode they are registered for (``fixed-price`` in ``pricing``, the
others in ``dispatch``). Figures: CPU time (``time.process_time``, the machine is shared) of
the whole episode after ``reset`` divided by its jobs (after a warm-up episode at the paper
size that loads or compiles the kernels), the reset's CPU seconds, the agent's
construction (``time-of-use`` estimates its price table there), and ``ru_maxrss`` of the
process (Python, numpy and numba included) and its part above the process's peak before
``gym.make`` (the episode's). The slopes of log(ms per job) and log(the episode's RSS, at
least 1 MB) against log(units) over the ``k x`` sizes are printed last.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from typing import Any

ENV_ID = "schedgym/DeadlineWelfare-v0"
AGENTS = ("onsocmax", "max-first", "equal-share", "jsq", "myopic-welfare", "time-of-use",
          "fixed-price")
SIZES = ("1x", "4x", "16x", "64x", "cluster")
#: Every node of the shipped trace, one week of its test split.
CLUSTER: dict[str, Any] = {"scenario": "alibaba-gpu-2023", "n_instances": "all",
                           "split": "test", "horizon": 168, "n_jobs": None}
#: The action mode an agent plays in (the others: ``dispatch``).
PLAY_MODE = {"fixed-price": "pricing"}


def scale_case(size: str, jobs: str = "fixed") -> dict[str, Any]:
    """``gym.make`` keyword arguments of a size: ``"cluster"`` (:data:`CLUSTER`) or ``"kx"``,
    ``k`` times the paper-default mesh (``10 k`` instances x 24 slots) with its 20 jobs
    (``jobs="fixed"``) or ``20 k`` jobs (``jobs="scaled"``: the same load per instance)."""
    if size == "cluster":
        return dict(CLUSTER)
    if not size.endswith("x") or not size[:-1].isdigit() or int(size[:-1]) < 1:
        raise ValueError(f"size={size!r} is invalid: must be 'cluster' or 'Kx' with K >= 1")
    if jobs not in ("fixed", "scaled"):
        raise ValueError(f"jobs={jobs!r} is invalid: must be 'fixed' or 'scaled'")
    k = int(size[:-1])
    return {"n_instances": 10 * k, "n_jobs": 20 * k if jobs == "scaled" else 20}


_CHILD = r"""
import json, resource, sys, time
import gymnasium as gym, numpy as np, schedgym
from schedgym import agents
from schedgym.envs.deadline_welfare.memory import estimate_mb
kw, name, seed = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])
def play(env, agent):
    obs, _ = env.reset(seed=seed)
    done = False
    while not done:
        obs, _, done, _, _ = env.step(agent.predict(obs, deterministic=True)[0])
small = gym.make("schedgym/DeadlineWelfare-v0", action_mode=kw["action_mode"],
                 obs_mode=kw["obs_mode"], scenario=kw.get("scenario", "paper-default"))
play(small, agents.make(name, small))  # loads (or compiles) every kernel first
del small
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
env = gym.make("schedgym/DeadlineWelfare-v0", **kw).unwrapped
t0 = time.process_time()
obs, _ = env.reset(seed=seed)
t1 = time.process_time()
agent = agents.make(name, env)
t2 = time.process_time()
done, n, welfare = False, 0, 0.0
while not done:
    obs, r, done, _, _ = env.step(agent.predict(obs, deterministic=True)[0])
    n += 1
    welfare += r
t3 = time.process_time()
print(json.dumps({"units": env.instance.n_units, "jobs": n, "reset_s": t1 - t0,
                  "agent_s": t2 - t1, "ms_per_job": 1000 * (t3 - t2) / max(n, 1),
                  "episode_s": t3 - t0, "welfare": welfare,
                  "estimate_mb": estimate_mb(env.memory_parts()),
                  "base_rss_mb": base,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def run_case(kw: dict[str, Any], agent: str, seed: int = 0,
             timeout: float = 1800.0) -> dict[str, Any]:
    """One episode of ``agent`` on ``gym.make(ENV_ID, **kw)`` in a fresh process: its figures
    (module docstring) as a dict."""
    kw = {"action_mode": PLAY_MODE.get(agent, "dispatch"), **kw}
    return run_child(_CHILD, kw, agent, seed, timeout)


def run_child(code: str, kw: dict[str, Any], name: str, seed: int = 0,
              timeout: float = 3600.0) -> dict[str, Any]:
    """Run ``code`` (a child program reading ``argv = [kw as JSON, name, seed]``) in a fresh
    process, with this checkout first on its path; its last stdout line, a JSON object, as a
    dict (the child's last stderr line in the error when it fails)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
         os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code, json.dumps(kw), name, str(seed)],
                         capture_output=True, text=True, timeout=timeout, env=env)
    if out.returncode:
        raise RuntimeError(f"{name} on {kw}: {out.stderr.strip().splitlines()[-1]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log(y) against log(x)."""
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    den = sum((a - mx) ** 2 for a in lx)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True)) / den if den else 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=",".join(SIZES))
    ap.add_argument("--agents", default=",".join(AGENTS))
    ap.add_argument("--jobs", default="fixed", choices=("fixed", "scaled"))
    ap.add_argument("--obs-mode", default="flat", choices=("flat", "entities"))
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    sizes, names = args.sizes.split(","), args.agents.split(",")
    print(f"load {os.getloadavg()[0]:.1f}; obs_mode={args.obs_mode}, jobs={args.jobs}")
    print("| size | agent | units | jobs | ms/job | reset s | agent s | episode s | peak RSS MB "
          "| of it the episode's | estimate MB |\n|---|---|---:|---:|---:|---:|---:|---:|---:|"
          "---:|---:|")
    rows: dict[str, list[tuple[float, float, float]]] = {}
    for size in sizes:
        for name in names:
            kw = {**scale_case(size, args.jobs), "obs_mode": args.obs_mode}
            got = run_case(kw, name, args.seed)
            print(f"| {size} | {name} | {got['units']:,} | {got['jobs']:,} | "
                  f"{got['ms_per_job']:.2f} | {got['reset_s']:.2f} | {got['agent_s']:.2f} | "
                  f"{got['episode_s']:.1f} | {got['peak_rss_mb']:.0f} | "
                  f"{got['peak_rss_mb'] - got['base_rss_mb']:.0f} | "
                  f"{got['estimate_mb']:.0f} |", flush=True)
            if size != "cluster":
                rows.setdefault(name, []).append((got["units"], got["ms_per_job"], max(
                    got["peak_rss_mb"] - got["base_rss_mb"], 1.0)))
    for name, pts in rows.items():
        if len(pts) > 1:
            u = [p[0] for p in pts]
            print(f"{name}: slope in units of ms/job {slope(u, [p[1] for p in pts]):.2f}, "
                  f"of the episode's RSS {slope(u, [p[2] for p in pts]):.2f}")


if __name__ == "__main__":
    main()
