"""Decision time of the GainOverhead-v0 ``myopic-opt`` agent (the exact per-slot optimum).

For each utility family: one paper-default env, ``reset(seed=0)``, the first ``--slots`` slots
played by ``myopic-opt`` (its per-pattern cache included) and by ``drf`` (the reference measured
in the same process). Prints the solves (cache misses), the time per solve, the amortised time
per slot and its ratio to DRF's decision time, and the load average while it ran.

Usage::

    .venv/bin/python benchmarks/bench_myopic_opt.py --slots 300
"""

from __future__ import annotations

import argparse
import os
import time

import gymnasium as gym

import schedgym  # noqa: F401
from schedgym import agents
from schedgym.envs.gain_overhead import ENV_ID


def _decide(name: str, utility: str, slots: int) -> tuple[float, object]:
    """Seconds spent in ``predict`` over ``slots`` slots, and the agent."""
    env = gym.make(ENV_ID, utility=utility, horizon=slots)
    agent = agents.make(name, env)
    obs, _ = env.reset(seed=0)
    spent = 0.0
    for _ in range(slots):
        t0 = time.perf_counter()
        action, _ = agent.predict(obs)
        spent += time.perf_counter() - t0
        obs, *_ = env.step(action)
    return spent, agent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", default="linear,mixed")
    ap.add_argument("--slots", type=int, default=300)
    args = ap.parse_args()
    _decide("myopic-opt", "linear", 2)  # warm-up: scipy import
    print(f"{'utility':<10}{'solves':>7}{'ms/solve':>10}{'ms/slot':>9}{'x DRF':>9}{'load':>6}")
    for fam in args.families.split(","):
        spent, agent = _decide("myopic-opt", fam, args.slots)
        ref, _ = _decide("drf", fam, args.slots)
        solves = max(agent.n_solves, 1)  # type: ignore[attr-defined]
        print(f"{fam:<10}{solves:>7}{1e3 * spent / solves:>10.1f}"
              f"{1e3 * spent / args.slots:>9.1f}{spent / ref:>9.0f}{os.getloadavg()[0]:>6.1f}")


if __name__ == "__main__":
    main()
