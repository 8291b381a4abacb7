"""FluctuatingSpeed-v0 at growing sizes: ESDP's exact dynamic program against the paper's stated
complexity, and a whole-cluster episode of every other classical agent; each case in a fresh
process.

Sizes (:func:`scale_case`): ``Kx`` = ``K`` times the paper-default servers (``n_instances = 40
K``, 8 ports, edge probability 0.1: about ``3.3 K`` channels... ``32 K``), and ``cluster``: every
node of the shipped Alibaba trace over its test split (``scenario="alibaba-gpu-2023",
n_instances="all", split="test"``: 1,523 servers, 1,216 channels, 1,489 slots of 10 min).

Usage::

    python benchmarks/fs_scale.py esdp                   # ESDP's DP at 1x, 4x, 16x, 64x, cluster
    python benchmarks/fs_scale.py esdp --sizes 1x,4x --variant esdp-aa --form checkpointed
    python benchmarks/fs_scale.py agents                 # one whole-cluster episode per agent
    python benchmarks/fs_scale.py agents --sizes 1x,cluster --agents hauf,oracle
    python benchmarks/fs_scale.py agents --every-allowed-node   # cluster, degree_cap=None
    python benchmarks/fs_scale.py probe --agent esdp-aa --slots 700   # CPU s every 100 slots

``esdp``: one decision at the worst slot of the episode, ``t = T``, with every channel
explored and its empirical mean drawn in [0, 1] (so every ``theta_e`` is as large as it gets and
the budget range ``S`` is the largest of the episode): CPU seconds of the decision (after a
warm-up that loads the compiled kernels), the DP's form (``full``: every back-pointer;
``checkpointed``: rebuilt by recomputation), its cells ``|E| (S + 1) prod_k (c_k + 1)`` and the
paper's ``|E| |S(t)| prod_k (c_k + 1)`` with ``|S(t)| = eta m + 1`` (spec esdp §3.5), the
estimate of its memory and the process's peak RSS above its peak before the decision. A size
that ESDP refuses prints its one-line ``DPTooLargeError``.

``agents``: CPU seconds of one whole episode after ``reset`` (agent construction included),
ms per slot, and the process's peak RSS (Python, numpy and numba included).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # its sibling, also when imported
from dw_scale import run_child, slope  # noqa: E402  (the same child runner and log-log slope)

ENV_ID = "schedgym/FluctuatingSpeed-v0"
AGENTS = ("hauf", "lcf", "lwtf", "greedy-index", "oracle", "random", "esdp", "esdp-aa")
SIZES = ("1x", "4x", "16x", "64x", "cluster")
#: Every node of the shipped trace, over its test split (1,489 slots of 10 min).
CLUSTER: dict[str, Any] = {"scenario": "alibaba-gpu-2023", "n_instances": "all",
                           "split": "test"}


def scale_case(size: str) -> dict[str, Any]:
    """``gym.make`` keyword arguments of a size: ``"cluster"`` (:data:`CLUSTER`) or ``"Kx"``,
    ``K`` times the paper-default servers (``n_instances = 40 K``; the channels grow as
    ``K``)."""
    if size == "cluster":
        return dict(CLUSTER)
    if not size.endswith("x") or not size[:-1].isdigit() or int(size[:-1]) < 1:
        raise ValueError(f"size={size!r} is invalid: must be 'cluster' or 'Kx' with K >= 1")
    return {"n_instances": 40 * int(size[:-1])}


_ESDP = r"""
import json, math, resource, sys, time
import gymnasium as gym, numpy as np, schedgym
from schedgym import agents
from schedgym.agents.esdp import p4_memory
from schedgym.core.knapsack import DPTooLargeError
kw, variant, seed = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])
form = kw.pop("dp_form", "auto")
def worst_stats(ag, rng):
    n = np.full(ag.n_edges, 50.0)
    return {"n": n, "sum": n * rng.random(ag.n_edges)}
