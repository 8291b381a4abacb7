"""Performance figures of DeadlineWelfare-v0, OnSocMax and the offline optimum.

Prints, measured in one run on this machine:
1. env steps/s (one step = one job) with random actions, at the paper-default size;
2. every agent's mean decision time per job (``predict``: parse + solve + encode);
3. OnSocMax's exact P3 solver (``P3.solve``) next to cvxpy/Clarabel (``solve_p3_cvxpy``: build +
   solve, as an agent would per job) on the same subproblems - every job OnSocMax decided in
   ``--episodes`` episodes of the ``paper-default`` and ``congested`` scenarios, per utility
   family: mean time per subproblem (best of 5 runs for ours, of 3 for cvxpy, so a preemption
   by another process is not counted), speed-up of the totals and median per-subproblem
   speed-up, largest objective difference (ours - cvxpy; >= 0 means ours is at least as good)
   and largest KKT residual. Subproblems are timed interleaved (ours, then cvxpy);
4. wall time of the offline optimum (P1) per episode.

Usage: ``python benchmarks/bench_deadline_welfare.py [--episodes N] [--steps N]``
"""

from __future__ import annotations

import argparse
import platform
import time
import warnings

import gymnasium as gym
import numpy as np

import schedgym  # noqa: F401
from schedgym import agents
from schedgym.agents.onsocmax import p3_from_job, solve_p3_cvxpy
from schedgym.envs.deadline_welfare.dynamics import observed_job
from schedgym.envs.deadline_welfare.offline import solve_p1

ENV_ID = "schedgym/DeadlineWelfare-v0"
AGENTS = ["onsocmax", "max-first", "equal-share", "jsq"]
FAMILIES = ["linear", "log", "sqrt"]


def steps_per_second(n: int) -> float:
    env = gym.make(ENV_ID)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    acts = [rng.uniform(-1, 1, env.action_space.shape).astype(np.float32) for _ in range(64)]
    t0 = time.perf_counter()
    for i in range(n):
        _, _, term, trunc, _ = env.step(acts[i % 64])
        if term or trunc:
            env.reset()
    return n / (time.perf_counter() - t0)


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


def _best_time(fn, repeats: int):
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
            t_cvx, xc = _best_time(lambda p=p: solve_p3_cvxpy(p), cvx_repeats)
        ours.append(t_ours)
        cvx.append(t_cvx)
        ratios.append(t_cvx / t_ours)
        diff.append(p.objective(x) - p.objective(xc))
        kkt.append(p.kkt_residual(x, mu))
    return {"n": len(probs), "ours_ms": 1e3 * float(np.mean(ours)),
            "cvx_ms": 1e3 * float(np.mean(cvx)), "speedup": float(np.sum(cvx) / np.sum(ours)),
            "median_speedup": float(np.median(ratios)), "min_diff": float(np.min(diff)),
            "max_absdiff": float(np.max(np.abs(diff))), "max_kkt": float(np.max(kkt))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=3, help="episodes per family/scenario")
    ap.add_argument("--steps", type=int, default=2000, help="env steps for steps/s")
    args = ap.parse_args()
    import cvxpy

    print(f"machine: {platform.processor() or platform.machine()}, python "
          f"{platform.python_version()}, numpy {np.__version__}, cvxpy {cvxpy.__version__}")
    print(f"\n1. {ENV_ID} paper-default, random actions: {steps_per_second(args.steps):,.0f} "
          "steps/s (jobs/s)")
    print("\n2. decision time per job (predict), ms, paper-default:")
    print(f"   {'agent':<12}" + "".join(f"{u:>10}" for u in FAMILIES))
    for name in AGENTS:
        row = [decision_ms(name, u, args.episodes) for u in FAMILIES]
        print(f"   {name:<12}" + "".join(f"{v:>10.3f}" for v in row))
    print("\n3. exact P3 solver vs cvxpy (Clarabel) on the same subproblems:")
    print(f"   {'scenario':<14}{'utility':<8}{'n':>5}{'ours ms':>10}{'cvxpy ms':>10}"
          f"{'speed-up':>10}{'median':>9}{'min(ours-cvx)':>15}{'max|diff|':>11}{'max KKT':>10}")
    for scenario in ("paper-default", "congested"):
        for u in FAMILIES:
            r = compare_solvers(subproblems(u, scenario, args.episodes))
            print(f"   {scenario:<14}{u:<8}{r['n']:>5}{r['ours_ms']:>10.3f}{r['cvx_ms']:>10.2f}"
                  f"{r['speedup']:>9.0f}x{r['median_speedup']:>8.0f}x{r['min_diff']:>15.2e}"
                  f"{r['max_absdiff']:>11.2e}{r['max_kkt']:>10.1e}")
    print("\n4. offline optimum P1 per episode (paper-default), s:")
    for u in FAMILIES:
        env = gym.make(ENV_ID, utility=u).unwrapped
        ts = []
        for s in range(args.episodes):
            env.reset(seed=s)
            t0 = time.perf_counter()
            solve_p1(env.instance, env.jobs)
            ts.append(time.perf_counter() - t0)
        print(f"   {u:<8} {np.mean(ts):.3f} s (mean of {len(ts)})")


if __name__ == "__main__":
    main()
