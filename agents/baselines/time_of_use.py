"""TIME-OF-USE for DeadlineWelfare-v0: each job's welfare maximiser against prices that say how
much later jobs are expected to want each mesh unit.

``myopic-welfare`` gives every job its own best dispatch at a zero price, so an early job may
take the units that later jobs, with nowhere else to go, would have valued more. This rule
keeps each job's exact best response (the ``pricing`` decoder's
:func:`~schedgym.envs.deadline_welfare.actions.best_response`) but prices unit ``(r, t)`` at

    p(r, t) = lam * v * D_s(r, t) / C(r, t),

where ``v`` is the episode's upper welfare bound (the observation's ``bounds``), ``C`` the unit's
capacity and ``D_s`` the workload that jobs arriving *after* the current job's slot ``s`` are
expected to want there, each job's workload spread evenly over its allowed units. ``D`` is
the env's :meth:`DeadlineWelfareEnv.expected_later_demand`: estimated once, from ``futures``
synthetic episodes of the scenario's own job distribution (seeds drawn from the named stream
``time_of_use`` of the instance seed; :mod:`schedgym.envs.deadline_welfare.demand`), never
from the episode being played: the rule is online. On a trace scenario's ``split="test"``
those episodes are the ``train`` split's (the trace's past), never other days of the test
split. ``lam = 0`` is ``myopic-welfare``. The
default ``lam = 0.15`` is the best of the grid 0.05-0.5 on the training instances of the
generalisation track (instance seeds 0-19 x episode seeds 0-4, ``python
benchmarks/dw_headroom.py``; docs/learned-vs-classical.md, section 9c), not on its test
instances.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from schedgym.agents.baselines.deadline_welfare import _MeshBaseline
from schedgym.core.validation import check_float, check_int
from schedgym.envs.deadline_welfare.actions import best_response
from schedgym.envs.deadline_welfare.demand import FUTURES
from schedgym.envs.deadline_welfare.dynamics import ObservedJob


class TimeOfUse(_MeshBaseline):
    """Per-job welfare maximiser against expected-later-demand prices (see the module
    docstring); acts in the default ``"dispatch"`` mode."""

    name = "time-of-use"

    def __init__(self, env: Any, lam: float = 0.15, futures: int = FUTURES) -> None:
        super().__init__(env)
        self.lam = check_float("lam", lam, low=0.0)
        self.futures = check_int("futures", futures, min_value=1, max_value=10_000)
        #: ``(T + 1, R * T)`` expected later demand (the env's ``expected_later_demand``).
        self.later = self.env.expected_later_demand(self.futures)

    def prices(self, job: ObservedJob) -> np.ndarray:
        """The unit prices ``(m,)`` on the job's units, ``lam * v * D_s / C``."""
        return self.lam * job.bounds[1] * self.later[job.arrival, job.units] / job.capacity

    def decide(self, job: ObservedJob) -> np.ndarray:
        """The job's dispatch on its units ``(m,)``, workload units: its best response to
        :meth:`prices`."""
        return best_response(job.family, job.coef, job.weight, job.capacity, job.remaining,
                             self.prices(job), job.workload)
