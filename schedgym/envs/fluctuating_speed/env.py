"""FluctuatingSpeed-v0: online channel selection with fluctuating processing speeds (ESDP)."""

from __future__ import annotations

from typing import Any, ClassVar, cast

import numpy as np
from gymnasium import spaces

from schedgym.core import rng as rngs
from schedgym.core.arrays import readonly_view
from schedgym.core.arrivals import ArrivalSampler, bernoulli_arrivals
from schedgym.core.entities import OBS_MODES
from schedgym.core.envbase import SchedEnv, Viewer, frac_box, resolve_episode_seed
from schedgym.core.validation import check_bool, check_choice
from schedgym.envs.fluctuating_speed import actions, dynamics, entities, viewer
from schedgym.envs.fluctuating_speed.generator import SCENARIOS, generate
from schedgym.envs.fluctuating_speed.offline import OracleSolver
from schedgym.envs.fluctuating_speed.trace import TRACE_EXTRAS
from schedgym.envs.fluctuating_speed.types import (
    INSTANCE_PARAMS,
    FluctuatingSpeedInstance,
    FluctuatingSpeedParams,
    cell_bytes,
)
from schedgym.envs.fluctuating_speed.viewer import RenderState

INVALID_ACTION_MODES = ("repair", "raise")

#: The type Gymnasium's Env declares for observation spaces.
ObsSpace = spaces.Space[dict[str, np.ndarray]]


def _refuse_instance_conflicts(scenario: str, overrides: dict[str, Any]) -> None:
    """An explicit ``instance=`` fixes everything the generator would draw: refuse overrides that
    would shape the instance (they would be silently ignored) and builder scenarios."""
    clash = sorted(k for k in overrides if k in INSTANCE_PARAMS or k in TRACE_EXTRAS)
    if clash:
        raise ValueError(
            f"instance= was given together with {', '.join(clash)}: these shape the instance, "
            "which instance= already fixes; drop them (only horizon, arrival_prob and "
            "memory_limit_mb apply beside an explicit instance)"
        )
    if SCENARIOS.scenarios[scenario].builder is not None:
        raise ValueError(
            f"instance= was given together with scenario={scenario!r}, which builds its own "
            "instance (and arrivals): use one or the other"
        )


def _check_entities_options(action_mode: str, instance_features: bool,
                            feedback_stats: bool) -> None:
    """``obs_mode="entities"`` acts through the per-cell ``"scores"`` mode and always carries the
    instance features and feedback statistics: refuse the combinations that would mean otherwise."""
    if action_mode != "scores":
        raise ValueError(f"obs_mode='entities' with action_mode={action_mode!r} is invalid: the "
                         "entities are the (port, server) cells the 'scores' action scores; "
                         "use action_mode='scores'")
    if instance_features or feedback_stats:
        raise ValueError("instance_features=True / feedback_stats=True are invalid with "
                         "obs_mode='entities': they add keys to the flat observation, and the "
                         "entity rows always carry the same information")


def _check_memory_first(scenario: str, overrides: dict[str, Any], env: Any) -> None:
    """Refuse, before the generator draws its ``(L, R)`` grids, sizes whose estimate with the
    modes' per-cell tables (:func:`~.types.cell_bytes`) is above the limit (a builder scenario
    checks its own sizes, which it knows only once it has read its trace)."""
    sc, values = SCENARIOS.resolve(scenario, overrides)
    if sc.builder is not None:
        return
    p = FluctuatingSpeedParams.from_mapping(values)
    p.check_memory(per_cell=cell_bytes(env.action_mode, env.obs_mode, env.instance_features,
                                       env.feedback_stats, p.n_resources))


