"""Where a fresh install's first-use compile time goes: every numba compile of a workload, timed.

Runs one workload in this process and records numba's ``numba:compile`` events (one per kernel
and argument-type tuple compiled; a kernel loaded from the on-disk cache is not one) with the
time spent in LLVM (``numba:llvm_lock``) inside each. Prints the total, the kernels by
exclusive time (their callees' compiles subtracted; the exclusive time still includes
re-optimising the callees' code, which numba links into every caller) with the number of
specialisations of each, and optionally the call tree. A kernel listed with ``x2`` or more
was compiled for several argument-type tuples (literal constants, read-only arrays,
layouts): each costs its compile again.

Usage (an empty numba cache, so that everything compiles)::

    NUMBA_CACHE_DIR=$(mktemp -d) python benchmarks/compile_profile.py dw-env
    NUMBA_CACHE_DIR=$(mktemp -d) python benchmarks/compile_profile.py fs --tree 0.2

Workloads: ``dw-env`` (DeadlineWelfare-v0 ``gym.make``, reset, a step), ``dw`` (that, then
OnSocMax and the three baselines, then the native vector env: the first process of
``bench_deadline_welfare.first_call_seconds``), ``fs`` (FluctuatingSpeed-v0, ESDP, HAUF, LCF,
LWTF, the oracle, the native vector env), ``go-env`` (GainOverhead-v0 ``gym.make``, reset, a
step), ``go`` (that, then OgaSched, its four baselines and myopic-opt, then the native vector
env). ``--utility`` sets DeadlineWelfare's family.
"""

from __future__ import annotations

import argparse
import os
import time
from collections import defaultdict
from typing import Any

from numba.core import event

_stack: list[list[Any]] = []  # [name, start, child seconds, llvm seconds]
_records: list[tuple[int, str, str, float, float, float]] = []  # depth, name, sig, s, excl, llvm


class _Compiles(event.Listener):
    def on_start(self, ev: event.Event) -> None:
        f = ev.data["dispatcher"].py_func
        name = f"{f.__module__.rsplit('.', 1)[-1]}.{f.__qualname__}"
        _stack.append([name, str(tuple(ev.data["args"])), time.perf_counter(), 0.0, 0.0])

    def on_end(self, ev: event.Event) -> None:
        name, sig, t0, child, llvm = _stack.pop()
        dur = time.perf_counter() - t0
        if _stack:
            _stack[-1][3] += dur
        _records.append((len(_stack), name, sig, dur, dur - child, llvm))


class _Llvm(event.Listener):
    def on_start(self, ev: event.Event) -> None:
        self.t0 = time.perf_counter()

    def on_end(self, ev: event.Event) -> None:
        if _stack:
            _stack[-1][4] += time.perf_counter() - self.t0


def workload(name: str, utility: str) -> None:
    """Run workload ``name`` (see the module docstring)."""
    import gymnasium as gym
    import numpy as np

    import schedgym  # noqa: F401
    from schedgym import agents

    env_id = {"fs": "schedgym/FluctuatingSpeed-v0", "go": "schedgym/GainOverhead-v0",
              "go-env": "schedgym/GainOverhead-v0"}.get(name, "schedgym/DeadlineWelfare-v0")
    kw = {} if name in ("fs", "go", "go-env") else {"utility": utility}
    env = gym.make(env_id, **kw)
    env.reset(seed=0)
    env.step(env.action_space.sample())
    names = {"dw": ["onsocmax", "max-first", "equal-share", "jsq"], "dw-env": [], "go-env": [],
             "fs": ["esdp", "hauf", "lcf", "lwtf", "oracle"],
             "go": ["ogasched", "drf", "fairness", "binpacking", "spreading", "myopic-opt"]}[name]
    for n in names:
        ag = agents.make(n, env)
        obs, _ = env.reset(seed=0)
        env.step(ag.predict(obs)[0])
    if names:
        vec = gym.make_vec(env_id, num_envs=2, vectorization_mode="vector_entry_point", **kw)
        vec.reset(seed=0)
        vec.step(np.stack([env.action_space.sample() for _ in range(2)]))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("workload", choices=["dw-env", "dw", "fs", "go-env", "go"])
    p.add_argument("--utility", default="linear")
    p.add_argument("--top", type=int, default=30, help="kernels listed")
    p.add_argument("--tree", type=float, default=None, help="print the call tree of compiles "
                   "taking at least this many seconds")
    args = p.parse_args()
    event.register("numba:compile", _Compiles())
    event.register("numba:llvm_lock", _Llvm())
    t0, c0 = time.perf_counter(), time.process_time()
    workload(args.workload, args.utility)
    print(f"{args.workload}: {time.perf_counter() - t0:.2f} s wall, "
          f"{time.process_time() - c0:.2f} s CPU (import included), {len(_records)} compiles, "
          f"load average {os.getloadavg()[0]:.1f}")
    agg: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for _, name, _, _, excl, llvm in _records:
        a = agg[name]
        a[0] += 1
        a[1] += excl
        a[2] += llvm
    print(f"{'exclusive s':>12}{'LLVM s':>8}  specialisations  kernel")
    for name, (k, excl, llvm) in sorted(agg.items(), key=lambda kv: -kv[1][1])[:args.top]:
        print(f"{excl:12.2f}{llvm:8.2f}  x{int(k):<15d} {name}")
    if args.tree is not None:
        print("call tree (callees indented under their caller; inclusive s):")
        # records are in post-order; reversed, each caller precedes its callees
        for depth, name, sig, dur, _, _ in reversed(_records):
            if dur >= args.tree:
                print(f"{'  ' * depth}{name} {dur:.2f}  {sig[:100]}")


if __name__ == "__main__":
    main()
