"""Action modes of GainOverhead-v0: how an action in ``[-1, 1]^n`` becomes an allocation.

Every mode maps the action (after clipping to the box) to a *target* allocation ``z`` ``(E, K)``
in resource units with ``0 <= z <= a_l^k``; the env then applies the exact Euclidean projection
onto the feasible set Y (OgaSched §3.3, constraints (5)-(6)), so every action of every mode is
feasible. The decoders are deterministic and read only the instance and what the observation
shows (see "Serving only arrived types" below).

- ``allocation`` (default), ``|E| * K`` entries: ``z = (a + 1) / 2 * a_l^k`` per channel and
  resource (the raw action);
- ``fractions``, ``L * K`` entries: ``z_(l,r)^k = (a_lk + 1) / 2 * a_l^k`` on every channel
  ``(l, r)`` of type ``l``: one fraction of the request per (type, resource);
- ``prices``, ``L * K`` entries: ``z_(l,r)^k = argmax_{0 <= y <= a_l^k} f_r^k(y) - p_lk y``
  with the price ``p_lk = (a_lk + 1) / 2 * pmax_lk`` and ``pmax_lk = max_{r in R_l}
  f_r^k'(0)`` (at ``a = 1`` nothing is requested, at ``a = -1`` everything): each channel asks
  for what its own utility is worth at that price (closed form per family).

Serving only arrived types: in the learnable modes under the revealed protocol, channels of the
types that the observation shows without an arrival get ``z = 0`` (an allocation to a type with
no job earns nothing, ``x_l = 0`` in the reward, and only takes capacity from the arrived
types). The decoder thus reads only what the policy observes; under ``arrivals="hidden"``
every type is served. The default ``allocation`` mode never gates (the raw action is played as
given: a classical agent's allocation is applied as the agent chose it).

Why ``prices``: for fixed multipliers ``nu_l`` of the penalty's max (``max_k beta_k Y_l^k =
max_{nu in simplex} sum_k nu_k beta_k Y_l^k``), the per-slot problem separates per channel into
exactly these best responses at ``p_lk = beta_k nu_lk`` (plus capacity prices, which the
projection stands in for). A policy therefore only has to pick ``L * K`` prices, and the same
price means the right amount on a linear, log, poly or reciprocal instance. ``fractions`` is the
simpler alternative (the same fraction on every channel of a type).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from schedgym.core import utilities
from schedgym.envs.gain_overhead import dynamics
from schedgym.envs.gain_overhead.types import GainOverheadInstance

#: The action modes, the default (raw allocation) first.
ACTION_MODES: tuple[str, ...] = ("allocation", "fractions", "prices")


def action_size(inst: GainOverheadInstance, mode: str) -> int:
    """Length of the action vector of ``mode`` (``|E| K`` or ``L K``)."""
    if mode == "allocation":
        return inst.n_edges * inst.n_resources
    return inst.n_types * inst.n_resources


@numba.njit(cache=True, error_model="numpy", inline="always")
def _best_response_one(code: int, alpha: float, w: float, price: float, upper: float,
                       scale: float) -> float:
    """``argmax_{0 <= y <= upper} w f(y) - price y`` of one entry: ``upper`` for a non-positive
    price (``f`` is non-decreasing), else the ``y`` with ``f'(y) = price / w`` per family
    (linear: ``+inf`` where ``alpha > g`` else 0), clipped to ``[0, upper]``. The one
    implementation of the closed forms; every family's value is computed and one selected
    (no branches, so the loops over entries vectorise; numpy's semantics for a zero ``w``)."""
    g = max(price, 1e-300) / w  # target slope (> 0)
    lin = math.inf if alpha > g else 0.0
    log = alpha / g - 1.0  # alpha / (1 + y) = g
    q = alpha / (2.0 * g)
    poly = q * q - 1.0  # alpha / (2 sqrt(1 + y)) = g
    recip = 1.0 / math.sqrt(g) - scale * alpha  # 1 / (y + s alpha)^2 = g
    y = (lin if code == utilities.LINEAR else log if code == utilities.LOG
         else poly if code == utilities.POLY else recip if code == utilities.RECIPROCAL
         else math.nan)
    y = upper if price <= 0.0 else y
    return min(max(y, 0.0), upper)


@numba.njit(cache=True, error_model="numpy")
def _best_response_flat(code: np.ndarray, alpha: np.ndarray, w: np.ndarray, price: np.ndarray,
                        upper: np.ndarray, scale: float, out: np.ndarray) -> None:
    """:func:`_best_response_one` for every entry of ``out`` (flat, size ``B * m``): ``code``,
    ``alpha``, ``upper`` have ``m`` entries and repeat for each of the ``B`` blocks (a batch of
    instance-shaped arrays, read without copying); ``price`` is full size; ``w`` is full size
    or one value."""
    m = code.size
    full_w = w.size == out.size
    w0 = w[0]
    for b in range(out.size // m):
        o = b * m
        for j in range(m):
            out[o + j] = _best_response_one(code[j], alpha[j], w[o + j] if full_w else w0,
                                            price[o + j], upper[j], scale)


def _flat(x: np.ndarray, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """``x`` (broadcast to ``shape`` first, when given and different) as a flat contiguous
    array."""
    if shape is not None and x.shape != shape:
        x = np.broadcast_to(x, shape)
    return np.ascontiguousarray(x).reshape(-1)


def best_response(
    code: np.ndarray, alpha: np.ndarray, w: np.ndarray | float, price: np.ndarray,
    upper: np.ndarray, scale: float,
) -> np.ndarray:
    """``argmax_{0 <= y <= upper} w f(y) - price y`` entrywise, in closed form (``w > 0``), as
    float64 of the arguments' broadcast shape.

    Solves ``f'(y) = price / w`` with the inverse derivative of each family and clips to the box;
    a non-positive price gives ``upper`` (``f`` is non-decreasing). One compiled pass
    (:func:`_best_response_one` per entry); ``code``, ``alpha`` and ``upper`` of one shape that
    ends the broadcast shape (an instance's ``(E, K)`` under a batch of prices) are not copied.
    """
    c, al, up = (np.asarray(code), np.asarray(alpha, dtype=np.float64),
                 np.asarray(upper, dtype=np.float64))
    ww, pr = np.asarray(w, dtype=np.float64), np.asarray(price, dtype=np.float64)
    shape = np.broadcast_shapes(c.shape, al.shape, ww.shape, pr.shape, up.shape)
    out = np.empty(shape)
    if out.size:
        block = shape[len(shape) - c.ndim:]
        inner = block if c.shape == al.shape == up.shape == block else shape
        _best_response_flat(_flat(c, inner), _flat(al, inner),
                            _flat(ww) if ww.size == 1 else _flat(ww, shape), _flat(pr, shape),
                            _flat(up, inner), float(scale), out.reshape(-1))
    return out


def price_ceiling(inst: GainOverheadInstance) -> np.ndarray:
    """``pmax_lk = max_{r in R_l} f_r^k'(0)`` ``(L, K)``: at this price no channel of type ``l``
    asks for resource ``k``."""
    slopes = inst.varpi[inst.edge_instance]  # (E, K)
    return np.maximum.reduceat(slopes, inst.type_starts, axis=0)


def decode(inst: GainOverheadInstance, mode: str, action: np.ndarray,
           ceiling: np.ndarray | None = None, served: np.ndarray | None = None) -> np.ndarray:
    """Target allocation ``z`` ``(E, K)`` (resource units, ``0 <= z <= a_l^k``) of a clipped
    action in ``[-1, 1]`` (flat, length :func:`action_size`); project it onto Y to play it.
    ``ceiling``: :func:`price_ceiling` (computed when omitted). ``served``: bool ``(L,)``, the
    types that may receive anything (``None``: all); the env passes the observed arrivals in
    the learnable modes under the revealed protocol (see the module docstring)."""
    a = np.asarray(action, dtype=np.float64)
    if mode == "allocation":  # the compiled map of the env's step (the same bits)
        caps = inst.edge_caps
        z = np.empty(caps.shape)
        dynamics.clip_decode_unit(a, caps.reshape(-1), z.reshape(-1))
        if served is not None:
            z[~np.asarray(served, dtype=bool)[inst.edge_type]] = 0.0
        return z
    return decode_batch(inst, mode, a[None], ceiling,
                        None if served is None else np.asarray(served)[None])[0]


def decode_batch(inst: GainOverheadInstance, mode: str, actions: np.ndarray,
                 ceiling: np.ndarray | None = None, served: np.ndarray | None = None
                 ) -> np.ndarray:
    """:func:`decode` of ``N`` clipped actions ``(N, L * K)`` of a learnable mode
    (``"fractions"``, ``"prices"``) at once: targets ``(N, E, K)``; ``served`` bool ``(N, L)`` or
    ``None``. Entrywise arithmetic only, so row ``i`` has the bits of ``decode(actions[i])``
    (:func:`decode` is this function on a batch of one)."""
    a = np.asarray(actions, dtype=np.float64)
    caps = inst.edge_caps
    half = 0.5 * (a + 1.0)
    frac = half.reshape(-1, inst.n_types, inst.n_resources)[:, inst.edge_type]  # (N, E, K)
    if mode == "fractions":
        z = frac * caps
    elif mode == "prices":
        pmax = price_ceiling(inst) if ceiling is None else ceiling
        z = best_response(inst.edge_codes, inst.edge_alpha, 1.0, frac * pmax[inst.edge_type],
                          caps, inst.reciprocal_scale)
    else:
        raise ValueError(f"action_mode={mode!r} is invalid: must be one of {ACTION_MODES}")
    if served is not None:
        z[~np.asarray(served, dtype=bool)[:, inst.edge_type]] = 0.0
    return z
