"""GainOverhead-v0's ``obs_mode="entities"``: one row of features per (type, resource) pair.

An entity is a pair ``(l, k)`` of the learnable action modes ``"prices"`` and ``"fractions"``
(one action entry per pair): ``N = L * K`` entities, entity ``l * K + k`` (the action's order).
Each row carries what a per-pair index rule reads (the request and the capacity it can reach,
the overhead weight, the price scale of the ``prices`` decoder, the utility families and
parameters of the type's channels, the arrival, the congestion of the type's instances and the
slot fraction), every feature scaled to ``[0, 1]`` without per-instance normalisation, so one
network reads every instance and every size. Names and meanings: :data:`FEATURES`,
:data:`CONTEXT`. The ``"entities"`` key is a 1-D ``Box(0, 1, (N * F,))``: the ``(N, F)`` rows
flattened row-major, entity ``i``'s features at ``[i * F:(i + 1) * F]`` (1-D so both env checkers
accept it without a warning; :class:`~schedgym.train.policies.EntityPolicy` reshapes it back,
``N`` from the mask's length).

The encoder is a function of the flat observation (``arrivals``, ``utilization``,
``progress``) and the instance only, computed for a batch of observations at once with
entrywise numpy operations and sequential sums (``np.add.reduceat``; no BLAS), so a batch row
has the bits of the same observation encoded alone (the native vector env's observations equal
the single env's).
"""

from __future__ import annotations

import numpy as np

from schedgym.core import utilities
from schedgym.core.entities import entity_space, ratio
from schedgym.envs.gain_overhead import actions
from schedgym.envs.gain_overhead.types import GainOverheadInstance

#: Per-entity features of pair ``(l, k)``: (name, meaning). Every value lies in [0, 1].
FEATURES: tuple[tuple[str, str], ...] = (
    ("arrival", "x_l: 1 if the observation shows a job of type l (revealed: x(t); "
                "hidden: x(t-1))"),
    ("request_share", "a_l^k / (a_l^k + c_lk), c_lk = sum_{r in R_l} c_r^k the capacity of "
                      "k the type can reach"),
    ("request_per_channel", "a_l^k / (a_l^k + mean_{r in R_l} c_r^k): the per-channel cap "
                            "against one instance's capacity"),
    ("reach_share", "c_lk / sum_r c_r^k: share of resource k's total capacity the type "
                    "reaches"),
    ("degree_share", "|R_l| / R: share of the instances the type is connected to"),
    ("beta", "beta_k / (1 + beta_k): the overhead weight of resource k"),
    ("price_scale", "pmax_lk / (1 + pmax_lk), pmax_lk = max_{r in R_l} f_r^k'(0) the "
                    "``prices`` decoder's price at action +1 (its gain per unit at 0)"),
    ("overhead_ratio", "beta_k / (beta_k + pmax_lk): overhead per unit against the best "
                       "marginal gain (0 when both are 0)"),
    ("alpha", "mean over the type's channels of alpha_r^k / (1 + alpha_r^k)"),
    ("share_linear", "share of the type's channels whose utility for k is linear"),
    ("share_log", "share of the type's channels whose utility for k is log"),
    ("share_reciprocal", "share of the type's channels whose utility for k is reciprocal"),
    ("share_poly", "share of the type's channels whose utility for k is poly"),
    ("utilization", "sum_{r in R_l} u_r^k c_r^k / c_lk: the capacity-weighted utilization of "
                    "k over the type's instances in the previous slot (0 where c_lk = 0)"),
    ("pressure", "P / (1 + P), P = sum_{r in R_l} d_r^k / c_lk with d_r^k = sum of a_l'^k "
                 "over the observed-arrived types l' connected to r: what the arrived jobs may "
                 "ask of the type's instances against their capacity (1 where c_lk = 0 and "
                 "P > 0)"),
    ("progress", "t / T, the slot fraction"),
)

