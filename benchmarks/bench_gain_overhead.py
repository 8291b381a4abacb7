"""Performance figures of GainOverhead-v0 and its agents.

Prints, measured in one run on this machine:
1. steps/s of ``schedgym/GainOverhead-v0`` (paper-default size) next to
   ``CartPole-v1`` (both through ``gym.make``, so with the same default wrappers), for random
   actions (every (instance, resource) group needs projecting) and for Fairness's feasible
   actions (the common case for a trained or classical agent); plus 8 copies batched by the
   native ``vector_entry_point`` and by ``SyncVectorEnv`` (env steps/s summed over copies);
2. every agent's mean decision time per slot (``predict``), OgaSched's included;
3. wall time of a full T=8000 ``paper-headline`` run of all five agents (one seed, in parallel
   worker processes as ``schedgym compare`` runs them).

Usage: ``python benchmarks/bench_gain_overhead.py [--steps N] [--skip-headline]``
"""

from __future__ import annotations

import argparse
import platform
import time

import gymnasium as gym
import numpy as np

import agents
import schedgym  # noqa: F401

ENV_ID = "schedgym/GainOverhead-v0"
AGENTS = ["ogasched", "drf", "fairness", "binpacking", "spreading"]


def steps_per_second(env: gym.Env, actions: list, n: int) -> float:
    env.reset(seed=0)
    t0 = time.perf_counter()
    for i in range(n):
        _, _, term, trunc, _ = env.step(actions[i % len(actions)])
        if term or trunc:
            env.reset()
    return n / (time.perf_counter() - t0)


def decision_time(name: str, n: int) -> float:
    env = gym.make(ENV_ID)
    agent = agents.make(name, env)
    obs, _ = env.reset(seed=0)
    total, start = 0.0, True
    for _ in range(n):
        t0 = time.perf_counter()
        a, _ = agent.predict(obs, episode_start=np.array([start]))
        total += time.perf_counter() - t0
        start = False
        obs, *_ = env.step(a)
    return total / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=3000, help="steps per env-throughput figure")
    ap.add_argument("--skip-headline", action="store_true", help="skip the T=8000 run")
    args = ap.parse_args()
    print(f"python {platform.python_version()}, numpy {np.__version__}, "
          f"gymnasium {gym.__version__}, {platform.processor() or platform.machine()}")

    cart = gym.make("CartPole-v1")
    cart_rate = steps_per_second(cart, [0, 1] * 50, 10 * args.steps)
    env = gym.make(ENV_ID)
    inst = env.unwrapped.instance
    rng = np.random.default_rng(0)
    rand = [rng.uniform(-1, 1, env.action_space.shape).astype(np.float32) for _ in range(64)]
    fair = agents.make("fairness", env)
    fair_actions = []
    obs, _ = env.reset(seed=0)
    for _ in range(64):
        a, _ = fair.predict(obs)
        fair_actions.append(a)
        obs, *_ = env.step(a)
    go_rand = steps_per_second(env, rand, args.steps)
    go_fair = steps_per_second(env, fair_actions, args.steps)
    print(f"\nGainOverhead-v0 paper-default: L={inst.n_types}, R={inst.n_instances}, "
          f"K={inst.n_resources}, |E|={inst.n_edges}, action dim {env.action_space.shape[0]}")
    print(f"{'env':40s} {'steps/s':>10s} {'x CartPole':>11s}")
    print(f"{'CartPole-v1':40s} {cart_rate:10.0f} {1.0:11.3f}")
    print(f"{'GainOverhead-v0 (random actions)':40s} {go_rand:10.0f} {go_rand / cart_rate:11.3f}")
    print(f"{'GainOverhead-v0 (Fairness actions)':40s} {go_fair:10.0f} "
          f"{go_fair / cart_rate:11.3f}")

    n_vec = 8
    for mode in ("vector_entry_point", "sync"):
        venv = gym.make_vec(ENV_ID, num_envs=n_vec, vectorization_mode=mode)
        venv.reset(seed=0)
        acts = [np.stack([fair_actions[(i + j) % 64] for j in range(n_vec)]) for i in range(16)]
        t0 = time.perf_counter()
        reps = max(args.steps // n_vec, 50)
        for i in range(reps):
            venv.step(acts[i % 16])
        rate = reps * n_vec / (time.perf_counter() - t0)
        label = f"GainOverhead-v0 x{n_vec} {mode} (Fairness)"
        print(f"{label:40s} {rate:10.0f} {rate / cart_rate:11.3f}")

    print(f"\n{'agent':12s} {'ms per decision':>16s}")
    for name in AGENTS:
        print(f"{name:12s} {1e3 * decision_time(name, min(args.steps, 2000)):16.3f}")

    if not args.skip_headline:
        from train.compare import run_compare

        t0 = time.perf_counter()
        results, _ = run_compare(ENV_ID, AGENTS, [0], scenario="paper-headline", workers=2,
                                 benchmarks=False, show_progress=False)
        wall = time.perf_counter() - t0
        print(f"\npaper-headline (T=8000), all five agents, one seed, 2 worker processes: "
              f"{wall:.1f} s wall (paper: ~1 h for OgaSched alone)")
        for r in results:
            print(f"  {r.agent:12s} episode {r.wall_time:6.1f} s, avg reward "
                  f"{r.metrics['avg_reward']:.1f}")


if __name__ == "__main__":
    main()