small = gym.make("schedgym/FluctuatingSpeed-v0", compute_oracle=False)
warm = agents.make(variant, small)
warm.solve_p4(worst_stats(warm, np.random.default_rng(0)), warm.horizon)
warm2 = agents.make(variant, small, dp_form="checkpointed")
warm2.solve_p4(worst_stats(warm2, np.random.default_rng(0)), warm2.horizon)
env = gym.make("schedgym/FluctuatingSpeed-v0", compute_oracle=False, **kw).unwrapped
inst = env.instance
out = {"edges": inst.n_edges, "states": int(np.prod(inst.capacities + 1)), "T": env.horizon}
try:
    ag = agents.make(variant, env, dp_form=form)
except DPTooLargeError as err:
    print(json.dumps({**out, "refused": str(err)})); sys.exit(0)
stats = worst_stats(ag, np.random.default_rng(seed))
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t0 = time.process_time()
ag.solve_p4(stats, env.horizon)
dt = time.process_time() - t0
last, E, n_c = ag.last, inst.n_edges, out["states"]
S1 = last["budget_levels"]
print(json.dumps({**out, "m": ag.m, "eta": last["eta"], "levels": S1,
                  "paper_levels": last["eta"] * ag.m + 1, "form": last["dp_form"],
                  "cells": E * S1 * n_c, "paper_cells": E * (last["eta"] * ag.m + 1) * n_c,
                  "decision_s": dt, "estimate_mb": p4_memory(E, n_c, S1)[0] / 2**20,
                  "full_mb": (8 * n_c * S1 + E * n_c * S1) / 2**20,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - base}))
"""

_EPISODE = r"""
import json, resource, sys, time
import gymnasium as gym, numpy as np, schedgym
from schedgym import agents
kw, name, seed = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])
small = gym.make("schedgym/FluctuatingSpeed-v0", horizon=20)
a = agents.make(name, small)
obs, _ = small.reset(seed=0)
for _ in range(20):
    obs, *_ = small.step(a.predict(obs, deterministic=True)[0])
env = gym.make("schedgym/FluctuatingSpeed-v0", **kw).unwrapped
t0 = time.process_time()
obs, _ = env.reset(seed=seed)
agent = agents.make(name, env)
done, n, total = False, 0, 0.0
while not done:
    obs, r, _, done, info = env.step(agent.predict(obs, deterministic=True)[0])
    n += 1
    total += r
dt = time.process_time() - t0
print(json.dumps({"edges": env.instance.n_edges, "servers": env.instance.n_instances,
                  "slots": n, "episode_s": dt, "ms_per_slot": 1000 * dt / n, "reward": total,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


_PROBE = r"""
import json, resource, sys, time
import gymnasium as gym, schedgym
from schedgym import agents
kw, name, seed = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])
slots, every = kw.pop("slots"), kw.pop("every")
env = gym.make("schedgym/FluctuatingSpeed-v0", **kw).unwrapped
t0 = time.process_time()
obs, _ = env.reset(seed=seed)
ag = agents.make(name, env)
for step in range(min(slots, env.horizon)):
    obs, r, _, done, info = env.step(ag.predict(obs, deterministic=True)[0])
    if (step + 1) % every == 0 or done or step + 1 == slots:
        print(step + 1, "%.1f" % (time.process_time() - t0), ag.last.get("budget_levels"),
              ag.last.get("dp_form"),
              "%.0f MB" % (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
              flush=True)
"""


def probe(size: str, name: str, slots: int, every: int, seed: int) -> None:
    """Play ``slots`` slots of ``name`` at ``size``, printing every ``every`` slots: slot, CPU
    seconds since ``reset``, the DP's budget levels and form (ESDP), the peak RSS."""
    kw = {**scale_case(size), "slots": slots, "every": every}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
         os.environ.get("PYTHONPATH", "")])}
    subprocess.run([sys.executable, "-c", _PROBE, json.dumps(kw), name, str(seed)], env=env,
                   check=True)



