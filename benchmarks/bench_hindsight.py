"""Wall time of the GainOverhead-v0 hindsight optimum y* (schedgym.envs.gain_overhead.offline).

For each scenario and utility family: one episode's arrival counts (reset(seed=0), full
horizon), then ``solve_hindsight`` timed ``--repeat`` times (the first call's scipy import is
excluded by a warm-up solve). Prints |E|, K, the number of LPs, the certified relative gap
(upper bound - value) / value and the median time.

Usage::

    .venv/bin/python benchmarks/bench_hindsight.py                      # paper-default only
    .venv/bin/python benchmarks/bench_hindsight.py --scenarios paper-default,large-scale
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import gymnasium as gym
import numpy as np

import schedgym  # noqa: F401
from schedgym.envs.gain_overhead import GainOverheadEnv
from schedgym.envs.gain_overhead.offline import solve_hindsight

FAMILIES = ("linear", "log", "poly", "reciprocal", "mixed")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenarios", default="paper-default")
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"# {platform.processor() or platform.machine()}, python {platform.python_version()}")
    print(f"{'scenario':<15}{'utility':<12}{'|E|':>6}{'K':>3}{'T':>7}{'LPs':>5}"
          f"{'rel. gap':>10}{'median s':>10}")
    warm = True
    for scen in args.scenarios.split(","):
        for fam in args.families.split(","):
            env = gym.make("schedgym/GainOverhead-v0", scenario=scen, utility=fam)
            env.reset(seed=0)
            u = env.unwrapped
            assert isinstance(u, GainOverheadEnv)
            counts = np.asarray(u.arrivals).sum(axis=0)
            if warm:  # import scipy outside the timing
                solve_hindsight(u.instance, counts)
                warm = False
            times = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                sol = solve_hindsight(u.instance, counts)
                times.append(time.perf_counter() - t0)
            gap = (sol.upper_bound - sol.value) / abs(sol.value)
            print(f"{scen:<15}{fam:<12}{u.instance.n_edges:>6}{u.instance.n_resources:>3}"
                  f"{u.horizon:>7}{sol.iterations:>5}{gap:>10.1e}"
                  f"{statistics.median(times):>10.3f}", flush=True)
            env.close()


if __name__ == "__main__":
    main()
