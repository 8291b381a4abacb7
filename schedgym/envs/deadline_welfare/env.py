"""DeadlineWelfare-v0: online dispatching of deadline-aware multi-server jobs over a
spatio-temporal resource mesh, maximising social welfare (OnSocMax problem)."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from schedgym.core.arrays import readonly_view
from schedgym.core.envbase import (
    SchedEnv,
    clip_unit,
    decode_unit,
    encode_unit,
    frac_box,
    resolve_episode_seed,
    unit_box,
    validate_action,
)
from schedgym.envs.deadline_welfare import dynamics, viewer
from schedgym.envs.deadline_welfare.generator import (
    SCENARIOS,
    generate,
    job_limits,
    job_sampler,
    validate_params,
)
from schedgym.envs.deadline_welfare.pricing import alpha_hat
from schedgym.envs.deadline_welfare.types import (
    FAMILIES,
    DeadlineWelfareInstance,
    FixedJobs,
    Jobs,
    JobSampler,
    observed_limits,
)


class DeadlineWelfareEnv(SchedEnv[np.ndarray]):
    """Online workload dispatching of deadline-aware multi-server jobs (OnSocMax, Zhao et al.).

    ## Description
    A cluster of ``R`` computing instances and ``T`` time slots forms a mesh of ``R * T`` resource
    units ``(r, t)``, each with capacity ``C_r`` (workload units). Jobs arrive one at a time. Job
    ``n`` arrives in slot ``s_n`` with deadline slot ``e_n``, workload ``ρ_n``, allowed instances
    𝒦_n, and for every unit of its window ℛ_n = 𝒦_n x [s_n, e_n] a capability ``x̄_nr``, a
    concave utility ``f_nr`` (``a x``, ``a ln(1+x)`` or ``a sqrt(x)``) and a cluster weight
    ``β_nr``. The scheduler decides at once how much workload the job gets on every unit of its
    window, current slot and future slots alike (future entries are reservations). Decisions are
    irrevocable. Jobs may be served partially.

    ## Action Space
    ``Box(-1, 1, (R * T,), float32)``, entry ``r * T + t`` = unit (instance r, slot t). It is
    mapped affinely to ``[0, x̄_nr]`` on the arriving job's units and to 0 off them
    (``decode_action``/``encode_action`` convert to and from workload units, for the current job).
    The documented repair then makes it feasible, in order: (1) mask and per-unit capability (the
    map already does it; entries outside [-1, 1] are clipped first, ``info["action_clip"]``);
    (2) clip to the remaining unit capacity ``C_r - ω_r``; (3) if the total exceeds ``ρ_n``,
    scale down proportionally. ``info["repair_l1"]`` (and its parts ``repair_capacity``,
    ``repair_workload``) is the L1 distance moved, workload units. NaN/inf entries or a wrong
    shape raise ``ValueError``.

    ## Observation Space
    ``Dict`` of 1-D float32 boxes (flat mesh vectors in the action's ``r * T + t`` order):

    - ``workload`` ``(1,)``: ρ_n;  ``window`` ``(2,)``: first and last slot ``(s_n, e_n)``;
    - ``allowed`` ``(R*T,)`` in {0, 1}: indicator of ℛ_n (locality x time window);
    - ``capability`` ``(R*T,)``: x̄_nr (0 off ℛ_n); ``utility_coef`` ``(R*T,)``: a_nr (0 off
      ℛ_n); ``cluster_weight`` ``(R*T,)``: β_nr (0 off ℛ_n);
    - ``utility_family`` ``(3,)``: one-hot over (linear, log, sqrt);
    - ``usage`` ``(R*T,)``: ω_r, workload already reserved on each unit; ``capacity``
      ``(R*T,)``: C_r;
    - ``bounds`` ``(2,)``: (ι, v), the bounds of the marginal social welfare that OnSocMax treats
      as known (spec §1.8; from the episode's jobs with ``bound_mode="oracle"``, else the prior);
    - ``progress`` ``(1,)``: n / N, jobs decided so far.

    Job data are float32-representable, so the observation shows them exactly. After the last
    job the observation has a zero job.

    ## Rewards
    The job's contribution to social welfare, ``Σ_r f_nr(x_nr) + Σ_r β_nr x_nr / C_r`` on the
    applied dispatch, so the undiscounted return equals the social welfare ``SW`` of P1 exactly.
    ``info``: ``job_utility``, ``cluster_utility``, ``dispatch`` ``(R, T)`` (applied),
    ``served`` (Σx / ρ_n), ``units_used`` (units with x > 1e-9, the task-component instances),
    ``repair_l1``, ``repair_capacity``, ``repair_workload``, ``action_clip``, ``slot``, ``job``,
    the running totals ``welfare``, ``welfare_jobs``, ``welfare_cluster``, ``served_fraction``
    (Σ x / Σ ρ over the jobs so far), ``utilization`` (mean ω/C over the mesh), ``iota``, ``v``
    and ``alpha_hat`` (the competitive ratio α̂ of these bounds).

    ## Episode End
    Terminated after the last job of the episode (``n_jobs``, default 20). An episode without
    jobs (possible with ``n_jobs=None``) has one step with a null job and reward 0.

    ## Arguments
    ``gym.make("schedgym/DeadlineWelfare-v0", scenario="paper-default", instance_seed=0,
    instance=None, render_mode=None, **overrides)``. Scenarios: ``paper-default``,
    ``paper-poisson``, ``congested``. Overrides (paper symbol): ``utility`` (linear, log, sqrt),
    ``n_instances`` (K), ``horizon`` (T), ``n_jobs`` (N; None keeps every Poisson arrival),
    ``arrival_rate``, ``duration_mean`` (slots), ``workload_mean``/``workload_sd`` (ρ),
    ``capability_mean``/``capability_sd`` (x̄), ``capacity_mean``/``capacity_sd`` (C),
    ``coef_range`` (a), ``coef_scope`` (unit, job), ``weight_range`` (β), ``locality_size``,
    ``sqrt_v_floor`` (δ_v), ``bound_mode`` (oracle, prior). An explicit ``instance`` (a
    :class:`DeadlineWelfareInstance`, possibly with fixed ``jobs``) replaces the generator.

    Seeds: the capacities are drawn once from ``instance_seed``; ``reset(seed=s)`` draws the
    episode's whole job stream from independent named streams of ``s``, so every agent run with
    the same ``(instance_seed, s)`` faces the same jobs (common random numbers).
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}
    viewer = viewer

    #: How ``schedgym compare`` aggregates the per-step info scalars over an episode.
    episode_metrics = {"reward": "sum", "job_utility": "sum", "cluster_utility": "sum",
                       "served_fraction": "last", "served": "mean", "units_used": "mean",
                       "repair_l1": "sum", "utilization": "last", "alpha_hat": "last"}

    def __init__(
        self,
        scenario: str = "paper-default",
        instance_seed: int = 0,
        instance: DeadlineWelfareInstance | None = None,
        render_mode: str | None = None,
        **overrides: Any,
    ) -> None:
        instance, params, sampler, _ = self._setup(
            render_mode, instance_seed, scenario, SCENARIOS, overrides, instance,
            DeadlineWelfareInstance, generate)
        params = validate_params({**params, "n_instances": instance.n_instances,
                                  "horizon": instance.horizon, "utility": instance.utility})
        self.params = params
        self.instance: DeadlineWelfareInstance = instance
        if instance.jobs is not None:
            sampler = FixedJobs(instance.jobs)
        self._sample_jobs: JobSampler = sampler or job_sampler(params)

        U = instance.n_units
        cmax = float(instance.capacity.max())
        lim = instance.job_limits or job_limits(params)
        self._limits = lim
        v_max = self._v_limit(lim)
        self.action_space = unit_box(U)
        self.observation_space = spaces.Dict({
            "workload": frac_box(1, lim[0]),
            "window": frac_box(2, float(max(instance.horizon - 1, 1))),
            "allowed": frac_box(U, 1.0),
            "capability": frac_box(U, lim[1]),
            "utility_coef": frac_box(U, lim[2]),
            "cluster_weight": frac_box(U, lim[3]),
            "utility_family": frac_box(len(FAMILIES), 1.0),
            "usage": frac_box(U, cmax),
            "capacity": frac_box(U, cmax),
            "bounds": frac_box(2, v_max),
            "progress": frac_box(1, 1.0),
        })
        self._family = np.zeros(len(FAMILIES), dtype=np.float32)
        self._family[instance.family_code] = 1.0
        self._capacity32 = instance.capacity.reshape(-1).astype(np.float32)
        self.episode_seed: int | None = None
        self._jobs: Jobs | None = None
        self._n = 0
        self._usage = np.zeros((instance.n_instances, instance.horizon))
        self._X = np.zeros((0, instance.n_instances, instance.horizon))
        self._totals = np.zeros(4)  # job utility, cluster utility, served workload, workload
        self._bounds = (1.0, 1.0)
        self._alpha = 2.0
        self._last: dict[str, Any] | None = None

    def _v_limit(self, lim: tuple[float, float, float, float]) -> float:
        """Upper end of the ``bounds`` box: the largest ``v`` jobs within ``lim`` can give."""
        inst = self.instance
        if inst.bound_mode == "prior" and inst.prior_bounds is not None:
            return float(np.float32(inst.prior_bounds[1]) * (1 + 1e-6))
        cmin = float(inst.capacity.min())
        top = lim[2] / (2.0 * np.sqrt(inst.sqrt_v_floor)) if inst.utility == "sqrt" else lim[2]
        return float(np.float32((top + lim[3] / cmin) * (1 + 1e-6) + 1.0))

    # ---------------------------------------------------------------- accessors
    @property
    def jobs(self) -> Jobs:
        """The episode's job stream (after ``reset``)."""
        if self._jobs is None:
            raise RuntimeError("no episode yet: call reset() first")
        return self._jobs

    @property
    def job_index(self) -> int:
        """Index of the job about to be decided (0-based; == N at the end)."""
        return self._n

    @property
    def usage(self) -> np.ndarray:
        """ω ``(R, T)``: workload reserved on every unit so far (read-only view)."""
        return readonly_view(self._usage)

    @property
    def dispatch(self) -> np.ndarray:
        """``X`` ``(N, R, T)``: the applied dispatch of every job so far (0 for later jobs)."""
        return readonly_view(self._X)

    @property
    def bounds(self) -> tuple[float, float]:
        """``(ι, v)`` of the episode."""
        return self._bounds

    def _upper(self) -> np.ndarray:
        jobs = self.jobs
        if self._n >= jobs.n_jobs:
            return np.zeros((self.instance.n_instances, self.instance.horizon))
        return dynamics.unit_upper(jobs, self._n)

    def decode_action(self, action: np.ndarray) -> np.ndarray:
        """Action in [-1, 1] ``(R*T,)`` -> proposed dispatch ``(R, T)`` of the current job in
        workload units (before the capacity and workload repair; out-of-box entries clipped)."""
        a = validate_action(action, self.action_space.shape[0])
        a, _ = clip_unit(a)
        return decode_unit(a.reshape(self.instance.n_instances, -1), self._upper())

    def encode_action(self, dispatch: np.ndarray) -> np.ndarray:
        """Dispatch ``(R, T)`` (or flat) of the current job in workload units -> float32 action."""
        x = np.asarray(dispatch, dtype=np.float64)
        if x.size != self.instance.n_units:
            raise ValueError(f"dispatch has shape {x.shape}: must have shape "
                             f"({self.instance.n_instances}, {self.instance.horizon})")
        return encode_unit(x.reshape(-1), self._upper().reshape(-1))

    # ---------------------------------------------------------------- obs
    def _obs(self) -> dict[str, np.ndarray]:
        U = self.instance.n_units
        jobs = self.jobs
        n = self._n
        z = np.zeros(U, dtype=np.float32)
        obs = {
            "workload": np.zeros(1, dtype=np.float32), "window": np.zeros(2, dtype=np.float32),
            "allowed": z, "capability": z.copy(), "utility_coef": z.copy(),
            "cluster_weight": z.copy(), "utility_family": self._family.copy(),
            "usage": np.minimum(self._usage.reshape(-1).astype(np.float32), self._capacity32),
            "capacity": self._capacity32.copy(),
            "bounds": np.asarray(self._bounds, dtype=np.float32),
            "progress": np.array([min(1.0, n / max(jobs.n_jobs, 1))], dtype=np.float32),
        }
        if n < jobs.n_jobs:
            m = jobs.mask[n]
            obs["workload"][0] = jobs.workload[n]
            obs["window"][:] = (jobs.arrival[n], jobs.deadline[n])
            obs["allowed"] = m.reshape(-1).astype(np.float32)
            obs["capability"] = np.where(m, jobs.capability[n], 0.0).reshape(-1).astype(
                np.float32)
            obs["utility_coef"] = np.where(m, jobs.coef[n], 0.0).reshape(-1).astype(np.float32)
            obs["cluster_weight"] = np.where(m, jobs.weight[n], 0.0).reshape(-1).astype(
                np.float32)
        return obs

    # ---------------------------------------------------------------- gym API
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.episode_seed = resolve_episode_seed(seed, self.np_random)
        jobs = self._sample_jobs(self.episode_seed)
        inst = self.instance
        if jobs.allowed.shape[1] != inst.n_instances or jobs.n_slots != inst.horizon:
            raise ValueError(f"the job sampler gave jobs for {jobs.allowed.shape[1]} instances x "
                             f"{jobs.n_slots} slots: the instance has {inst.n_instances} x "
                             f"{inst.horizon}")
        seen = observed_limits(jobs)
        names = ("workload", "capability", "coef", "weight")
        for name, got, lim in zip(names, seen, self._limits, strict=True):
            if got > lim * (1 + 1e-9):
                raise ValueError(f"the episode's jobs have {name} up to {got!r}: must be <= the "
                                 f"instance's job_limits {lim!r} (the observation box)")
        self._jobs = jobs
        self._n = 0
        self._usage = np.zeros((inst.n_instances, inst.horizon))
        self._X = np.zeros((jobs.n_jobs, inst.n_instances, inst.horizon))
        self._totals = np.zeros(4)
        self._bounds = dynamics.marginal_bounds(inst, jobs)
        self._alpha = alpha_hat(self._bounds[1] / self._bounds[0])
        self._last = None
        info = {"n_jobs": jobs.n_jobs, "iota": self._bounds[0], "v": self._bounds[1],
                "alpha_hat": self._alpha, "episode_seed": self.episode_seed}
        return self._obs(), info

    def step(self, action: np.ndarray):
        jobs = self.jobs
        N = jobs.n_jobs
        if self._n >= max(N, 1):
            raise RuntimeError("step() called after the episode ended: call reset() first")
        inst = self.instance
        a = validate_action(action, self.action_space.shape[0])
        a, clip = clip_unit(a)
        n = self._n
        if N == 0:  # null job of an empty episode
            x = np.zeros((inst.n_instances, inst.horizon))
            rep = dynamics.Repair(x, 0.0, 0.0)
            fj = fc = 0.0
            rho = 0.0
        else:
            upper = dynamics.unit_upper(jobs, n)
            proposal = decode_unit(a.reshape(inst.n_instances, -1), upper)
            rep = dynamics.repair(proposal, upper, inst.capacity - self._usage,
                                  float(jobs.workload[n]))
            x = rep.dispatch
            self._usage += x
            self._X[n] = x
            fj, fc = dynamics.job_welfare(inst, jobs, n, x)
            rho = float(jobs.workload[n])
        served = float(x.sum())
        self._totals += (fj, fc, served, rho)
        self._n += 1
        reward = fj + fc
        info = {
            "job_utility": fj, "cluster_utility": fc, "dispatch": x,
            "served": served / rho if rho > 0 else 0.0,
            "units_used": int(np.count_nonzero(x > 1e-9)),
            "repair_l1": rep.l1, "repair_capacity": rep.capacity_l1,
            "repair_workload": rep.workload_l1, "action_clip": clip,
            "slot": int(jobs.arrival[n]) if N else 0, "job": n,
            "welfare": float(self._totals[0] + self._totals[1]),
            "welfare_jobs": float(self._totals[0]), "welfare_cluster": float(self._totals[1]),
            "served_fraction": float(self._totals[2] / self._totals[3]) if self._totals[3] > 0
            else 0.0,
            "utilization": float(np.mean(self._usage / inst.capacity)),
            "iota": self._bounds[0], "v": self._bounds[1], "alpha_hat": self._alpha,
        }
        terminated = self._n >= max(N, 1)
        if terminated:
            info["final_usage"] = self._usage.copy()
        self._last = info
        return self._obs(), float(reward), terminated, False, info

    def render_state(self) -> viewer.RenderState:
        """The snapshot :mod:`.viewer` draws (utilisation of the mesh, welfare so far)."""
        jobs = self.jobs
        tot = self._totals
        return viewer.RenderState(
            job_index=self._n, n_jobs=jobs.n_jobs, welfare=float(tot[0] + tot[1]),
            welfare_jobs=float(tot[0]), welfare_cluster=float(tot[1]),
            served_fraction=float(tot[2] / tot[3]) if tot[3] > 0 else 0.0,
            utilization=self._usage / self.instance.capacity,
            current=jobs.mask[self._n] if self._n < jobs.n_jobs else None)
