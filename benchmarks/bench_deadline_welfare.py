"""Performance figures of DeadlineWelfare-v0, OnSocMax and the offline optimum.

Prints, measured in one run on this machine (ratios against references measured in the same
process, never absolute targets):
0. first-use time in fresh processes with an empty numba cache (everything compiles) and over
   the cache that filled: the env alone (a user's first ``gym.make`` and steps, default
   utility), and every kernel of the env, the agents and the vector env in 3 utilities;
1. env steps per CPU second (``time.process_time``: the machine is shared) with random actions
   at the paper-default size, as a ratio to CartPole-v1's, measured the same way: the single
   env, the native vector env (64 copies, per env-step) and SyncVectorEnv (64 copies) for
   reference; and the same without episode ends (one episode of 2,000 jobs) to separate the
   step from the reset; then a reset's CPU time, the job sampler's part of it and the part of
   that which builds the sampler's named random streams (:func:`schedgym.core.rng.streams`);
2. every agent's mean decision time per job (``predict``: parse + solve + encode);
3. OnSocMax's exact P3 solver (``P3.solve``) next to cvxpy/Clarabel (``solve_p3_cvxpy``: build +
   solve, as an agent would per job) on the same subproblems - every job OnSocMax decided in
   ``--episodes`` episodes of the ``paper-default`` and ``congested`` scenarios, per utility
   family: mean time per subproblem (best of 5 runs for ours, of 3 for cvxpy, so a preemption
   by another process is not counted), speed-up of the totals and smallest per-subproblem
   speed-up, largest objective difference (ours - cvxpy; >= 0 means ours is at least as good)
   and largest KKT residual. Subproblems are timed interleaved (ours, then cvxpy);
4. wall time of the offline optimum (P1) per episode.

Usage: ``python benchmarks/bench_deadline_welfare.py [--episodes N] [--steps N]`` or
``schedgym bench deadline_welfare``.
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

import schedgym  # noqa: F401
from schedgym import agents
from schedgym.agents.onsocmax import p3_from_job, solve_p3_cvxpy
from schedgym.core import rng as rngs
from schedgym.envs.deadline_welfare.dynamics import observed_job
from schedgym.envs.deadline_welfare.generator import JOB_STREAMS
from schedgym.envs.deadline_welfare.offline import solve_p1

ENV_ID = "schedgym/DeadlineWelfare-v0"
AGENTS = ["onsocmax", "max-first", "equal-share", "jsq"]
FAMILIES = ["linear", "log", "sqrt"]


_COMPILE = """
import time
t0 = time.perf_counter()
import gymnasium as gym, numpy as np, schedgym
from schedgym import agents
env = gym.make("schedgym/DeadlineWelfare-v0", utility="{u}")
names = ["onsocmax", "max-first", "equal-share", "jsq"]
acts = [agents.make(n, env) for n in names]
for ag in acts:
    obs, _ = env.reset(seed=0)
    env.step(ag.predict(obs)[0])
vec = gym.make_vec("schedgym/DeadlineWelfare-v0", num_envs=2,
                   vectorization_mode="vector_entry_point", utility="{u}")
vec.reset(seed=0)
vec.step(vec.action_space.sample())
print(time.perf_counter() - t0)
"""


_ENV_ONLY = """
import time
t0 = time.perf_counter()
import gymnasium as gym, schedgym
env = gym.make("schedgym/DeadlineWelfare-v0")
env.reset(seed=0)
for _ in range(3):
    env.step(env.action_space.sample())
