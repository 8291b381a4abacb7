"""Types of FluctuatingSpeed-v0 (ESDP paper): the frozen problem instance and the typed parameters.

Vocabulary (paper symbol in brackets, ESDP §3 "System Model"): job types ``l`` [ports, L],
servers ``r`` [R; called ``n_instances`` in schedgym's shared vocabulary], device types ``k`` [K],
slots ``t`` [T], channels = edges ``e = (l, r)`` of the service-locality bipartite graph [E].

Units: requests ``a_k^e`` and capacities ``c_k`` are integer device counts; the capacity is
cluster-wide per device type (ESDP constraint (2): ``A x <= c``, not per server). Utilities and
costs are in the paper's normalised utility units (ESDP §3, the normalised net utility
``clip(Z - C, 0, 1)``; see ``docs/envs/fluctuating-speed.md``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from functools import cached_property
from typing import Any

import numpy as np

from schedgym.core.arrays import readonly as _readonly
from schedgym.core.graph import check_edges, edge_mask
from schedgym.core.resources import RESOURCE_NAMES
from schedgym.core.validation import (
    check_array,
    check_float,
    check_int,
    check_int_range,
    check_range,
)


def _norm_cdf(x: np.ndarray) -> np.ndarray:
    return np.array([0.5 * (1.0 + math.erf(v / math.sqrt(2.0))) for v in np.ravel(x)]).reshape(
        np.shape(x)
    )


def _norm_pdf(x: np.ndarray) -> np.ndarray:
    return np.asarray(np.exp(-0.5 * np.asarray(x) ** 2) / math.sqrt(2.0 * math.pi))


def clipped_normal_mean(mean: np.ndarray | float, std: np.ndarray | float) -> np.ndarray:
    """``E[clip(N(mean, std^2), 0, 1)]`` in closed form, elementwise (the true mean net utility
    ``theta_e`` of ESDP's normalised reward; derivation in ``docs/envs/fluctuating-speed.md``).

    ``m (Phi(hi) - Phi(lo)) + s (phi(lo) - phi(hi)) + (1 - Phi(hi))`` with ``lo = -m/s``,
    ``hi = (1 - m)/s``; for ``s = 0`` it is ``clip(m, 0, 1)``.
    """
    m = np.asarray(mean, dtype=np.float64)
    s = np.asarray(std, dtype=np.float64)
    safe = np.where(s > 0, s, 1.0)
    lo, hi = (0.0 - m) / safe, (1.0 - m) / safe
    cl, ch = _norm_cdf(lo), _norm_cdf(hi)
    val = m * (ch - cl) + s * (_norm_pdf(lo) - _norm_pdf(hi)) + (1.0 - ch)
    return np.asarray(np.where(s > 0, val, np.clip(m, 0.0, 1.0)))


@dataclass(frozen=True, eq=False)
class FluctuatingSpeedInstance:
    """Every parameter of the FluctuatingSpeed dynamics and reward (read-only numpy arrays).

    Attributes:
        edges: int64 ``(E, 2)``, rows ``(l, r)`` in lexicographic order; action entry ``e`` is
            channel ``edges[e]``.
        requests: int64 ``(K, E)``, the request matrix ``A``: ``a_k^e`` devices of type ``k`` used
            when channel ``e`` is selected.
        capacities: int64 ``(K,)``, ``c_k``: devices of type ``k`` in the whole cluster.
        cost: float64 ``(E,)``, ``C_e = sum_k f_k(a_k^e) >= 0``, charged when ``e`` is selected.
        mean: float64 ``(E,)``, ``mu_e``: mean raw utility ``E[Z_e(t)]`` (**hidden**: only the
            oracle and the metrics may read it, never a learning agent).
        std: float64 ``(E,)``, std of ``Z_e(t) ~ N(mu_e, std_e^2)`` (**hidden**).
        n_types: ``L``; n_instances: ``R`` (servers). resource_names: the K device names.

    Derived: ``theta`` (true mean net utility ``E[clip(Z - C, 0, 1)]``, hidden),
    ``port_of_edge``, ``server_of_edge``, ``edges_of_port``, ``mask``, ``fits_alone``.
    """

    edges: np.ndarray
    requests: np.ndarray
    capacities: np.ndarray
    cost: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    n_types: int
    n_instances: int
    resource_names: tuple[str, ...] = field(default=RESOURCE_NAMES[:3])

    def __post_init__(self) -> None:
        L = check_int("n_types", self.n_types, min_value=1)
        R = check_int("n_instances", self.n_instances, min_value=1)
        edges = check_edges(self.edges, L, R, "port", "server")
        E = edges.shape[0]
        req_f = check_array("requests", self.requests, shape=(None, E), low=0.0)
        if np.any(req_f != np.round(req_f)):
            raise ValueError("requests must be integer device counts")
        K = req_f.shape[0]
        if K < 1:
            raise ValueError("requests has shape (0, E): needs at least 1 device type")
        cap_f = check_array("capacities", self.capacities, shape=(K,), low=0.0)
        if np.any(cap_f != np.round(cap_f)):
            raise ValueError("capacities must be integer device counts")
        cost = check_array("cost", self.cost, shape=(E,), low=0.0)
        mean = check_array("mean", self.mean, shape=(E,))
        std = check_array("std", self.std, shape=(E,), low=0.0)
        if len(self.resource_names) != K:
            raise ValueError(f"resource_names has {len(self.resource_names)} names: must have {K}")
        object.__setattr__(self, "n_types", L)
        object.__setattr__(self, "n_instances", R)
        for name, arr in (("edges", edges), ("requests", req_f.astype(np.int64)),
                          ("capacities", cap_f.astype(np.int64)), ("cost", cost),
                          ("mean", mean), ("std", std)):
            object.__setattr__(self, name, _readonly(arr))
        object.__setattr__(self, "resource_names", tuple(self.resource_names))

    # ------------------------------------------------------------------ sizes
    @property
    def n_resources(self) -> int:
        """``K``, the number of device types."""
        return int(self.capacities.shape[0])

    @property
    def n_edges(self) -> int:
        """``|E|``, the number of channels."""
        return int(self.edges.shape[0])

    # --------------------------------------------------------------- derived
    @cached_property
    def port_of_edge(self) -> np.ndarray:
        """int ``(E,)``: port ``l`` of each edge."""
        return _readonly(self.edges[:, 0])

    @cached_property
    def server_of_edge(self) -> np.ndarray:
        """int ``(E,)``: server ``r`` of each edge."""
        return _readonly(self.edges[:, 1])

    @cached_property
    def edges_of_port(self) -> tuple[np.ndarray, ...]:
        """Edge indices of each port, increasing server index."""
        return tuple(_readonly(np.flatnonzero(self.port_of_edge == l))
                     for l in range(self.n_types))

    @cached_property
    def cell_of_edge(self) -> np.ndarray:
        """int ``(E,)``: row-major cell ``l * R + r`` of each edge in the ``(L, R)`` grid."""
        return _readonly(self.edges[:, 0] * self.n_instances + self.edges[:, 1])

    @cached_property
    def mask(self) -> np.ndarray:
        """bool ``(L, R)``: ``mask[l, r]`` iff ``(l, r)`` is an edge."""
        return edge_mask(self.edges, self.n_types, self.n_instances)

    @cached_property
    def theta(self) -> np.ndarray:
        """float ``(E,)``: true mean net utility ``E[clip(Z_e - C_e, 0, 1)]`` (hidden: oracle
        only)."""
        return _readonly(clipped_normal_mean(self.mean - self.cost, self.std))

    @cached_property
    def fits_alone(self) -> np.ndarray:
        """bool ``(E,)``: ``A[:, e] <= c`` (an edge that fails this can never be served)."""
        return _readonly(np.all(self.requests <= self.capacities[:, None], axis=0))


#: Parameters that shape the instance (refused beside an explicit ``instance=``).
INSTANCE_PARAMS: tuple[str, ...] = (
    "n_types", "n_instances", "n_resources", "edge_prob", "request_range", "capacity_range",
    "capacity_scale", "mean_range", "std_ratio", "cost_mean", "cost_std", "cost_scale",
)

#: Default memory limit of one env (MiB), see :meth:`FluctuatingSpeedParams.memory_estimate`.
MEMORY_LIMIT_MB = 4096.0

#: Bytes per ``(port, server)`` cell that the modes add to one env's peak, rounded up from the
#: measured growth of tracemalloc's peak between 40,000 and 160,000 servers (construction, reset
#: and three steps; the base estimate's ``(K + 3)`` grids cover the generator and ``selection``
#: mode: 32 B measured): ``"scores"`` actions (the action box, its clipped copy, the grid
#: feedback/use; 108 B measured with the base), ``"entities"`` observations on top of them (the
#: tables ``(N, 5)`` and the cell maps, one observation's ``(N, 12)`` rows in float64 and
#: float32, job, waiting and mask; 439 B measured in all), per device type of the instance
#: features, and the feedback statistics (both with ``scores``: 227 B measured in all).
CELL_BYTES: dict[str, float] = {"scores": 64.0, "entities": 352.0, "instance_features": 16.0,
                                "feedback_stats": 48.0}


def cell_bytes(action_mode: str, obs_mode: str, instance_features: bool,
               feedback_stats: bool, n_resources: int) -> float:
    """Bytes per ``(port, server)`` cell the modes add (:data:`CELL_BYTES`); ``selection`` mode
    with the flat observation adds none (its per-edge arrays are in the base estimate)."""
    grid = action_mode == "scores" or obs_mode == "entities"
    total = CELL_BYTES["scores"] if grid else 0.0
    if obs_mode == "entities":
        total += CELL_BYTES["entities"]
    if instance_features:
        total += CELL_BYTES["instance_features"] * (n_resources + 2)
    if feedback_stats:
        total += CELL_BYTES["feedback_stats"]
    return total


def _int_range(name: str, value: Any, low: int) -> tuple[int, int]:
    return check_int_range(name, value, low=low)


def _arrival_prob(value: Any, n_types: int) -> float | tuple[float, ...]:
    if isinstance(value, Sequence | np.ndarray) and not isinstance(value, str):
        arr = check_array("arrival_prob", value, shape=(n_types,), low=0.0, high=1.0)
        return tuple(float(v) for v in arr)
    return check_float("arrival_prob", value, low=0.0, high=1.0)


@dataclass(frozen=True)
class FluctuatingSpeedParams:
    """Every knob of FluctuatingSpeed-v0's generator and episode (validated, frozen).

    Defaults are ESDP's Table 3 (``paper-default``). ``gym.make(ENV_ID, **overrides)`` builds
    one from the scenario's values and the overrides; errors name the parameter, the value and
    what is allowed.

    Attributes:
        n_types: ``|L|`` ports (job types), >= 1.
        n_instances: ``|R|`` servers, >= 1.
        n_resources: ``K`` device types, 1..6 (cpu, mem, gpu, npu, tpu, fpga).
        horizon: ``T`` slots per episode, >= 1.
        arrival_prob: ``rho_l`` in [0, 1], one for every port or a tuple of ``L``.
        edge_prob: ``P[(l, r) in E]`` in [0, 1] (Table 3 ``rho_(l,r)``).
        request_range: integer bounds ``(lo, hi)`` of ``a_k^e ~ UniformInt{lo..hi}`` (devices).
        capacity_range: integer bounds of ``c_k = capacity_scale * UniformInt{lo..hi}``.
        capacity_scale: ``kappa >= 1`` (1 = Table 3 read literally).
        mean_range: bounds of ``mu_e ~ U(lo, hi)`` (utility units).
        std_ratio: std of ``Z_e`` is ``std_ratio * mu_e`` (>= 0).
        cost_mean, cost_std: ``phi_{k,e} ~ N(cost_mean, cost_std^2)``, clipped at >= 0.
        cost_scale: ``lambda >= 0``: ``f_k(a_k^e) = lambda * phi_{k,e}``.
        memory_limit_mb: refuse a construction whose estimated memory (MiB) exceeds it.
    """

    n_types: int = 8
    n_instances: int = 40
    n_resources: int = 3
    horizon: int = 2000
    arrival_prob: float | tuple[float, ...] = 0.9
    edge_prob: float = 0.1
    request_range: tuple[int, int] = (1, 2)
    capacity_range: tuple[int, int] = (1, 2)
    capacity_scale: int = 3
    mean_range: tuple[float, float] = (0.1, 1.0)
    std_ratio: float = 0.5
    cost_mean: float = 0.5
    cost_std: float = 0.1
    cost_scale: float = 0.1
    memory_limit_mb: float = MEMORY_LIMIT_MB

    def __post_init__(self) -> None:
        L = check_int("n_types", self.n_types, min_value=1)
        checked: dict[str, Any] = {
            "n_types": L,
            "n_instances": check_int("n_instances", self.n_instances, min_value=1),
            "n_resources": check_int("n_resources", self.n_resources, min_value=1,
                                     max_value=len(RESOURCE_NAMES)),
            "horizon": check_int("horizon", self.horizon, min_value=1),
            "arrival_prob": _arrival_prob(self.arrival_prob, L),
            "edge_prob": check_float("edge_prob", self.edge_prob, low=0.0, high=1.0),
            "request_range": _int_range("request_range", self.request_range, 0),
            "capacity_range": _int_range("capacity_range", self.capacity_range, 0),
            "capacity_scale": check_int("capacity_scale", self.capacity_scale, min_value=1),
            "mean_range": check_range("mean_range", self.mean_range),
            "std_ratio": check_float("std_ratio", self.std_ratio, low=0.0),
            "cost_mean": check_float("cost_mean", self.cost_mean),
            "cost_std": check_float("cost_std", self.cost_std, low=0.0),
            "cost_scale": check_float("cost_scale", self.cost_scale, low=0.0),
            "memory_limit_mb": check_float("memory_limit_mb", self.memory_limit_mb, low=0.0,
                                           low_open=True),
        }
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> FluctuatingSpeedParams:
        """Build from a dict (e.g. a scenario's values with ``gym.make`` overrides); keys that
        are not fields (a trace scenario's own ``slot_seconds``, ``degree_cap``) are ignored."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in names})

    def as_dict(self) -> dict[str, Any]:
        """The parameters as a plain dict (field order)."""
        return asdict(self)

    def probs(self, n_types: int | None = None) -> np.ndarray:
        """``rho_l`` per port, float64 ``(L,)`` (``n_types`` defaults to ``self.n_types``)."""
        L = self.n_types if n_types is None else n_types
        rho = np.asarray(self.arrival_prob, dtype=np.float64)
        return np.full(L, float(rho)) if rho.ndim == 0 else rho

    def memory_estimate(self, n_edges: int | None = None,
                        capacities: Sequence[int] | None = None,
                        per_cell: float = 0.0) -> float:
        """Estimated peak memory (MiB) of building and running one env with these sizes.

        Terms (8-byte floats): the generator's ``(K + 3)`` full ``(L, R)`` grids; the episode's
        pre-drawn arrivals ``(T, L)`` and utilities (noise and values, ``2 (T, E)``); the
        oracle's capacity DP ``prod_k (c_k + 1)`` states times ``E + 8`` bytes; ``per_cell``
        bytes per ``(L, R)`` cell for the action and observation modes (:func:`cell_bytes`:
        the ``"scores"`` grids, the entity observation's tables and rows). ``n_edges``
        defaults to the expected ``L R edge_prob + L``; ``capacities`` to the largest
        ``capacity_scale * capacity_range[1]`` per type.
        """
        L, R, K, T = self.n_types, self.n_instances, self.n_resources, self.horizon
        E = n_edges if n_edges is not None else L * R * self.edge_prob + L
        caps = capacities if capacities is not None else \
            [self.capacity_scale * self.capacity_range[1]] * K
        states = float(np.prod([float(c) + 1.0 for c in caps]))
        total = (8.0 * (K + 3) * L * R + 8.0 * T * (L + 2.0 * E) + states * (E + 8.0)
                 + per_cell * L * R)
        return total / 2.0**20

    def check_memory(self, n_edges: int | None = None,
                     capacities: Sequence[int] | None = None, per_cell: float = 0.0) -> None:
        """Raise ``ValueError`` (naming the estimate and the limit) above ``memory_limit_mb``."""
        need = self.memory_estimate(n_edges, capacities, per_cell)
        if need > self.memory_limit_mb:
            modes = (f", {per_cell:g} bytes per (port, server) cell for the action and "
                     "observation modes" if per_cell else "")
            raise ValueError(
                f"these sizes need an estimated {need:,.0f} MiB (n_types={self.n_types}, "
                f"n_instances={self.n_instances}, n_resources={self.n_resources}, "
                f"horizon={self.horizon}, capacities up to "
                f"{self.capacity_scale * self.capacity_range[1]}{modes}): above "
                f"memory_limit_mb={self.memory_limit_mb:g}; reduce the sizes or raise "
                "memory_limit_mb"
            )


#: The paper-default parameter values as a dict (the scenario registry's defaults).
DEFAULTS: dict[str, Any] = FluctuatingSpeedParams().as_dict()
