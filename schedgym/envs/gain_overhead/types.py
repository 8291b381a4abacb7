"""Types of GainOverhead-v0 (OgaSched problem): the frozen instance and the typed parameters.

Vocabulary (paper symbol in brackets): job types ``l`` [ports, L], computing instances ``r``
[nodes, R], resource types ``k`` [K], time slots ``t`` [T], channels = edges ``(l, r)`` of the
service-locality bipartite graph [E].

Units: capacities and requests are raw resource units (CPU cores, memory GB, device counts), as
in the OgaSched paper's experiments (Zhao et al., §6.1); requests already include the contention
multiplier. See ``docs/gain-overhead.md`` for the model and the parameter table.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np

from schedgym.core.arrays import readonly as _readonly
from schedgym.core.graph import check_edges, edge_mask
from schedgym.core.projection import WORK_ROWS
from schedgym.core.resources import RESOURCE_NAMES, resource_names
from schedgym.core.utilities import FAMILIES, LINEAR, family_codes, slope_at_zero
from schedgym.core.validation import (
    check_array,
    check_choice,
    check_float,
    check_int,
    check_range,
)

#: Per-instance degree |L_r| choices for the paper's three graph densities (OgaSched §6.1,
#: "graph density" of Fig. 3).
DENSITY_DEGREES: dict[float, tuple[int, ...]] = {2.0: (1, 2, 3), 2.5: (1, 2, 3, 4), 3.0: (2, 3, 4)}


#: Accepted range of the scale parameters (``contention``, ``alpha_range``, ``beta_range``,
#: ``reciprocal_scale``): within it every reward, gradient and theory bound stays finite
#: (e.g. the reciprocal family's slope at 0 is ``1 / (s alpha)^2 <= 1e24``).
MIN_SCALE, MAX_SCALE = 1e-6, 1e6


class ProjectionPlan(NamedTuple):
    """An instance's (instance, resource) groups laid out for the block projection
    (:func:`schedgym.core.projection.project_block`), fixed per instance.

    Instances are taken by their number of channels ``n`` (ascending), and in index order within
    one ``n``; the ``m_n`` instances with ``n`` channels form one block of ``G_n = m_n K`` groups
    (column ``j K + k`` = resource ``k`` of the block's ``j``-th instance; row ``d`` = the
    instances' ``d``-th channel in instance-slot order). The blocks are stored one after the
    other, each ``(n, G_n)`` row-major, in one flat buffer of ``E K`` entries (every channel's
    every resource once). int64 / float64, read-only:

    Attributes:
        entries: ``(E K,)``: the flat index ``e K + k`` into an allocation ``(E, K)`` of each
            position of the block buffer (a permutation).
        groups: ``(sum_n G_n,)``: the flat index ``r K + k`` into ``(R, K)`` of each block
            column, block after block (instances without channels have none).
        per_size: ``(D + 1,)``: ``m_n``, instances with ``n`` channels (``per_size[0]``:
            none).
        caps: ``(E K,)``: the per-channel caps ``a_l^k`` in the block buffer's layout, resource
            units.
        capacity: ``(sum_n G_n,)``: the capacities ``c_r^k`` of the block columns, resource
            units.
    """

    entries: np.ndarray
    groups: np.ndarray
    per_size: np.ndarray
    caps: np.ndarray
    capacity: np.ndarray

    @classmethod
    def of(cls, slots: np.ndarray, edge_caps: np.ndarray, capacities: np.ndarray
           ) -> ProjectionPlan:
        """The plan of ``slots`` ``(R, D)`` (edge indices padded with -1), ``edge_caps``
        ``(E, K)`` and ``capacities`` ``(R, K)``."""
        K = edge_caps.shape[1]
        size = (slots >= 0).sum(axis=1)
        blocks = [np.flatnonzero(size == n) for n in range(1, slots.shape[1] + 1)]
        # block n: (n, m_n, K) flat indices e K + k, row d = the d-th channels
        entries = [slots[r, :n].T[:, :, None] * K + np.arange(K) for n, r in
                   enumerate(blocks, start=1)]
        groups = [r[:, None] * K + np.arange(K) for r in blocks]

        def flat(parts: list[np.ndarray], dtype: type) -> np.ndarray:
            return _readonly(np.concatenate([np.ravel(p) for p in parts] + [np.empty(0, dtype)])
                             .astype(dtype))

        perm = flat(entries, np.int64)
        return cls(perm, flat(groups, np.int64),
                   flat([np.bincount(size, minlength=slots.shape[1] + 1)], np.int64),
                   flat([edge_caps.ravel()[perm]], np.float64),
                   flat([capacities.ravel()[flat(groups, np.int64)]], np.float64))


class KernelArrays(NamedTuple):
    """Writable private copies of what the compiled step, batch step and OgaSched update read
    (:mod:`.dynamics`); the kernels never write them. Writable because numba types a
    read-only array apart: read-only arguments would compile a second copy of every kernel and
    take a slower path through its argument checks. Internal: read the instance's own
    (read-only) attributes instead.

    Attributes:
        plan: the :class:`ProjectionPlan` with writable copies of its arrays (the kernels read
            its fields by name: numba types a named tuple of arrays by its fields).
        inverse_capacities: ``(R, K)``. codes, alpha: ``(E, K)`` utility codes and parameters.
        reciprocal_scale: ``s``. type_starts: ``(L,)``. beta: ``(K,)``.
        all_linear: every utility is linear (the step's reward pass then multiplies by
            ``alpha`` without the per-entry family dispatch).
        caps: ``(E K,)`` the per-channel caps ``a_l^k`` row-major (the allocation decode's).
    """

    plan: ProjectionPlan
    inverse_capacities: np.ndarray
    codes: np.ndarray
    alpha: np.ndarray
    reciprocal_scale: float
    type_starts: np.ndarray
    beta: np.ndarray
    all_linear: bool
    caps: np.ndarray


class StepScratch(NamedTuple):
    """The compiled step's working arrays (:func:`.dynamics._step_rows`), float64, one set per
    instance and reused by every step of it: allocated afresh for every step, arrays of ``E K``
    entries (1 MB at 20,000 channels) can go back to the operating system when freed, and the
    next step then pays a page fault per 4 kB page it writes (at that size, more than half of
    the step's time). Their contents mean nothing between calls. Safe to share between the envs of
    one instance: the kernels hold the GIL (none is ``nogil``), so one compiled call at a time
    uses them, from start to end. Internal to :mod:`.dynamics`.

    Attributes:
        target, projected: ``(E K,)``: a copy's target and its projection, in the projection
            plan's block layout.
        load: ``(sum_n G_n,)``: the loads of the plan's block columns.
        work: ``(WORK_ROWS sum_n G_n,)``: the projection's scratch.
    """

    target: np.ndarray
    projected: np.ndarray
    load: np.ndarray
    work: np.ndarray


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
        edges = check_edges(self.edges, L, R)
        check_float("reciprocal_scale", self.reciprocal_scale, low=0.0, low_open=True)
        if self.resource_names is RESOURCE_NAMES and K != len(RESOURCE_NAMES):  # the default
            object.__setattr__(self, "resource_names", resource_names(K))
        if len(self.resource_names) != K:
            raise ValueError(f"resource_names has {len(self.resource_names)} names: must have {K}")
        _check_finite_scale(req, cap, alpha, beta, util, float(self.reciprocal_scale))
        for name, arr in (("edges", edges), ("requests", req), ("capacities", cap),
                          ("alpha", alpha), ("beta", beta), ("utility", util.astype(str))):
            object.__setattr__(self, name, _readonly(arr))
        object.__setattr__(self, "resource_names", tuple(self.resource_names))

    # ------------------------------------------------------------------ sizes
    @property
    def n_types(self) -> int:
        """``L``, the number of job types."""
        return int(self.requests.shape[0])

    @property
    def n_instances(self) -> int:
        """``R``, the number of computing instances."""
        return int(self.capacities.shape[0])

    @property
    def n_resources(self) -> int:
        """``K``, the number of resource types."""
        return int(self.capacities.shape[1])

    @property
    def n_edges(self) -> int:
        """``|E|``, the number of channels."""
        return int(self.edges.shape[0])

    # --------------------------------------------------------------- derived
    @cached_property
    def mask(self) -> np.ndarray:
        """bool ``(L, R)``: ``mask[l, r]`` iff ``(l, r)`` is an edge."""
        return edge_mask(self.edges, self.n_types, self.n_instances)

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
    def reachable_capacity(self) -> np.ndarray:
        """float ``(L, K)``: ``sum_{r in R_l} c_r^k``, the capacity each type can reach, summed
        over the type's channels in instance order (``O(E K)``, no dense ``(L, R)`` mask; the
        same bits as :func:`schedgym.core.graph.reachable_capacity` on :attr:`mask`, whose
        zeros at the non-edges change no sum)."""
        return _readonly(np.add.reduceat(self.capacities[self.edge_instance], self.type_starts,
                                         axis=0))

    @cached_property
    def instance_slots(self) -> np.ndarray:
        """int ``(R, D)``: edge indices of each instance padded with ``-1`` (D = max ``|L_r|``).

        The groups of every projection: :attr:`projection_plan` and :attr:`group_gather` are
        built from it.
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
    def projection_plan(self) -> ProjectionPlan:
        """The instance's groups laid out for the exact projection's blocks (see
        :class:`ProjectionPlan`); built once, read by every projection of this instance."""
        return ProjectionPlan.of(self.instance_slots, self.edge_caps, self.capacities)

    @cached_property
    def kernel_arrays(self) -> KernelArrays:
        """Writable copies of the arrays the compiled step reads (see :class:`KernelArrays`);
        internal to :mod:`.dynamics`."""
        p = self.projection_plan
        return KernelArrays(ProjectionPlan(*(np.array(field) for field in p)),
                            np.array(self.inverse_capacities), np.array(self.edge_codes),
                            np.array(self.edge_alpha), float(self.reciprocal_scale),
                            np.array(self.type_starts), np.array(self.beta),
                            bool(np.all(self.edge_codes == LINEAR)),
                            np.array(self.edge_caps).reshape(-1))

    @cached_property
    def step_scratch(self) -> StepScratch:
        """The compiled step's working arrays (see :class:`StepScratch`); internal to
        :mod:`.dynamics`."""
        size, n_cols = self.n_edges * self.n_resources, self.projection_plan.capacity.size
        return StepScratch(np.empty(size), np.empty(size), np.empty(n_cols),
                           np.empty(WORK_ROWS * n_cols))

    @cached_property
    def group_gather(self) -> np.ndarray:
        """int ``(D, R*K)``: flat index into ``y.ravel()`` of entry ``d`` of group ``(r, k)``
        (column ``r*K + k``); padding points at index 0 and is neutralised by a zero cap in
        :attr:`group_caps` (and must be masked with :attr:`group_valid` when summing raw values).

        Read by :func:`.dynamics.instance_load` (a sum over axis 0, the group's entries) and by
        the paper's projection (``method="paper"``); the exact one uses :attr:`projection_plan`.
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
        """``D = sqrt(2 sum_k max_l a_l^k sum_r c_r^k)``, OgaSched Lemma 2: ``diam(Y) <= D``."""
        abar = self.requests.max(axis=0)
        return float(np.sqrt(2.0 * np.sum(abar * self.capacities.sum(axis=0))))

    def gradient_bound(self) -> float:
        """``G = sqrt(sum_l sum_{r in R_l} (beta*^2 + K varpi_r*^2))``, OgaSched Lemma 3."""
        bstar = float(self.beta.max())
        wstar = self.varpi.max(axis=1)[self.edge_instance]
        return float(np.sqrt(np.sum(bstar**2 + self.n_resources * wstar**2)))

    def regret_bound(self, horizon: int) -> float:
        """Theorem 1: ``H_G sqrt(T) = D G sqrt(T)`` (constant step ``eta = D / (G sqrt(T))``)."""
        return self.diameter_bound() * self.gradient_bound() * float(np.sqrt(horizon))


def _check_finite_scale(req: np.ndarray, cap: np.ndarray, alpha: np.ndarray, beta: np.ndarray,
                        util: np.ndarray, scale: float) -> None:
    """Raise unless the largest possible gain, penalty and slope of the instance are finite
    (an instance outside the generator's ranges could otherwise give inf/NaN rewards)."""
    codes = family_codes(util)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        slope = slope_at_zero(codes, alpha, scale)  # (R, K), the largest slope
        gain = float(np.sum(slope * np.minimum(cap, req.max(axis=0)) * req.shape[0]))
        penalty = float(np.max(beta * req.sum(axis=0)) * cap.shape[0] * req.shape[0])
    if not (np.isfinite(gain) and np.isfinite(penalty) and np.all(np.isfinite(slope))):
        raise ValueError(
            "the instance's scale is out of range: its largest possible gain, penalty or slope "
            f"overflows (gain bound {gain!r}, penalty bound {penalty!r}); the generator's ranges "
            f"([{MIN_SCALE}, {MAX_SCALE}] for alpha, beta, contention and reciprocal_scale) "
            "always give finite rewards"
        )


def _check_utility(util: Any, n_instances: int, n_resources: int) -> Any:
    """A family name, ``"mixed"``, or an ``(R, K)`` array of family names."""
    if isinstance(util, str):
        return check_choice("utility", util, (*FAMILIES, "mixed"))
    arr = np.asarray(util)
    if arr.shape != (n_instances, n_resources):
        raise ValueError(
            f"utility has shape {arr.shape}: must be a family name, 'mixed', or an array of "
            f"names with shape ({n_instances}, {n_resources})"
        )
    family_codes(arr)
    return _readonly(arr.astype(str))


def _check_degrees(density: Any, degree_choices: Any) -> tuple[float, tuple[int, ...] | None]:
    """``(density, degree_choices)`` normalised; ``density`` is checked only when no explicit
    ``degree_choices`` are given."""
    if degree_choices is None:
        dens = check_float("density", density)
        if dens not in DENSITY_DEGREES:
            raise ValueError(
                f"density={density!r} is invalid: must be one of "
                f"{sorted(DENSITY_DEGREES)} (or give degree_choices explicitly)"
            )
        return dens, None
    dc = degree_choices
    if isinstance(dc, (str, bytes)) or not hasattr(dc, "__iter__") or len(dc) == 0:
        raise ValueError(f"degree_choices={dc!r} is invalid: must be a non-empty list of "
                         "integers >= 1")
    return density, tuple(check_int("degree_choices", d, min_value=1) for d in dc)


@dataclass(frozen=True, eq=False)
class GainOverheadParams:
    """Every knob of the GainOverhead-v0 synthetic generator and episode, validated on creation.

    ``gym.make("schedgym/GainOverhead-v0", **overrides)`` layers the overrides on the scenario's
    values and builds one of these; a bad value raises ``ValueError`` naming the parameter, the
    value and what is allowed. Paper-default values (OgaSched Table 2) are the defaults.

    Attributes:
        n_types: ``L >= 1``, job types (ports).
        n_instances: ``R >= 1``, computing instances.
        n_resources: ``K`` in ``[1, 6]``, resource types (cpu, mem, gpu, npu, tpu, fpga).
        horizon: ``T >= 1``, slots per episode.
        arrival_prob: ``rho`` in [0, 1], Bernoulli arrival probability per (slot, type).
        contention: ``> 0``, multiplier of the synthetic requests ``a_l^k``.
        alpha_range: ``(lo, hi)`` with ``0 < lo <= hi``: ``alpha_r^k ~ U[lo, hi]``.
        beta_range: ``(lo, hi)`` with ``0 <= lo <= hi``: ``beta_k ~ U[lo, hi]``.
        utility: ``linear``, ``log``, ``reciprocal``, ``poly``, ``mixed`` (a family drawn per
            (instance, resource)) or an ``(R, K)`` array of family names.
        density: average degree of the locality graph, one of 2, 2.5, 3 (ignored when
            ``degree_choices`` is given).
        degree_choices: explicit choices of ``|L_r|`` (each instance draws one), or ``None``.
        reciprocal_scale: ``s > 0`` of the reciprocal family.
    """

    n_types: int = 10
    n_instances: int = 128
    n_resources: int = 6
    horizon: int = 2000
    arrival_prob: float = 0.7
    contention: float = 10.0
    alpha_range: tuple[float, float] = (1.0, 1.5)
    beta_range: tuple[float, float] = (0.3, 0.5)
    utility: Any = "linear"
    density: float = 2.5
    degree_choices: tuple[int, ...] | None = None
    reciprocal_scale: float = 1.0

    def __post_init__(self) -> None:
        s = self._set
        s("n_types", check_int("n_types", self.n_types, min_value=1))
        s("n_instances", check_int("n_instances", self.n_instances, min_value=1))
        s("n_resources", check_int("n_resources", self.n_resources, min_value=1,
                                   max_value=len(RESOURCE_NAMES)))
        s("horizon", check_int("horizon", self.horizon, min_value=1))
        s("arrival_prob", check_float("arrival_prob", self.arrival_prob, low=0.0, high=1.0))
        s("contention", check_float("contention", self.contention, low=0.0, low_open=True,
                                    high=MAX_SCALE))
        s("alpha_range", check_range("alpha_range", self.alpha_range, low=MIN_SCALE,
                                     high=MAX_SCALE))
        s("beta_range", check_range("beta_range", self.beta_range, low=0.0, high=MAX_SCALE))
        s("reciprocal_scale", check_float("reciprocal_scale", self.reciprocal_scale,
                                          low=MIN_SCALE, high=MAX_SCALE))
        s("utility", _check_utility(self.utility, self.n_instances, self.n_resources))
        density, choices = _check_degrees(self.density, self.degree_choices)
        s("density", density)
        s("degree_choices", choices)

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The parameter names, in declaration order."""
        return tuple(f.name for f in dataclasses.fields(cls))

    def as_dict(self) -> dict[str, Any]:
        """The parameters as a plain dict (e.g. to layer more overrides on)."""
        return {name: getattr(self, name) for name in self.names()}

    def replace(self, **changes: Any) -> GainOverheadParams:
        """A validated copy with ``changes`` applied."""
        return dataclasses.replace(self, **changes)
