"""Problem instance of GainOverhead-v0 (OgaSched) and its generators.

Vocabulary (paper symbol in brackets): job types ``l`` [ports, L], computing instances ``r``
[nodes, R], resource types ``k`` [K], time slots ``t`` [T], channels = edges ``(l, r)`` of the
service-locality bipartite graph [E].

Units: capacities and requests are raw resource units (CPU cores, memory GB, device counts) as in
spec ogasched §9 item 13; requests already include the contention multiplier.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from schedgym.core import rng as rngs
from schedgym.core.arrays import readonly as _readonly
from schedgym.core.scenarios import ScenarioRegistry
from schedgym.core.utilities import FAMILIES, family_codes, slope_at_zero
from schedgym.core.validation import (
    check_array,
    check_choice,
    check_float,
    check_int,
    check_range,
)

RESOURCE_NAMES: tuple[str, ...] = ("cpu", "mem", "gpu", "npu", "tpu", "fpga")
#: Synthetic capacity ranges per resource type, numpy ``integers(lo, hi)`` (hi exclusive), from the
#: authors' code fallback (spec ogasched §6.2 item 4). Requests are contention x U[lo, hi].
CAPACITY_RANGES: tuple[tuple[int, int], ...] = ((1, 128), (2, 512), (0, 64), (0, 8), (0, 8), (0, 4))
#: Per-instance degree |L_r| choices for the paper's three graph densities (spec ogasched §6.3).
DENSITY_DEGREES: dict[float, tuple[int, ...]] = {2.0: (1, 2, 3), 2.5: (1, 2, 3, 4), 3.0: (2, 3, 4)}


@dataclass(frozen=True, eq=False)
class GainOverheadInstance:
    """Every parameter of the GainOverhead dynamics and reward (read-only numpy arrays).

    Attributes:
        edges: int64 ``(E, 2)``, rows ``(l, r)`` of the service-locality graph in lexicographic
            order. Action entries follow this order, then resource type ``k``.
        requests: float64 ``(L, K)``, ``a_l^k``: the most a type-``l`` job may receive of resource
            ``k`` over **each** channel (per-channel cap, constraint (5)); resource units.
        capacities: float64 ``(R, K)``, ``c_r^k >= 0``: capacity of instance ``r``; resource units.
        alpha: float64 ``(R, K)``, utility parameter ``alpha_r^k > 0``.
        beta: float64 ``(K,)``, communication-overhead weights ``beta_k >= 0``.
        utility: str ``(R, K)``, utility family of each (instance, resource): one of
            ``linear, log, reciprocal, poly``.
        reciprocal_scale: ``s`` of the reciprocal family ``1/(s a) - 1/(y + s a)`` (paper: 1).
        resource_names: names of the K resource types.
        mask: bool ``(L, R)``, dense form of ``edges`` (derived).
    """

    edges: np.ndarray
    requests: np.ndarray
    capacities: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    utility: np.ndarray
    reciprocal_scale: float = 1.0
    resource_names: tuple[str, ...] = field(default=RESOURCE_NAMES)

    def __post_init__(self) -> None:
        req = check_array("requests", self.requests, shape=(None, None), low=0.0)
        L, K = req.shape
        if L < 1 or K < 1:
            raise ValueError(
                f"requests has shape {req.shape}: needs at least 1 type and 1 resource"
            )
        cap = check_array("capacities", self.capacities, shape=(None, K), low=0.0)
        R = cap.shape[0]
        if R < 1:
            raise ValueError("capacities has shape (0, K): needs at least 1 instance")
        alpha = check_array("alpha", self.alpha, shape=(R, K))
        if np.any(alpha <= 0):
            raise ValueError(f"alpha has minimum {alpha.min()!r}: every entry must be > 0")
        beta = check_array("beta", self.beta, shape=(K,), low=0.0)
        util = np.asarray(self.utility)
        if util.shape != (R, K):
            raise ValueError(f"utility has shape {util.shape}: must have shape ({R}, {K})")
        family_codes(util)  # raises on unknown names
        edges = check_array("edges", self.edges, shape=(None, 2), dtype=np.int64)
        if edges.shape[0] == 0:
            raise ValueError("edges is empty: the graph needs at least one (type, instance) edge")
        if edges[:, 0].min() < 0 or edges[:, 0].max() >= L:
            raise ValueError(f"edges has a job type outside [0, {L - 1}]")
        if edges[:, 1].min() < 0 or edges[:, 1].max() >= R:
            raise ValueError(f"edges has an instance outside [0, {R - 1}]")
        keys = edges[:, 0] * R + edges[:, 1]
        if np.any(np.diff(keys) <= 0):
            raise ValueError("edges must be unique and sorted lexicographically by (l, r)")
        missing = np.setdiff1d(np.arange(L), edges[:, 0])
        if missing.size:
            raise ValueError(
                f"edges leaves job type(s) {missing.tolist()} with no instance: every type "
                "needs at least one edge"
            )
        check_float("reciprocal_scale", self.reciprocal_scale, low=0.0, low_open=True)
        if self.resource_names is RESOURCE_NAMES and K != len(RESOURCE_NAMES):  # the default
            object.__setattr__(self, "resource_names", RESOURCE_NAMES[:K] if K <= 6 else
                               tuple(f"resource{k}" for k in range(K)))
        if len(self.resource_names) != K:
            raise ValueError(f"resource_names has {len(self.resource_names)} names: must have {K}")
        for name, arr in (("edges", edges), ("requests", req), ("capacities", cap),
                          ("alpha", alpha), ("beta", beta), ("utility", util.astype(str))):
            object.__setattr__(self, name, _readonly(arr))
        object.__setattr__(self, "resource_names", tuple(self.resource_names))

    # ------------------------------------------------------------------ sizes
    @property
    def n_types(self) -> int:
        """``L``, the number of job types."""
        return self.requests.shape[0]

    @property
    def n_instances(self) -> int:
        """``R``, the number of computing instances."""
        return self.capacities.shape[0]

    @property
    def n_resources(self) -> int:
        """``K``, the number of resource types."""
        return self.capacities.shape[1]

    @property
    def n_edges(self) -> int:
        """``|E|``, the number of channels."""
        return self.edges.shape[0]

    # --------------------------------------------------------------- derived
    @cached_property
    def mask(self) -> np.ndarray:
        """bool ``(L, R)``: ``mask[l, r]`` iff ``(l, r)`` is an edge."""
        m = np.zeros((self.n_types, self.n_instances), dtype=bool)
        m[self.edges[:, 0], self.edges[:, 1]] = True
        return _readonly(m)

    @cached_property
    def edge_type(self) -> np.ndarray:
        """int ``(E,)``: job type of each edge."""
        return _readonly(self.edges[:, 0])

    @cached_property
    def edge_instance(self) -> np.ndarray:
        """int ``(E,)``: instance of each edge."""
        return _readonly(self.edges[:, 1])

    @cached_property
    def edge_caps(self) -> np.ndarray:
        """float ``(E, K)``: per-channel cap ``a_l^k`` of each edge (upper bound of the action)."""
        return _readonly(self.requests[self.edge_type])

    @cached_property
    def utility_codes(self) -> np.ndarray:
        """int8 ``(R, K)``: utility family codes (see :data:`schedgym.core.utilities.FAMILIES`)."""
        return _readonly(family_codes(self.utility))

    @cached_property
    def edge_alpha(self) -> np.ndarray:
        """float ``(E, K)``: ``alpha`` of each edge's instance."""
        return _readonly(self.alpha[self.edge_instance])

    @cached_property
    def edge_codes(self) -> np.ndarray:
        """int8 ``(E, K)``: utility family of each edge's instance."""
        return _readonly(self.utility_codes[self.edge_instance])

    @cached_property
    def type_starts(self) -> np.ndarray:
        """int ``(L,)``: index of each type's first edge (edges are sorted by type, and every type
        has one), for ``np.add.reduceat`` sums over ``R_l``."""
        return _readonly(np.searchsorted(self.edge_type, np.arange(self.n_types)))

    @cached_property
    def instance_slots(self) -> np.ndarray:
        """int ``(R, D)``: edge indices of each instance padded with ``-1`` (D = max ``|L_r|``).

        Used to run the projection over all (instance, resource) groups at once.
        """
        deg = np.bincount(self.edge_instance, minlength=self.n_instances)
        D = max(int(deg.max()), 1)
        out = -np.ones((self.n_instances, D), dtype=np.int64)
        order = np.argsort(self.edge_instance, kind="stable")
        starts = np.concatenate([[0], np.cumsum(deg)[:-1]])
        pos = np.arange(self.n_edges) - np.repeat(starts, deg)
        out[self.edge_instance[order], pos] = order
        return _readonly(out)

    @cached_property
    def group_gather(self) -> np.ndarray:
        """int ``(D, R*K)``: flat index into ``y.ravel()`` of entry ``d`` of group ``(r, k)``
        (column ``r*K + k``); padding points at index 0 and is neutralised by a zero cap in
        :attr:`group_caps` (and must be masked with :attr:`group_valid` when summing raw values).

        The (entries, groups) layout keeps the batched projection's numpy loops long.
        """
        K = self.n_resources
        slots = self.instance_slots  # (R, D)
        flat = np.where(slots[:, :, None] >= 0, slots[:, :, None] * K + np.arange(K), -1)
        flat = np.where(flat >= 0, flat, 0)  # (R, D, K)
        return _readonly(np.ascontiguousarray(flat.transpose(1, 0, 2).reshape(slots.shape[1], -1)))

    @cached_property
    def group_valid(self) -> np.ndarray:
        """bool ``(D, R*K)``: False at the padding of :attr:`group_gather`."""
        slots = self.instance_slots
        v = np.repeat((slots >= 0)[:, :, None], self.n_resources, axis=2)
        return _readonly(np.ascontiguousarray(v.transpose(1, 0, 2).reshape(slots.shape[1], -1)))

    @cached_property
    def group_caps(self) -> np.ndarray:
        """float ``(D, R*K)``: per-channel caps in the :attr:`group_gather` layout (0 = padding)."""
        return _readonly(np.where(self.group_valid, self.edge_caps.ravel()[self.group_gather], 0.0))

    @cached_property
    def group_scatter(self) -> np.ndarray:
        """int ``(E*K,)``: position of each flat allocation entry in ``group_gather.ravel()``."""
        g = self.group_gather.ravel()
        out = np.empty(self.n_edges * self.n_resources, dtype=np.int64)
        valid = self.group_valid.ravel()
        out[g[valid]] = np.flatnonzero(valid)
        return _readonly(out)

    @cached_property
    def inverse_capacities(self) -> np.ndarray:
        """float ``(R, K)``: ``1 / c_r^k`` (0 where the capacity is 0)."""
        c = self.capacities
        return _readonly(np.divide(1.0, c, out=np.zeros_like(c), where=c > 0))

    @cached_property
    def single_family(self) -> int | None:
        """The utility family code when every (instance, resource) uses the same one."""
        codes = self.utility_codes
        return int(codes.flat[0]) if np.all(codes == codes.flat[0]) else None

    @cached_property
    def varpi(self) -> np.ndarray:
        """float ``(R, K)``: ``varpi_r^k = f'(0)``, the slope bound of the nice setup."""
        return _readonly(slope_at_zero(self.utility_codes, self.alpha, self.reciprocal_scale))

    # ----------------------------------------------------------- theory bounds
    def diameter_bound(self) -> float:
        """``D = sqrt(2 sum_k max_l a_l^k sum_r c_r^k)``, spec ogasched (48): ``diam(Y) <= D``."""
        abar = self.requests.max(axis=0)
        return float(np.sqrt(2.0 * np.sum(abar * self.capacities.sum(axis=0))))

    def gradient_bound(self) -> float:
        """``G = sqrt(sum_l sum_{r in R_l} (beta*^2 + K varpi_r*^2))``, spec (45)."""
        bstar = float(self.beta.max())
        wstar = self.varpi.max(axis=1)[self.edge_instance]
        return float(np.sqrt(np.sum(bstar**2 + self.n_resources * wstar**2)))

    def regret_bound(self, horizon: int) -> float:
        """Theorem 1: ``H_G sqrt(T) = D G sqrt(T)`` (constant step ``eta = D / (G sqrt(T))``)."""
        return self.diameter_bound() * self.gradient_bound() * float(np.sqrt(horizon))


