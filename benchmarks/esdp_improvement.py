"""ESDP's improvement over each baseline from a ``schedgym compare`` run (spec esdp §7, §8 item 20).

Usage::

    .venv/bin/schedgym compare schedgym/FluctuatingSpeed-v0 --scenario paper-headline \\
        --agents esdp,hauf,lcf,lwtf,oracle --seeds 0-4 --out results/esdp-headline
    .venv/bin/python benchmarks/esdp_improvement.py results/esdp-headline/curves.npz

``imp_b(t) = AOU_ESDP(t) / AOU_b(t) - 1`` on the seed-averaged cumulative normalised AOU. The
paper's "up to X%" is read as ``max_t imp_b(t)`` over checkpoints every 100 slots with
``t >= 500``; the value at the last slot is printed too, with the per-seed range.
"""

from __future__ import annotations

import argparse
from collections import defaultdict

import numpy as np

PAPER = {"hauf": 73, "lcf": 36, "lwtf": 28}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("curves", help="curves.npz written by schedgym compare")
    p.add_argument("--reference", default="esdp")
    args = p.parse_args()
    data = np.load(args.curves)
    by: dict[str, list[np.ndarray]] = defaultdict(list)
    # keys are "agent|seed" (older runs) or "agent|instance_seed|seed": every (instance, seed)
    # episode is one sample
    for key in sorted(data.files, key=lambda k: (k.split("|")[0],
                                                 *map(int, k.split("|")[1:]))):
        by[key.split("|")[0]].append(data[key])
    ref = np.stack(by[args.reference])
    T = ref.shape[1]
    checks = np.arange(500, T + 1, 100)
    print(f"T={T}, {ref.shape[0]} seeds; checkpoints t=500..{T} step 100")
    print(f"{'baseline':8s} {'paper':>6s} {'max_t imp':>10s} {'at t':>6s} {'imp(T)':>8s} "
          f"{'per-seed imp(T)':>18s}")
    for name, curves in by.items():
        if name == args.reference:
            continue
        c = np.stack(curves)
        imp = ref.mean(0)[checks - 1] / c.mean(0)[checks - 1] - 1.0
        i = int(np.argmax(imp))
        per_seed = ref[:, -1] / c[:, -1] - 1.0
        paper = f"{PAPER[name]}%" if name in PAPER else "-"
        print(f"{name:8s} {paper:>6s} {100 * imp[i]:9.1f}% {checks[i]:6d} {100 * imp[-1]:7.1f}% "
              f"  [{100 * per_seed.min():.1f}%, {100 * per_seed.max():.1f}%]")


if __name__ == "__main__":
    main()
