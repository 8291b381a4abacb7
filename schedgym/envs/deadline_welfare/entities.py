"""DeadlineWelfare-v0's ``obs_mode="entities"``: one row of features per mesh unit.

An entity is a resource unit ``(instance r, slot t)`` of the mesh: ``N = R * T`` entities,
entity ``r * T + t`` (the ``dispatch`` action's order), masked to the units the current job
may use (its locality x time window ℛ_n; all 0 after the last job). Using the whole mesh keeps
the space constant for an instance while the job's window moves. Each row carries what a
per-unit index rule for the current job reads (its utility coefficient and marginal welfare,
the unit's utilisation and room, the cluster weight, where the unit lies in time against the
job's window); the job's own features (workload, window, bounds of the marginal welfare,
family) and the episode's progress are the context. Every feature is scaled by a bound of the
scenario (the observation boxes' ends) or of the episode (``v``), never by per-instance
statistics, so one network reads every instance and every size. Names and meanings:
:data:`FEATURES`, :data:`CONTEXT`. The ``"entities"`` key is a 1-D ``Box`` of shape ``(N * F,)``:
the ``(N, F)`` rows flattened row-major, unit ``i``'s features at ``[i * F:(i + 1) * F]`` (1-D so
both env checkers accept it without a warning; :class:`~schedgym.train.policies.EntityPolicy`
reshapes it back, ``N`` from the mask's length).

The encoder is a function of the flat observation and the scenario's bounds only, computed
for a batch of observations at once with entrywise numpy operations and row sums (no BLAS), so a
batch row has the bits of the same observation encoded alone (the native vector env's
observations equal the single env's).
"""

from __future__ import annotations

import numpy as np

from schedgym.core.entities import entity_space, ratio

#: Per-entity features of unit ``(r, t)`` for the current job ``n``: (name, meaning).
#: ``later_demand`` is the one feature not read from the observation: the expected demand of
#: later jobs, a fixed table of the instance estimated from the scenario's job distribution.
#: ``D = max(T - 1, 1)``; ``v`` is the episode's upper bound of the marginal welfare.
FEATURES: tuple[tuple[str, str], ...] = (
    ("allowed", "1 if the unit is in the job's ℛ_n (locality x window), else 0"),
    ("coef", "a_nr / a_max, the utility coefficient against the scenario's bound"),
    ("marginal", "(a_nr f'(δ) + β_nr / C_r) / v: the unit's marginal welfare at (almost) no "
                 "load against v (f'(δ) = 1 for linear and log, 1 / (2 sqrt(δ_v)) for sqrt; "
                 "clipped to [0, 1])"),
    ("capability", "x̄_nr / x̄_max, the job's per-unit cap against the scenario's bound"),
    ("utilisation", "ω_r / C_r before the job"),
    ("room", "max(0, min(x̄_nr, C_r - ω_r)) / ρ_n: share of the job the unit can take (at "
             "most 1; 0 off ℛ_n)"),
    ("weight", "(β_nr / C_r) / v: the cluster utility per workload unit against v"),
    ("capacity", "C_r / C_max, the unit's capacity against the scenario's bound"),
    ("slot", "t / D: the unit's slot in the horizon"),
    ("since_arrival", "(t - s_n) / D in [-1, 1]: negative before the job's first slot"),
    ("to_deadline", "(e_n - t) / D in [-1, 1]: negative after the job's deadline"),
    ("in_window", "1 if s_n <= t <= e_n (the unit's slot is in the job's window)"),
    ("later_demand", "D / (2 C_r): the workload D that jobs arriving after the job's slot s_n "
                     "are expected to want on the unit (the scenario's job distribution, "
                     "DeadlineWelfareEnv.expected_later_demand), against twice its capacity "
                     "(clipped to 1; 0 without a job)"),
)

#: Context features (the current job and the episode): (name, meaning), every value in [0, 1].
CONTEXT: tuple[tuple[str, str], ...] = (
    ("workload", "ρ_n / ρ_max"),
    ("window_start", "s_n / D"),
    ("window_end", "e_n / D"),
    ("window_length", "(e_n - s_n + 1) / T (0 without a job)"),
    ("iota_over_v", "ι / v, the spread of the marginal welfare (1 / (v / ι))"),
    ("v", "v / v_max (the bounds box's upper end)"),
    ("progress", "n / N, jobs decided so far"),
    ("family_linear", "1 if the utilities are linear"),
    ("family_log", "1 if the utilities are log"),
    ("family_sqrt", "1 if the utilities are sqrt"),
    ("room", "sum of the units' room / ρ_n (at most 1): how much of the job fits now"),
    ("utilisation", "sum ω / sum C over the mesh"),
    ("usable_share", "|ℛ_n| / (R T): share of the mesh the job may use"),
)

ENTITY_FEATURE_NAMES: tuple[str, ...] = tuple(name for name, _ in FEATURES)
CONTEXT_FEATURE_NAMES: tuple[str, ...] = tuple(name for name, _ in CONTEXT)
#: The features that may be negative (in [-1, 1]); every other lies in [0, 1].
SIGNED: tuple[str, ...] = ("since_arrival", "to_deadline")
#: ``later_demand`` is the expected later demand against this many times the unit's capacity.
LATER_SCALE = 2.0