#: An arrival sampler draws the episode's arrival matrix ``(T, L)`` in {0, 1} from a generator.
ArrivalSampler = Callable[[np.random.Generator, int], np.ndarray]


def bernoulli_arrivals(n_types: int, prob: float) -> ArrivalSampler:
    """i.i.d. Bernoulli(``prob``) arrivals per (slot, type), as in the paper's experiments."""

    def sample(rng: np.random.Generator, horizon: int) -> np.ndarray:
        return (rng.random((horizon, n_types)) < prob).astype(np.float64)

    return sample


# ---------------------------------------------------------------- generator
DEFAULTS: dict[str, Any] = {
    "n_types": 10,  # L
    "n_instances": 128,  # R
    "n_resources": 6,  # K
    "horizon": 2000,  # T
    "arrival_prob": 0.7,  # rho
    "contention": 10.0,
    "alpha_range": (1.0, 1.5),
    "beta_range": (0.3, 0.5),
    "utility": "linear",
    "density": 2.5,
    "degree_choices": None,
    "reciprocal_scale": 1.0,
}

SCENARIOS = ScenarioRegistry("GainOverhead-v0", DEFAULTS)
SCENARIOS.register(
    "paper-default", {}, "OgaSched Table 2: L=10, R=128, K=6, T=2000, rho=0.7, contention 10, "
    "beta in [0.3, 0.5], all-linear utilities, density ~2.5, synthetic capacities",
)
SCENARIOS.register(
    "paper-headline",
    {"horizon": 8000, "beta_range": (0.4, 0.6), "contention": 11.0},
    "OgaSched Fig. 2 (headline numbers): T=8000, beta in [0.4, 0.6], contention 11",
)
SCENARIOS.register(
    "large-scale",
    {"n_types": 100, "n_instances": 1024, "horizon": 10000, "beta_range": (0.01, 0.015),
     "contention": 5.0},
    "OgaSched Fig. 5: L=100, R=1024, T=10000, beta in [0.01, 0.015], contention 5",
)


