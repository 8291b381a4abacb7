"""Theorem-1 constants of a GainOverhead instance (OgaSched Theorem 1, (45) and (48)): the
diameter bound D, the gradient bound G and H_G sqrt(T), against a direct computation and against
sampled points."""

from __future__ import annotations

import math

import numpy as np
import pytest

from schedgym.core.utilities import FAMILIES
from schedgym.envs.gain_overhead import dynamics
from schedgym.envs.gain_overhead.generator import DEFAULTS, generate

SMALL = {"n_types": 5, "n_instances": 7, "n_resources": 4}


def _inst(family, seed=0, **kw):
    return generate(dict(DEFAULTS, **SMALL, utility=family, **kw), seed)


def direct_D(inst) -> float:
    """(48): sqrt(2 sum_k abar^k sum_r c_r^k), abar^k = max_l a_l^k, with plain loops."""
    total = 0.0
    for k in range(inst.n_resources):
        abar = max(inst.requests[l_, k] for l_ in range(inst.n_types))
        total += abar * sum(inst.capacities[r, k] for r in range(inst.n_instances))
    return math.sqrt(2.0 * total)


def _varpi(family: str, alpha: float, s: float) -> float:
    return {"linear": alpha, "log": alpha, "reciprocal": 1.0 / (s * alpha) ** 2,
            "poly": alpha / 2.0}[family]


def direct_G(inst) -> float:
    """(45): sqrt(sum_l sum_{r in R_l} (beta*^2 + K varpi_r*^2)), with plain loops."""
    bstar = max(inst.beta)
    K = inst.n_resources
    total = 0.0
    for _, r in inst.edges:
        wstar = max(_varpi(inst.utility[r, k], inst.alpha[r, k], inst.reciprocal_scale)
                    for k in range(K))
        total += bstar**2 + K * wstar**2
    return math.sqrt(total)


@pytest.mark.parametrize("family", [*FAMILIES, "mixed"])
@pytest.mark.parametrize("seed", [0, 1])
def test_D_G_match_direct_computation(family, seed):
    inst = _inst(family, seed, reciprocal_scale=1.0 + seed)
    assert inst.diameter_bound() == pytest.approx(direct_D(inst), rel=1e-12)
    assert inst.gradient_bound() == pytest.approx(direct_G(inst), rel=1e-12)
    assert inst.regret_bound(2000) == pytest.approx(
        direct_D(inst) * direct_G(inst) * math.sqrt(2000), rel=1e-12)


def _vertex(inst, rng):
    """A vertex-like point of Y: in each (r, k) group, fill the ports in random order up to
    min(cap, remaining capacity)."""
    y = np.zeros((inst.n_edges, inst.n_resources))
    for r in range(inst.n_instances):
        edges = np.flatnonzero(inst.edge_instance == r)
        for k in range(inst.n_resources):
            left = inst.capacities[r, k]
            for e in rng.permutation(edges):
                y[e, k] = min(inst.edge_caps[e, k], left)
                left -= y[e, k]
    return y


@pytest.mark.parametrize("contention", [0.2, 10.0])
def test_D_bounds_distances_between_feasible_points(contention):
    inst = _inst("linear", 3, contention=contention)
    rng = np.random.default_rng(0)
    pts = [_vertex(inst, rng) for _ in range(40)]
    pts += [dynamics.project(inst, rng.uniform(-1, 2, inst.edge_caps.shape) * inst.edge_caps)
            for _ in range(40)]
    pts.append(np.zeros_like(pts[0]))
    for p in pts:
        assert dynamics.is_feasible(inst, p)
    P = np.stack([p.ravel() for p in pts])
    sq = (P**2).sum(1)
    dist = np.sqrt(np.maximum(sq[:, None] + sq[None, :] - 2 * P @ P.T, 0.0))
    D = inst.diameter_bound()
    assert dist.max() <= D
    assert dist.max() > 0.05 * D  # the sample is spread (the check is not vacuous)


@pytest.mark.parametrize("family", [*FAMILIES, "mixed"])
def test_G_bounds_supergradient_norms(family):
    inst = _inst(family, 2)
    rng = np.random.default_rng(1)
    G = inst.gradient_bound()
    worst = 0.0
    for i in range(100):
        x = (rng.random(inst.n_types) < 0.7).astype(float) if i else np.ones(inst.n_types)
        z = rng.uniform(-1, 1.5, inst.edge_caps.shape) * inst.edge_caps * (i % 3 > 0)
        y = dynamics.project(inst, z)
        worst = max(worst, float(np.linalg.norm(dynamics.supergradient(inst, x, y))))
    assert worst <= G
    assert worst > 0.3 * G  # at y = 0 with every type arrived the gradient is close to G


def test_default_resource_names_follow_K():
    """An instance built by hand with K != 6 gets the first K default names (it used to raise
    'resource_names has 6 names: must have K' unless the names were passed)."""
    from schedgym.envs.gain_overhead.types import GainOverheadInstance

    kw = dict(edges=np.array([[0, 0]]), requests=np.ones((1, 3)), capacities=np.ones((1, 3)),
              alpha=np.ones((1, 3)), beta=np.zeros(3), utility=np.full((1, 3), "linear"))
    assert GainOverheadInstance(**kw).resource_names == ("cpu", "mem", "gpu")
    with pytest.raises(ValueError, match="resource_names has 2 names: must have 3"):
        GainOverheadInstance(**kw, resource_names=("a", "b"))
