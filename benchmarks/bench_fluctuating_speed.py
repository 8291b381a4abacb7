"""Performance figures of FluctuatingSpeed-v0 and its agents, as ratios measured in this run.

Usage::

    schedgym bench fluctuating_speed                                   # the figures below
    .venv/bin/python benchmarks/bench_fluctuating_speed.py --sizes     # + ESDP at Fig. 5 sizes

Prints (paper-default, instance seed 0, episode seed 0):

- first-call time of the compiled kernels: cold (empty numba cache, so compiling) and warm
  (the cache the cold run filled), each in a fresh process;
- env steps/s with random ``MultiBinary`` actions, single env (``gym.make``) and the native batch
  of 64 (``gym.make_vec(..., vectorization_mode="vector_entry_point")``, per env-step), each as a
  ratio to CartPole-v1's single-env steps/s measured in the same rounds (median of 3 rounds);
- per-slot decision time of every agent over one T = 2000 episode (mean, median, p95, max) and
  ESDP's DP size.
Floors: single env >= 0.3x CartPole, batch of 64 >= 0.5x per env-step, ESDP <= 1 ms per slot.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time

import gymnasium as gym
import numpy as np

import schedgym  # noqa: F401
from schedgym import agents
from schedgym.envs.fluctuating_speed import ENV_ID

ROUNDS = 3
FIRST_CALL = """
import time
t0 = time.perf_counter()
import gymnasium as gym, numpy as np, schedgym
from schedgym import agents
t1 = time.perf_counter()
env = gym.make("schedgym/FluctuatingSpeed-v0")
ag = agents.make("esdp", env)
h = agents.make("hauf", env)
obs, _ = env.reset(seed=0)
t2 = time.perf_counter()
a, _ = ag.predict(obs)
h.predict(obs)
env.step(a)
v = gym.make_vec("schedgym/FluctuatingSpeed-v0", num_envs=2,
                 vectorization_mode="vector_entry_point")
v.reset(seed=0)
v.step(np.ones((2, env.action_space.n), dtype=np.int8))
print(f"{t1 - t0:.3f} {time.perf_counter() - t2:.3f}")
"""


def first_call_seconds(cache_dir: str | None) -> tuple[float, float]:
    """``(import s, first ESDP + HAUF decision + env step + vector step s)`` in a fresh process
    with numba's cache in ``cache_dir`` (an empty folder: everything compiles; ``None``: the
    usual cache beside the sources)."""
    env = dict(os.environ)
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = cache_dir
    out = subprocess.run([sys.executable, "-c", FIRST_CALL], env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    return float(out[0]), float(out[1])


def _steps_per_s(env: gym.Env, actions: np.ndarray) -> float:
    env.reset(seed=0)
    t0 = time.perf_counter()
    for a in actions:
        _, _, term, trunc, _ = env.step(a)
        if term or trunc:
            env.reset()
    return len(actions) / (time.perf_counter() - t0)


def _batch_env_steps_per_s(venv: gym.vector.VectorEnv, actions: np.ndarray) -> float:
    venv.reset(seed=0)
    t0 = time.perf_counter()
    for a in actions:
        venv.step(a)
    return actions.shape[0] * actions.shape[1] / (time.perf_counter() - t0)


def throughput(n_steps: int, n_batch: int, batch: int = 64) -> dict[str, list[float]]:
    """Steps/s of CartPole, the FS single env (with and without the per-step oracle), the native
    batch and ``SyncVectorEnv`` (per env-step), ``ROUNDS`` interleaved rounds."""
    rng = np.random.default_rng(0)
    cart = gym.make("CartPole-v1")
    single = gym.make(ENV_ID)
    plain = gym.make(ENV_ID, compute_oracle=False)
    native = gym.make_vec(ENV_ID, num_envs=batch, vectorization_mode="vector_entry_point")
    sync = gym.make_vec(ENV_ID, num_envs=batch, vectorization_mode="sync")
    E = int(np.prod(single.action_space.shape or (0,)))
    cart_acts = rng.integers(0, 2, size=4 * n_steps)
    acts = rng.integers(0, 2, size=(n_steps, E)).astype(np.int8)
    batch_acts = rng.integers(0, 2, size=(n_batch, batch, E)).astype(np.int8)
    _steps_per_s(single, acts[:50])  # first calls (cache loading) outside the timing
    _batch_env_steps_per_s(native, batch_acts[:5])
    res: dict[str, list[float]] = {k: [] for k in ("cartpole", "single", "single_no_oracle",
                                                   "native", "native_resets", "sync")}
    horizon = single.unwrapped.horizon  # type: ignore[attr-defined]
    for r in range(ROUNDS):
        res["cartpole"].append(_steps_per_s(cart, cart_acts))
        res["single"].append(_steps_per_s(single, acts))
        res["single_no_oracle"].append(_steps_per_s(plain, acts))
        rate = _batch_env_steps_per_s(native, batch_acts)
        res["native"].append(rate)
        t0 = time.perf_counter()
        native.reset(seed=100 + r)  # every copy's episode starts once per T steps
        reset_per_env_step = (time.perf_counter() - t0) / (batch * horizon)
        res["native_resets"].append(1.0 / (1.0 / rate + reset_per_env_step))
        res["sync"].append(_batch_env_steps_per_s(sync, batch_acts[: max(n_batch // 10, 2)]))
    return res


def decision_times(name: str, horizon: int, seed: int = 0, **env_kw) -> dict:
    """Per-slot ``predict`` times (ms) of ``name`` over one episode, plus ESDP's DP size."""
    env = gym.make(ENV_ID, horizon=horizon, invalid_action="raise", **env_kw)
    ag = agents.make(name, env)
    obs, _ = env.reset(seed=seed)
    ag.predict(obs, episode_start=np.array([True]))  # first call (cache loading) not timed
    obs, _ = env.reset(seed=seed)
    times, cpu, levels, paper_levels, states = [], [], [], [], []
    start, trunc = True, False
    while not trunc:
        t0, c0 = time.perf_counter(), time.process_time()
        a, _ = ag.predict(obs, episode_start=np.array([start]))
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        start = False
        if name.startswith("esdp"):
            levels.append(ag.last["budget_levels"])
            paper_levels.append(ag.last["eta"] * ag.m + 1)
            states.append(ag.last["dp_states"])
        obs, _, _, trunc, _ = env.step(a)
    ms = 1e3 * np.asarray(times)
    out = {"agent": name, "mean": ms.mean(), "median": np.median(ms),
           "p95": np.percentile(ms, 95), "max": ms.max(), "cpu": 1e3 * float(np.mean(cpu))}
    if levels:
        inst = env.unwrapped.instance  # type: ignore[attr-defined]
        out.update(E=inst.n_edges, caps=inst.capacities.tolist(),
                   cap_states=int(np.prod(inst.capacities + 1)),
                   levels_mean=float(np.mean(levels)), levels_max=int(np.max(levels)),
                   paper_levels_max=int(np.max(paper_levels)), states_max=int(np.max(states)))
    return out