def validate_params(p: dict[str, Any]) -> dict[str, Any]:
    """Check every generator parameter; returns a normalised copy."""
    q = dict(p)
    q["n_types"] = check_int("n_types", p["n_types"], min_value=1)
    q["n_instances"] = check_int("n_instances", p["n_instances"], min_value=1)
    q["n_resources"] = check_int("n_resources", p["n_resources"], min_value=1,
                                 max_value=len(RESOURCE_NAMES))
    q["horizon"] = check_int("horizon", p["horizon"], min_value=1)
    q["arrival_prob"] = check_float("arrival_prob", p["arrival_prob"], low=0.0, high=1.0)
    q["contention"] = check_float("contention", p["contention"], low=0.0, low_open=True)
    q["alpha_range"] = check_range("alpha_range", p["alpha_range"], low=0.0)
    if q["alpha_range"][0] <= 0:
        raise ValueError(f"alpha_range={p['alpha_range']!r} is invalid: must have lo > 0")
    q["beta_range"] = check_range("beta_range", p["beta_range"], low=0.0)
    q["reciprocal_scale"] = check_float("reciprocal_scale", p["reciprocal_scale"], low=0.0,
                                        low_open=True)
    util = p["utility"]
    if isinstance(util, str):
        check_choice("utility", util, (*FAMILIES, "mixed"))
    else:
        arr = np.asarray(util)
        if arr.shape != (q["n_instances"], q["n_resources"]):
            raise ValueError(
                f"utility has shape {arr.shape}: must be a family name, 'mixed', or an array of "
                f"names with shape ({q['n_instances']}, {q['n_resources']})"
            )
        family_codes(arr)
    if p["degree_choices"] is None:
        dens = check_float("density", p["density"])
        if dens not in DENSITY_DEGREES:
            raise ValueError(
                f"density={p['density']!r} is invalid: must be one of "
                f"{sorted(DENSITY_DEGREES)} (or give degree_choices explicitly)"
            )
        q["density"] = dens
    else:
        dc = p["degree_choices"]
        if isinstance(dc, (str, bytes)) or not hasattr(dc, "__iter__") or len(dc) == 0:
            raise ValueError(f"degree_choices={dc!r} is invalid: must be a non-empty list of "
                             "integers >= 1")
        q["degree_choices"] = tuple(check_int("degree_choices", d, min_value=1) for d in dc)
    return q


