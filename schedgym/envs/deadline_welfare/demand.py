"""Expected later demand of DeadlineWelfare-v0's mesh: how much workload the jobs that arrive
after a slot are expected to want on each unit.

A job that arrives early may take the units that later jobs, with nowhere else to go, would
have valued more. The workload later jobs are expected to want on unit ``(r, t)`` is the signal
of the ``time-of-use`` agent's prices and of the ``later_demand`` entity feature. It is
estimated from synthetic episodes of the scenario's own job distribution (the env's job
sampler with seeds of the named stream ``time_of_use`` of the instance seed), never from the
episode being played, so whoever reads it stays online. With a job sampler that always returns
the same jobs (a trace scenario's fixed jobs), the estimate is those jobs' own later demand.
On a trace scenario's test split the sampler's episodes come from the training split instead
(:func:`estimate_sampler`): the trace's past, what a deployment knows, never other days of
the future it is playing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numba
import numpy as np

from schedgym.core import rng as rngs

#: Synthetic episodes of the estimate, by default.
FUTURES = 30


def job_shares(jobs: Any) -> np.ndarray:
    """``(N, R, T)``: each job's workload spread evenly over its allowed units (0 elsewhere);
    the whole-mesh form of what :func:`later_demand` adds up (for small instances and tests)."""
    m = jobs.mask
    per_unit = jobs.workload / np.maximum(m.sum(axis=(1, 2)), 1)
    return np.where(m, per_unit[:, None, None], 0.0)


@numba.njit(cache=True)
def _add_arrivals(arrival: np.ndarray, deadline: np.ndarray, allowed: np.ndarray,
                  workload: np.ndarray, horizon: int, acc: np.ndarray) -> None:
    """Add every job's workload share ``ρ_n / |ℛ_n|`` on each unit of ℛ_n to row ``s_n - 1``
    of ``acc`` ``(T + 1, R T)`` (jobs arriving in slot 0 come after no slot: not counted)."""
    R = allowed.shape[1]
    for n in range(arrival.size):
        s = arrival[n]
        if s == 0:
            continue
        k = 0
        for r in range(R):
            k += allowed[n, r]
        share = workload[n] / max(k * (deadline[n] - s + 1), 1)
        for r in range(R):
            if allowed[n, r]:
                for t in range(s, deadline[n] + 1):
                    acc[s - 1, r * horizon + t] += share


@numba.njit(cache=True)
def _later_rows(acc: np.ndarray, futures: int) -> None:
    """``acc`` (row ``s``: the shares of the jobs arriving in slot ``s + 1``) -> row ``s``: the
    shares of every job arriving after ``s`` (sum of rows ``>= s``), divided by ``futures``."""
    T1, U = acc.shape
    for s in range(T1 - 2, -1, -1):
        for u in range(U):
            acc[s, u] += acc[s + 1, u]
    for s in range(T1):
        for u in range(U):
            acc[s, u] /= futures


def later_demand(sample: Callable[[int], Any], n_units: int, horizon: int,
                 seeds: Sequence[int]) -> np.ndarray:
    """``(T + 1, R T)``: row ``s`` is the mean over the episodes ``sample(seed)`` (``seeds``)
    of the workload shares (:func:`job_shares`) of the jobs arriving after slot ``s``, in
    workload units per mesh unit (unit ``r * T + t``). Each job's share is added once, on its
    own units, to the row of its arrival slot, and the rows are then summed from the last: the
    work is ``Σ_n |ℛ_n|`` per episode plus ``(T + 1) R T`` once, and no per-unit value of the
    jobs is drawn (only their arrival, deadline, locality and workload)."""
    acc = np.zeros((horizon + 1, n_units))
    for seed in seeds:
        jobs = sample(int(seed))
        _add_arrivals(jobs.arrival, jobs.deadline, jobs.allowed, jobs.workload, horizon, acc)
    _later_rows(acc, len(seeds))
    return acc


def estimate_sampler(sample: Callable[[int], Any]) -> Callable[[int], Any]:
    """The job sampler the estimate draws its episodes from: the sampler's own
    ``estimate_sampler()`` where it has one (the trace scenario's: on ``split="test"`` the
    training split's episodes), else ``sample`` itself (synthetic scenarios, fixed jobs,
    a user's own sampler)."""
    own = getattr(sample, "estimate_sampler", None)
    return own() if callable(own) else sample


def future_seeds(instance_seed: int, futures: int) -> list[int]:
    """The episode seeds of the estimate: ``futures`` 63-bit draws of the named stream
    ``time_of_use`` of ``instance_seed``."""
    gen = rngs.stream(instance_seed, "time_of_use")
    return [int(s) for s in gen.integers(0, 2**63 - 1, size=futures)]
