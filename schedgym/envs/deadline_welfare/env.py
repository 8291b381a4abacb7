"""DeadlineWelfare-v0: online dispatching of deadline-aware multi-server jobs over a
spatio-temporal resource mesh, maximising social welfare (OnSocMax problem)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import numpy as np
from gymnasium import spaces

from schedgym.core.arrays import readonly_view
from schedgym.core.entities import OBS_MODES
from schedgym.core.envbase import (
    SchedEnv,
    Viewer,
    clip_unit,
    decode_unit,
    encode_unit,
    frac_box,
    resolve_episode_seed,
    unit_box,
    validate_action,
)
from schedgym.core.validation import (
    check_bool,
    check_choice,
    check_float,
    check_int,
    check_seed,
)
from schedgym.envs.deadline_welfare import dynamics, entities, viewer
from schedgym.envs.deadline_welfare.actions import ACTION_MODES, PRICING_DIM, decode_job
from schedgym.envs.deadline_welfare.demand import (
    FUTURES,
    estimate_sampler,
    future_seeds,
    later_demand,
)
from schedgym.envs.deadline_welfare.generator import (
    LIMIT_PARAMS,
    MEMORY_LIMIT_MB,
    SCENARIOS,
    generate,
    job_limits,
    job_sampler,
    validate_params,
)
from schedgym.envs.deadline_welfare.memory import (
    breakdown,
    estimate_mb,
    generator_entries,
    poisson_jobs,
    refuse,
)
from schedgym.envs.deadline_welfare.pricing import alpha_hat
from schedgym.envs.deadline_welfare.tables import JobChunk, JobRows, JobUnits
from schedgym.envs.deadline_welfare.types import (
    ARRIVAL_RATE_MAX,
    FAMILIES,
    DeadlineWelfareInstance,
    FixedJobs,
    Jobs,
    JobSampler,
)
from schedgym.envs.deadline_welfare.viewer import RenderState

#: The observation space type (a Dict of float32 boxes).
ObsSpace = spaces.Space[dict[str, np.ndarray]]


@dataclass(frozen=True, eq=False)
class EpisodeScan:
    """What :meth:`DeadlineWelfareEnv.scan_jobs` read from an episode's jobs: their chunk
    cursor (:class:`~.tables.JobRows`, at its last chunk) and their bounds ``(ι, v)``."""

    rows: JobRows
    bounds: tuple[float, float]


def job_scalars(jobs: Jobs) -> np.ndarray:
    """float32 ``(N, 3)``: every job's observation scalars ``(ρ_n, s_n, e_n)``."""
    out = np.empty((jobs.n_jobs, 3), dtype=np.float32)
    out[:, 0] = jobs.workload
    out[:, 1] = jobs.arrival
    out[:, 2] = jobs.deadline
    return out


