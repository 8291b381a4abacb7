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

Rates are given in wall-clock and in CPU time of this process (``time.process_time``); the ratio
to CartPole uses CPU time for both, which stays meaningful when other work shares the machine.

Usage: ``python benchmarks/bench_gain_overhead.py [--steps N] [--skip-headline]``
"""

from __future__ import annotations

import argparse
import platform
import time

import gymnasium as gym
import numpy as np

import schedgym  # noqa: F401
from schedgym import agents

ENV_ID = "schedgym/GainOverhead-v0"
AGENTS = ["ogasched", "drf", "fairness", "binpacking", "spreading"]


def steps_per_second(env: gym.Env, actions: list, n: int, per_call: int = 1
                     ) -> tuple[float, float]:
    """(wall-clock, CPU-time) env steps per second; CPU time is robust to other load."""
    env.reset(seed=0)
    k = len(actions)
    t0, c0 = time.perf_counter(), time.process_time()
    if per_call == 1:  # single env: plain bools (np.any would add a few us to every step)
        for i in range(n):
            _, _, term, trunc, _ = env.step(actions[i % k])
            if term or trunc:
                env.reset()
    else:  # vector env: autoreset handles episode ends
        for i in range(n):
            env.step(actions[i % k])
    return (n * per_call / (time.perf_counter() - t0),
            n * per_call / (time.process_time() - c0))


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
    cart_wall, cart_cpu = steps_per_second(cart, [0, 1] * 50, 10 * args.steps)
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
    print(f"\nGainOverhead-v0 paper-default: L={inst.n_types}, R={inst.n_instances}, "
          f"K={inst.n_resources}, |E|={inst.n_edges}, action dim {env.action_space.shape[0]}")
    print(f"{'env (steps/s; batched: env-steps/s)':44s} {'wall':>9s} {'CPU-time':>9s} "
          f"{'x CartPole (CPU)':>17s}")

    def row(label: str, rates: tuple[float, float]) -> None:
        print(f"{label:44s} {rates[0]:9.0f} {rates[1]:9.0f} {rates[1] / cart_cpu:17.3f}")

    row("CartPole-v1", (cart_wall, cart_cpu))
    row("GainOverhead-v0, random actions", steps_per_second(env, rand, args.steps))
    row("GainOverhead-v0, Fairness actions", steps_per_second(env, fair_actions, args.steps))
    for n_vec in (8, 32):
        for mode in ("vector_entry_point", "sync"):
            venv = gym.make_vec(ENV_ID, num_envs=n_vec, vectorization_mode=mode)
            acts = [np.stack([fair_actions[(i + j) % 64] for j in range(n_vec)])
                    for i in range(16)]
            row(f"  x{n_vec} {mode}, Fairness actions",
                steps_per_second(venv, acts, max(args.steps // n_vec, 40), n_vec))

    print(f"\n{'agent':12s} {'ms per decision':>16s}")
    for name in AGENTS:
        print(f"{name:12s} {1e3 * decision_time(name, min(args.steps, 2000)):16.3f}")

    if not args.skip_headline:
        from schedgym.train.compare import run_compare

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
