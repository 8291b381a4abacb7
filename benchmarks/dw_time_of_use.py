"""Room above ``myopic-welfare`` on DeadlineWelfare-v0: time-of-use prices, online and clairvoyant.

A probe, not an agent of the roster. Each job still takes its own best response (the
``pricing`` decoder's ``best_response``, played through ``action_mode="dispatch"``), but against
a price per mesh unit ``lam * v * D(r, t) / C(r, t)``, where ``D`` is the workload that jobs
arriving in later slots are expected to want on that unit (each job's workload spread evenly
over its allowed units):

- ``online``: ``D`` averaged over ``--futures`` synthetic episodes drawn from the scenario's own
  job distribution (the env's job sampler with seeds 10**9 + k; never the episode's real jobs);
- ``clairvoyant``: ``D`` from the episode's real later jobs (an upper reference for this rule).

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

import schedgym  # noqa: F401  (registers the envs)
from schedgym.envs.deadline_welfare.actions import best_response

LAMS = (0.0, 0.03, 0.1, 0.3, 1.0)


def shares(jobs: Any) -> np.ndarray:
    """``(N, R, T)``: each job's workload spread evenly over its allowed units."""
    m = jobs.mask
    per_unit = jobs.workload / np.maximum(m.sum(axis=(1, 2)), 1)
    return np.where(m, per_unit[:, None, None], 0.0)


def expected_later(env: Any, futures: int) -> np.ndarray:
    """``(T + 1, R, T)``: row ``s`` is the expected demand of the jobs arriving after slot ``s``,
    averaged over ``futures`` synthetic episodes of the env's job distribution."""
    u = env.unwrapped
    acc = np.zeros((u.instance.horizon + 1, *u.instance.capacity.shape))
    for k in range(futures):
        jobs = u._sample_jobs(10**9 + k)
        for n, d in enumerate(shares(jobs)):
            acc[: jobs.arrival[n]] += d
    return acc / futures


def episode(env: Any, seed: int, lam: float, later: np.ndarray | None) -> float:
    """Welfare of one episode; ``later`` as :func:`expected_later`, or None (clairvoyant)."""
    u = env.unwrapped
    env.reset(seed=seed)
    jobs, cap = u.jobs, u.instance.capacity
    real = shares(jobs)
    total = 0.0
    for n in range(jobs.n_jobs):
        m = jobs.mask[n]
        demand = later[jobs.arrival[n]] if later is not None else real[n + 1:].sum(axis=0)
        price = lam * u.bounds[1] * demand[m] / cap[m]
        room = np.maximum(0.0, np.minimum(jobs.capability[n][m], cap[m] - u.usage[m]))
        x = np.zeros(m.shape)
        x[m] = best_response(u.instance.family_code, jobs.coef[n][m], jobs.weight[n][m],
                             cap[m], room, price, float(jobs.workload[n]))
        total += float(env.step(u.encode_action(x))[1])
    return total


def seeds(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instance-seeds", default="0-19")
    ap.add_argument("--seeds", default="0-4")
    ap.add_argument("--futures", type=int, default=30)
    args = ap.parse_args()
    out: dict[tuple[str, float], list[float]] = {}
    for i in seeds(args.instance_seeds):
        env = gym.make("schedgym/DeadlineWelfare-v0", scenario="congested", utility="linear",
                       action_mode="dispatch", instance_seed=i)
        later = expected_later(env, args.futures)
        for s in seeds(args.seeds):
            for lam in LAMS:
                for kind, table in (("online", later), ("clairvoyant", None)):
                    if lam == 0.0 and kind == "clairvoyant":
                        continue
                    out.setdefault((kind, lam), []).append(episode(env, s, lam, table))
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