class FluctuatingSpeedEnv(SchedEnv[np.ndarray]):
    """Online scheduling of multi-server jobs whose processing speed fluctuates (ESDP paper).

    ## Description
    ``L`` job types (ports) and ``R`` servers form a bipartite service-locality graph with edges
    (channels) ``E``. At the start of every slot each port holds a job with probability ``rho_l``.
    The scheduler selects a set of channels ``x in {0,1}^|E|``; a job may run on several of its
    channels in parallel. Channel ``e`` requests ``a_k^e`` devices of each of ``K`` types and the
    **cluster-wide** capacity is ``A x <= c`` (ESDP §3, constraint (2)). A used channel yields a
    random utility ``Z_e(t) ~ N(mu_e, (mu_e/2)^2)`` (unknown mean: the fluctuating speed) minus a
    known cost ``C_e``; the net utility is normalised as ``clip(Z - C, 0, 1)`` (ESDP §3, the
    normalised AOU; ``docs/envs/fluctuating-speed.md``). Devices are released at the end of the
    slot; unserved jobs are dropped (no queue).

    ## Action Space
    ``MultiBinary(|E|)``: entry ``e`` selects channel ``instance.edges[e]`` (lexicographic
    ``(l, r)``). Edges of ports without a job are **masked** (set to 0, ``info["n_masked"]``,
    ESDP constraint (4)). A selection that breaks capacity is **repaired** by default
    (``invalid_action="repair"``): while ``A x > c``, drop the selected edge with the highest index
    among those requesting an overloaded device type (``info["n_repaired"]``,
    ``info["repaired"]``); ``invalid_action="raise"`` raises ``ValueError`` instead. A wrong shape
    or an entry other than 0/1 always raises ``ValueError``.

    ``action_mode="scores"`` (learnable, :mod:`~schedgym.envs.fluctuating_speed.actions`):
    ``Box(-1, 1, (L * R,), float32)``, one score per (port, server) cell, row-major; the decoder
    selects, among the present ports' edges with a positive score, by descending score every edge
    that still fits the capacity (always feasible, ``info["action_clip"]`` = how far the action
    was clipped into the box). ``env.unwrapped.metadata["action_modes"]`` lists the modes.

    ## Observation Space
    ``Dict`` of 1-D float32 boxes in [0, 1] (use ``FlattenObservation`` for an ``MlpPolicy``):

    - ``arrivals`` ``(L,)``: ``1_l(t)``, the jobs of the slot about to be scheduled;
    - ``utilization`` ``(K,)``: ``(A x(t-1))_k / c_k``, previous slot's cluster utilization;
    - ``feedback`` ``(|E|,)``: previous slot's realised net utility ``clip(Z_e - C_e, 0, 1)`` on
      every channel that was used, 0 elsewhere (semi-bandit feedback);
    - ``used`` ``(|E|,)``: 1 on the channels used in the previous slot (after masking/repair);
    - ``waiting`` ``(L,)``: head-of-line waiting time ``w_l(t) / T`` (slots since the oldest job
      not served since the port was last served; 0 if none; the LWTF baseline of ESDP §6);
    - ``progress`` ``(1,)``: ``t / T`` with ``t`` the 0-based slot index.

    All zeros except ``arrivals`` at the first slot. ``used`` + ``feedback`` is all an online
    learner needs (ESDP, HAUF, LWTF learn from them). In ``"scores"`` mode ``feedback`` and
    ``used`` are laid out on the ``(L * R,)`` grid (0 off the edges), so no space depends on the
    instance seed. ``instance_features=True`` adds ``instance`` ``((K + 2) L R,)``: the edge
    indicator, the requests as shares of the capacities ``min(a_k^e / c_k, 1)`` per type and the
    known costs ``min(C_e, 1)``, each on the grid (the utility means stay hidden).
    ``feedback_stats=True`` adds, laid out as ``feedback`` (per edge, or on the grid in
    ``"scores"`` mode), the running statistics an online learner keeps (ESDP, HAUF):
    ``feedback_mean``, each channel's mean observed net utility ``clip(Z_e - C_e, 0, 1)`` over
    the slots it was used so far this episode (0 if never), and ``feedback_count``, the number
    of those slots divided by ``T``. They make a memoryless policy able to tell good channels
    from bad ones on an instance it has never seen.

    ``obs_mode="entities"`` (with ``action_mode="scores"``) replaces the flat dict by
    ``Dict(entities=Box(0, 1, (L R F,)), mask=Box(0, 1, (L R,)), context=Box(0, 1, (C,)))``,
    float32: one row of ``F`` features per (port, server) cell ``l * R + r`` (the order of the
    scores, entity ``i`` <-> action entry ``i``; ``metadata["entity_action"]`` is ``"entity"``;
    ``metadata["entity_action_mode"]`` names ``scores``, the mode an entity policy trains in,
    and ``metadata["entity_play"]`` is ``"sampled"``: an entity policy here explores through its
    own action noise, so ``schedgym train --policy entity`` evaluates and records its draws),
    the rows flattened row-major into the 1-D ``entities`` vector (cell ``i`` at
    ``[F i:F (i + 1)]``; 1-D keeps both checkers clean). The features and their meanings are
    :data:`.entities.FEATURES` (``F = len(entity_feature_names)``) and
    :data:`.entities.CONTEXT` (``C = len(context_feature_names)``): per cell whether it is an
    edge, whether its port has a job now, its requests as shares of the capacities, its known
    cost, the port's waiting time, the previous slot's use and feedback, the running feedback
    statistics and a UCB width; per observation the slot fraction, the utilization, the share
    of ports with a job, the edge density and the mean waiting time. ``mask`` is 1 on the edges
    of the ports with a job now. Every size but ``N = L R`` is fixed, so one shared-weights
    policy plays every size (:mod:`~schedgym.envs.fluctuating_speed.entities`).

    ## Rewards
    ``sum_e x_e clip(Z_e(t) - C_e, 0, 1)`` over the applied selection (the normalised AOU
    increment). ``info`` (no key repeats an observation key or ``reward``, so clients that put
    observation, reward and info in one table, such as TorchRL, take it as it is):
    ``selection`` (applied, int8 ``(|E|,)``), ``slot_arrivals`` (the slot's ``1_l(t)``),
    ``slot_feedback`` (``(|E|,)``, realised net utility on used channels, 0 elsewhere),
    ``raw_utility`` (unclipped ``sum_e x_e (Z_e - C_e)``), ``expected_reward``
    (``theta^T x``), ``n_selected``, ``n_masked``, ``n_repaired``, ``repaired``,
    ``mean_utilization`` (mean over types), ``slot`` and, with ``compute_oracle=True``
    (default), ``oracle_value``
    (``max theta^T x`` over the feasible, arrival-consistent selections), ``pseudo_regret``
    (``oracle_value - expected_reward``) and ``realised_regret`` (oracle's realised net utility
    minus the reward).

    ## Starting State
    ``reset(seed=s)`` pre-draws the episode's arrivals ``(T, L)`` and raw utilities
    ``(T, |E|)`` from independent streams of ``s``; the first observation holds slot 0's
    arrivals, every other key is 0.

    ## Episode End
    Truncated after exactly ``T`` slots (``horizon``, also ``env.spec.max_episode_steps``);
    never terminated.

    ## Arguments
    ``gym.make("schedgym/FluctuatingSpeed-v0", scenario="paper-default", instance_seed=0,
    instance=None, render_mode=None, invalid_action="repair", compute_oracle=True,
    action_mode="selection", instance_features=False, feedback_stats=False, obs_mode="flat",
    **overrides)``.
    Scenarios:
    ``paper-default`` (ESDP Table 3), ``paper-headline`` (T = 8000), ``literal-capacity``
    (kappa = 1), ``alibaba-gpu-2023`` (types, locality graph, relative sizes and arrivals from
    the shipped Alibaba trace sample, see
    :mod:`schedgym.envs.fluctuating_speed.trace`; extra overrides ``slot_seconds`` = 600,
    ``degree_cap`` = ``"auto"`` (``edge_prob x n_instances`` nodes per type), ``split``
    (``"train"`` / ``"test"``), ``time_window`` (trace seconds), ``trace`` and ``constraints``;
    ``n_instances="all"`` takes every node, ``horizon`` defaults to 2000 or the whole split).
    Overrides are the fields of
    :class:`~schedgym.envs.fluctuating_speed.types.FluctuatingSpeedParams`:

    ==================  ==========  ========================================================
    override            default     meaning (paper symbol)
    ==================  ==========  ========================================================
    ``n_types``         8           ports ``|L|``
    ``n_instances``     40          servers ``|R|``
    ``n_resources``     3           device types ``K`` (<= 6)
    ``horizon``         2000        slots ``T``
    ``arrival_prob``    0.9         ``rho_l`` (scalar or one per port)
    ``edge_prob``       0.1         Table 3 ``rho_(l,r)``: ``P[(l, r) in E]``
    ``request_range``   (1, 2)      ``a_k^e ~ UniformInt{lo..hi}`` devices
    ``capacity_range``  (1, 2)      ``c_k = kappa * UniformInt{lo..hi}`` devices
    ``capacity_scale``  3           ``kappa``
    ``mean_range``      (0.1, 1.0)  ``mu_e ~ U(lo, hi)``
    ``std_ratio``       0.5         std of ``Z_e`` = ``std_ratio * mu_e``
    ``cost_mean``       0.5         ``phi_{k,e} ~ N(cost_mean, cost_std^2)``, clipped >= 0
    ``cost_std``        0.1
    ``cost_scale``      0.1         ``lambda``: ``C_e = lambda sum_k phi_{k,e}``
    ``memory_limit_mb`` 4096        refuse sizes whose estimated memory (MiB) is above it
    ==================  ==========  ========================================================

    An explicit ``instance`` (a :class:`FluctuatingSpeedInstance`) replaces the generator; only
    ``horizon``, ``arrival_prob`` and ``memory_limit_mb`` apply beside it (the other overrides and
    builder scenarios are refused).

    Seeds: the instance is drawn once from ``instance_seed``; ``reset(seed=s)`` pre-draws the
    arrivals and utilities of the whole episode, so every agent run with the same
    ``(instance_seed, s)`` faces the same world (common random numbers).

    ## Vector environment
    ``gym.make_vec(ENV_ID, n, vectorization_mode="vector_entry_point")`` runs the native batch
    of :mod:`~schedgym.envs.fluctuating_speed.vector` (same results as ``n`` single envs, in
    every action mode); ``"sync"`` / ``"async"`` work too: the env is picklable, so
    ``AsyncVectorEnv`` and SB3's ``SubprocVecEnv`` work.

    ## Version History
    - v0: first version (ESDP paper's model with the normalised net utility).

    ## Example
    >>> import gymnasium as gym, schedgym
    >>> env = gym.make("schedgym/FluctuatingSpeed-v0", horizon=10)
    >>> obs, info = env.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    >>> sorted(obs)
    ['arrivals', 'feedback', 'progress', 'used', 'utilization', 'waiting']
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4,
                "action_modes": actions.ACTION_MODES, "obs_modes": OBS_MODES,
                "entity_action": "entity", "entity_action_mode": "scores",
                "entity_play": "sampled"}
    #: Names of the ``obs_mode="entities"`` per-entity features and context entries.
    entity_feature_names: tuple[str, ...] = entities.ENTITY_FEATURES
    context_feature_names: tuple[str, ...] = entities.CONTEXT_FEATURES
    viewer: ClassVar[Viewer] = viewer

    #: How ``schedgym compare`` aggregates the per-step info scalars over an episode.
    episode_metrics = {"reward": "sum", "expected_reward": "sum", "raw_utility": "sum",
                       "oracle_value": "sum", "pseudo_regret": "sum", "realised_regret": "sum",
                       "n_masked": "sum", "n_repaired": "sum", "mean_utilization": "mean"}

    def __init__(
        self,
        scenario: str = "paper-default",
        instance_seed: int = 0,
        instance: FluctuatingSpeedInstance | None = None,
        render_mode: str | None = None,
        invalid_action: str = "repair",
        compute_oracle: bool = True,
        action_mode: str = "selection",
        instance_features: bool = False,
        feedback_stats: bool = False,
        obs_mode: str = "flat",
        **overrides: Any,
    ) -> None:
        self.action_mode = check_choice("action_mode", action_mode, actions.ACTION_MODES)
        self.instance_features = check_bool("instance_features", instance_features)
        self.feedback_stats = check_bool("feedback_stats", feedback_stats)
        self.obs_mode = check_choice("obs_mode", obs_mode, OBS_MODES)
        if self.obs_mode == "entities":
            _check_entities_options(self.action_mode, self.instance_features,
                                    self.feedback_stats)
        self.invalid_action = check_choice("invalid_action", invalid_action,
                                           INVALID_ACTION_MODES)
        self.compute_oracle = check_bool("compute_oracle", compute_oracle)
        if not self.compute_oracle:  # no oracle keys in info: do not report them as zeros
            self.episode_metrics = {k: v for k, v in type(self).episode_metrics.items()
                                    if k not in ("oracle_value", "pseudo_regret",
                                                 "realised_regret")}
        if instance is not None:
            SCENARIOS.resolve(scenario, overrides)  # unknown names/parameters first
            _refuse_instance_conflicts(scenario, overrides)
        else:
            _check_memory_first(scenario, overrides, self)
        inst, raw, sampler, _ = self._setup(
            render_mode, instance_seed, scenario, SCENARIOS, overrides, instance,
            FluctuatingSpeedInstance, generate)
        if raw.get("horizon") is None:  # a trace scenario's default: the length it resolved
            raw = {**raw, "horizon": getattr(sampler, "horizon", None)}
        params = FluctuatingSpeedParams.from_mapping(
            {**raw, "n_types": inst.n_types, "n_instances": inst.n_instances,
             "n_resources": inst.n_resources})
        self._per_cell = cell_bytes(self.action_mode, self.obs_mode, self.instance_features,
                                    self.feedback_stats, inst.n_resources)
        params.check_memory(n_edges=inst.n_edges, capacities=inst.capacities.tolist(),
                            per_cell=self._per_cell)
        self.params: FluctuatingSpeedParams = params
        self.instance: FluctuatingSpeedInstance = inst
        self.horizon: int = params.horizon
        self._sample_arrivals: ArrivalSampler = sampler or bernoulli_arrivals(
            inst.n_types, params.probs(inst.n_types))
        self._oracle = OracleSolver(inst)
        self._tabs = dynamics.slot_tables(inst)

        self._build_spaces()
        self.episode_seed: int | None = None
        self._arrivals = np.zeros((self.horizon, inst.n_types))
        self._zraw = np.zeros((self.horizon, inst.n_edges))
        self._reset_state()

    def memory_estimate_mb(self) -> float:
        """Estimated MiB of this env, as its construction checked it against
        ``memory_limit_mb`` (:meth:`~.types.FluctuatingSpeedParams.memory_estimate` on the
        instance's edges and capacities, with the modes' per-cell tables); the native vector
        env counts it once per copy."""
        inst = self.instance
        return self.params.memory_estimate(n_edges=inst.n_edges,
                                           capacities=inst.capacities.tolist(),
                                           per_cell=self._per_cell)

    def _build_spaces(self) -> None:
        """Action and observation spaces of the mode (``"scores"``: every size is ``L``, ``R``
        or ``K``, never ``|E|``, so the spaces do not depend on the instance seed)."""
        inst = self.instance
        L, R, K, E = inst.n_types, inst.n_instances, inst.n_resources, inst.n_edges
        grid = self.action_mode == "scores"
        # where edge e's feedback/use sit in the observation: per edge, or on the (L, R) grid
        self._cell = np.ascontiguousarray(inst.cell_of_edge if grid else np.arange(E),
                                          dtype=np.int64)
        self.action_space: spaces.Space[Any] = (
            actions.scores_space(L, R) if grid else spaces.MultiBinary(E))
        per_edge = L * R if grid else E
        self._n_cells = per_edge
        boxes: dict[str, spaces.Space[Any]] = {"arrivals": frac_box(L), "utilization": frac_box(K),
                 "feedback": frac_box(per_edge), "used": frac_box(per_edge),
                 "waiting": frac_box(L), "progress": frac_box(1)}
        if self.instance_features:
            self._features = actions.instance_features(inst)
            boxes["instance"] = frac_box(self._features.shape[0])
        if self.feedback_stats:
            boxes.update({k: frac_box(per_edge) for k in dynamics.STATS_KEYS})
        self.observation_space = cast(ObsSpace, spaces.Dict(boxes))
        if self.obs_mode == "entities":
            self._etab = entities.tables(inst)
            self.observation_space = cast(ObsSpace, entities.spaces_of(L * R))

    def _reset_state(self) -> None:
        inst = self.instance
        self._t = 0
        self._clip = 0.0
        self._last_x = np.zeros(inst.n_edges, dtype=np.int8)
        self._fsum = np.zeros(inst.n_edges)  # running sum of the observed net utility per edge
        self._fcount = np.zeros(inst.n_edges, dtype=np.int64)  # slots each edge was used
        self._origin = -np.ones(inst.n_types)  # arrival slot of the oldest unserved job

    # ------------------------------------------------- what the vector twin reads
    @property
    def n_cells(self) -> int:
        """Length of the per-edge observation keys (``feedback``, ``used``, the feedback
        statistics): ``|E|``, or ``L R`` on the grid of the ``"scores"`` mode. With
        :attr:`entity_tables`, the interface the native vector env
        (:mod:`~schedgym.envs.fluctuating_speed.vector`) reads of the env it copies."""
        return self._n_cells

    @property
    def entity_tables(self) -> entities.EntityTables | None:
        """The per-instance constants of the ``obs_mode="entities"`` rows
        (:func:`~.entities.tables`, read-only by convention); ``None`` in the flat mode."""
        return self._etab if self.obs_mode == "entities" else None

    # ---------------------------------------------------------------- helpers
    @property
    def arrivals(self) -> np.ndarray:
        """The episode's pre-drawn arrival matrix ``(T, L)`` in {0, 1} (read-only view)."""
        return readonly_view(self._arrivals)

    @property
    def utilities(self) -> np.ndarray:
        """The episode's pre-drawn raw utilities ``Z`` ``(T, |E|)`` (read-only view; hidden from
        agents, for metrics and tests)."""
        return readonly_view(self._zraw)

    @property
    def t(self) -> int:
        """Index of the slot about to be scheduled (0-based)."""
        return self._t

    def _obs(self, util: np.ndarray, feedback: np.ndarray,
             x: np.ndarray) -> dict[str, np.ndarray]:
        """The observation at the start of slot ``self._t`` after a slot that used ``x`` with
        ``feedback`` and per-type ``util`` (:func:`~.dynamics.slot_observation`, the builder the
        vector env uses too)."""
        t, T = self._t, self.horizon
        obs = dynamics.slot_observation(
            self._arrivals[min(t, T - 1)], util, feedback, x, self._origin, t, T, self._cell,
            self._n_cells)
        if self.obs_mode == "entities":
            ent = entities.observation(self._etab, entities.EntityState(
                obs["arrivals"][None], obs["utilization"][None], feedback[None], x[None],
                obs["waiting"][None], np.array([t]), T, self._fsum[None], self._fcount[None]))
            return {k: v[0] for k, v in ent.items()}
        if self.instance_features:
            obs["instance"] = self._features.copy()
        if self.feedback_stats:
            obs.update(dynamics.feedback_stats(self._fsum, self._fcount, T, self._cell,
                                               self._n_cells))
        return obs

    # -------------------------------------------------------------- gym API
    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[dict[str, np.ndarray],
                                                              dict[str, Any]]:
        super().reset(seed=seed)
        self.episode_seed = resolve_episode_seed(seed, self.np_random)
        inst = self.instance
        self._arrivals = np.asarray(
            self._sample_arrivals(rngs.stream(self.episode_seed, "arrivals"), self.horizon),
            dtype=np.float64,
        )
        noise = rngs.stream(self.episode_seed, "utilities").standard_normal(
            (self.horizon, inst.n_edges))
        self._zraw = inst.mean + inst.std * noise
        self._reset_state()
        dynamics.advance_waits(self._origin, self._last_x, self._tabs.port_of_edge,
                               self._arrivals[0], 0, True)  # opens slot 0's waits
        self._needs_reset = False
        first = self._obs(np.zeros(inst.n_resources), np.zeros(inst.n_edges), self._last_x)
        return first, {"slot_arrivals": self._arrivals[0].copy(), "slot": 0}

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool,
                                         dict[str, Any]]:
        self._check_reset()
        t, T = self._t, self.horizon
        if t >= T:
            raise RuntimeError("step() called after the episode ended: call reset() first")
        arr = self._arrivals[t]
        if self.action_mode == "scores":  # the decoder gives a feasible selection
            scores, self._clip = actions.check_scores(self.instance, action)
            action = actions.decode_scores(self.instance, scores, arr)
        xs, v = self._oracle.solve(arr) if self.compute_oracle else (None, None)
        o = dynamics.apply_slot(self._tabs, action, arr, self._zraw[t], xs,
                                self.invalid_action == "repair")
        info = dynamics.slot_info(o, arr, t, v)
        if self.action_mode == "scores":
            info["action_clip"] = self._clip
        self._last_x = o.x
        dynamics.accumulate_feedback(self._fsum, self._fcount, o.x, o.feedback)
        self._t = t + 1
        dynamics.advance_waits(self._origin, o.x, self._tabs.port_of_edge,
                               self._arrivals[min(t + 1, T - 1)], t + 1, t + 1 < T)
        return (self._obs(o.util, o.feedback, o.x), float(o.out[dynamics.REWARD]), False,
                t + 1 >= T, info)

    def render_state(self) -> RenderState:
        """Snapshot of the slot just scheduled for :mod:`~.viewer`."""
        inst = self.instance
        t = self._t
        arr = self._arrivals[t - 1] if t > 0 else np.zeros(inst.n_types)
        return RenderState(
            slot=t, horizon=self.horizon, arrivals=arr.copy(), selection=self._last_x.copy(),
            utilization=dynamics.utilization(inst, self._last_x).astype(np.float32),
            edges=inst.edges, n_types=inst.n_types, n_instances=inst.n_instances,
            resource_names=inst.resource_names)