def _random_graph(rng: np.random.Generator, L: int, R: int, choices: tuple[int, ...]) -> np.ndarray:
    """Each instance draws ``|L_r|`` from ``choices`` and that many distinct types; re-draw until
    every type has an instance (spec ogasched §6.3)."""
    if max(min(d, L) for d in choices) * R < L:
        raise ValueError(
            f"n_types={L} cannot be covered by n_instances={R} with degrees {choices}: "
            "raise n_instances or the degrees"
        )
    for _ in range(1000):
        deg = np.minimum(rng.choice(np.asarray(choices), size=R), L)
        mask = np.zeros((L, R), dtype=bool)
        for r in range(R):
            mask[rng.choice(L, size=deg[r], replace=False), r] = True
        if mask.any(axis=1).all():
            return np.argwhere(mask)  # row-major => lexicographic (l, r)
    raise ValueError(
        f"could not draw a graph covering all n_types={L} with n_instances={R} and degrees "
        f"{choices} in 1000 tries: raise n_instances or the degrees"
    )


def generate(params: dict[str, Any], instance_seed: int) -> GainOverheadInstance:
    """The synthetic generator of spec ogasched §6.2 item 4 with the graph of §6.3.

    Independent named streams (``graph``, ``capacities``, ``requests``, ``alpha``, ``beta``,
    ``utility``) so that changing one parameter keeps every other draw of the instance fixed.
    """
    p = validate_params(params)
    L, R, K = p["n_types"], p["n_instances"], p["n_resources"]
    st = rngs.streams(instance_seed, "graph", "capacities", "requests", "alpha", "beta", "utility")
    choices = p["degree_choices"] or DENSITY_DEGREES[p["density"]]
    edges = _random_graph(st["graph"], L, R, choices)
    ranges = CAPACITY_RANGES[:K]
    caps = np.stack([st["capacities"].integers(lo, hi, size=R) for lo, hi in ranges], axis=1)
    base = np.stack([st["requests"].uniform(lo, hi, size=L) for lo, hi in ranges], axis=1)
    alpha = st["alpha"].uniform(*p["alpha_range"], size=(R, K))
    beta = st["beta"].uniform(*p["beta_range"], size=K)
    util = p["utility"]
    if isinstance(util, str) and util == "mixed":
        utility = np.asarray(FAMILIES)[st["utility"].integers(0, len(FAMILIES), size=(R, K))]
    elif isinstance(util, str):
        utility = np.full((R, K), util)
    else:
        utility = np.asarray(util)
    return GainOverheadInstance(
        edges=edges,
        requests=p["contention"] * base,
        capacities=caps.astype(np.float64),
        alpha=alpha,
        beta=beta,
        utility=utility,
        reciprocal_scale=p["reciprocal_scale"],
        resource_names=RESOURCE_NAMES[:K],
    )
