"""How much room a pricing policy has on DeadlineWelfare-v0: constant ``pricing`` actions.

Plays every action of a small grid, the same for every job, on the training instances of the
generalisation track (docs/learned-vs-classical.md, section 9: ``congested``, linear
utilities, instance seeds 0-19 x episode seeds 0-4 by default) and prints each one's mean
welfare per episode and its paired ratio to the zero action (``myopic-welfare``'s decisions),
mean +- 95 % normal half-width over the episodes. A constant action that beat the zero action
would be a classical rule to add to the roster; none does on the default grid.

Usage: ``python benchmarks/dw_constant_prices.py [--instances N] [--episodes M]``.
"""

from __future__ import annotations

import argparse
import itertools

import gymnasium as gym
import numpy as np

from schedgym import agents
from schedgym.train.runner import run_episode

#: Grid per action entry: reserve price and congestion slope (fractions of v: p = v max(0, a)),
#: and the served fraction's entry (q = min(1, 1 + a)).
RESERVE = (0.0, 0.01, 0.03, 0.1)
SLOPE = (0.0, 0.03, 0.1, 0.3, 1.0)
SERVED = (0.0, -0.1)


def welfare(action: tuple[float, float, float], instances: int, episodes: int) -> np.ndarray:
    """Welfare of every (instance seed, episode seed) episode under the constant ``action``
    (the ``fixed-price`` agent with ``price=action``)."""
    out = []
    for i in range(instances):
        env = gym.make("schedgym/DeadlineWelfare-v0", scenario="congested", utility="linear",
                       action_mode="pricing", instance_seed=i)
        agent = agents.make("fixed-price", env, price=action)
        out += [run_episode(env, agent, s).metrics["reward"] for s in range(episodes)]
    return np.array(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", type=int, default=20, help="instance seeds 0..N-1")
    ap.add_argument("--episodes", type=int, default=5, help="episode seeds 0..M-1")
    args = ap.parse_args()
    base = welfare((0.0, 0.0, 0.0), args.instances, args.episodes)
    print(f"zero action: welfare {base.mean():,.1f} per episode ({base.size} episodes)")
    print(f"{'reserve':>8} {'slope':>6} {'served':>7} {'welfare':>9} {'/ zero':>8} {'+-':>7}")
    for action in itertools.product(RESERVE, SLOPE, SERVED):
        if action == (0.0, 0.0, 0.0):
            continue
        ratio = welfare(action, args.instances, args.episodes) / base
        half = 1.96 * ratio.std(ddof=1) / np.sqrt(ratio.size)
        print(f"{action[0]:>8} {action[1]:>6} {action[2]:>7} {(ratio * base).mean():>9,.1f} "
              f"{ratio.mean():>8.4f} {half:>7.4f}", flush=True)


if __name__ == "__main__":
    main()
