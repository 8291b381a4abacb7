"""GainOverhead-v0: online multi-resource allocation over a bipartite graph (OgaSched problem)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, cast

import numpy as np
from gymnasium import spaces

from schedgym.core import rng as rngs
from schedgym.core import utilities
from schedgym.core.arrays import readonly_view
from schedgym.core.arrivals import ArrivalSampler, bernoulli_arrivals
from schedgym.core.entities import OBS_MODES
from schedgym.core.envbase import (
    SchedEnv,
    Viewer,
    as_action,
    clip_unit,
    encode_flat,
    encode_unit,
    frac_box,
    nonfinite_action,
    resolve_episode_seed,
    unit_box,
    validate_action,
)
from schedgym.core.validation import check_bool, check_choice, check_float
from schedgym.envs.gain_overhead import actions, dynamics, entities, viewer
from schedgym.envs.gain_overhead.generator import SCENARIOS, generate, validate_params
from schedgym.envs.gain_overhead.types import GainOverheadInstance, GainOverheadParams
from schedgym.envs.gain_overhead.viewer import RenderState

#: The type Gymnasium's Env declares for observation spaces.
ObsSpace = spaces.Space[dict[str, np.ndarray]]

#: Arrival protocols: ``revealed`` (x(t) observed before acting) or ``hidden`` (OCO: x(t-1)).
ARRIVAL_PROTOCOLS: tuple[str, ...] = ("revealed", "hidden")

#: Overrides that still apply with an explicit ``instance=`` (they do not shape the instance).
EPISODE_PARAMS: tuple[str, ...] = ("horizon", "arrival_prob")

#: Action dtypes the allocation-mode kernel takes as they are (others are converted to float64).
_KERNEL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))

#: Default of ``memory_limit_mb``: the most memory (MB = 2**20 bytes, estimated) a configuration
#: may need.
MEMORY_LIMIT_MB = 4096.0


def memory_estimate(n_types: int, n_instances: int, n_resources: int, horizon: int,
                    n_edges: int) -> float:
    """Rough peak memory (bytes) of an env of these sizes: the pre-drawn arrivals ``(T, L)``,
    the graph's int64 edge list ``(E, 2)``, about 16 float64 ``(E, K)`` working arrays
    (instance caches, action, projection) and 8 ``(R, K)`` ones. Linear in every size (nothing
    is dense in ``L x R``). Used to refuse configurations a machine cannot hold."""
    return float(16 * horizon * n_types + 16 * n_edges
                 + 8 * 16 * n_edges * n_resources + 8 * 8 * n_instances * n_resources)


def check_memory(limit_mb: float, n_types: int, n_instances: int, n_resources: int,
                 horizon: int, n_edges: int) -> None:
    """Raise ``ValueError`` with the figure when :func:`memory_estimate` exceeds ``limit_mb`` MB."""
    need = memory_estimate(n_types, n_instances, n_resources, horizon, n_edges) / 2**20
    if need > limit_mb:
        raise ValueError(
            f"GainOverhead-v0 with n_types={n_types}, n_instances={n_instances}, "
            f"n_resources={n_resources}, horizon={horizon} (~{n_edges} edges) needs about "
            f"{need:.0f} MB, above memory_limit_mb={limit_mb:g}: lower the sizes or pass a "
            "larger memory_limit_mb"
        )


class _CheckedGenerator:
    """The synthetic generator, refusing sizes whose memory estimate is above the limit before
    it allocates anything."""

    def __init__(self, limit_mb: float) -> None:
        self.limit_mb = limit_mb

    def __call__(self, params: Mapping[str, Any], instance_seed: int) -> GainOverheadInstance:
        p = validate_params(params)
        choices = p.degree_choices or (4,)
        edges = p.n_instances * min(max(choices), p.n_types)
        check_memory(self.limit_mb, p.n_types, p.n_instances, p.n_resources, p.horizon, edges)
        return generate(p, instance_seed)


def instance_features(inst: GainOverheadInstance) -> np.ndarray:
    """The ``"instance"`` observation (float32, in [0, 1]), length ``3 L K + K``.

    Per (type ``l``, resource ``k``), row-major: the request share ``a_l^k / (a_l^k + sum_{r in
    R_l} c_r^k)``; the mean ``alpha / (1 + alpha)`` over the type's instances; the fraction of
    the type's instances whose utility family for ``k`` is linear. Then per resource:
    ``beta_k / (1 + beta_k)``. Sizes depend only on ``L`` and ``K``, never on the instance seed.
    """
    reach = inst.reachable_capacity  # (L, K)
    req = inst.requests
    share = np.divide(req, req + reach, out=np.zeros_like(req), where=(req + reach) > 0)
    deg = np.diff(np.r_[inst.type_starts, inst.n_edges])[:, None]
    a = inst.edge_alpha
    alpha = np.add.reduceat(a / (1.0 + a), inst.type_starts, axis=0) / deg
    is_linear = (inst.edge_codes == utilities.LINEAR).astype(np.float64)
    linear = np.add.reduceat(is_linear, inst.type_starts, axis=0) / deg
    beta = inst.beta / (1.0 + inst.beta)
    out = np.concatenate([share.ravel(), alpha.ravel(), linear.ravel(), beta])
    return np.clip(out, 0.0, 1.0).astype(np.float32)


class GainOverheadEnv(SchedEnv[np.ndarray]):
    """Online allocation of multi-type resources to multi-server jobs (OgaSched, Zhao et al.).

    ## Description
    ``L`` job types (ports) and ``R`` computing instances form a bipartite service-locality graph
    with edges (channels) ``E``. In every time slot at most one job of each type arrives
    (``x_l(t) in {0, 1}``). The scheduler allocates ``y_(l,r)^k >= 0`` units of each of ``K``
    resource types over every channel, subject to the per-channel cap ``y <= a_l^k`` (OgaSched
    (5)) and the instance capacity ``sum_{l in L_r} y_(l,r)^k <= c_r^k`` (OgaSched (6)). Jobs
    last one slot; nothing carries over between slots. Model and parameters:
    ``docs/gain-overhead.md``.

    ## Action Space
    ``Box(-1, 1, (n,), float32)``, decoded by ``action_mode`` (:mod:`.actions`) into a target
    allocation in ``[0, a_l^k]`` that is then projected **exactly** (Euclidean) onto the
    feasible set Y, so every action is valid. Modes (``metadata["action_modes"]``):

    - ``"allocation"`` (default), ``n = |E| * K``: entry ``e * K + k`` is channel ``e`` (edges
      in lexicographic ``(l, r)`` order, ``instance.edges``) and resource ``k``, mapped
      affinely to ``[0, a_l^k]``;
    - ``"fractions"``, ``n = L * K``: one fraction of the request per (type, resource), the
      same on every channel of the type;
    - ``"prices"``, ``n = L * K``: one price per (type, resource); each channel asks for the
      best response of its own utility at that price.

    In the two learnable modes under ``arrivals="revealed"``, types the observation shows
    without an arrival receive nothing (their allocation would earn nothing).

    Entries outside ``[-1, 1]`` are clipped first (``info["action_clip"]``); NaN/inf or a
    wrong shape raise ``ValueError``. ``encode_action(allocation)`` and
    ``decode_action(action)`` convert between actions and allocations ``(|E|, K)`` in resource
    units (encoding only in the allocation mode).

    ## Observation Space
    ``Dict`` of 1-D float32 boxes (use ``FlattenObservation`` for an ``MlpPolicy``):

    - ``arrivals`` ``(L,)`` in {0, 1}: ``x(t)``, the jobs of the slot about to be scheduled
      (``arrivals="revealed"``), or ``x(t-1)``, the previous slot's (``arrivals="hidden"``, the
      paper's OCO protocol; zeros at the first slot);
    - ``utilization`` ``(R * K,)`` in [0, 1]: fraction of each capacity ``c_r^k`` used by the
      previous slot's allocation (row-major ``(r, k)``; 0 at the first slot and where c = 0);
    - ``progress`` ``(1,)`` in [0, 1]: ``t / T``;
    - ``instance`` ``(3 L K + K,)`` in [0, 1], only with ``instance_features=True``: see
      :func:`instance_features`.

    With ``obs_mode="entities"`` (default ``"flat"``, the ``Dict`` above) the observation is
    one row per (type ``l``, resource ``k``) pair, the entity the ``prices``/``fractions``
    actions act on (``N = L * K``, entity ``l * K + k`` = action entry ``l * K + k``;
    ``metadata["entity_action"]`` is ``"entity"`` in those modes, ``"none"`` in
    ``allocation``; ``metadata["entity_action_mode"]`` names ``prices``, the mode an
    entity policy trains in by default): ``Dict(entities=Box(0, 1, (N * 16,)), mask=Box(0, 1,
    (N,)), context=Box(0, 1, (5,)))``, float32, the ``(N, 16)`` rows flattened row-major into
    the 1-D ``entities`` vector (entity ``i`` at ``[16 i:16 (i + 1)]``). The features (all in
    [0, 1]; names in ``entity_feature_names``/``context_feature_names``, definitions in
    :data:`.entities.FEATURES`/:data:`.entities.CONTEXT`): the observed arrival ``x_l``; the
    request against the reachable capacity ``a/(a + c_lk)`` and against one instance's mean
    capacity; the reachable share of k's capacity; the degree share ``|R_l| / R``; ``beta_k /
    (1 + beta_k)``; the ``prices`` decoder's scale ``pmax / (1 + pmax)`` and ``beta / (beta +
    pmax)``; the mean ``alpha / (1 + alpha)`` and the share of each utility family (linear,
    log, reciprocal, poly) over the type's channels; the capacity-weighted utilization of k
    over the type's instances (previous slot); the pressure ``P / (1 + P)`` of the observed
    arrivals' requests on those instances against their capacity; ``t / T``. ``mask`` is 1 on
    the pairs of observed-arrived types under ``arrivals="revealed"`` (the decoders serve only
    those; it may be all 0 in a slot without arrivals) and all 1 under ``"hidden"``.
    ``context``: ``t / T``, the share of types arrived, the mean and max utilization, the
    pressure of all arrivals on the whole capacity.

    ## Rewards
    The separable reward of OgaSched (3)-(4) ("nice setup") on the arrivals of the slot:
    ``q = sum_l x_l [ sum_k sum_{r in R_l} f_r^k(y) - max_k beta_k sum_{r in R_l} y ]``,
    i.e. computation gain minus the dominant communication overhead. ``info`` holds ``gain``,
    ``penalty``, ``allocation`` ``(|E|, K)`` (applied, feasible), ``slot_arrivals`` ``(L,)`` (the
    ``x(t)`` scored), ``projection_distance`` (Euclidean distance moved to become feasible,
    resource units), ``action_clip``, ``mean_utilization`` (mean fraction of capacity used in
    this slot) and ``slot``; no key repeats an observation key or ``reward`` (clients such as
    TorchRL put observation, reward and info in one table).

    ## Starting State
    ``reset(seed=s)`` pre-draws the arrivals ``(T, L)`` of the whole episode from the stream
    ``"arrivals"`` of ``s``; utilization starts at 0 and ``t = 0``. The instance does not change.

    ## Episode End
    Truncated after exactly ``T`` slots (``horizon``, also ``env.spec.max_episode_steps``);
    never terminated. ``step()`` before ``reset()`` or after the end raises.

    ## Arguments
    ``gym.make("schedgym/GainOverhead-v0", scenario="paper-default", instance_seed=0,
    instance=None, render_mode=None, action_mode="allocation", arrivals="revealed",
    instance_features=False, memory_limit_mb=4096, obs_mode="flat", **overrides)``.
    Scenarios: ``paper-default``, ``paper-headline``, ``large-scale`` and the trace-driven
    ``alibaba-gpu-2023`` (:mod:`.trace`, which adds ``slot_seconds``, ``constraints``,
    ``degree_cap``, ``split``, ``time_window`` and ``trace``; ``n_instances="all"``: every
    node). Overrides (:class:`GainOverheadParams`):

    ====================  ============  =========================================================
    parameter             default       allowed
    ====================  ============  =========================================================
    ``n_types``           10            ``L``, integer >= 1
    ``n_instances``       128           ``R``, integer >= 1
    ``n_resources``       6             ``K``, integer in [1, 6]
    ``horizon``           2000          ``T``, integer >= 1
    ``arrival_prob``      0.7           ``rho`` in [0, 1]
    ``contention``        10            in (0, 1e6]
    ``alpha_range``       (1, 1.5)      ``1e-6 <= lo <= hi <= 1e6``
    ``beta_range``        (0.3, 0.5)    ``0 <= lo <= hi <= 1e6``
    ``utility``           "linear"      linear, log, reciprocal, poly, mixed or ``(R, K)`` names
    ``density``           2.5           2, 2.5 or 3
    ``degree_choices``    None          non-empty list of integers >= 1 (replaces density)
    ``reciprocal_scale``  1             in [1e-6, 1e6]
    ====================  ============  =========================================================

    An explicit ``instance`` (a :class:`GainOverheadInstance`) replaces the generator; only
    ``horizon`` and ``arrival_prob`` may then be overridden (others raise). ``memory_limit_mb`` (MB)
    refuses configurations whose estimated memory (:func:`memory_estimate`) is larger.

    Seeds: the instance is drawn once from ``instance_seed``; ``reset(seed=s)`` pre-draws the
    arrivals from an independent stream, so every agent run with the same ``(instance_seed,
    s)`` faces the same arrivals in every action mode and protocol (common random numbers).

    ## Vector environment
    ``gym.make_vec(ENV_ID, num_envs=N, vectorization_mode="vector_entry_point", **kwargs)``
    builds the native batched env (:mod:`.vector`): N copies of one instance, copy ``i`` seeded
    with ``s + i``, same results as N single envs.

    ## Version History
    - v0: initial version (OgaSched problem, exact projection, four utility families);
      ``action_mode``, ``arrivals`` and ``instance_features`` added as options whose defaults
      keep v0's behaviour.

    ## Example
    >>> import gymnasium as gym, schedgym
    >>> env = gym.make("schedgym/GainOverhead-v0", action_mode="prices", horizon=5)
    >>> obs, info = env.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    >>> bool(reward == info["gain"] - info["penalty"])
    True
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4,
                "action_modes": actions.ACTION_MODES, "obs_modes": OBS_MODES,
                "entity_action_mode": "prices"}
    viewer: ClassVar[Viewer] = viewer

    #: How ``schedgym compare`` aggregates the per-step info scalars over an episode.
    episode_metrics = {"reward": "sum", "gain": "sum", "penalty": "sum",
                       "projection_distance": "mean", "mean_utilization": "mean"}

    def __init__(
        self,
        scenario: str = "paper-default",
        instance_seed: int = 0,
        instance: GainOverheadInstance | None = None,
        render_mode: str | None = None,
        action_mode: str = "allocation",
        arrivals: str = "revealed",
        instance_features: bool = False,
        memory_limit_mb: float = MEMORY_LIMIT_MB,
        obs_mode: str = "flat",
        **overrides: Any,
    ) -> None:
        self.action_mode: str = check_choice("action_mode", action_mode, actions.ACTION_MODES)
        self.obs_mode: str = check_choice("obs_mode", obs_mode, OBS_MODES)
        self.arrivals_protocol: str = check_choice("arrivals", arrivals, ARRIVAL_PROTOCOLS)
        #: The observed arrivals are slot ``t - lag``'s: 0 (revealed) or 1 (hidden).
        self._lag = 0 if self.arrivals_protocol == "revealed" else 1
        self.instance_features: bool = check_bool("instance_features", instance_features)
        limit = check_float("memory_limit_mb", memory_limit_mb, low=0.0, low_open=True)
        if instance is not None:
            _refuse_instance_conflicts(overrides)
        instance, raw, sampler, source = self._setup(
            render_mode, instance_seed, scenario, SCENARIOS, overrides, instance,
            GainOverheadInstance, _CheckedGenerator(limit))
        # The utility assignment lives in the instance; the sizes come from it. A trace
        # scenario's default horizon (None) is its sampler's episode length.
        if raw.get("horizon") is None and sampler is not None:
            raw = {**raw, "horizon": getattr(sampler, "horizon", None)}
        params = validate_params({**raw, "n_types": instance.n_types,
                                  "n_instances": instance.n_instances,
                                  "n_resources": instance.n_resources,
                                  "utility": raw["utility"] if source == "generator"
                                  else "linear"})
        check_memory(limit, instance.n_types, instance.n_instances, instance.n_resources,
                     params.horizon, instance.n_edges)
        self.params: GainOverheadParams = params
        self.instance: GainOverheadInstance = instance
        self.horizon: int = params.horizon
        self._sample_arrivals: ArrivalSampler = sampler or bernoulli_arrivals(
            instance.n_types, params.arrival_prob
        )
        self._build_spaces()
        #: ``t / T`` for t = 0..T as float32 (the observation's ``progress``, one slice per step).
        self._progress = (np.arange(self.horizon + 1) / self.horizon).astype(np.float32)
        self._t = 0
        self._arrivals = np.zeros((self.horizon, instance.n_types))
        self._observed = _observed_rows(self._arrivals, self._lag)
        self._util = np.zeros(instance.n_instances * instance.n_resources)
        self.episode_seed: int | None = None

    def _build_spaces(self) -> None:
        inst = self.instance
        L, R, K = inst.n_types, inst.n_instances, inst.n_resources
        self._upper = inst.edge_caps.reshape(-1)  # (E*K,)
        self._n_positive_caps = max(int((inst.capacities > 0).sum()), 1)
        self._ceiling = actions.price_ceiling(inst)
        self._n_action = actions.action_size(inst, self.action_mode)
        self._alloc_mode = self.action_mode == "allocation"
        self._n_util = R * K
        self._action_shape = (self._n_action,)
        self.action_space = unit_box(self._n_action)
        obs: dict[str, spaces.Space[Any]] = {
            "arrivals": frac_box(L), "utilization": frac_box(R * K), "progress": frac_box(1)}
        if self.instance_features:
            self._features = instance_features(inst)
            obs["instance"] = frac_box(self._features.size)
        #: The flat observation's space (what the vector env and the entity encoder read).
        self._flat_space = spaces.Dict(obs)
        self.metadata = {**type(self).metadata,
                         "entity_action": entities.entity_action(self.action_mode)}
        self._entities: entities.EntityEncoder | None = None
        self.entity_feature_names = entities.ENTITY_FEATURE_NAMES
        self.context_feature_names = entities.CONTEXT_FEATURE_NAMES
        if self.obs_mode == "entities":
            self._entities = entities.EntityEncoder(inst, gate=self._lag == 0)
            self.observation_space = cast(ObsSpace, self._entities.space)
        else:
            self.observation_space = cast(ObsSpace, self._flat_space)

    # ---------------------------------------------------------------- helpers
    def decode_action(self, action: np.ndarray) -> np.ndarray:
        """Action in [-1, 1] of the env's mode -> target allocation ``(|E|, K)`` in resource units
        (before projection; entries outside [-1, 1] are clipped)."""
        a = validate_action(action, self._n_action)
        a, _ = clip_unit(a)
        return self._target(a)

    def _target(self, a: np.ndarray) -> np.ndarray:
        """Decoded target ``(E, K)`` of a clipped action; in the learnable modes under the
        revealed protocol only the types observed as arrived are served (:mod:`.actions`)."""
        served = None
        if self.action_mode != "allocation" and self.arrivals_protocol == "revealed":
            served = self.observed_arrivals() > 0
        return actions.decode(self.instance, self.action_mode, a, self._ceiling, served)

    def encode_action(self, allocation: np.ndarray) -> np.ndarray:
        """Allocation ``(|E|, K)`` (or flat) in resource units -> float32 action in [-1, 1] of
        the ``"allocation"`` mode (the mode classical agents act in)."""
        if self.action_mode != "allocation":
            raise ValueError(
                f"encode_action is defined for action_mode='allocation' only (this env has "
                f"action_mode={self.action_mode!r}): build classical agents on the default mode"
            )
        if (type(allocation) is np.ndarray and allocation.dtype == np.float64
                and allocation.size == self._upper.size and allocation.flags.c_contiguous):
            # what encode_unit does for a flat float64 array of the right size, without its
            # conversions and broadcasting (the classical agents' per-slot call)
            out = np.empty(self._upper.size, dtype=np.float32)
            encode_flat(allocation.reshape(-1), self._upper, out)
            return out
        alloc = np.asarray(allocation, dtype=np.float64)
        if alloc.size != self._upper.size:
            raise ValueError(
                f"allocation has shape {alloc.shape}: must have shape "
                f"({self.instance.n_edges}, {self.instance.n_resources})"
            )
        return encode_unit(alloc.reshape(-1), self._upper)

    @property
    def arrivals(self) -> np.ndarray:
        """The episode's pre-drawn arrival matrix ``(T, L)`` (read-only view)."""
        return readonly_view(self._arrivals)

    @property
    def t(self) -> int:
        """Index of the slot about to be scheduled (0-based)."""
        return self._t

    def observed_arrivals(self) -> np.ndarray:
        """What the observation's ``arrivals`` carries now: ``x(t)`` (revealed) or ``x(t-1)``
        (hidden); zeros where that slot does not exist."""
        s = self._t - self._lag
        if 0 <= s < self.horizon:
            return self._arrivals[s]
        return np.zeros(self.instance.n_types)

    def _obs(self) -> dict[str, np.ndarray]:
        """The observation of the current slot (fresh arrays)."""
        return self._make_obs(self._t, self._util.reshape(-1).astype(np.float32))

    def _make_obs(self, t: int, util32: np.ndarray) -> dict[str, np.ndarray]:
        """The observation at slot ``t`` with the float32 utilization ``util32`` ``(R * K,)``:
        the observed arrivals are a row of the episode's float32 table (:func:`_observed_rows`,
        the same values as ``observed_arrivals().astype(np.float32)``)."""
        obs = {"arrivals": self._observed[t].copy(), "utilization": util32,
               "progress": self._progress[t:t + 1].copy()}
        if self.instance_features:
            obs["instance"] = self._features.copy()
        if self._entities is not None:
            return self._entities.encode(obs)
        return obs

    # ------------------------------------------- what the native vector env reads
    # GainOverheadVectorEnv (:mod:`.vector`) builds its batch from one of these envs (its
    # template) and reads it only through the four read-only properties below; it keeps every
    # copy's episode in its own batch arrays and steps them all at once, and the two methods
    # after them are the only way it touches a copy's state.
    @property
    def flat_space(self) -> spaces.Dict:
        """The flat observation's ``Dict`` space (``arrivals``, ``utilization``, ``progress``
        and, with ``instance_features=True``, ``instance``), whatever ``obs_mode`` is: the
        vector env assembles the flat observation in its key order."""
        return self._flat_space

    @property
    def entity_encoder(self) -> entities.EntityEncoder | None:
        """The encoder of the entity observation (``obs_mode="entities"``), else ``None``; its
        ``encode_batch`` turns a batch of flat observations into entity observations."""
        return self._entities

    @property
    def instance_feature_values(self) -> np.ndarray | None:
        """The ``instance`` observation entry (float32 ``(3 L K + K,)``, the same in every slot:
        :func:`instance_features`) with ``instance_features=True``, else ``None``. Read-only."""
        return readonly_view(self._features) if self.instance_features else None

    @property
    def price_ceiling(self) -> np.ndarray:
        """The ``prices`` decoder's ceiling ``pmax`` ``(L, K)`` (:func:`.actions.price_ceiling`,
        the price at which no channel of the type asks for anything). Read-only."""
        return readonly_view(self._ceiling)

    def share_arrivals(self, row: np.ndarray) -> None:
        """Copy this episode's arrivals ``(T, L)`` into ``row`` and use ``row`` as the episode's
        arrival table from now on (the batch owns the storage; the values are unchanged)."""
        if row.shape != self._arrivals.shape:
            raise ValueError(f"row has shape {row.shape}: must be {self._arrivals.shape}")
        row[...] = self._arrivals
        self._arrivals = row

    def sync_state(self, t: int, util: np.ndarray) -> None:
        """Set the slot about to be scheduled (``0 <= t <= T``) and the utilization
        ``(K * R,)`` after the last slot, as the batch stepped this copy."""
        if not 0 <= t <= self.horizon:
            raise ValueError(f"t={t} is invalid: must be in [0, {self.horizon}]")
        self._t = int(t)
        self._util = util

    # -------------------------------------------------------------- gym API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        self.episode_seed = resolve_episode_seed(seed, self.np_random)
        self._arrivals = self._sample_arrivals(
            rngs.stream(self.episode_seed, "arrivals"), self.horizon
        )
        self._observed = _observed_rows(self._arrivals, self._lag)
        self._t = 0
        self._needs_reset = False
        self._util = np.zeros(self.instance.n_instances * self.instance.n_resources)
        return self._obs(), {"slot_arrivals": self.observed_arrivals().copy(), "slot": 0}

    def step(
        self, action: np.ndarray
    ) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        if self._needs_reset:
            self._check_reset()
        t = self._t
        if t >= self.horizon:
            raise RuntimeError("step() called after the episode ended: call reset() first")
        x = self._arrivals[t]
        if self._alloc_mode:  # one compiled call: check, clip, decode, project, score
            if not (type(action) is np.ndarray and action.shape == self._action_shape
                    and action.dtype in _KERNEL_DTYPES and action.flags.c_contiguous):
                action = as_action(action, self._n_action)
            bad, y, util, util32, stats = dynamics.step_one(self.instance, action, x, True)
            if bad >= 0:
                raise nonfinite_action(np.asarray(action, dtype=np.float64), bad)
        else:
            a, clip = clip_unit(validate_action(action, self._n_action))
            bad, y, util, util32, stats = dynamics.step_one(self.instance,
                                                            self._target(a).reshape(-1), x, False)
            stats[dynamics.STAT_CLIP] = clip
        # the float32 observation and np.add.reduce(util)'s bits come from the same call
        dist, gain, penalty, clip, used = stats.tolist()  # dynamics.STATS_FIELDS
        self._util = util
        # float(sum) / n: the same division as numpy's float64 / int, without a numpy scalar.
        info = {
            "gain": gain, "penalty": penalty, "allocation": y, "slot_arrivals": x.copy(),
            "projection_distance": dist, "action_clip": clip,
            "mean_utilization": used / self._n_positive_caps, "slot": t,
        }
        self._t = t = t + 1
        return self._make_obs(t, util32), gain - penalty, False, t >= self.horizon, info

    def render_state(self) -> RenderState:
        """Snapshot of the last scheduled slot for :mod:`.viewer`."""
        inst = self.instance
        x = self._arrivals[self._t - 1] if self._t > 0 else np.zeros(inst.n_types)
        return RenderState(
            slot=self._t, horizon=self.horizon, n_arrived=int(x.sum()), n_types=inst.n_types,
            utilization=self._util.reshape(inst.n_instances, inst.n_resources).copy(),
            has_capacity=inst.capacities > 0, resource_names=inst.resource_names,
        )


def _observed_rows(arrivals: np.ndarray, lag: int) -> np.ndarray:
    """``(T + 1, L)`` float32: row ``t`` is what the observation's ``arrivals`` shows at slot
    ``t``, i.e. ``x(t - lag)`` of ``arrivals`` ``(T, L)``, zeros where that slot does not exist
    (``t = T`` when revealed, ``t = 0`` when hidden)."""
    out = np.zeros((arrivals.shape[0] + 1, arrivals.shape[1]), dtype=np.float32)
    out[lag:lag + arrivals.shape[0]] = arrivals
    return out


def _refuse_instance_conflicts(overrides: Mapping[str, Any]) -> None:
    """With an explicit ``instance=``, overrides that would shape the instance are refused."""
    clash = sorted(set(overrides) - set(EPISODE_PARAMS))
    if clash:
        raise ValueError(
            f"{clash[0]}={overrides[clash[0]]!r} conflicts with instance=: an explicit instance "
            f"fixes every instance parameter ({', '.join(clash)} given); only "
            f"{', '.join(EPISODE_PARAMS)} may be overridden with it"
        )
