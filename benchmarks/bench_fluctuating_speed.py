"""Performance figures of FluctuatingSpeed-v0 and its agents (ESDP decision time per slot).

Usage::

    .venv/bin/python benchmarks/bench_fluctuating_speed.py            # paper-default, T = 2000
    .venv/bin/python benchmarks/bench_fluctuating_speed.py --horizon 8000 --sizes

Prints, for one full episode per agent: mean / median / p95 / max decision time per slot, and
for ESDP the DP size (|E|, capacity states prod_k (c_k + 1), budget levels actually solved vs the
paper's eta m + 1, states per edge), plus env steps/s with and without the per-step oracle.
``--sizes`` adds ESDP's time at the graph sizes of the paper's Fig. 5.
"""

from __future__ import annotations

import argparse
import platform
import time

import gymnasium as gym
import numpy as np

import schedgym  # noqa: F401
from schedgym import agents

ENV_ID = "schedgym/FluctuatingSpeed-v0"


def run(name: str, horizon: int, seed: int = 0, **env_kw) -> dict:
    env = gym.make(ENV_ID, horizon=horizon, invalid_action="raise", **env_kw)
    ag = agents.make(name, env)
    obs, _ = env.reset(seed=seed)
    times, levels, paper_levels, states = [], [], [], []
    start = True
    while True:
        t0 = time.perf_counter()
        a, _ = ag.predict(obs, episode_start=np.array([start]))
        times.append(time.perf_counter() - t0)
        start = False
        if name.startswith("esdp"):
            levels.append(ag.last["budget_levels"])
            paper_levels.append(ag.last["eta"] * ag.m + 1)
            states.append(ag.last["dp_states"])
        obs, _, _, trunc, _ = env.step(a)
        if trunc:
            break
    ms = 1e3 * np.asarray(times)
    out = {"agent": name, "mean": ms.mean(), "median": np.median(ms),
           "p95": np.percentile(ms, 95), "max": ms.max(), "last100": ms[-100:].mean()}
    if levels:
        inst = env.unwrapped.instance
        out.update(E=inst.n_edges, caps=inst.capacities.tolist(),
                   cap_states=int(np.prod(inst.capacities + 1)),
                   levels_mean=float(np.mean(levels)), levels_max=int(np.max(levels)),
                   paper_levels_max=int(np.max(paper_levels)),
                   states_max=int(np.max(states)))
    return out


def env_speed(horizon: int, compute_oracle: bool) -> float:
    env = gym.make(ENV_ID, horizon=horizon, compute_oracle=compute_oracle)
    rng = np.random.default_rng(0)
    acts = rng.integers(0, 2, size=(horizon, env.action_space.n)).astype(np.int8)
    env.reset(seed=0)
    t0 = time.perf_counter()
    for a in acts:
        env.step(a)
    return horizon / (time.perf_counter() - t0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--horizon", type=int, default=2000)
    p.add_argument("--agents", default="esdp,esdp-aa,hauf,lcf,lwtf,oracle")
    p.add_argument("--sizes", action="store_true", help="ESDP at Fig. 5 graph sizes")
    args = p.parse_args()
    print(f"machine: {platform.processor() or platform.machine()}, python "
          f"{platform.python_version()}, numpy {np.__version__}; paper-default instance_seed=0, "
          f"episode seed 0, T={args.horizon}")
    print(f"{'agent':8s} {'mean ms':>8s} {'median':>8s} {'p95':>8s} {'max':>8s} "
          f"{'last100':>8s}")
    esdp = None
    for name in args.agents.split(","):
        r = run(name, args.horizon)
        print(f"{name:8s} {r['mean']:8.3f} {r['median']:8.3f} {r['p95']:8.3f} {r['max']:8.3f} "
              f"{r['last100']:8.3f}")
        if name == "esdp":
            esdp = r
    if esdp:
        print(f"ESDP DP size: |E|={esdp['E']}, c={esdp['caps']} -> {esdp['cap_states']} capacity "
              f"states; budget levels solved mean {esdp['levels_mean']:.0f}, max "
              f"{esdp['levels_max']} (paper's eta*m+1 up to {esdp['paper_levels_max']}); "
              f"max {esdp['states_max']} states per edge "
              f"({esdp['states_max'] * esdp['E']} cell updates per slot)")
    for co in (True, False):
        print(f"env steps/s (random actions, compute_oracle={co}): "
              f"{env_speed(args.horizon, co):,.0f}")
    if args.sizes:
        for L, R in ((4, 20), (8, 40), (12, 60), (16, 80)):
            r = run("esdp", args.horizon, n_types=L, n_instances=R)
            print(f"ESDP |L|={L:2d} |R|={R:2d}: |E|={r['E']:3d} c={r['caps']} mean "
                  f"{r['mean']:.2f} ms/slot, last100 {r['last100']:.2f} ms, max budget levels "
                  f"{r['levels_max']}")


if __name__ == "__main__":
    main()
