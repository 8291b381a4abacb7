"""Portable golden recordings: what the golden tests record of a trajectory and how they compare.

A golden test replays fixed rollouts and compares them with a recording, so that a change of how a
kernel is written cannot move a published number. Bits are promised per machine, not across CPUs
(a library's SIMD or BLAS kernel choice may move the last bits of a sum), so each recording holds
two things:

- a **portable** record, compared on every machine: a ``structure`` digest (every container's
  layout, every dtype, shape and Python/numpy type, every integer, boolean and string exactly, and
  the position and value of every non-finite float), and per added group of values a fingerprint
  ``[a64, a32, b]`` of its floats: ``a64``/``a32`` the sums of ``|x|`` over its float64 and its
  float32 values, ``b`` a weighted sum ``sum_i w_i x_i`` with fixed weights ``w_i`` in [1, 2) by
  position. The sums are exact (``math.fsum`` of correctly rounded products), so they are the same
  on every CPU for the same bits. Two recordings match where every fingerprint entry agrees within
  ``RTOL * a64 + F32_RTOL * a32``: a few ulps of every value, far below any change of the numbers
  (a difference ``d`` in one value moves ``b`` by ``w_i d``).
- the **exact** SHA-256 of a type-aware byte encoding of every value (``-0.0`` differs from
  ``0.0``), compared only by the tests marked ``golden_exact`` (``pytest -m golden_exact``), on
  the machine that made the recording.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

#: Relative tolerance per float64 value (of the sum of magnitudes of a fingerprinted group).
RTOL = 1e-12
#: Relative tolerance per float32 value: two ulps of float32 (a float64 that differs in its last
#: bits may round to the neighbouring float32).
F32_RTOL = 2.0 * float(np.finfo(np.float32).eps)
#: Tolerance of recorded returns and rewards (relative, and absolute for values near zero).
RETURN_RTOL, RETURN_ATOL = 1e-12, 1e-9


def _canon(x: Any, out: list[bytes]) -> None:
    """Append an exact, type-aware byte encoding of ``x`` to ``out``."""
    if isinstance(x, dict):
        out.append(b"{%d" % len(x))
        for k in sorted(x):
            out.append(str(k).encode() + b":")
            _canon(x[k], out)
        out.append(b"}")
    elif isinstance(x, tuple | list):
        out.append(b"(%d" % len(x))
        for v in x:
            _canon(v, out)
        out.append(b")")
    elif isinstance(x, np.ndarray):
        a = np.ascontiguousarray(x)
        out.append(f"A{a.dtype.str}{a.shape}".encode() + a.tobytes())
    elif isinstance(x, np.generic):
        out.append(f"G{x.dtype.str}".encode() + x.tobytes())
    elif isinstance(x, bool | int):
        out.append(f"{type(x).__name__}{x!r}".encode())
    elif isinstance(x, float):
        out.append(b"f" + struct.pack("<d", x))
    elif isinstance(x, str):
        out.append(b"s" + x.encode())
    elif x is None:
        out.append(b"N")
    else:
        raise TypeError(f"no canonical encoding for {type(x).__name__}")


def _weights(n: int) -> np.ndarray:
    """Fixed weights in [1, 2) by position (the golden-ratio sequence, no random state)."""
    return 1.0 + np.modf(np.arange(n, dtype=np.float64) * 0.6180339887498949)[0]


class _Portable:
    """The structure bytes and the float fingerprint of one group of values."""

    def __init__(self) -> None:
        self.struct: list[bytes] = []
        self.a64 = 0.0
        self.a32 = 0.0
        self.terms: list[float] = []

    def floats(self, values: np.ndarray, narrow: bool) -> None:
        f = np.asarray(values, dtype=np.float64).ravel()
        bad = np.flatnonzero(~np.isfinite(f))
        self.struct.append(b"nf" + bad.astype("<i8").tobytes() + f[bad].astype("<f8").tobytes())
        fin = np.where(np.isfinite(f), f, 0.0)
        mag = math.fsum(np.abs(fin).tolist())
        if narrow:
            self.a32 += mag
        else:
            self.a64 += mag
        self.terms.append(math.fsum((_weights(fin.size) * fin).tolist()))

    def walk(self, x: Any) -> None:
        if isinstance(x, dict):
            self.struct.append(b"{%d" % len(x))
            for k in sorted(x):
                self.struct.append(str(k).encode() + b":")
                self.walk(x[k])
            self.struct.append(b"}")
        elif isinstance(x, tuple | list):
            self.struct.append(b"(%d" % len(x))
            for v in x:
                self.walk(v)
            self.struct.append(b")")
        elif isinstance(x, np.ndarray | np.generic):
            a = np.ascontiguousarray(x)
            self.struct.append(f"{type(x).__name__}{a.dtype.str}{a.shape}".encode())
            if a.dtype.kind == "f":
                self.floats(a, narrow=a.dtype.itemsize < 8)
            else:
                self.struct.append(a.tobytes())
        elif isinstance(x, float):
            self.struct.append(b"f")
            self.floats(np.array([x]), narrow=False)
        else:
            _canon(x, self.struct)


#: Info keys renamed since the recordings were made (current name -> recorded name): the values
#: are the same bits, only the names moved, so that no info key repeats an observation key
#: (clients such as TorchRL put observation, reward and info in one table).
RENAMED_INFO = {"slot_arrivals": "arrivals", "mean_utilization": "utilization",
                "slot_feedback": "feedback"}


def _recorded_names(info: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in info.items():
        mask = key.startswith("_")
        name = RENAMED_INFO.get(key[1:] if mask else key, key[1:] if mask else key)
        out[("_" if mask else "") + name] = value
    return out


def as_recorded(info: dict[str, Any], *, reward: Any = None, added: tuple[str, ...] = ()
                ) -> dict[str, Any]:
    """A step's ``info`` as the recordings hold it: the keys renamed back
    (:data:`RENAMED_INFO`), ``reward`` put back where the info held it then (FluctuatingSpeed:
    the step's reward; a vector env's with the mask of a step-only key), and the keys ``added``
    to the step info since (DeadlineWelfare's ``n_jobs``, ``episode_seed``) left out, or, in a
    vector env's step where some copies were reset, kept for those copies only (Gymnasium's
    ``_add_info`` layout of their reset info)."""
    out = _recorded_names(info)
    if reward is not None:
        if isinstance(reward, np.ndarray):
            if "_raw_utility" in out:  # a step where some copy stepped (else no step keys)
                out["reward"], out["_reward"] = reward.copy(), out["_raw_utility"].copy()
        else:
            out["reward"] = float(reward)
    for key in added:
        value = out.pop(key, None)
        mask = out.pop("_" + key, None)
        if mask is None or value is None:
            continue
        reset = ~out["_job"] if "_job" in out else np.ones_like(mask)
        if reset.any():
            out[key] = np.where(reset, value, 0).astype(np.int64)
            out["_" + key] = reset
    return out


class Recording:
    """Accumulates a trajectory: ``add(*values)`` once per step (or per call of a kernel)."""

    def __init__(self) -> None:
        self.exact = hashlib.sha256()
        self.structure = hashlib.sha256()
        self.fingerprints: list[list[float]] = []

    def add(self, *values: Any) -> None:
        buf: list[bytes] = []
        _canon(values, buf)
        self.exact.update(b"".join(buf))
        p = _Portable()
        p.walk(values)
        self.structure.update(b"".join(p.struct))
        self.fingerprints.append([p.a64, p.a32, math.fsum(p.terms)])

    def result(self, **extra: Any) -> dict[str, Any]:
        """The recording as JSON-ready data (``extra``: returns or rewards in clear)."""
        return {"sha256": self.exact.hexdigest(), "structure": self.structure.hexdigest(),
                "fingerprints": self.fingerprints, **extra}


def _close(got: float, want: float) -> bool:
    return math.isclose(got, want, rel_tol=RETURN_RTOL, abs_tol=RETURN_ATOL)


def assert_portable_match(got: dict[str, Any], want: dict[str, Any], case: str) -> None:
    """Fail unless ``got`` equals the recording ``want`` within the portable tolerances."""
    for key in ("returns", "rewards"):
        if key in want or key in got:
            g, w = got.get(key), want.get(key)
            assert g is not None and w is not None and len(g) == len(w), f"{case}: {key} differ"
            bad = [i for i, (a, b) in enumerate(zip(g, w, strict=True)) if not _close(a, b)]
            assert not bad, f"{case}: {key}[{bad[0]}] = {g[bad[0]]!r}, recorded {w[bad[0]]!r}"
    assert got["structure"] == want["structure"], (
        f"{case}: types, shapes, integers or non-finite values differ from the recording")
    gp, wp = got["fingerprints"], want["fingerprints"]
    assert len(gp) == len(wp), f"{case}: {len(gp)} recorded steps, {len(wp)} expected"
    for i, (g, w) in enumerate(zip(gp, wp, strict=True)):
        tol = RTOL * max(g[0], w[0]) + F32_RTOL * max(g[1], w[1])
        diff = max(abs(a - b) for a, b in zip(g, w, strict=True))
        assert diff <= tol, (f"{case}: values of step {i} differ from the recording by {diff:.3g} "
                             f"(tolerance {tol:.3g})")


def assert_exact_match(got: dict[str, Any], want: dict[str, Any], case: str) -> None:
    """Fail unless ``got`` has the recording's exact bits (for the recording machine)."""
    assert got["sha256"] == want["sha256"], f"{case}: output bits differ from the recording"


def record_main(path: Path, cases: dict[str, Callable[[], dict[str, Any]]],
                argv: list[str]) -> None:
    """A golden test's command line. ``--record`` writes a new recording of every case (only after
    a deliberate, documented change of the numbers); ``--record-exact`` keeps the portable record,
    checks that every case still matches it, and records this machine's exact bits (after a change
    that only moves last bits, e.g. a summation order, or to make this machine the recording one).
    """
    if "--record" in argv:
        data = {k: f() for k, f in sorted(cases.items())}
    elif "--record-exact" in argv:
        data = json.loads(path.read_text())
        for k, f in sorted(cases.items()):
            got = f()
            assert_portable_match(got, data[k], k)
            data[k]["sha256"] = got["sha256"]
    else:
        raise SystemExit("usage: python -m tests.<module> --record | --record-exact")
    path.write_text(json.dumps(data, indent=1) + "\n")
    print(f"recorded {len(data)} cases in {path}")
