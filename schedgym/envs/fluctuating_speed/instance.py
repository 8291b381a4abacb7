"""Problem instance of FluctuatingSpeed-v0 (ESDP paper) and its generator.

Vocabulary (paper symbol in brackets): job types ``l`` [ports, L], servers ``r`` [R; called
``n_instances`` in schedgym's shared vocabulary], device types ``k`` [K], slots ``t`` [T],
channels = edges ``e = (l, r)`` of the service-locality bipartite graph [E].

Units: requests ``a_k^e`` and capacities ``c_k`` are integer device counts; the capacity is
cluster-wide per device type (spec esdp §1.2: ``A x <= c``, not per server). Utilities and costs
are in the paper's normalised utility units.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from schedgym.core import rng as rngs
from schedgym.core.arrays import readonly as _readonly
from schedgym.core.scenarios import ScenarioRegistry
from schedgym.core.validation import (
    check_array,
    check_float,
    check_int,
    check_range,
)

RESOURCE_NAMES: tuple[str, ...] = ("cpu", "mem", "gpu", "npu", "tpu", "fpga")


def _norm_cdf(x: np.ndarray) -> np.ndarray:
    return np.array([0.5 * (1.0 + math.erf(v / math.sqrt(2.0))) for v in np.ravel(x)]).reshape(
        np.shape(x)
    )


def _norm_pdf(x: np.ndarray) -> np.ndarray:
    return np.exp(-0.5 * np.asarray(x) ** 2) / math.sqrt(2.0 * math.pi)


def clipped_normal_mean(mean: np.ndarray, std: np.ndarray) -> np.ndarray:
    """``E[clip(N(mean, std^2), 0, 1)]`` in closed form (spec esdp §1.8), elementwise.

    ``m (Phi(hi) - Phi(lo)) + s (phi(lo) - phi(hi)) + (1 - Phi(hi))`` with ``lo = -m/s``,
    ``hi = (1 - m)/s``; for ``s = 0`` it is ``clip(m, 0, 1)``.
    """
    m = np.asarray(mean, dtype=np.float64)
    s = np.asarray(std, dtype=np.float64)
    safe = np.where(s > 0, s, 1.0)
    lo, hi = (0.0 - m) / safe, (1.0 - m) / safe
    cl, ch = _norm_cdf(lo), _norm_cdf(hi)
    val = m * (ch - cl) + s * (_norm_pdf(lo) - _norm_pdf(hi)) + (1.0 - ch)
    return np.where(s > 0, val, np.clip(m, 0.0, 1.0))


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
    ``port_of_edge``, ``server_of_edge``, ``edges_of_port``.
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
        edges = check_array("edges", self.edges, shape=(None, 2), dtype=np.int64)
        E = edges.shape[0]
        if E == 0:
            raise ValueError("edges is empty: the graph needs at least one (port, server) edge")
        if edges[:, 0].min() < 0 or edges[:, 0].max() >= L:
            raise ValueError(f"edges has a port outside [0, {L - 1}]")
        if edges[:, 1].min() < 0 or edges[:, 1].max() >= R:
            raise ValueError(f"edges has a server outside [0, {R - 1}]")
        keys = edges[:, 0] * R + edges[:, 1]
        if np.any(np.diff(keys) <= 0):
            raise ValueError("edges must be unique and sorted lexicographically by (l, r)")
        missing = np.setdiff1d(np.arange(L), edges[:, 0])
        if missing.size:
            raise ValueError(
                f"edges leaves port(s) {missing.tolist()} with no server: every port needs at "
                "least one edge"
            )
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
        return self.capacities.shape[0]

    @property
    def n_edges(self) -> int:
        """``|E|``, the number of channels."""
        return self.edges.shape[0]

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
    def mask(self) -> np.ndarray:
        """bool ``(L, R)``: ``mask[l, r]`` iff ``(l, r)`` is an edge."""
        m = np.zeros((self.n_types, self.n_instances), dtype=bool)
        m[self.edges[:, 0], self.edges[:, 1]] = True
        return _readonly(m)

    @cached_property
    def theta(self) -> np.ndarray:
        """float ``(E,)``: true mean net utility ``E[clip(Z_e - C_e, 0, 1)]`` (hidden: oracle
        only)."""
        return _readonly(clipped_normal_mean(self.mean - self.cost, self.std))

    @cached_property
    def fits_alone(self) -> np.ndarray:
        """bool ``(E,)``: ``A[:, e] <= c`` (an edge that fails this can never be served)."""
        return _readonly(np.all(self.requests <= self.capacities[:, None], axis=0))


#: An arrival sampler draws the episode's arrival matrix ``(T, L)`` in {0, 1} from a generator.
ArrivalSampler = Callable[[np.random.Generator, int], np.ndarray]


def bernoulli_arrivals(prob: np.ndarray) -> ArrivalSampler:
    """i.i.d. Bernoulli(``prob[l]``) arrivals per (slot, port), spec esdp §1.3."""
    prob = np.asarray(prob, dtype=np.float64)

    def sample(rng: np.random.Generator, horizon: int) -> np.ndarray:
        return (rng.random((horizon, prob.shape[0])) < prob).astype(np.float64)

    return sample


# ---------------------------------------------------------------- generator
DEFAULTS: dict[str, Any] = {
    "n_types": 8,  # |L|
    "n_instances": 40,  # |R| (servers)
    "n_resources": 3,  # K (cpu, mem, gpu)
    "horizon": 2000,  # T
    "arrival_prob": 0.9,  # rho_l (scalar or one per port)
    "edge_prob": 0.1,  # Table 3 "rho_(l,r)": P[(l, r) in E]
    "request_range": (1, 2),  # a_k^e ~ UniformInt{lo..hi}
    "capacity_range": (1, 2),  # c_k = capacity_scale * UniformInt{lo..hi}
    "capacity_scale": 3,  # kappa (spec §8 item 1; 1 = literal reading)
    "mean_range": (0.1, 1.0),  # mu_e ~ U(lo, hi)
    "std_ratio": 0.5,  # std of Z_e = std_ratio * mu_e
    "cost_mean": 0.5,  # phi_{k,e} ~ N(cost_mean, cost_std^2), clipped at >= 0
    "cost_std": 0.1,
    "cost_scale": 0.1,  # lambda: f_k(a_k^e) = lambda * phi_{k,e}
}

SCENARIOS = ScenarioRegistry("FluctuatingSpeed-v0", DEFAULTS)
SCENARIOS.register(
    "paper-default", {},
    "ESDP Table 3: |L|=8, |R|=40, K=3, edge prob 0.1, a in {1,2}, c = 3 x {1,2}, rho=0.9, "
    "Z ~ N(mu, (mu/2)^2) with mu ~ U(0.1, 1), cost 0.1 x sum_k N(0.5, 0.1^2), T=2000",
)
SCENARIOS.register(
    "paper-headline", {"horizon": 8000},
    "ESDP Figs. 2-4 (headline 'up to 73%, 36%, 28%'): paper-default with T=8000",
)
SCENARIOS.register(
    "literal-capacity", {"capacity_scale": 1},
    "Table 3 read literally: c_k in {1, 2} (kappa = 1; at most ~2 channels per slot)",
)


def _int_range(name: str, value: Any, low: int) -> tuple[int, int]:
    lo, hi = check_range(name, value, low=low)
    if lo != int(lo) or hi != int(hi):
        raise ValueError(f"{name}={value!r} is invalid: must be a pair of integers (lo, hi)")
    return int(lo), int(hi)


def validate_params(p: dict[str, Any]) -> dict[str, Any]:
    """Check every generator parameter; returns a normalised copy."""
    q = dict(p)
    q["n_types"] = check_int("n_types", p["n_types"], min_value=1)
    q["n_instances"] = check_int("n_instances", p["n_instances"], min_value=1)
    q["n_resources"] = check_int("n_resources", p["n_resources"], min_value=1,
                                 max_value=len(RESOURCE_NAMES))
    q["horizon"] = check_int("horizon", p["horizon"], min_value=1)
    rho = p["arrival_prob"]
    if isinstance(rho, Sequence | np.ndarray) and not isinstance(rho, str):
        q["arrival_prob"] = check_array("arrival_prob", rho, shape=(q["n_types"],), low=0.0,
                                        high=1.0)
    else:
        q["arrival_prob"] = check_float("arrival_prob", rho, low=0.0, high=1.0)
    q["edge_prob"] = check_float("edge_prob", p["edge_prob"], low=0.0, high=1.0)
    q["request_range"] = _int_range("request_range", p["request_range"], 0)
    q["capacity_range"] = _int_range("capacity_range", p["capacity_range"], 0)
    q["capacity_scale"] = check_int("capacity_scale", p["capacity_scale"], min_value=1)
    q["mean_range"] = check_range("mean_range", p["mean_range"])
    q["std_ratio"] = check_float("std_ratio", p["std_ratio"], low=0.0)
    q["cost_mean"] = check_float("cost_mean", p["cost_mean"])
    q["cost_std"] = check_float("cost_std", p["cost_std"], low=0.0)
    q["cost_scale"] = check_float("cost_scale", p["cost_scale"], low=0.0)
    return q


def arrival_probs(params: dict[str, Any], n_types: int) -> np.ndarray:
    """``rho_l`` per port, float ``(L,)``."""
    rho = np.asarray(params["arrival_prob"], dtype=np.float64)
    return np.full(n_types, float(rho)) if rho.ndim == 0 else rho


def generate(params: dict[str, Any], instance_seed: int) -> FluctuatingSpeedInstance:
    """The synthetic generator of spec esdp §6.3.

    Every quantity is drawn on the full ``(L, R)`` grid (then restricted to the edges) from its
    own named stream (``graph``, ``fallback``, ``requests``, ``capacities``, ``means``,
    ``costs``), so a sweep over one parameter keeps every other draw fixed: e.g. raising
    ``edge_prob`` only adds edges (the graphs are nested) and keeps the old edges' parameters.
    A port left without edges gets one edge to a uniformly random server (spec §6.3).
    """
    p = validate_params(params)
    L, R, K = p["n_types"], p["n_instances"], p["n_resources"]
    st = rngs.streams(instance_seed, "graph", "fallback", "requests", "capacities")
    mask = st["graph"].random((L, R)) < p["edge_prob"]
    fallback = st["fallback"].integers(0, R, size=L)
    for l in range(L):
        if not mask[l].any():
            mask[l, fallback[l]] = True
    edges = np.argwhere(mask)  # row-major => lexicographic (l, r)
    el, er = edges[:, 0], edges[:, 1]
    a_lo, a_hi = p["request_range"]
    req = st["requests"].integers(a_lo, a_hi + 1, size=(K, L, R))[:, el, er]
    c_lo, c_hi = p["capacity_range"]
    cap = p["capacity_scale"] * st["capacities"].integers(c_lo, c_hi + 1, size=K)
    return _with_edge_params(p, instance_seed, edges, req, cap, RESOURCE_NAMES[:K])


def _with_edge_params(p: dict[str, Any], instance_seed: int, edges: np.ndarray,
                      requests: np.ndarray, capacities: np.ndarray,
                      names: tuple[str, ...]) -> FluctuatingSpeedInstance:
    """Draw the paper's per-edge utility means and costs (streams ``means``, ``costs``, on the
    full ``(L, R)`` grid) and build the instance."""
    L, R = p["n_types"], p["n_instances"]
    K = requests.shape[0]
    el, er = edges[:, 0], edges[:, 1]
    st = rngs.streams(instance_seed, "means", "costs")
    mu = st["means"].uniform(*p["mean_range"], size=(L, R))[el, er]
    phi = st["costs"].normal(p["cost_mean"], p["cost_std"], size=(K, L, R))[:, el, er]
    cost = p["cost_scale"] * np.maximum(phi, 0.0).sum(axis=0)
    return FluctuatingSpeedInstance(
        edges=edges,
        requests=requests,
        capacities=capacities,
        cost=cost,
        mean=mu,
        std=p["std_ratio"] * np.abs(mu),
        n_types=L,
        n_instances=R,
        resource_names=names,
    )


def _minmax_round(values: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Min-max scale ``values`` into ``[lo, hi]`` and round (all equal -> ``lo``)."""
    v = np.asarray(values, dtype=np.float64)
    span = v.max() - v.min() if v.size else 0.0
    if span <= 0:
        return np.full(v.shape, lo, dtype=np.int64)
    return np.rint(lo + (hi - lo) * (v - v.min()) / span).astype(np.int64)