class DeadlineWelfareEnv(SchedEnv[np.ndarray]):
    """Online workload dispatching of deadline-aware multi-server jobs (OnSocMax, Zhao et al.).

    ## Description
    A cluster of ``R`` computing instances and ``T`` time slots forms a mesh of ``R * T`` resource
    units ``(r, t)``, each with capacity ``C_r`` (workload units). Jobs arrive one at a time. Job
    ``n`` arrives in slot ``s_n`` with deadline slot ``e_n``, workload ``ρ_n``, allowed instances
    𝒦_n, and for every unit of its window ℛ_n = 𝒦_n x [s_n, e_n] a capability ``x̄_nr``, a
    concave utility ``f_nr`` (``a x``, ``a ln(1+x)`` or ``a sqrt(x)``) and a cluster weight
    ``β_nr`` (paper §III, problem P1). The scheduler decides at once how much workload the job
    gets on every unit of its window, current slot and future slots alike (future entries are
    reservations). Decisions are irrevocable. Jobs may be served partially.

    ## Action Space
    ``action_mode="dispatch"`` (default): ``Box(-1, 1, (R * T,), float32)``, entry ``r * T + t``
    = unit (instance r, slot t). It is mapped affinely to ``[0, x̄_nr]`` on the arriving job's
    units and to 0 off them (``decode_action``/``encode_action`` convert to and from workload
    units, for the current job). The documented repair then makes it feasible, in order: (1) mask
    and per-unit capability (the map already does it; entries outside [-1, 1] are clipped first,
    ``info["action_clip"]``); (2) clip to the remaining unit capacity ``C_r - ω_r``; (3) if the
    total exceeds ``ρ_n``, scale down proportionally. ``info["repair_l1"]`` (and its parts
    ``repair_capacity``, ``repair_workload``) is the L1 distance moved, workload units.

    ``action_mode="pricing"`` (learnable, low-dimensional): ``Box(-1, 1, (3,), float32)``, a
    reserve price ``v max(0, a_0)``, a congestion slope ``v max(0, a_1)`` (unit price = reserve +
    slope x the unit's utilisation) and a served fraction ``min(1, 1 + a_2)`` of ρ_n; the job gets
    its exact best response to these prices (:mod:`.actions`), feasible by construction (the
    repair moves nothing). The zero action is the job's myopic welfare maximiser.

    ``action_mode="unit_prices"`` (learnable, one entry per unit): ``Box(-1, 1, (R * T,),
    float32)``, entry ``r * T + t`` the price ``v max(0, a)`` of that unit (entries off the
    job's units are ignored); the job gets its exact best response to these prices with its
    whole workload offered, feasible by construction. The zero action is again the job's myopic
    welfare maximiser; the ``time-of-use`` agent's prices are one action of this mode. With
    ``obs_mode="entities"`` entity ``r * T + t`` carries the unit's features and its head sets
    the unit's price.

    ``action_mode="demand_price"`` (learnable, one scalar): ``Box(-1, 1, (1,), float32)``, unit
    prices ``v max(0, a_0) D / C`` with ``D`` the expected later demand on the unit after the
    job's slot (:meth:`expected_later_demand`): ``a_0 = 0`` is the myopic optimum, ``a_0 = lam``
    the ``time-of-use`` agent's rule (default ``0.15``); the job gets its exact best response,
    whole workload offered.

    In every mode NaN/inf entries or a wrong shape raise ``ValueError``;
    ``env.unwrapped.metadata["action_modes"]`` lists the modes, default first.

    ## Observation Space
    ``Dict`` of 1-D float32 boxes (flat mesh vectors in the dispatch action's ``r * T + t``
    order):

    - ``workload`` ``(1,)``: ρ_n;  ``window`` ``(2,)``: first and last slot ``(s_n, e_n)``;
    - ``allowed`` ``(R*T,)`` in {0, 1}: indicator of ℛ_n (locality x time window);
    - ``capability`` ``(R*T,)``: x̄_nr (0 off ℛ_n); ``utility_coef`` ``(R*T,)``: a_nr (0 off
      ℛ_n); ``cluster_weight`` ``(R*T,)``: β_nr (0 off ℛ_n);
    - ``utility_family`` ``(3,)``: one-hot over (linear, log, sqrt);
    - ``usage`` ``(R*T,)``: ω_r, workload already reserved on each unit; ``capacity``
      ``(R*T,)``: C_r;
    - ``bounds`` ``(2,)``: (ι, v), the bounds of the marginal social welfare that OnSocMax treats
      as known (paper Theorem 2; from the episode's jobs with ``bound_mode="oracle"``, else the
      prior);
    - ``progress`` ``(1,)``: n / N, jobs decided so far;
    - ``instance`` ``(R + 2,)``, only with ``instance_features=True``: every instance's capacity
      C_r, then their mean and minimum (what changes with ``instance_seed``).

    The boxes' upper ends come from the parameters (generator supports), never from the drawn
    instance, so every space depends only on the scenario's sizes, not on ``instance_seed``. Job
    data are float32-representable, so the observation shows them exactly. After the last job the
    observation has a zero job.

    With ``obs_mode="entities"`` (default ``"flat"``, the ``Dict`` above) the observation is
    one row per mesh unit ``(r, t)`` for the current job (``N = R * T``, entity ``r * T + t`` =
    ``dispatch`` entry ``r * T + t``, so ``metadata["entity_action"]`` is ``"entity"`` in
    ``dispatch`` and ``unit_prices``, ``"global"`` in ``demand_price`` and in ``pricing``, the
    mode an entity policy trains in by default, ``metadata["entity_action_mode"]``):
    ``Dict(entities=Box(low, 1, (N * 13,)), mask=Box(0, 1, (N,)), context=Box(0, 1, (13,)))``,
    float32, the ``(N, 13)`` rows flattened row-major into the 1-D ``entities`` vector (unit
    ``i`` at ``[13 i:13 (i + 1)]``).
    Per unit (names in ``entity_feature_names``, definitions in :data:`.entities.FEATURES`):
    allowed, a / a_max, the marginal welfare ``(a f'(δ) + β/C) / v``, x̄ / x̄_max, ω/C before the
    job, the room ``min(x̄, C - ω) / ρ``, ``(β/C) / v``, C / C_max, t / D, ``(t - s_n) / D`` and
    ``(e_n - t) / D`` (in [-1, 1]; ``D = max(T - 1, 1)``), in-window, and the later jobs' expected
    demand on the unit (:meth:`expected_later_demand`) against twice its capacity; every other
    feature in [0, 1]. The maxima are the flat boxes' upper ends (scenario bounds, not the
    instance's). ``mask`` is ℛ_n (all 0 after the last job). ``context``
    (``context_feature_names``): ρ / ρ_max, s_n / D, e_n / D, window length / T, ι / v, v / v_max,
    progress n / N, the family one-hot, the job's total room / ρ, the mesh's Σω / ΣC and the usable
    share |ℛ_n| / (R T).

    ## Rewards
    The job's contribution to social welfare, ``Σ_r f_nr(x_nr) + Σ_r β_nr x_nr / C_r`` on the
    applied dispatch, so the undiscounted return equals the social welfare ``SW`` of P1 exactly.
    ``info``: ``job_utility``, ``cluster_utility``, ``dispatch`` ``(R, T)`` (applied),
    ``served`` (Σx / ρ_n), ``units_used`` (units with x > 1e-9, the task-component instances),
    ``repair_l1``, ``repair_capacity``, ``repair_workload``, ``action_clip``, ``slot``, ``job``,
    the running totals ``welfare``, ``welfare_jobs``, ``welfare_cluster``, ``served_fraction``
    (Σ x / Σ ρ over the jobs so far), ``utilization`` (mean ω/C over the mesh), ``iota``, ``v``
    and ``alpha_hat`` (the competitive ratio α̂ of these bounds).

    ## Starting State
    ``reset(seed=s)`` draws the episode's whole job stream from independent named streams of
    ``s`` (``arrivals``, ``durations``, ``workloads``, ``capability``, ``coef``, ``weights``,
    ``locality``), so every agent and every action mode run with the same ``(instance_seed, s)``
    faces the same jobs (common random numbers). The mesh starts empty (ω = 0); the first
    observation shows job 0.

    ## Episode End
    Terminated after the last job of the episode (``n_jobs``, default 20); never truncated.
    ``env.spec.max_episode_steps`` is ``n_jobs`` (``None`` with ``n_jobs=None``, where the
    number of Poisson arrivals has no fixed bound). An episode without jobs (possible with
    ``n_jobs=None``) has one step with a null job and reward 0. ``step()`` before ``reset()``
    raises ``gymnasium.error.ResetNeeded``.

    ## Arguments
    ``gym.make("schedgym/DeadlineWelfare-v0", scenario="paper-default", instance_seed=0,
    instance=None, render_mode=None, action_mode="dispatch", instance_features=False,
    memory_limit_mb=2048, obs_mode="flat", **overrides)``. Scenarios: ``paper-default``,
    ``paper-poisson``, ``congested``, ``alibaba-gpu-2023`` (trace-driven, with ``split``,
    ``time_window`` and ``n_instances="all"``; ``docs/trace-scenarios.md``; on its
    ``split="test"`` the :meth:`expected_later_demand` table, read by ``demand_price``, the
    ``later_demand`` entity feature and ``time-of-use``, is estimated from the ``train`` split,
    the trace's past). An explicit
    ``instance`` (a :class:`DeadlineWelfareInstance`, possibly with fixed ``jobs``) replaces the
    generator; overrides that it would ignore or contradict raise.

    Memory: a job's per-unit values are held on its own units ℛ_n only, built chunk by chunk
    in arrival order (:mod:`.tables`), so an episode needs ``O(R T + N + Σ_n |ℛ_n|)`` bytes,
    never jobs x mesh units. Settings whose episodes would need more than ``memory_limit_mb``
    MB (:mod:`.memory`: every table, the entity observation's and the expected-later-demand
    table included) raise at construction, and an episode that does at its reset, in one
    line naming the largest table. Overrides (:class:`~.types.DeadlineWelfareParams`, paper
    §V-A defaults):

    ===================================  ==========  ==============================================
    parameter (paper symbol)             default     meaning
    ===================================  ==========  ==============================================
    ``n_instances`` (K)                  10          computing instances (nodes)
    ``horizon`` (T)                      24          one-hour slots
    ``n_jobs`` (N)                       20          jobs per episode; None: every Poisson arrival
    ``arrival_rate``                     2.03        Poisson mean arrivals per slot
    ``duration_mean``                    4.0         D_n ~ Exp(mean) slots; e_n = s_n + floor(D_n)
    ``workload_mean``/``workload_sd``    18.0/3.0    ρ_n ~ N(mean, sd), floored at 0.1
    ``capability_mean``/``_sd``          7.0/1.0     x̄_nk ~ N(mean, sd), constant over slots
    ``capacity_mean``/``capacity_sd``    20.0/2.0    C_k ~ N(mean, sd), constant over slots
    ``coef_range`` (a)                   (1, 3)      a ~ U[lo, hi]
    ``coef_scope``                       unit        ``unit``: a per (n, r, t); ``job``: per job
    ``weight_range`` (β)                 (.1, .5)    β ~ U[lo, hi] per (n, r, t)
    ``utility``                          linear      ``linear``, ``log``, ``sqrt`` (paper's "poly")
    ``locality_size``                    None        None: every instance; m: m drawn per job
    ``sqrt_v_floor`` (δ_v)               0.1         where sqrt's marginal is taken for v
    ``bound_mode``                       oracle      ``oracle`` (ι, v of the episode), ``prior``
    ===================================  ==========  ==============================================

    ## Vector environment
    ``gym.make_vec("schedgym/DeadlineWelfare-v0", num_envs=n)`` picks the native batched env
    (:class:`~schedgym.envs.deadline_welfare.vector.DeadlineWelfareVectorEnv`, the id's
    ``vector_entry_point``; results equal ``SyncVectorEnv`` bit for bit);
    ``vectorization_mode="sync"``/``"async"`` give Gymnasium's wrappers (the env pickles, every
    scenario included).

    ## Version History
    - v0: initial version (OnSocMax mesh, dispatch and pricing action modes, instance features).
      Later additions kept every v0 trajectory bit for bit (the per-job tables hold the same
      values, built on each job's units; the trace scenario's draws without a split are
      unchanged), except that :meth:`expected_later_demand` is summed in another order (its
      entries move by at most 1e-15 relative), which the ``demand_price`` mode's prices read.

    ## Example
    >>> import gymnasium as gym, schedgym
    >>> env = gym.make("schedgym/DeadlineWelfare-v0", action_mode="pricing")
    >>> obs, info = env.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    >>> info["repair_l1"] < 1e-9
    True
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4,
                                "action_modes": ACTION_MODES, "obs_modes": OBS_MODES,
                                "entity_action_mode": "pricing"}
    viewer: ClassVar[Viewer] = viewer

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
        action_mode: str = "dispatch",
        instance_features: bool = False,
        memory_limit_mb: float = MEMORY_LIMIT_MB,
        obs_mode: str = "flat",
        **overrides: Any,
    ) -> None:
        self.action_mode: str = check_choice("action_mode", action_mode, ACTION_MODES)
        self.obs_mode: str = check_choice("obs_mode", obs_mode, OBS_MODES)
        self.instance_features: bool = check_bool("instance_features", instance_features)
        self.memory_limit_mb = check_float("memory_limit_mb", memory_limit_mb, low=0.0,
                                           low_open=True)
        _check_sizes(scenario, overrides, instance, self.memory_limit_mb, obs_mode,
                     action_mode)
        instance, params, sampler, source = self._setup(
            render_mode, instance_seed, scenario, SCENARIOS, overrides, instance,
            DeadlineWelfareInstance, generate)
        if source == "instance":
            _check_explicit(instance, overrides)
        params = validate_params({**params, "n_instances": instance.n_instances,
                                  "horizon": instance.horizon, "utility": instance.utility,
                                  "sqrt_v_floor": instance.sqrt_v_floor,
                                  "bound_mode": instance.bound_mode})
        self.params: dict[str, Any] = params
        self.instance: DeadlineWelfareInstance = instance
        if instance.jobs is not None:
            sampler = FixedJobs(instance.jobs)
        self._sample_jobs: JobSampler = sampler or job_sampler(params)
        self._limits = instance.job_limits or job_limits(params)
        self._limit_names = LIMIT_PARAMS if instance.job_limits is None or source != "instance" \
            else tuple(f"instance.job_limits[{i}]" for i in range(4))
        self._act_dim = {"pricing": PRICING_DIM, "demand_price": 1}.get(action_mode,
                                                                        instance.n_units)
        self.action_space = unit_box(self._act_dim)
        self._later_demand: dict[int, np.ndarray] = {}
        #: The flat observation's space (laid out by :meth:`_obs_layout`); with
        #: ``obs_mode="entities"`` the observation space is the entity encoder's.
        self.flat_space: spaces.Dict = self._observation_space()
        self._memory_check()
        #: The ``obs_mode="entities"`` encoder (``None`` in the flat mode).
        self.entity_encoder: entities.EntityEncoder | None = (
            self._entity_encoder() if obs_mode == "entities" else None)
        self.observation_space = cast(ObsSpace, self.flat_space if self.entity_encoder is None
                                      else self.entity_encoder.space)
        self.metadata = {**type(self).metadata,
                         "entity_action": entities.entity_action(self.action_mode)}
        self.entity_feature_names = entities.ENTITY_FEATURE_NAMES
        self.context_feature_names = entities.CONTEXT_FEATURE_NAMES
        self._n_units, self._family_code = instance.n_units, instance.family_code
        #: float32 ``(3,)``: the one-hot utility family of the observation.
        self.family_onehot = np.zeros(len(FAMILIES), dtype=np.float32)
        self.family_onehot[instance.family_code] = 1.0
        #: float32 ``(R T,)``: the mesh's capacities as the observation shows them.
        self.capacity32 = instance.capacity.reshape(-1).astype(np.float32)
        self._capacity_flat = np.ascontiguousarray(instance.capacity.reshape(-1),
                                                   dtype=np.float64)
        self._obs_layout()
        self._no_prop = np.zeros(0)
        self._no_action = np.zeros(0, dtype=np.float32)
        self.episode_seed: int | None = None
        self._jobs: Jobs | None = None
        self._n = 0
        self._N = 0
        self._usage = np.zeros((instance.n_instances, instance.horizon))
        self._usage_flat = self._usage.reshape(-1)
        self._set_history(np.zeros(1, dtype=np.int64))
        self._rows: JobRows | None = None
        self._set_chunk(None)
        self._scalars = np.zeros((0, 3), dtype=np.float32)
        self._rho = np.zeros(0)
        self._totals = [0.0] * 4  # job utility, cluster utility, served workload, workload
        self._bounds = (1.0, 1.0)
        self._alpha = 2.0

    def _observation_space(self) -> spaces.Dict:
        """The observation boxes; their bounds come from the parameters (job limits, capacity
        bounds), not from the drawn instance, so they do not depend on the instance seed."""
        inst = self.instance
        U, R = inst.n_units, inst.n_instances
        assert inst.capacity_bounds is not None
        cmax = inst.capacity_bounds[1]
        lim = self._limits
        obs: dict[str, spaces.Space[Any]] = {
            "workload": frac_box(1, lim[0]),
            "window": frac_box(2, float(max(inst.horizon - 1, 1))),
            "allowed": frac_box(U, 1.0),
            "capability": frac_box(U, lim[1]),
            "utility_coef": frac_box(U, lim[2]),
            "cluster_weight": frac_box(U, lim[3]),
            "utility_family": frac_box(len(FAMILIES), 1.0),
            "usage": frac_box(U, cmax),
            "capacity": frac_box(U, cmax),
            "bounds": frac_box(2, self._v_limit(lim)),
            "progress": frac_box(1, 1.0),
        }
        if self.instance_features:
            obs["instance"] = frac_box(R + 2, cmax)
        return spaces.Dict(obs)

    def _entity_encoder(self) -> entities.EntityEncoder:
        """The ``obs_mode="entities"`` encoder, scaled by the flat boxes' upper ends, with the
        instance's expected later demand per unit of capacity."""
        inst = self.instance
        assert inst.capacity_bounds is not None
        return entities.EntityEncoder(
            inst.n_instances, inst.horizon, self._limits, inst.capacity_bounds[1],
            self._v_limit(self._limits),
            inst.sqrt_v_floor if inst.family_code == dynamics.SQRT else None,
            self.expected_later_demand(), inst.capacity.reshape(-1))

    def _v_limit(self, lim: tuple[float, float, float, float]) -> float:
        """Upper end of the ``bounds`` box: the largest ``v`` jobs within ``lim`` can give on
        any capacity within ``capacity_bounds`` (prior mode: also the prior's v)."""
        inst = self.instance
        assert inst.capacity_bounds is not None
        cmin = inst.capacity_bounds[0]
        top = lim[2] / (2.0 * np.sqrt(inst.sqrt_v_floor)) if inst.utility == "sqrt" else lim[2]
        v = top + lim[3] / cmin
        if inst.bound_mode == "prior" and inst.prior_bounds is not None:
            v = max(v, inst.prior_bounds[1])
        return float(np.float32(v * (1 + 1e-6) + 1.0))

    @property
    def max_episode_steps(self) -> int | None:
        """Steps of the longest episode: one per job, ``n_jobs`` (at least 1: an episode
        without jobs has one null step); ``None`` with ``n_jobs=None`` (every Poisson arrival
        kept, no fixed bound). Filled into ``env.spec.max_episode_steps``."""
        if self.instance.jobs is not None:
            return max(self.instance.jobs.n_jobs, 1)
        n = self.params["n_jobs"]
        return None if n is None else max(int(n), 1)

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
        """``X`` ``(N, R, T)``: the applied dispatch of every job so far (0 for later jobs),
        built from the episode's history when read: ``N R T`` float64, refused in one line
        above ``memory_limit_mb`` (:meth:`job_dispatch` reads one job)."""
        jobs = self.jobs
        N, R, T = jobs.n_jobs, jobs.n_instances, jobs.n_slots
        need = 8.0 * N * R * T / 2**20
        if need > self.memory_limit_mb:
            raise ValueError(f"dispatch needs an ({N}, {R}, {T}) array of {need:,.0f} MB: more "
                             f"than memory_limit_mb={self.memory_limit_mb:,.0f} (read "
                             "job_dispatch(n) job by job)")
        X = np.zeros((N, R * T))
        for n in range(N):
            X[n, jobs.job(n).units] = self._hist[self._hist_ptr[n]:self._hist_ptr[n + 1]]
        X.setflags(write=False)
        return X.reshape(N, R, T)

    def job_dispatch(self, n: int) -> np.ndarray:
        """``(R, T)``: the applied dispatch of job ``n`` (0 before its step), read-only."""
        jobs = self.jobs
        n = check_int("n", n, min_value=0, max_value=max(jobs.n_jobs - 1, 0))
        x = np.zeros(jobs.n_instances * jobs.n_slots)
        if jobs.n_jobs:
            x[jobs.job(n).units] = self._hist[self._hist_ptr[n]:self._hist_ptr[n + 1]]
        x.setflags(write=False)
        return x.reshape(jobs.n_instances, jobs.n_slots)

    @property
    def bounds(self) -> tuple[float, float]:
        """``(ι, v)`` of the episode."""
        return self._bounds

    def _job(self, n: int) -> JobUnits:
        """Job ``n``'s values on its units, from the episode's cursor (``n < N``)."""
        if not self._c_first <= n < self._c_stop:
            self._set_chunk(self.rows.chunk(n))
        return self._chunk.job(n)

    @property
    def rows(self) -> JobRows:
        """The episode's cursor over its jobs' chunks (:class:`~.tables.JobRows`)."""
        if self._rows is None:
            self._rows = JobRows(self.jobs)
        return self._rows

    def _set_chunk(self, chunk: JobChunk | None) -> None:
        """Make ``chunk`` the one the kernels read (``None``: an empty one)."""
        if chunk is None:
            e = np.zeros(0)
            chunk = JobChunk(0, np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64), e, e, e)
        self._chunk = chunk
        self._c_first, self._c_stop = chunk.first, chunk.stop

    def _set_history(self, ptr: np.ndarray) -> None:
        """An empty dispatch history for jobs of entry offsets ``ptr`` ``(N + 1,)``."""
        self._hist_ptr = ptr
        self._hist = np.zeros(int(ptr[-1]))

    def _upper(self) -> np.ndarray:
        R, T = self.instance.n_instances, self.instance.horizon
        out = np.zeros(R * T)
        if self._n < self.jobs.n_jobs:
            job = self._job(self._n)
            out[job.units] = job.capability
        return out.reshape(R, T)

    def job_proposal(self, a: np.ndarray) -> np.ndarray:
        """An action of a learnable mode, validated and clipped to [-1, 1] -> the current
        job's proposal on its units ``(m,)``, workload units (:func:`.actions.decode_job`;
        the native vector env decodes every copy's action with it)."""
        n = self._n
        job = self._job(n)
        later = self.expected_later_demand()[self.jobs.arrival[n]] \
            if self.action_mode == "demand_price" else None
        return decode_job(self.action_mode, a, self.instance.family_code, self._bounds[1],
                          job.units, job.capability, job.coef, job.weight, self._capacity_flat,
                          self._usage_flat, float(self.jobs.workload[n]), later)

    def _decode(self, a: np.ndarray) -> np.ndarray:
        """Validated, clipped action -> proposed dispatch ``(R, T)`` of the current job."""
        upper = self._upper()
        if self.action_mode == "dispatch":
            return decode_unit(a.reshape(self.instance.n_instances, -1), upper)
        out = np.zeros(upper.size)
        if self._n < self.jobs.n_jobs:
            out[self._job(self._n).units] = self.job_proposal(a)
        return out.reshape(upper.shape)

    def decode_action(self, action: np.ndarray) -> np.ndarray:
        """Action in [-1, 1] (``(R*T,)`` in the ``"dispatch"`` and ``"unit_prices"`` modes,
        ``(3,)`` in ``"pricing"``, ``(1,)`` in ``"demand_price"``) ->
        proposed dispatch ``(R, T)`` of the current job in workload units (before the capacity
        and workload repair, which a pricing decision never needs; out-of-box entries
        clipped)."""
        self._check_reset()
        a = validate_action(action, self._act_dim)
        return self._decode(clip_unit(a)[0])

    def encode_action(self, dispatch: np.ndarray) -> np.ndarray:
        """Dispatch ``(R, T)`` (or flat) of the current job in workload units -> float32 action
        of the ``"dispatch"`` mode (the pricing mode has no inverse: it raises)."""
        self._check_reset()
        if self.action_mode != "dispatch":
            raise ValueError(f"action_mode={self.action_mode!r} has no encode_action: only "
                             "action_mode='dispatch' maps a dispatch to an action")
        x = np.asarray(dispatch, dtype=np.float64)
        if x.size != self.instance.n_units:
            raise ValueError(f"dispatch has shape {x.shape}: must have shape "
                             f"({self.instance.n_instances}, {self.instance.horizon})")
        return encode_unit(x.reshape(-1), self._upper().reshape(-1))

    # ---------------------------------------------------------------- obs
    def _obs(self) -> dict[str, np.ndarray]:
        """The observation of the current job (documented in the class docstring), filled by
        one compiled call (:func:`.dynamics.obs_fill`) from the job's values on its units into
        one fresh float32 buffer; every key is a view of its own part of that buffer (nothing
        is shared with the env or other steps)."""
        n = self._n
        if n < self._N and not self._c_first <= n < self._c_stop:
            self._set_chunk(self.rows.chunk(n))
        c = self._chunk
        buf = np.empty(self._obs_size, dtype=np.float32)
        dynamics.obs_fill(n, self._N, self._scalars, c.ptr, c.units, c.capability, c.coef,
                          c.weight, n - self._c_first, self.family_onehot, self._usage_flat,
                          self._capacity_flat, self.capacity32, self._bounds[0],
                          self._bounds[1], self._features, buf)
        obs = {key: buf[lo:hi] for key, lo, hi in self._obs_slices}
        return obs if self.entity_encoder is None else self.entity_encoder.encode(obs)

    def _obs_layout(self) -> None:
        """Where every observation key lies in :meth:`_obs`'s buffer (:func:`.dynamics.obs_fill`'s
        order, also the order of the returned dict's keys)."""
        space = self.flat_space.spaces
        order = ("workload", "window", "allowed", "capability", "utility_coef",
                 "cluster_weight", "utility_family", "usage", "capacity", "bounds", "progress",
                 "instance")
        self._obs_slices: list[tuple[str, int, int]] = []
        k = 0
        for key in order[:len(space)]:
            size = int(np.prod(space[key].shape or (1,)))
            self._obs_slices.append((key, k, k + size))
            k += size
        self._obs_size = k
        self._features = (self.instance_feature_vector() if self.instance_features
                          else np.zeros(0, dtype=np.float32))

    def instance_feature_vector(self) -> np.ndarray:
        """float32 ``(R + 2,)``: every instance's capacity ``C_r`` (slot 0), then the mean and
        the minimum over instances (workload units); the observation's ``"instance"`` key."""
        c = self.instance.capacity[:, 0]
        return np.concatenate([c, [c.mean(), c.min()]]).astype(np.float32)

    # ---------------------------------------------------------------- gym API
    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[dict[str, np.ndarray],
                                                               dict[str, Any]]:
        """Draw the episode's jobs from ``seed`` (common random numbers) and return the first
        job's observation and ``info`` (``n_jobs``, ``iota``, ``v``, ``alpha_hat``,
        ``episode_seed``)."""
        super().reset(seed=seed)
        episode_seed = resolve_episode_seed(seed, self.np_random)
        jobs = self.draw_jobs(episode_seed)
        scan = self.scan_jobs(jobs)
        inst = self.instance
        self.episode_seed = episode_seed
        self._jobs, self._rows = jobs, scan.rows
        self._set_chunk(scan.rows.chunk(0) if jobs.n_jobs else None)
        self._bounds = scan.bounds
        self._scalars = job_scalars(jobs)
        self._rho = jobs.workload
        self._needs_reset = False
        self._n = 0
        self._N = jobs.n_jobs
        self._slots = jobs.arrival.tolist()
        self._usage = np.zeros((inst.n_instances, inst.horizon))
        self._usage_flat = self._usage.reshape(-1)
        self._set_history(np.concatenate([[0], np.cumsum(jobs.sizes)]).astype(np.int64))
        self._totals = [0.0] * 4
        self._alpha = alpha_hat(self._bounds[1] / self._bounds[0])
        info = {"n_jobs": jobs.n_jobs, "iota": self._bounds[0], "v": self._bounds[1],
                "alpha_hat": self._alpha, "episode_seed": episode_seed}
        return self._obs(), info

    def sample_jobs(self, episode_seed: int) -> Jobs:
        """The jobs the scenario draws for ``episode_seed`` (a non-negative integer), without
        touching this env's episode: a sample of the job distribution, for an agent that plans
        with the distribution (it never sees the current episode's seed)."""
        seed = check_seed("episode_seed", episode_seed)
        if seed is None:
            raise ValueError("episode_seed=None is invalid: must be an integer >= 0")
        return self._sample_jobs(seed)

    def expected_later_demand(self, futures: int = FUTURES) -> np.ndarray:
        """``(T + 1, R T)`` float64, read-only: row ``s`` is the workload that jobs arriving
        after slot ``s`` are expected to want on each mesh unit ``r * T + t`` (workload units),
        estimated from ``futures`` synthetic episodes of this scenario's job distribution
        (:mod:`.demand`; never from the episode being played). On a trace scenario's
        ``split="test"`` those episodes are drawn from the ``train`` split (the trace's past,
        before the split boundary), never from other days of the test split, so a rule that
        reads the table knows only what a deployment would; the table's shape is the same.
        Computed once per ``futures``; refused in one line when the table alone exceeds
        ``memory_limit_mb``."""
        futures = check_int("futures", futures, min_value=1, max_value=10_000)
        if futures not in self._later_demand:
            inst = self.instance
            need = 8.0 * (inst.horizon + 1) * inst.n_units / 2**20
            if need > self.memory_limit_mb:
                raise ValueError(
                    f"the expected-later-demand table ({inst.horizon + 1} x {inst.n_units}) "
                    f"needs {need:,.0f} MB: more than memory_limit_mb="
                    f"{self.memory_limit_mb:,.0f} (pass a larger memory_limit_mb= to allow it)")
            table = later_demand(estimate_sampler(self._sample_jobs), inst.n_units,
                                 inst.horizon,
                                 future_seeds(self.instance_seed, futures))
            table.setflags(write=False)
            self._later_demand[futures] = table
        return self._later_demand[futures]

    def show_state(self, jobs: Jobs | None, n: int, usage: np.ndarray,
                   totals: Sequence[float], bounds: tuple[float, float], alpha: float,
                   rows: JobRows | None = None) -> None:
        """Take another copy's episode state, as far as :meth:`decode_action` and
        :meth:`render` read it: its jobs (``rows``: their cursor, else the jobs' own), the
        index ``n`` of the job about to be dispatched, the mesh usage ``(R, T)`` (kept, not
        copied), the running totals (job utility, cluster utility, served workload, workload),
        ``(iota, v)`` and ``alpha_hat``. The native vector env keeps every copy's episode in
        batch arrays and shows one at a time to a single env, so that decoding and drawing are
        written once. Stepping afterwards is not supported: reset first."""
        inst = self.instance
        if usage.shape != (inst.n_instances, inst.horizon):
            raise ValueError(f"usage has shape {usage.shape}: must be "
                             f"({inst.n_instances}, {inst.horizon})")
        self._jobs, self._n, self._usage = jobs, int(n), usage
        self._usage_flat = usage.reshape(-1)
        self._rows = rows if rows is not None or jobs is None else jobs.rows
        self._set_chunk(None)
        self._totals = list(totals)
        self._bounds, self._alpha = (float(bounds[0]), float(bounds[1])), float(alpha)
        self._needs_reset = True

    # ------------------------------------------------- the native vector env's interface
    # DeadlineWelfareVectorEnv builds its batch on these and on flat_space, entity_encoder,
    # capacity32, family_onehot, memory_parts, show_state and job_proposal: each copy's
    # episode is drawn, checked and decoded by the single env's own code.
    def draw_jobs(self, episode_seed: int) -> Jobs:
        """The scenario's jobs for ``episode_seed``, refused (one line) if they were drawn for
        another mesh than the instance's ``(R, T)`` (only a user's own sampler can do that)."""
        jobs = self._sample_jobs(episode_seed)
        inst = self.instance
        if jobs.n_instances != inst.n_instances or jobs.n_slots != inst.horizon:
            raise ValueError(f"the job sampler gave jobs for {jobs.n_instances} instances x "
                             f"{jobs.n_slots} slots: the instance has {inst.n_instances} x "
                             f"{inst.horizon}")
        return jobs

    def scan_jobs(self, jobs: Jobs, copies: int = 1) -> EpisodeScan:
        """Read every chunk of ``jobs`` once (:func:`.dynamics.scan_units`): their bounds
        (ι, v) and observed maxima. Refuses (one line; nothing changed) jobs beyond the
        observation boxes (only a user's own sampler can give them; the error names the
        parameter that sets the box) and an episode whose tables (:mod:`.memory`, ``copies``
        episodes at once) exceed ``memory_limit_mb``."""
        self._check_episode_memory(jobs, copies)
        rows = JobRows(jobs)
        inst = self.instance
        out = dynamics.scan_start()
        delta = float(inst.sqrt_v_floor if inst.family_code == dynamics.SQRT else 0.0)
        for chunk in rows:
            dynamics.scan_units(inst.family_code, delta, chunk.units, chunk.capability,
                                chunk.coef, chunk.weight, self._capacity_flat, out)
        seen = [float(np.max(jobs.workload)) if jobs.n_jobs else 0.0] + \
            [float(v) if v > -np.inf else 0.0 for v in out[2:]]
        names = ("workload", "capability", "coef", "weight")
        for name, got, lim, param in zip(names, seen, self._limits, self._limit_names,
                                         strict=True):
            if float(np.float32(got)) > float(np.float32(lim)):
                raise ValueError(f"the episode's jobs have {name} up to {got!r}: must be <= "
                                 f"{lim!r}, the observation box's upper end set by {param}")
        return EpisodeScan(rows, dynamics.bounds_from(inst, *dynamics.scan_bounds(out)))

    def _check_episode_memory(self, jobs: Jobs, copies: int) -> None:
        inst = self.instance
        N, E, need = self._within
        if jobs.n_jobs <= N and jobs.sizes.sum() <= E and copies * need <= self.memory_limit_mb:
            return  # within what the construction's check counted
        parts = breakdown(inst.n_instances, inst.horizon, jobs.n_jobs, float(jobs.sizes.sum()),
                          **self._memory_kind())
        parts = {k: copies * v for k, v in parts.items()}
        refuse(f"the episode's {jobs.n_jobs} jobs on {inst.n_instances} x {inst.horizon} units"
               + (f" ({copies} copies)" if copies > 1 else ""), parts, self.memory_limit_mb,
               "pass a larger memory_limit_mb= to allow it")

    def _memory_kind(self) -> dict[str, bool]:
        return {"entities": self.obs_mode == "entities",
                "later": self.obs_mode == "entities" or self.action_mode == "demand_price"}

    def memory_parts(self) -> dict[str, float]:
        """Bytes of each table of one of this env's episodes (:func:`.memory.breakdown`), from
        the scenario's size bounds: the jobs an episode can hold (``n_jobs``, or the Poisson
        count's upper end, or the trace's busiest window) and their expected units."""
        N, E, extra = self._size_bounds()
        inst = self.instance
        return breakdown(inst.n_instances, inst.horizon, N, E, **self._memory_kind(), **extra)

    def _size_bounds(self) -> tuple[float, float, dict[str, Any]]:
        """``(jobs, entries, extra)`` of :meth:`memory_parts`."""
        inst, p, sampler = self.instance, self.params, self._sample_jobs
        if inst.jobs is not None:
            return float(inst.jobs.n_jobs), float(inst.jobs.sizes.sum()), {}
        if hasattr(sampler, "size_bounds"):
            return cast(tuple[float, float, dict[str, Any]], sampler.size_bounds())
        N = p["n_jobs"] if p["n_jobs"] is not None else \
            poisson_jobs(p["arrival_rate"], p["horizon"])
        return float(N), generator_entries(p, N), {}

    def _memory_check(self) -> None:
        """Refuse, before any episode is drawn, a setting whose episodes would need more than
        ``memory_limit_mb`` (:meth:`memory_parts`)."""
        inst, p = self.instance, self.params
        parts = self.memory_parts()
        refuse(f"n_instances={inst.n_instances}, horizon={inst.horizon}, n_jobs={p['n_jobs']}",
               parts, self.memory_limit_mb, "pass a larger memory_limit_mb= to allow it")
        N, E, _ = self._size_bounds()
        #: an episode within these jobs and entries needs at most this many MB (a reset's
        #: check is then the comparison)
        self._within = (N, E, estimate_mb(parts))

    def step(self, action: np.ndarray) -> tuple[dict[str, np.ndarray], float, bool, bool,
                                                 dict[str, Any]]:
        """Dispatch the current job (see the class docstring); returns the next observation,
        the job's welfare, ``terminated`` after the last job, ``truncated=False`` and ``info``.
        The action check, decoding, repair, usage update, welfare and the info's sums are one
        compiled call (:func:`.dynamics.step_job`)."""
        self._check_reset()
        n, N = self._n, self._N
        if n >= max(N, 1):
            raise RuntimeError("step() called after the episode ended: call reset() first")
        active = n < N  # else the null job of an empty episode
        if active and not self._c_first <= n < self._c_stop:
            self._set_chunk(self.rows.chunk(n))
        rho = float(self._rho[n]) if active else 0.0
        x = np.zeros(self._n_units)
        if self.action_mode == "dispatch":
            a, prop, decode, clip = self._raw_action(action), self._no_prop, True, 0.0
        else:
            checked, clip = self._checked_action(action)
            a, decode = self._no_action, False
            prop = self.job_proposal(checked) if active else self._no_prop
        c = self._chunk
        ok, dclip, cap_l1, wl_l1, fj, fc, served, units, util = dynamics.step_job(
            self._family_code, decode, a, prop, c.ptr, c.units, c.capability, c.coef, c.weight,
            n - self._c_first, self._capacity_flat, self._usage_flat, rho, active, x,
            self._hist, self._hist_ptr[n] if active else 0)
        if not ok:
            validate_action(action, self._act_dim)  # raises, naming the entry
        clip = dclip if decode else clip
        self._n = n + 1
        info = self._step_info(x.reshape(self._usage.shape), cap_l1, wl_l1, fj, fc, rho, clip,
                               n, served, units, util)
        terminated = self._n >= max(N, 1)
        if terminated:
            info["final_usage"] = self._usage.copy()
        return self._obs(), fj + fc, terminated, False, info

    def _step_info(self, x: np.ndarray, cap_l1: float, wl_l1: float, fj: float, fc: float,
                   rho: float, clip: float, n: int, served: float, units: int,
                   util: float) -> dict[str, Any]:
        """The step's ``info`` (documented under Rewards) for the applied dispatch ``x``
        ``(R, T)`` (``served`` = Σx, ``units`` with x > 1e-9, ``util`` mean ω/C); updates the
        running totals."""
        tot = self._totals
        tot[0] += fj
        tot[1] += fc
        tot[2] += served
        tot[3] += rho
        return {
            "job_utility": fj, "cluster_utility": fc, "dispatch": x,
            "served": served / rho if rho > 0 else 0.0, "units_used": units,
            "repair_l1": cap_l1 + wl_l1, "repair_capacity": cap_l1,
            "repair_workload": wl_l1, "action_clip": clip,
            "slot": self._slots[n] if self._N else 0, "job": n,
            "welfare": tot[0] + tot[1], "welfare_jobs": tot[0], "welfare_cluster": tot[1],
            "served_fraction": tot[2] / tot[3] if tot[3] > 0 else 0.0,
            "utilization": util, "iota": self._bounds[0], "v": self._bounds[1],
            "alpha_hat": self._alpha, "n_jobs": self._N, "episode_seed": self.episode_seed,
        }

    def _raw_action(self, action: Any) -> np.ndarray:
        """A dispatch action as a float32/float64 ``(U,)`` array for :func:`.dynamics.step_one`
        (which checks the entries); other types are converted, a wrong shape raises
        ``validate_action``'s ``ValueError``."""
        if (type(action) is np.ndarray and action.shape == (self._act_dim,)
                and (action.dtype == np.float32 or action.dtype == np.float64)):
            return action
        try:
            a = np.asarray(action, dtype=np.float64)
        except (TypeError, ValueError):
            a = None
        if a is None or a.shape != (self._act_dim,):
            validate_action(action, self._act_dim)  # raises
        return cast(np.ndarray, a)

    def _checked_action(self, action: np.ndarray) -> tuple[np.ndarray, float]:
        """``(action clipped to [-1, 1] as float64, amount clipped)``; a wrong shape or a
        non-finite entry raises ``validate_action``'s ``ValueError`` (the checks of
        ``clip_unit(validate_action(...))`` with one min and one max)."""
        try:
            a = np.asarray(action, dtype=np.float64)
        except (TypeError, ValueError):
            a = None
        if a is None or a.shape != (self._act_dim,):
            return clip_unit(validate_action(action, self._act_dim))  # raises
        lo, hi = float(a.min()), float(a.max())
        if not (math.isfinite(lo) and math.isfinite(hi)):
            validate_action(a, self._act_dim)  # raises, naming the entry
        if lo >= -1.0 and hi <= 1.0:
            return a, 0.0
        return clip_unit(a)

    def render_state(self) -> RenderState:
        """The snapshot :mod:`.viewer` draws (utilisation of the mesh, welfare so far)."""
        jobs = self.jobs
        tot = self._totals
        return RenderState(
            job_index=self._n, n_jobs=jobs.n_jobs, welfare=float(tot[0] + tot[1]),
            welfare_jobs=float(tot[0]), welfare_cluster=float(tot[1]),
            served_fraction=float(tot[2] / tot[3]) if tot[3] > 0 else 0.0,
            utilization=self._usage / self.instance.capacity,
            current=jobs.unit_mask(self._n) if self._n < jobs.n_jobs else None)