def _verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def print_throughput(res: dict[str, list[float]], batch: int) -> None:
    cart = np.asarray(res["cartpole"])
    med = {k: float(np.median(np.asarray(v) / cart)) for k, v in res.items()}
    print(f"CartPole-v1 single env: {np.median(cart):,.0f} steps/s (median of {ROUNDS} rounds; "
          "each ratio below is against the CartPole figure of its own round)")
    print(f"FluctuatingSpeed-v0 single env: {np.median(res['single']):,.0f} steps/s = "
          f"{med['single']:.3f}x CartPole (floor >= 0.3: {_verdict(med['single'] >= 0.3)}); "
          f"compute_oracle=False: {np.median(res['single_no_oracle']):,.0f} steps/s = "
          f"{med['single_no_oracle']:.3f}x")
    print(f"native batch of {batch}: {np.median(res['native']):,.0f} env-steps/s = "
          f"{med['native']:.2f}x CartPole single env (floor >= 0.5: "
          f"{_verdict(med['native'] >= 0.5)}); with its resets amortised over the episode: "
          f"{np.median(res['native_resets']):,.0f} = {med['native_resets']:.2f}x; "
          f"SyncVectorEnv of {batch}: "
          f"{np.median(res['sync']):,.0f} env-steps/s = {med['sync']:.3f}x")


def print_decisions(names: list[str], horizon: int) -> None:
    print(f"decision time per slot, one episode T={horizon} (ms; wall clock, and the mean CPU "
          "time of the process, which a loaded machine's time slicing does not inflate):")
    print(f"{'agent':8s} {'mean':>8s} {'median':>8s} {'p95':>8s} {'max':>8s} {'mean CPU':>9s}")
    esdp = None
    for name in names:
        r = decision_times(name, horizon)
        print(f"{name:8s} {r['mean']:8.3f} {r['median']:8.3f} {r['p95']:8.3f} {r['max']:8.3f} "
              f"{r['cpu']:9.3f}")
        esdp = r if name == "esdp" else esdp
    if esdp:
        print(f"ESDP mean {esdp['mean']:.3f} ms/slot wall, {esdp['cpu']:.3f} ms CPU (target <= 1 "
              f"ms: wall {_verdict(esdp['mean'] <= 1.0)}, CPU {_verdict(esdp['cpu'] <= 1.0)}). "
              f"DP size: |E|={esdp['E']}, c={esdp['caps']} -> "
              f"{esdp['cap_states']} capacity states; budget levels solved mean "
              f"{esdp['levels_mean']:.0f}, max {esdp['levels_max']} (paper's eta*m+1 up to "
              f"{esdp['paper_levels_max']}); max {esdp['states_max']} states per edge")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--horizon", type=int, default=2000)
    p.add_argument("--steps", type=int, default=4000, help="single-env steps per round")
    p.add_argument("--batch-steps", type=int, default=200, help="batch steps per round")
    p.add_argument("--agents", default="esdp,esdp-aa,hauf,lcf,lwtf,oracle")
    p.add_argument("--no-first-call", action="store_true", help="skip the compile-time probe")
    p.add_argument("--sizes", action="store_true", help="ESDP at Fig. 5 graph sizes")
    args = p.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.1f}; python {platform.python_version()}, numpy {np.__version__}")
    if not args.no_first_call:
        with tempfile.TemporaryDirectory() as tmp:  # cold, then warm over the cache it filled
            runs = [first_call_seconds(tmp) for _ in range(2)]
        for cold, (imp, first) in zip((True, False), runs, strict=True):
            kind = "cold (empty numba cache: compiles)" if cold else "warm (cached kernels)"
            print(f"first calls in a fresh process, {kind}: import {imp:.2f} s, first ESDP + "
                  f"HAUF decision + env step + vector step {first:.2f} s")
    print_throughput(throughput(args.steps, args.batch_steps), 64)
    print_decisions(args.agents.split(","), args.horizon)
    if args.sizes:
        for L, R in ((4, 20), (8, 40), (12, 60), (16, 80)):
            r = decision_times("esdp", args.horizon, n_types=L, n_instances=R)
            print(f"ESDP |L|={L:2d} |R|={R:2d}: |E|={r['E']:3d} c={r['caps']} mean "
                  f"{r['mean']:.3f} ms/slot (CPU {r['cpu']:.3f}), median {r['median']:.3f}, "
                  f"max budget levels "
                  f"{r['levels_max']}")
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