def trace_builder(params: dict[str, Any], instance_seed: int):
    """Builder of the ``alibaba-gpu-2023`` scenario (spec esdp §6.2, applied to the shipped
    Alibaba gpu-v2023 sample through :func:`schedgym.data.trace_mapping.build_trace_problem`).

    What comes from the trace: the job types, the service-locality graph (GPU-model
    constraints, at most ``degree_cap`` nodes per type), the relative sizes of the requests and
    of the cluster's capacity, and the arrival pattern. What does not (the paper normalises it
    away or the trace has none): integer request/capacity units, utilities, costs.

    - requests: per device type, the types' positive (cores, GB, GPUs) requests are min-max
      scaled into ``request_range`` and rounded (a zero request, e.g. a CPU-only job's GPUs,
      stays 0); every edge of a port gets its type's request;
    - capacities: per device type, ``ratio_k`` = cluster total / mean positive request, min-max
      scaled across types into ``capacity_range``, rounded, times ``capacity_scale``;
    - arrivals: trace indicators of ``horizon`` consecutive slots of ``slot_seconds`` from a
      random start, thinned by ``arrival_prob`` (``TraceProblem.sample_arrivals``);
    - utilities ``mu_e``, ``std`` and costs: the paper's synthetic draws (as ``paper-default``).
    ``edge_prob`` is unused (the graph is the trace's).
    """
    from schedgym.data.trace_mapping import build_trace_problem

    p = dict(params)
    slot_seconds = check_float("slot_seconds", p.pop("slot_seconds"), low=0.0, low_open=True)
    degree_cap = p.pop("degree_cap")
    p = validate_params(p)
    if p["n_resources"] != 3:
        raise ValueError(f"n_resources={p['n_resources']} is invalid: the trace scenario has "
                         "exactly 3 device types (cpu, mem, gpu)")
    tp = build_trace_problem(n_instances=p["n_instances"], n_types=p["n_types"],
                             slot_seconds=slot_seconds, seed=instance_seed,
                             degree_cap=degree_cap)
    edges = tp.edges
    K = 3
    a_lo, a_hi = p["request_range"]
    req_type = np.zeros((K, tp.n_types), dtype=np.int64)
    ratio = np.zeros(K)
    for k in range(K):
        raw = tp.requests[:, k]
        pos = raw > 0
        if pos.any():
            req_type[k, pos] = _minmax_round(raw[pos], max(a_lo, 1), max(a_hi, 1))
            ratio[k] = tp.capacities[:, k].sum() / raw[pos].mean()
    c_lo, c_hi = p["capacity_range"]
    cap = p["capacity_scale"] * _minmax_round(ratio, c_lo, c_hi)
    requests = req_type[:, edges[:, 0]]
    inst = _with_edge_params(p, instance_seed, edges, requests, cap, RESOURCE_NAMES[:K])
    prob = arrival_probs(p, tp.n_types)

    def sample(rng: np.random.Generator, horizon: int) -> np.ndarray:
        return tp.sample_arrivals(rng, horizon, prob)

    return inst, sample


SCENARIOS.register(
    "alibaba-gpu-2023", {},
    "Shipped Alibaba gpu-v2023 sample: job types, locality graph (<= degree_cap nodes per type), "
    "relative request/capacity sizes and arrival pattern from the trace, normalised into the "
    "paper's ranges; utilities and costs synthetic as in paper-default",
    builder=trace_builder,
    extra_params={"slot_seconds": 600.0, "degree_cap": 4},
)
