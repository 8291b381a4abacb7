"""Room above ``time-of-use`` on DeadlineWelfare-v0 for online per-job price rules.

``time-of-use`` (:mod:`schedgym.agents.baselines.time_of_use`) prices unit ``(r, t)`` at
``lam * v * D(r, t) / C(r, t)`` (``D``: the workload later jobs are expected to want there) and
gives each job its exact best response; its default ``lam`` is the best of this script's grid
on the training instances (the default arguments). The ``demand_price`` action mode lets a
learner choose ``lam`` job by job. How much is there to gain above the default? This script
plays, on the same episodes:

- every constant ``lam`` of a grid (the rule a constant action plays);
- the hindsight best constant ``lam`` of each episode (the grid's best for that episode, known
  only after playing them all): an upper reference for a policy that picks one ``lam`` per
  episode, which no online policy reaches;
- two other shapes of the price, each at the same ``lam`` grid: ``room`` (``D`` against the
  unit's remaining capacity ``C - usage`` instead of ``C``, so booked units cost more) and
  ``squared`` (``(D / C)^2``, steeper where later demand exceeds capacity).

Prints the paired per-episode ratio of each to ``time-of-use`` at its default ``lam`` (mean +-
95 % normal half-width over the episodes).

Usage: ``python benchmarks/dw_headroom.py [--instance-seeds 0-19] [--seeds 0-4]``
(``congested`` scenario, linear utilities: the generalisation track of
docs/learned-vs-classical.md, section 9).
"""

from __future__ import annotations

import argparse
import inspect
from typing import Any

import gymnasium as gym
import numpy as np

from schedgym.agents.baselines.time_of_use import TimeOfUse
from schedgym.envs.deadline_welfare.dynamics import ObservedJob
from schedgym.train.runner import run_episode
from schedgym.train.stats import parse_seeds

LAMS = (0.05, 0.1, 0.15, 0.2, 0.3, 0.5)
SHAPES = ("ratio", "room", "squared")
#: ``time-of-use``'s default ``lam``, the reference of every ratio (one of ``LAMS``).
DEFAULT = float(inspect.signature(TimeOfUse).parameters["lam"].default)


class ShapedPrice(TimeOfUse):
    """``time-of-use`` with another shape of the unit price (see the module docstring)."""

    def __init__(self, env: Any, lam: float, shape: str) -> None:
        super().__init__(env, lam=lam)
        self.shape = shape

    def prices(self, job: ObservedJob) -> np.ndarray:
        """This shape's unit prices ``(m,)`` on the job's units."""
        if self.shape == "ratio":
            return super().prices(job)
        demand = self.later[job.arrival, job.units]
        if self.shape == "room":
            scale = demand / np.maximum(job.capacity - job.usage, 1e-9)
        else:
            scale = (demand / job.capacity) ** 2
        return self.lam * job.bounds[1] * scale


def play_all(instance_seeds: list[int], seeds: list[int]) -> dict[tuple[str, float], np.ndarray]:
    """Welfare per episode, ``{(shape, lam): (episodes,)}``, on every instance x seed."""
    out: dict[tuple[str, float], list[float]] = {}
    for i in instance_seeds:
        env = gym.make("schedgym/DeadlineWelfare-v0", scenario="congested", utility="linear",
                       action_mode="dispatch", instance_seed=i)
        players = {(shape, lam): ShapedPrice(env, lam, shape) for shape in SHAPES
                   for lam in LAMS}
        for s in seeds:
            for key, player in players.items():
                out.setdefault(key, []).append(run_episode(env, player, s).metrics["reward"])
    return {k: np.array(v) for k, v in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instance-seeds", default="0-19")
    ap.add_argument("--seeds", default="0-4")
    args = ap.parse_args()
    welfare = play_all(parse_seeds(args.instance_seeds), parse_seeds(args.seeds))
    base = welfare[("ratio", DEFAULT)]
    print(f"time-of-use, lam = {DEFAULT}: {base.mean():,.1f} per episode ({base.size} episodes)")
    print(f"{'shape':>8} {'lam':>5} {'/ time-of-use':>14} {'+-':>7}")

    def show(name: str, lam: str, r: np.ndarray) -> None:
        half = 1.96 * r.std(ddof=1) / np.sqrt(r.size)
        print(f"{name:>8} {lam:>5} {r.mean():>14.4f} {half:>7.4f}")

    for (shape, lam), w in welfare.items():
        show(shape, str(lam), w / base)
    best = np.max([welfare[("ratio", lam)] for lam in LAMS], axis=0)
    show("best lam", "(h)", best / base)


if __name__ == "__main__":
    main()
