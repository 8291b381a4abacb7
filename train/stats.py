"""Small statistics helpers for result tables."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def mean_ci(values: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """Mean and half-width of the two-sided Student-t confidence interval (``nan`` if n < 2)."""
    x = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=np.float64)
    if x.size == 0:
        return float("nan"), float("nan")
    if x.size == 1:
        return float(x[0]), float("nan")
    from scipy import stats

    half = stats.t.ppf(0.5 + level / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size)
    return float(x.mean()), float(half)


def fmt_ci(mean: float, half: float, digits: int = 4) -> str:
    """``"1.234e+03 ± 5.6"``-style compact formatting with a sensible number of digits."""
    if not math.isfinite(mean):
        return "n/a"
    def f(v: float) -> str:
        a = abs(v)
        if a != 0 and (a >= 1e6 or a < 1e-3):
            return f"{v:.{digits - 1}e}"
        return f"{v:,.{max(digits - 1 - int(math.floor(math.log10(a))) if a else digits, 0)}f}" \
            if a < 10 ** digits else f"{v:,.0f}"
    return f(mean) if not math.isfinite(half) else f"{f(mean)} ± {f(half)}"


#: Most seeds one option may list (``0-99999999999`` would otherwise build a list of 10^11
#: integers before anything checks it).
MAX_SEEDS = 100_000


def _bad(what: str, text: str) -> str:
    """``--seeds '5-1' is invalid`` (a flag) or ``seeds='5-1' is invalid`` (a parameter)."""
    return f"{what} {text!r} is invalid" if what.startswith("-") else f"{what}={text!r} is invalid"


def _seed_range(part: str, text: str, what: str) -> tuple[int, int]:
    """``"3-7"`` -> (3, 7), ``"5"`` -> (5, 5); anything else is an error naming ``what``."""
    try:
        lo, hi = (int(p) for p in part.split("-", 1)) if "-" in part else (int(part),) * 2
    except ValueError:
        lo, hi = -1, -1
    if lo >= 0 and hi < lo:
        raise ValueError(f"{_bad(what, text)}: the range {part} runs backwards; write "
                         f"{hi}-{lo}")
    if lo < 0 or hi < lo:
        raise ValueError(
            f"{_bad(what, text)}: must be non-negative integers or ranges like 0-4,7")
    return lo, hi


def parse_seeds(text: str, what: str = "seeds") -> list[int]:
    """``"0-4"`` -> [0..4]; ``"1,3,7"``; ``"0-2,10"`` (at most :data:`MAX_SEEDS` seeds).
    ``what``: the option or parameter named in the error (``"--instance-seeds"``)."""
    seeds: list[int] = []
    for part in filter(None, (p.strip() for p in str(text).split(","))):
        lo, hi = _seed_range(part, text, what)
        if hi - lo + 1 + len(seeds) > MAX_SEEDS:
            raise ValueError(f"{_bad(what, text)}: more than {MAX_SEEDS:,} seeds")
        seeds.extend(range(lo, hi + 1))
    if not seeds:
        raise ValueError(f"{_bad(what, text)}: no seed given")
    return list(dict.fromkeys(seeds))


def fmt_seeds(seeds: Sequence[int]) -> str:
    """``[0, 1, 2, 3, 7]`` -> ``"0-3,7"`` (the inverse of :func:`parse_seeds`)."""
    vals = sorted({int(s) for s in seeds})
    parts: list[str] = []
    i = 0
    while i < len(vals):
        j = i
        while j + 1 < len(vals) and vals[j + 1] == vals[j] + 1:
            j += 1
        parts.append(str(vals[i]) if i == j else f"{vals[i]}-{vals[j]}")
        i = j + 1
    return ",".join(parts)
