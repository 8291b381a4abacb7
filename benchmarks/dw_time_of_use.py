"""Room above ``myopic-welfare`` on DeadlineWelfare-v0: time-of-use prices, online and clairvoyant.

Each job still takes its own best response (the ``pricing`` decoder's ``best_response``, played
through ``action_mode="dispatch"``), but against a price per mesh unit
``lam * v * D(r, t) / C(r, t)``, where ``D`` is the workload that jobs arriving in later slots
want on that unit (each job's workload spread evenly over its allowed units):

- ``online``: the ``time-of-use`` agent (:mod:`schedgym.agents.baselines.time_of_use`), whose
  ``D`` is the mean over synthetic episodes of the scenario's own job distribution;
- ``clairvoyant``: ``D`` from the episode's real later jobs (an upper reference for the rule).

``lam = 0`` is the zero price: each job's myopic welfare maximiser, the decisions of
``myopic-welfare`` and ``fixed-price``. Prints the mean welfare per episode and the paired ratio
to ``lam = 0`` (mean +- 95 % normal half-width over the episodes) for every ``lam``.

Usage: ``python benchmarks/dw_time_of_use.py [--instance-seeds 0-19] [--seeds 0-4]``
(``congested`` scenario, linear utilities, as the generalisation track of
docs/learned-vs-classical.md, section 9).
"""

from __future__ import annotations

import argparse
from typing import Any

import gymnasium as gym
import numpy as np

from schedgym import agents
from schedgym.envs.deadline_welfare.actions import decode_demand_price
from schedgym.envs.deadline_welfare.demand import job_shares
from schedgym.train.runner import run_episode
from schedgym.train.stats import parse_seeds

LAMS = (0.0, 0.03, 0.1, 0.3, 1.0)


def clairvoyant(env: Any, seed: int, lam: float) -> float:
    """Welfare of one episode with ``D`` from the episode's real later jobs."""
    u = env.unwrapped
    env.reset(seed=seed)
    jobs, inst = u.jobs, u.instance
    real = job_shares(jobs)
    total = 0.0
    for n in range(jobs.n_jobs):
        # the demand_price decoder at a = lam, with the real later jobs' demand as D
        x = decode_demand_price(np.array([lam]), inst.family_code, u.bounds[1], jobs.mask[n],
                                jobs.capability[n], jobs.coef[n], jobs.weight[n],
                                inst.capacity, u.usage, float(jobs.workload[n]),
                                real[n + 1:].sum(axis=0))
        total += float(env.step(u.encode_action(x))[1])
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instance-seeds", default="0-19")
    ap.add_argument("--seeds", default="0-4")
    ap.add_argument("--futures", type=int, default=30)
    args = ap.parse_args()
    out: dict[tuple[str, float], list[float]] = {}
    for i in parse_seeds(args.instance_seeds):
        env = gym.make("schedgym/DeadlineWelfare-v0", scenario="congested", utility="linear",
                       action_mode="dispatch", instance_seed=i)
        players = {lam: agents.make("time-of-use", env, lam=lam, futures=args.futures)
                   for lam in LAMS}
        for s in parse_seeds(args.seeds):
            for lam in LAMS:
                played = run_episode(env, players[lam], s).metrics["reward"]
                out.setdefault(("online", lam), []).append(played)
                if lam > 0.0:
                    out.setdefault(("clairvoyant", lam), []).append(clairvoyant(env, s, lam))
    base = np.array(out[("online", 0.0)])
    print(f"zero price (myopic welfare): {base.mean():,.1f} per episode ({base.size} episodes)")
    print(f"{'prices':>12} {'lam':>5} {'welfare':>9} {'/ zero':>8} {'+-':>7}")
    for (kind, lam), w in out.items():
        if lam == 0.0:
            continue
        r = np.array(w) / base
        print(f"{kind:>12} {lam:>5} {np.mean(w):>9,.1f} {r.mean():>8.4f} "
              f"{1.96 * r.std(ddof=1) / np.sqrt(r.size):>7.4f}", flush=True)


if __name__ == "__main__":
    main()