#: Context features (one vector per observation): (name, meaning), every value in [0, 1].
CONTEXT: tuple[tuple[str, str], ...] = (
    ("progress", "t / T, the slot fraction"),
    ("arrived_share", "sum_l x_l / L: share of the types with an observed arrival"),
    ("utilization_mean", "mean of u_r^k over the (r, k) with c_r^k > 0 (previous slot)"),
    ("utilization_max", "max of u_r^k"),
    ("pressure", "D / (1 + D), D = sum_{k, l observed-arrived} |R_l| a_l^k / sum_{r, k} "
                 "c_r^k: what the arrived jobs may ask against the whole capacity"),
)

ENTITY_FEATURE_NAMES: tuple[str, ...] = tuple(name for name, _ in FEATURES)
CONTEXT_FEATURE_NAMES: tuple[str, ...] = tuple(name for name, _ in CONTEXT)
_COL = {name: j for j, name in enumerate(ENTITY_FEATURE_NAMES)}


def entity_action(action_mode: str) -> str:
    """``metadata["entity_action"]`` of an action mode: ``"entity"`` for ``prices`` and
    ``fractions`` (action entry ``i`` is entity ``i``), ``"none"`` for ``allocation`` (one
    entry per channel and resource, not per entity)."""
    return "none" if action_mode == "allocation" else "entity"