#: Parameters an explicit ``instance`` fixes (an override must agree with it).
_INSTANCE_FIELDS: tuple[str, ...] = ("n_instances", "horizon", "utility", "sqrt_v_floor",
                                     "bound_mode")


def _check_explicit(instance: DeadlineWelfareInstance, overrides: dict[str, Any]) -> None:
    """Refuse overrides that an explicit ``instance`` would silently ignore or contradict."""
    for key, value in overrides.items():
        if key in _INSTANCE_FIELDS:
            have = getattr(instance, key)
            if value != have:
                raise ValueError(f"{key}={value!r} conflicts with the explicit instance "
                                 f"({key}={have!r}): drop the override or build the instance "
                                 "with it")
        elif key in ("capacity_mean", "capacity_sd"):
            raise ValueError(f"{key}={value!r} has no effect with an explicit instance (its "
                             "capacity is given): drop the override")
        elif instance.jobs is not None:
            raise ValueError(f"{key}={value!r} has no effect: the explicit instance replays "
                             "fixed jobs; drop the override")


def _check_sizes(scenario: str, overrides: dict[str, Any],
                 instance: DeadlineWelfareInstance | None, limit_mb: float, obs_mode: str,
                 action_mode: str) -> None:
    """Refuse, before anything is built, sizes whose mesh tables alone would need more than
    ``limit_mb`` MB (:mod:`.memory`; sizes are validated first, so a bad size is named as
    such). The full check, with the jobs, follows once the scenario is built (a trace
    scenario's sizes are known only then)."""
    sc, p = SCENARIOS.resolve(scenario, overrides)
    if instance is not None:
        R, T = instance.n_instances, instance.horizon
    elif sc.builder is not None:
        return
    else:
        if p["n_instances"] == "all":
            raise ValueError(f"n_instances='all' is invalid for scenario={scenario!r}: every "
                             "node of a trace needs scenario='alibaba-gpu-2023' (give an "
                             "integer >= 1 here)")
        R = check_int("n_instances", p["n_instances"], min_value=1)
        T = check_int("horizon", p["horizon"], min_value=1)
    if p["n_jobs"] is not None and instance is None:
        check_int("n_jobs", p["n_jobs"], min_value=1)
    check_float("arrival_rate", p["arrival_rate"], low=0.0, low_open=True,
                high=ARRIVAL_RATE_MAX)
    later = obs_mode == "entities" or action_mode == "demand_price"
    parts = breakdown(R, T, 0, 0, entities=obs_mode == "entities", later=later)
    refuse(f"n_instances={R}, horizon={T}", parts, limit_mb,
           "pass a larger memory_limit_mb= to allow it")
