"""Every env and classical agent at 1x, 4x, 16x, 64x the paper-default size and at the whole
Alibaba cluster: ms per decision and per env step, peak RSS, the fitted growth exponents and the
whole-cluster episode extrapolated (:mod:`schedgym.train.bench_scale` says what is measured).

Usage::

    python benchmarks/bench_scale.py                      # = schedgym bench scale
    python benchmarks/bench_scale.py --envs fluctuating_speed --sizes 1x,4x --steps 5
    python benchmarks/bench_scale.py --write-doc docs/performance.md   # refresh the docs table
"""

from __future__ import annotations

import sys

from schedgym.train.bench_scale import main

if __name__ == "__main__":
    sys.exit(main())
