"""Expected later demand of DeadlineWelfare-v0's mesh: how much workload the jobs that arrive
after a slot are expected to want on each unit.

A job that arrives early may take the units that later jobs, with nowhere else to go, would
have valued more. The workload later jobs are expected to want on unit ``(r, t)`` is the signal
of the ``time-of-use`` agent's prices and of the ``later_demand`` entity feature. It is
estimated from synthetic episodes of the scenario's own job distribution (the env's job
sampler with seeds of the named stream ``time_of_use`` of the instance seed), never from the
episode being played, so whoever reads it stays online. With a job sampler that always returns
the same jobs (a trace scenario's fixed jobs), the estimate is those jobs' own later demand.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from schedgym.core import rng as rngs

#: Synthetic episodes of the estimate, by default.
FUTURES = 30


def job_shares(jobs: Any) -> np.ndarray:
    """``(N, R, T)``: each job's workload spread evenly over its allowed units (0 elsewhere)."""
    m = jobs.mask
    per_unit = jobs.workload / np.maximum(m.sum(axis=(1, 2)), 1)
    return np.where(m, per_unit[:, None, None], 0.0)


def later_demand(sample: Callable[[int], Any], n_units: int, horizon: int,
                 seeds: Sequence[int]) -> np.ndarray:
    """``(T + 1, R T)``: row ``s`` is the mean over the episodes ``sample(seed)`` (``seeds``)
    of the workload shares (:func:`job_shares`) of the jobs arriving after slot ``s``, in
    workload units per mesh unit (unit ``r * T + t``)."""
    acc = np.zeros((horizon + 1, n_units))
    for seed in seeds:
        jobs = sample(int(seed))
        for n, share in enumerate(job_shares(jobs)):
            acc[: int(jobs.arrival[n])] += share.reshape(-1)
    return acc / len(seeds)


def future_seeds(instance_seed: int, futures: int) -> list[int]:
    """The episode seeds of the estimate: ``futures`` 63-bit draws of the named stream
    ``time_of_use`` of ``instance_seed``."""
    gen = rngs.stream(instance_seed, "time_of_use")
    return [int(s) for s in gen.integers(0, 2**63 - 1, size=futures)]
