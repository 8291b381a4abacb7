"""GainOverhead-v0's world memory per channel at growing sizes, one fresh process per size:
the direct check beside ``schedgym bench scale``'s fitted world-MB exponent.

Each size ``K`` (``n_instances = 128 K``, the paper's 10 job types) runs in its own process:
the paper-default env played first with the same agent (the bench's reference, which loads the
kernels), then the peak RSS counter reset, then ``gym.make`` at the size, the agent, a reset and
21 steps; **world MB** is the peak RSS of those above the resident size just before
``gym.make`` (Linux ``VmRSS``/``VmHWM``, in MiB; the bench's own measurement of a case), and
bytes per edge is that over |E|. The exponents are least-squares slopes of log(world MB)
against log(|E|) over the sizes whose world is at least the bench's ``MIN_WORLD_MB`` (below it, a
case fits in heap that the reference freed) and over the sizes from 16x up.

Usage::

    python benchmarks/go_memory.py                      # drf at 4x, 16x, 32x, 64x, 128x
    python benchmarks/go_memory.py --agent ogasched --sizes 16,64
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dw_scale import run_child, slope  # noqa: E402  (benchmarks/ is a folder of scripts)

from schedgym.train.bench_scale import MIN_WORLD_MB  # noqa: E402

_CHILD = r"""
import json, sys
import gymnasium as gym
from schedgym import agents
from schedgym.train import bench_scale as B
kw, name, seed = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])
env_id = "schedgym/GainOverhead-v0"
B._warm(env_id, {}, name, 20, 3.0, seed)
B._reset_peak()
base = B._rss_now_mb()
env = gym.make(env_id, **kw)
obs, _ = env.reset(seed=seed)
agent = agents.make(name, env)
for _ in range(21):
    obs, *_ = env.step(agent.predict(obs, deterministic=True)[0])
print(json.dumps({"edges": env.unwrapped.instance.n_edges,
                  "world_mb": B._peak_rss_mb() - base}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agent", default="drf")
    ap.add_argument("--sizes", default="4,16,32,64,128",
                    help="comma-separated K: n_instances = 128 K")
    args = ap.parse_args()
    try:
        sizes = [int(k) for k in args.sizes.split(",")]
    except ValueError:
        sys.exit(f"--sizes={args.sizes!r} is invalid: must be comma-separated integers >= 1")
    if not sizes or min(sizes) < 1:
        sys.exit(f"--sizes={args.sizes!r} is invalid: must be comma-separated integers >= 1")
    rows = []
    print(f"{'K':>4} {'edges':>8} {'world MB':>9} {'B / edge':>9}")
    for k in sizes:
        r = run_child(_CHILD, {"n_instances": 128 * k}, args.agent)
        rows.append((k, r["edges"], r["world_mb"]))
        print(f"{k:>4} {r['edges']:>8,} {r['world_mb']:>9.2f} "
              f"{2**20 * r['world_mb'] / r['edges']:>9,.0f}", flush=True)
    fitted = [r for r in rows if r[2] >= MIN_WORLD_MB]
    for label, part in ((f"sizes with at least {MIN_WORLD_MB:g} MB", fitted),
                        ("16x and up", [r for r in fitted if r[0] >= 16])):
        if len(part) >= 2:
            print(f"exponent, {label}: "
                  f"{slope([e for _, e, _ in part], [w for _, _, w in part]):.2f}")


if __name__ == "__main__":
    main()