class EntityEncoder:
    """Builds the entity observations of one instance (see the module docstring).

    Attributes:
        space: ``Dict(entities=Box(0, 1, (N * F,)), mask=Box(0, 1, (N,)), context=Box(0, 1,
            (C,)))``, float32, ``N = L * K``, ``F = len(FEATURES)``, ``C = len(CONTEXT)``; the
            ``entities`` vector holds the ``(N, F)`` rows flattened row-major.
        gate: whether the mask shows the observed arrivals (``arrivals="revealed"``, where the
            learnable decoders serve only the arrived types) or is all ones (``"hidden"``).
    """

    def __init__(self, inst: GainOverheadInstance, gate: bool) -> None:
        L, R, K = inst.n_types, inst.n_instances, inst.n_resources
        self.n_types, self.n_resources, self.gate = L, K, gate
        self.n_entities = L * K
        cap = inst.capacities
        starts = inst.type_starts
        self._starts = np.asarray(starts)
        self._edge_type = np.asarray(inst.edge_type)
        self._edge_instance = np.asarray(inst.edge_instance)
        self._edge_cap = cap[self._edge_instance]  # (E, K) c_r^k of each channel's instance
        # the channels grouped by instance (stable), for sums over L_r without scatter-adds:
        # group j holds instance _served[j]'s channels, from _instance_starts[j]
        self._by_instance = np.argsort(self._edge_instance, kind="stable")
        grouped = self._edge_instance[self._by_instance]
        self._served, self._instance_starts = np.unique(grouped, return_index=True)
        deg = np.diff(np.r_[starts, inst.n_edges]).astype(np.float64)  # |R_l|
        self._degree = deg
        reach = np.add.reduceat(self._edge_cap, starts, axis=0)  # (L, K)
        self._reach = reach
        req = np.asarray(inst.requests, dtype=np.float64)
        self._requests = req
        mean_cap = reach / deg[:, None]
        total = cap.sum(axis=0)  # (K,)
        pmax = actions.price_ceiling(inst)
        beta = np.broadcast_to(inst.beta, (L, K))
        a = inst.edge_alpha
        codes = inst.edge_codes
        static = [
            ratio(req, req + reach),
            ratio(req, req + mean_cap),
            ratio(reach, np.broadcast_to(total, (L, K))),
            np.broadcast_to((deg / R)[:, None], (L, K)),
            beta / (1.0 + beta),
            pmax / (1.0 + pmax),
            ratio(beta, beta + pmax),
            np.add.reduceat(a / (1.0 + a), starts, axis=0) / deg[:, None],
        ]
        for fam in (utilities.LINEAR, utilities.LOG, utilities.RECIPROCAL, utilities.POLY):
            hits = (codes == fam).astype(np.float64)
            static.append(np.add.reduceat(hits, starts, axis=0) / deg[:, None])
        #: ``(N, F)`` float64 with the static columns filled (the dynamic ones 0).
        self._static = np.zeros((self.n_entities, len(FEATURES)))
        for j, col in enumerate(static, start=1):
            self._static[:, j] = np.clip(col, 0.0, 1.0).reshape(-1)
        self._pos_caps = cap > 0  # (R, K)
        self._n_pos = max(int(self._pos_caps.sum()), 1)
        self._total_cap = float(cap.sum())
        # what one arrival of type l may ask in all: |R_l| a_l^k summed over k
        self._type_demand = deg * req.sum(axis=1)
        self.space = entity_space(self.n_entities, len(FEATURES), len(CONTEXT))

    def encode(self, obs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The entity observation of one flat observation (fresh float32 arrays)."""
        batch = self.encode_batch({k: v[None] for k, v in obs.items()})
        return {k: v[0] for k, v in batch.items()}

    def encode_batch(self, obs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The entity observations of a batch of flat observations (``arrivals`` ``(B, L)``,
        ``utilization`` ``(B, R * K)``, ``progress`` ``(B, 1)``): ``entities`` ``(B, N * F)`` (the
        rows flattened row-major), ``mask`` ``(B, N)``, ``context`` ``(B, C)``, float32."""
        L, K = self.n_types, self.n_resources
        x = np.asarray(obs["arrivals"], dtype=np.float64)
        B = x.shape[0]
        util = np.asarray(obs["utilization"], dtype=np.float64).reshape(B, -1, K)
        prog = np.asarray(obs["progress"], dtype=np.float64).reshape(B)
        feats = np.broadcast_to(self._static, (B, *self._static.shape)).copy()
        f = feats.reshape(B, L, K, -1)
        f[..., _COL["arrival"]] = x[:, :, None]
        # capacity-weighted utilization of k over the type's instances
        used = np.add.reduceat(util[:, self._edge_instance] * self._edge_cap, self._starts,
                               axis=1)
        f[..., _COL["utilization"]] = ratio(used, np.broadcast_to(self._reach, used.shape))
        # demand of the arrived types on every instance: d_r^k = sum_{l' in L_r} x_l' a_l'^k
        ask = x[:, self._edge_type, None] * self._requests[self._edge_type]  # (B, E, K)
        demand = np.zeros_like(util)
        demand[:, self._served] = np.add.reduceat(ask[:, self._by_instance],
                                                  self._instance_starts, axis=1)
        on_type = np.add.reduceat(demand[:, self._edge_instance], self._starts, axis=1)
        # P / (1 + P) with P = on_type / reach, written as on_type / (on_type + reach): 1 where
        # nothing is reachable but something is asked, 0 where nothing is asked
        f[..., _COL["pressure"]] = ratio(on_type, on_type + self._reach)
        f[..., _COL["progress"]] = prog[:, None, None]
        np.clip(feats, 0.0, 1.0, out=feats)
        mask = (np.repeat(x, K, axis=1) > 0) if self.gate else np.ones((B, L * K), dtype=bool)
        ask_all = (x * self._type_demand).sum(axis=1)
        context = np.stack([
            prog,
            x.sum(axis=1) / L,
            np.where(self._pos_caps.reshape(-1), util.reshape(B, -1), 0.0).sum(axis=1)
            / self._n_pos,
            util.reshape(B, -1).max(axis=1),
            ratio(ask_all, ask_all + self._total_cap),  # D / (1 + D)
        ], axis=1)
        return {"entities": feats.astype(np.float32).reshape(B, -1),
                "mask": mask.astype(np.float32),
                "context": np.clip(context, 0.0, 1.0).astype(np.float32)}
