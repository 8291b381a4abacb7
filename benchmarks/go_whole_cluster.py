"""Every classical GainOverhead-v0 agent on a whole-cluster episode of the shipped trace.

One fresh process per agent (so that each peak RSS is its own) plays one episode of
``scenario="alibaba-gpu-2023", n_instances="all"`` (1,523 nodes; 1,440 slots of 30 minutes
unless ``--horizon``/``--split`` say otherwise) and prints one markdown row: the build time
of the env and the agent, ms per decision (``agent.predict``) and per env step, the episode's
total wall and CPU seconds, its reward and the process's peak RSS (MB = 2**20 bytes).

Usage: ``python benchmarks/go_whole_cluster.py [--agents a,b,...] [--horizon T]
[--split train|test] [--utility linear|mixed|...] [--seed S]``
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

AGENTS = ("ogasched", "drf", "fairness", "binpacking", "spreading", "fixed-price", "random",
          "myopic-opt")

_CHILD = """
import json, resource, sys, time
t0, c0 = time.perf_counter(), time.process_time()
import gymnasium as gym
import schedgym
from schedgym import agents
from schedgym.agents.registry import play_kwargs
name, kw, seed = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
env = gym.make("schedgym/GainOverhead-v0", scenario="alibaba-gpu-2023", n_instances="all",
               **kw, **play_kwargs(name, "schedgym/GainOverhead-v0"))
agent = agents.make(name, env)
obs, _ = env.reset(seed=seed)
built = time.perf_counter() - t0
decide = step = total = 0.0
slots, done = 0, False
e0, ec0 = time.perf_counter(), time.process_time()
while not done:
    a = time.perf_counter()
    action = agent.predict(obs)[0]
    b = time.perf_counter()
    obs, reward, terminated, truncated, _ = env.step(action)
    step += time.perf_counter() - b
    decide += b - a
    total += reward
    slots += 1
    done = terminated or truncated
inst = env.unwrapped.instance
print(json.dumps({"agent": name, "R": inst.n_instances, "L": inst.n_types, "E": inst.n_edges,
                  "K": inst.n_resources, "T": slots, "built_s": built,
                  "decide_ms": 1e3 * decide / slots, "step_ms": 1e3 * step / slots,
                  "episode_s": time.perf_counter() - e0,
                  "episode_cpu_s": time.process_time() - ec0, "reward": total,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def run(name: str, kw: dict, seed: int) -> dict:
    """One agent's whole-cluster episode in a fresh process."""
    out = subprocess.run([sys.executable, "-c", _CHILD, name, json.dumps(kw), str(seed)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--agents", default=",".join(AGENTS))
    ap.add_argument("--horizon", type=int, default=None)
    ap.add_argument("--split", default=None, choices=("train", "test"))
    ap.add_argument("--utility", default=None)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    kw = {k: v for k, v in (("horizon", args.horizon), ("split", args.split),
                            ("utility", args.utility)) if v is not None}
    print("| agent | R | E | T | build s | ms/decision | ms/step | episode s (CPU s) | "
          "reward | peak RSS MB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in args.agents.split(","):
        r = run(name, kw, args.seed)
        print(f"| {r['agent']} | {r['R']} | {r['E']} | {r['T']} | {r['built_s']:.1f} | "
              f"{r['decide_ms']:.2f} | {r['step_ms']:.2f} | {r['episode_s']:.1f} "
              f"({r['episode_cpu_s']:.1f}) | {r['reward']:.4g} | {r['rss_mb']:.0f} |",
              flush=True)


if __name__ == "__main__":
    main()