def esdp_table(sizes: list[str], variant: str, seed: int, form: str = "auto") -> None:
    """Print the ESDP table (module docstring) and the growth exponents in ``|E|``."""
    print("| size | |E| | states | T | levels S+1 | paper's eta m + 1 | form | cells | "
          "decision CPU s | ns per cell | DP estimate MB | full form MB | RSS above MB |\n"
          "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    pts: list[tuple[float, float, float]] = []
    for size in sizes:
        g = run_child(_ESDP, {**scale_case(size), "dp_form": form}, variant, seed)
        if "refused" in g:
            print(f"| {size} | {g['edges']:,} | {g['states']} | {g['T']} | refused: "
                  f"{g['refused']} |")
            continue
        print(f"| {size} | {g['edges']:,} | {g['states']} | {g['T']} | {g['levels']:,} | "
              f"{g['paper_levels']:,} | {g['form']} | {g['cells']:.3g} | "
              f"{g['decision_s']:.3f} | {1e9 * g['decision_s'] / g['cells']:.2f} | "
              f"{g['estimate_mb']:,.1f} | {g['full_mb']:,.1f} | {g['rss_mb']:,.1f} |",
              flush=True)
        if size != "cluster":
            pts.append((g["edges"], g["decision_s"], max(g["rss_mb"], 1.0)))
    if len(pts) > 1:
        e, t, m = zip(*pts, strict=True)
        print(f"\ngrowth exponent in |E|: decision time {slope(list(e), list(t)):.2f}, "
              f"RSS {slope(list(e), list(m)):.2f}")


def agents_table(sizes: list[str], names: list[str], seed: int,
                 extra: dict[str, Any] | None = None) -> None:
    """Print one episode's figures per (size, agent); ``extra`` adds ``gym.make`` keywords to
    the ``cluster`` size (e.g. ``degree_cap=None``)."""
    print("| size | agent | servers | |E| | slots | episode CPU s | ms/slot | peak RSS MB |\n"
          "|---|---|---:|---:|---:|---:|---:|---:|")
    for size in sizes:
        for name in names:
            kw = {**scale_case(size), **(extra or {})} if size == "cluster" else \
                scale_case(size)
            g = run_child(_EPISODE, kw, name, seed)
            print(f"| {size} | {name} | {g['servers']:,} | {g['edges']:,} | {g['slots']:,} | "
                  f"{g['episode_s']:.1f} | {g['ms_per_slot']:.2f} | {g['peak_rss_mb']:,.0f} |",
                  flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("esdp", "agents", "probe"))
    ap.add_argument("--agent", default="esdp-aa", help="probe: the agent")
    ap.add_argument("--slots", type=int, default=700, help="probe: slots to play")
    ap.add_argument("--every", type=int, default=100, help="probe: print every this many")
    ap.add_argument("--sizes", default=None)
    ap.add_argument("--agents", default=",".join(a for a in AGENTS if not a.startswith("esdp")))
    ap.add_argument("--variant", default="esdp", choices=("esdp", "esdp-aa"))
    ap.add_argument("--form", default="auto", choices=("auto", "full", "checkpointed"),
                    help="ESDP's DP form (esdp: dp_form)")
    ap.add_argument("--every-allowed-node", action="store_true",
                    help="agents: the cluster with degree_cap=None (every allowed node)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print(f"load {os.getloadavg()[0]:.1f}")
    if args.what == "probe":
        probe(args.sizes or "cluster", args.agent, args.slots, args.every, args.seed)
    elif args.what == "esdp":
        esdp_table((args.sizes or ",".join(SIZES)).split(","), args.variant, args.seed,
                   args.form)
    else:
        agents_table((args.sizes or "cluster").split(","), args.agents.split(","), args.seed,
                     {"degree_cap": None} if args.every_allowed_node else None)


if __name__ == "__main__":
    main()