def entity_action(action_mode: str) -> str:
    """``metadata["entity_action"]`` of an action mode: ``"entity"`` for ``dispatch`` and
    ``unit_prices`` (entry ``r * T + t`` is entity ``r * T + t``), ``"global"`` for ``pricing``
    (3 scalars) and ``demand_price`` (1)."""
    return "global" if action_mode in ("pricing", "demand_price") else "entity"


class EntityEncoder:
    """Builds the entity observations of one mesh (see the module docstring).

    Args:
        n_instances, horizon: ``R`` and ``T``.
        limits: the scenario's ``(ρ_max, x̄_max, a_max, β_max)``, the flat boxes' upper ends.
        capacity_max: ``C_max``, the upper end of the capacity box.
        v_max: the upper end of the ``bounds`` box.
        sqrt_floor: ``δ_v`` for the sqrt family (where its marginal is taken), else ``None``.
        later: ``(T + 1, R T)``, row ``s`` the expected later demand ``D`` after slot ``s``
            (:meth:`DeadlineWelfareEnv.expected_later_demand`; kept, not copied).
        capacity: ``(R T,)``, the units' capacities ``C`` (the feature is ``D / C / 2``, one
            row at a time).
    """

    def __init__(self, n_instances: int, horizon: int, limits: tuple[float, ...],
                 capacity_max: float, v_max: float, sqrt_floor: float | None,
                 later: np.ndarray, capacity: np.ndarray) -> None:
        self.n_entities = n_instances * horizon
        self.horizon = horizon
        self._span = float(max(horizon - 1, 1))
        self._limits = tuple(float(x) for x in limits)
        self._cmax, self._vmax = float(capacity_max), float(v_max)
        self._slope = 1.0 if sqrt_floor is None else 1.0 / (2.0 * np.sqrt(sqrt_floor))
        #: slot ``t`` of every unit ``r * T + t``
        self._slot = np.tile(np.arange(horizon, dtype=np.float64), n_instances)
        self._later = np.asarray(later, dtype=np.float64)
        self._capacity = np.asarray(capacity, dtype=np.float64).reshape(-1)
        if self._later.shape != (horizon + 1, self.n_entities):
            raise ValueError(f"later has shape {self._later.shape}: must be "
                             f"({horizon + 1}, {self.n_entities})")
        F = len(FEATURES)
        low = np.zeros(F, dtype=np.float32)
        for name in SIGNED:
            low[ENTITY_FEATURE_NAMES.index(name)] = -1.0
        self.space = entity_space(self.n_entities, F, len(CONTEXT), low)
        self._low = low.astype(np.float64)

    def encode(self, obs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The entity observation of one flat observation (fresh float32 arrays)."""
        batch = self.encode_batch({k: v[None] for k, v in obs.items()})
        return {k: v[0] for k, v in batch.items()}

    def encode_batch(self, obs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The entity observations of a batch of flat observations (every key ``(B, size)``):
        ``entities`` ``(B, N * F)`` (the rows flattened row-major), ``mask`` ``(B, N)``,
        ``context`` ``(B, C)``, float32."""
        f64 = {k: np.asarray(v, dtype=np.float64) for k, v in obs.items()}
        allowed, cap, coef = f64["allowed"], f64["capability"], f64["utility_coef"]
        weight, usage, capacity = f64["cluster_weight"], f64["usage"], f64["capacity"]
        rho = f64["workload"][:, :1]
        start, end = f64["window"][:, :1], f64["window"][:, 1:2]
        iota, v = f64["bounds"][:, :1], f64["bounds"][:, 1:2]
        rho_max, cap_max, coef_max, _ = self._limits
        gain = ratio(weight, capacity)  # β / C
        room = np.maximum(0.0, np.minimum(cap, capacity - usage)) * (allowed > 0)
        slot = self._slot[None, :]
        span = self._span
        has_job = rho > 0
        arrival = np.clip(np.rint(start[:, 0]), 0, self.horizon).astype(np.int64)
        later = self._later[arrival] / self._capacity / LATER_SCALE * has_job
        feats = np.stack([
            allowed,
            coef / coef_max,
            ratio(coef * self._slope + gain, v),
            cap / cap_max,
            ratio(usage, capacity),
            ratio(room, rho),
            ratio(gain, v),
            capacity / self._cmax,
            np.broadcast_to(slot / span, allowed.shape),
            (slot - start) / span,
            (end - slot) / span,
            ((slot >= start) & (slot <= end) & has_job).astype(np.float64),
            later,
        ], axis=2)
        np.clip(feats, self._low, 1.0, out=feats)
        context = np.concatenate([
            rho / rho_max, start / span, end / span,
            np.where(has_job, (end - start + 1.0) / self.horizon, 0.0),
            ratio(iota, v), v / self._vmax, f64["progress"][:, :1], f64["utility_family"],
            ratio(room.sum(axis=1, keepdims=True), rho),
            ratio(usage.sum(axis=1, keepdims=True), capacity.sum(axis=1, keepdims=True)),
            allowed.sum(axis=1, keepdims=True) / self.n_entities,
        ], axis=1)
        return {"entities": feats.astype(np.float32).reshape(feats.shape[0], -1),
                "mask": (allowed > 0).astype(np.float32),
                "context": np.clip(context, 0.0, 1.0).astype(np.float32)}
