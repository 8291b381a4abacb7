"""MYOPIC-WELFARE for DeadlineWelfare-v0: each job gets its own exact welfare maximiser.

For the arriving job ``n`` the agent solves, on the job's units ℛ_n with room
``room_r = max(0, min(x̄_nr, C_r - ω_r))``,

    max_x  Σ_r f_nr(x_r) + β_nr x_r / C_r    s.t.  Σ_r x_r <= ρ_n,  0 <= x_r <= room_r,

i.e. OnSocMax's per-job problem P3 with a zero price (paper §IV; docs/spec/onsocmax.md §3.1):
it never reserves capacity for later jobs. It is the decision of the ``"pricing"`` action mode's
zero action (``schedgym.envs.deadline_welfare.actions``), so it is the starting point a learner
in that mode improves on, and the reference that says what the learned prices add. Unlike
MAX-FIRST (greedy by the welfare of whole pieces ``min(room_r, remaining)``), it ranks units by
their marginal welfare, which is optimal for the job.
"""

from __future__ import annotations

import numpy as np

from schedgym.agents.baselines.deadline_welfare import _MeshBaseline
from schedgym.envs.deadline_welfare.actions import best_response
from schedgym.envs.deadline_welfare.dynamics import ObservedJob


class MyopicWelfare(_MeshBaseline):
    """Per-job welfare maximiser (zero reserve price, full workload budget); acts in the
    default ``"dispatch"`` mode."""

    name = "myopic-welfare"

    def decide(self, job: ObservedJob) -> np.ndarray:
        """The job's dispatch on its units ``(m,)``, workload units."""
        return best_response(job.family, job.coef, job.weight, job.capacity, job.remaining,
                             np.zeros(job.coef.size), job.workload)