print(time.perf_counter() - t0)
"""


def first_env_seconds(cache_dir: str) -> float:
    """Seconds to import schedgym, make the env (default utility), reset it and step it 3 times
    in a fresh process with numba's cache in ``cache_dir``: a user's first use."""
    out = subprocess.run([sys.executable, "-c", _ENV_ONLY], capture_output=True, text=True,
                         check=True, env={**os.environ, "NUMBA_CACHE_DIR": cache_dir})
    return float(out.stdout.strip().splitlines()[-1])


def compile_section() -> None:
    """Section 0: first-use time in fresh processes, each first with an empty numba cache
    (everything compiles) and then again over the cache that run filled (loads only)."""
    print("\n0. first use in fresh processes (wall s; compile: an empty numba cache; cached: "
          "the cache the first run filled):")
    with tempfile.TemporaryDirectory() as one, tempfile.TemporaryDirectory() as every:
        env_cold, env_warm = first_env_seconds(one), first_env_seconds(one)
        all_cold, all_warm = first_call_seconds(every), first_call_seconds(every)
    print(f"   env alone (import, make, reset, 3 steps; default utility): {env_cold:.1f} s "
          f"compile, {env_warm:.1f} s cached")
    print(f"   every DW kernel (env, 4 agents, vector env; 3 utilities, 3 processes): "
          f"{all_cold:.1f} s compile, {all_warm:.1f} s cached")


def first_call_seconds(cache_dir: str | None) -> float:
    """Seconds to import schedgym and make the first env step and agent decision of every DW
    kernel (all three utility families) in a fresh process; ``cache_dir`` a fresh numba cache
    (``None``: the usual, warm cache)."""
    env = dict(os.environ)
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = cache_dir
    total = 0.0
    for u in FAMILIES:
        out = subprocess.run([sys.executable, "-c", _COMPILE.format(u=u)], env=env,
                             capture_output=True, text=True, check=True)
        total += float(out.stdout.strip().splitlines()[-1])
    return total


def steps_per_second(make: Callable[[], Any], n: int, seed: int = 0) -> float:
    """Env steps per CPU second (``time.process_time``: the machine is shared, so wall time
    would count other processes) of ``make()`` (an env or a vector env) with random actions,
    counting every sub-env's step; resets at episode ends (vector envs autoreset)."""
    env = make()
    env.reset(seed=seed)
    env.action_space.seed(seed)
    acts = [env.action_space.sample() for _ in range(64)]
    copies = getattr(env, "num_envs", 1)
    vector = hasattr(env, "num_envs")
    steps = max(n // copies, 1)
    t0 = time.process_time()
    for i in range(steps):
        _, _, term, trunc, _ = env.step(acts[i % 64])
        if not vector and (term or trunc):
            env.reset()
    return steps * copies / (time.process_time() - t0)


def throughput(n: int) -> None:
    """Section 1: steps/s against CartPole-v1, measured back to back."""
    def vec(mode: str, **kw: Any) -> Callable[[], Any]:
        return lambda: gym.make_vec(ENV_ID, num_envs=64, vectorization_mode=mode, **kw)

    rows = [("CartPole-v1 single env", lambda: gym.make("CartPole-v1")),
            ("DW single env", lambda: gym.make(ENV_ID)),
            ("DW native vector env, 64 copies", vec("vector_entry_point")),
            ("DW SyncVectorEnv, 64 copies", vec("sync")),
            ("DW single env, no episode end", lambda: gym.make(ENV_ID, n_jobs=n + 1)),
            ("DW native x64, no episode end",
             vec("vector_entry_point", n_jobs=max(n // 64, 1) + 1))]
    # the machine is shared: every row is measured in 3 rounds, each right after its own
    # CartPole reference, and the median of the 3 ratios is printed (with the row's median rate)
    cart = rows[0][1]
    steps_per_second(cart, max(n // 10, 64))
    ref = 0.0
    for name, make in rows:
        steps_per_second(make, max(n // 10, 64))  # warm-up (compiled kernels, caches)
        pairs = [(steps_per_second(cart, 10 * n), steps_per_second(make, 10 * n
                                                                   if make is cart else n))
                 for _ in range(3)]
        sps = float(np.median([p[1] for p in pairs]))
        ratio = float(np.median([p[1] / p[0] for p in pairs]))
        ref = ref or sps
        print(f"   {name:<36}{sps:>12,.0f} env-steps/s{ratio:>9.3f}x CartPole")
    env: Any = gym.make(ENV_ID).unwrapped
    env.reset(seed=0)
    k = max(n // 4, 10)
    t0 = time.process_time()
    for s in range(k):
        env.reset(seed=s)
    reset_us = 1e6 * (time.process_time() - t0) / k
    t0 = time.process_time()
    for s in range(k):
        env.sample_jobs(s)
    sample_us = 1e6 * (time.process_time() - t0) / k
    t0 = time.process_time()
    for s in range(k):
        rngs.streams(s, *JOB_STREAMS)
    streams_us = 1e6 * (time.process_time() - t0) / k
    print(f"   DW reset: {reset_us:,.0f} us per episode (job sampler {sample_us:,.0f} us, of which "
          f"building its {len(JOB_STREAMS)} named streams {streams_us:,.0f} us); "
          f"over 20 jobs {reset_us / 20:,.1f} us per step = {reset_us / 20 * ref / 1e6:.2f} "
          "CartPole steps")


def _profile(label: str, run: Callable[[], object], rows: int = 20) -> None:
    import cProfile
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    run()
    prof.disable()
    print(f"\nprofile of {label}:")
    pstats.Stats(prof).sort_stats("cumulative").print_stats(rows)


def profile_envs(steps: int = 200) -> None:
    """``--profile``: where the native vector env (64 copies) and the single env (one episode
    without end) spend their time, random actions."""
    vec = gym.make_vec(ENV_ID, num_envs=64, vectorization_mode="vector_entry_point")
    vec.reset(seed=0)
    acts = [vec.action_space.sample() for _ in range(16)]
    for i in range(30):
        vec.step(acts[i % 16])
    _profile(f"{steps} steps of the native vector env, 64 copies",
             lambda: [vec.step(acts[i % 16]) for i in range(steps)])
    env = gym.make(ENV_ID, n_jobs=20 * steps + 10)
    env.reset(seed=0)
    single = [env.action_space.sample() for _ in range(64)]
    for i in range(10):
        env.step(single[i])
    _profile(f"{20 * steps} steps of the single env (no episode end)",
             lambda: [env.step(single[i % 64]) for i in range(20 * steps)], rows=14)


def decision_ms(name: str, utility: str, episodes: int) -> float:
    env = gym.make(ENV_ID, utility=utility)
    agent = agents.make(name, env)
    total, count = 0.0, 0
    for s in range(episodes):
        obs, _ = env.reset(seed=s)
        done = False
        while not done:
            t0 = time.perf_counter()
            a, _ = agent.predict(obs)
            total += time.perf_counter() - t0
            count += 1
            obs, _, done, _, _ = env.step(a)
    return 1e3 * total / count


def subproblems(utility: str, scenario: str, episodes: int) -> list:
    env = gym.make(ENV_ID, scenario=scenario, utility=utility)
    agent = agents.make("onsocmax", env)
    out = []
    for s in range(episodes):
        obs, _ = env.reset(seed=s)
        done = False
        while not done:
            job = observed_job(obs)
            if job.units.size:
                out.append(p3_from_job(job, agent.pricing(job.bounds)))
            a, _ = agent.predict(obs)
            obs, _, done, _, _ = env.step(a)
    return out


def _best_time(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    best, out = np.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def compare_solvers(probs: list, repeats: int = 5, cvx_repeats: int = 3) -> dict[str, float]:
    """Per subproblem, the best of ``repeats`` (ours) and ``cvx_repeats`` (cvxpy) wall times,
    so that a preemption by another process does not count as solver time."""
    ours, cvx, diff, kkt, ratios = [], [], [], [], []
    for p in probs:
        t_ours, (x, mu) = _best_time(p.solve, repeats)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t_cvx, xc = _best_time(functools.partial(solve_p3_cvxpy, p), cvx_repeats)
        ours.append(t_ours)
        cvx.append(t_cvx)
        ratios.append(t_cvx / t_ours)
        diff.append(p.objective(x) - p.objective(xc))
        kkt.append(p.kkt_residual(x, mu))
    return {"n": len(probs), "ours_ms": 1e3 * float(np.mean(ours)),
            "cvx_ms": 1e3 * float(np.mean(cvx)), "speedup": float(np.sum(cvx) / np.sum(ours)),
            "median_speedup": float(np.median(ratios)), "min_speedup": float(np.min(ratios)),
            "min_diff": float(np.min(diff)),
            "max_absdiff": float(np.max(np.abs(diff))), "max_kkt": float(np.max(kkt))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=3, help="episodes per family/scenario")
    ap.add_argument("--steps", type=int, default=2000, help="env steps for steps/s")
    ap.add_argument("--profile", action="store_true",
                    help="only print profiles of the native vector env and the single env")
    args = ap.parse_args()
    if args.profile:
        profile_envs()
        return
    import cvxpy

    print(f"machine: {platform.processor() or platform.machine()}, python "
          f"{platform.python_version()}, numpy {np.__version__}, cvxpy {cvxpy.__version__}")
    print(f"load average before: {', '.join(f'{v:.2f}' for v in os.getloadavg())}")
    compile_section()
    print(f"\n1. {ENV_ID} paper-default, random actions (one step = one job):")
    throughput(args.steps)
    print("\n2. decision time per job (predict), ms, paper-default:")
    print(f"   {'agent':<12}" + "".join(f"{u:>10}" for u in FAMILIES))
    for name in AGENTS:
        row = [decision_ms(name, u, args.episodes) for u in FAMILIES]
        print(f"   {name:<12}" + "".join(f"{v:>10.3f}" for v in row))
    solver_section(args.episodes)
    offline_section(args.episodes)


def solver_section(episodes: int) -> None:
    """Section 3: the exact P3 solver against cvxpy on every subproblem OnSocMax met."""
    print("\n3. exact P3 solver vs cvxpy (Clarabel) on the same subproblems:")
    print(f"   {'scenario':<14}{'utility':<8}{'n':>5}{'ours ms':>10}{'cvxpy ms':>10}"
          f"{'speed-up':>10}{'median':>9}{'min':>8}{'min(ours-cvx)':>15}{'max|diff|':>11}"
          f"{'max KKT':>10}")
    for scenario in ("paper-default", "congested"):
        for u in FAMILIES:
            r = compare_solvers(subproblems(u, scenario, episodes))
            print(f"   {scenario:<14}{u:<8}{r['n']:>5}{r['ours_ms']:>10.4f}{r['cvx_ms']:>10.2f}"
                  f"{r['speedup']:>9.0f}x{r['median_speedup']:>8.0f}x{r['min_speedup']:>7.0f}x"
                  f"{r['min_diff']:>15.2e}{r['max_absdiff']:>11.2e}{r['max_kkt']:>10.1e}")


def offline_section(episodes: int) -> None:
    """Section 4: the offline optimum P1 per episode."""
    print("\n4. offline optimum P1 per episode (paper-default), s:")
    for u in FAMILIES:
        env: Any = gym.make(ENV_ID, utility=u).unwrapped
        ts = []
        for s in range(episodes):
            env.reset(seed=s)
            t0 = time.perf_counter()
            solve_p1(env.instance, env.jobs)
            ts.append(time.perf_counter() - t0)
        print(f"   {u:<8} {np.mean(ts):.3f} s (mean of {len(ts)})")
    print(f"\nload average after: {', '.join(f'{v:.2f}' for v in os.getloadavg())}")

if __name__ == "__main__":
    main()
