"""Performance figures of GainOverhead-v0 and its agents, each a ratio measured in this run.

Prints, on this machine and in one process (``schedgym bench gain_overhead`` runs it):

1. first-call compile time of the numba kernels (a fresh process with an empty
   ``NUMBA_CACHE_DIR`` against a second one that loads the cache);
2. steps/s of ``schedgym/GainOverhead-v0`` (paper-default) next to ``CartPole-v1`` (both through
   ``gym.make``), random actions (every (instance, resource) group needs the full projection) and
   Fairness's feasible actions; the native batch of 64 (``gym.make_vec(...,
   vectorization_mode="vector_entry_point")``) and ``SyncVectorEnv`` per env-step; then the
   CPU time of a step split into the compiled kernel (projection + reward, timed alone on the
   same actions and arrivals) and the rest (Python: checks, decode, observation, info);
3. every agent's decision time, OgaSched's split into its compiled update
   (``dynamics.ascent_step``) and the rest, and OgaSched decision + env step per slot against
   the authors' OGASched per slot at 10 x 128 x 6 (``--authors PATH``: a checkout of
   github.com/anonymity-for-review/OGASched, run from a patched copy in a temporary folder);
4. wall time of a T=8000 ``paper-headline`` run of the five agents in this process;
5. with ``--large-scale``: the same for ``large-scale`` (100 x 1024 x 6, T=10,000).

Rates are in wall-clock and in CPU time of this process (``time.process_time``); ratios use CPU
time on both sides, which stays meaningful when other work shares the machine. Every env rate
(CartPole's too) is the fastest of 5 consecutive chunks of its run: on the shared host a mean
over the whole run moved a ratio by up to 2x between runs. Each figure's ratio is taken against
CartPole chunks run alternately with its own chunks (fastest of each), so that a change of the
host's speed between figures moves both sides.

Usage: ``python benchmarks/bench_gain_overhead.py [--steps N] [--authors PATH]
[--skip-headline] [--large-scale]``
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

import schedgym  # noqa: F401
from schedgym import agents
from schedgym.envs.gain_overhead import ENV_ID, GainOverheadInstance

AGENTS = ["ogasched", "drf", "fairness", "binpacking", "spreading"]
#: What the compile-time probe runs: every kernel of the env, the vector env and the agents.
_PROBE = """
import time; t0, c0 = time.perf_counter(), time.process_time()
import numpy as np, gymnasium as gym, schedgym
from schedgym import agents
env = gym.make("schedgym/GainOverhead-v0", horizon=3, utility="mixed")
for name in ("ogasched", "drf", "fairness", "binpacking", "spreading"):
    ag = agents.make(name, env); obs, _ = env.reset(seed=0)
    for _ in range(2):
        obs, *_ = env.step(ag.predict(obs)[0])
v = gym.make_vec("schedgym/GainOverhead-v0", num_envs=2, vectorization_mode="vector_entry_point",
                 horizon=3)
v.reset(seed=0); v.step(np.zeros(v.action_space.shape))
print(time.perf_counter() - t0, time.process_time() - c0)
"""


def compile_time() -> list[tuple[float, float]]:
    """``[(wall, CPU) seconds with an empty numba cache, the same with it warm]``, each run in a
    fresh process."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        runs = []
        for _ in range(2):
            out = subprocess.run([sys.executable, "-c", _PROBE], env=env, check=True,
                                 capture_output=True, text=True).stdout.split()
            runs.append((float(out[-2]), float(out[-1])))
    return runs


#: Consecutive chunks of every rate; the fastest counts (see :func:`rate`).
CHUNKS = 5


def rate(step: Callable[[int], Any], n: int, per_call: int = 1, chunks: int = CHUNKS,
         ref: tuple[Callable[[int], Any], int] | None = None) -> tuple[float, float, float]:
    """(wall-clock, CPU-time) items per second of ``step(i)`` over ``i < n``, each the fastest
    of ``chunks`` consecutive chunks of ``n / chunks`` calls: the min of trials, which
    estimates the undisturbed speed on a shared host (a mean over the whole run moved a ratio
    by up to 2x between runs); CartPole and every schedgym figure are measured the same way.

    With ``ref = (ref_step, ref_n)`` a chunk of the reference (``ref_n / chunks`` calls of
    ``ref_step``, CartPole's step) runs before each chunk, and the third value is the
    reference's CPU-time rate over those chunks (NaN without ``ref``): a ratio of the two is
    taken over the same stretch of time, so a change of the host's speed between figures (it
    moved CartPole alone 46k-87k steps/s between runs) moves both sides."""
    size = max(n // chunks, 1)
    wall = cpu = ref_cpu = math.inf
    ref_size = max(ref[1] // chunks, 1) if ref is not None else 1
    for chunk in range(chunks):
        if ref is not None:
            c0 = time.process_time()
            for i in range(chunk * ref_size, (chunk + 1) * ref_size):
                ref[0](i)
            ref_cpu = min(ref_cpu, time.process_time() - c0)
        t0, c0 = time.perf_counter(), time.process_time()
        for i in range(chunk * size, (chunk + 1) * size):
            step(i)
        wall = min(wall, time.perf_counter() - t0)
        cpu = min(cpu, time.process_time() - c0)
    return (size * per_call / wall, size * per_call / max(cpu, 1e-9),
            ref_size / max(ref_cpu, 1e-9) if ref is not None else math.nan)


def stepper(env: gym.Env, actions: list) -> Callable[[int], None]:
    """``step(i)``: one step of ``env`` with ``actions[i % len(actions)]``, resetting at an
    episode's end; one untimed step first, so that a kernel compiled or loaded on first use is
    not counted (compile time is reported apart)."""
    env.reset(seed=0)
    env.step(actions[0])
    env.reset(seed=0)

    def step(i: int) -> None:
        _, _, term, trunc, _ = env.step(actions[i % len(actions)])
        if term or trunc:
            env.reset()

    return step


def env_rate(env: gym.Env, actions: list, n: int, chunks: int = CHUNKS,
             ref: tuple[Callable[[int], Any], int] | None = None) -> tuple[float, float, float]:
    """Steps/s of ``env`` over the pre-generated ``actions`` (:func:`stepper`, :func:`rate`)."""
    return rate(stepper(env, actions), n, chunks=chunks, ref=ref)


def vec_rate(venv: gym.vector.VectorEnv, actions: list, n: int, chunks: int = CHUNKS,
             ref: tuple[Callable[[int], Any], int] | None = None) -> tuple[float, float, float]:
    """Env-steps/s of the batched ``venv`` (one untimed step first, as :func:`stepper`)."""
    venv.reset(seed=0)
    venv.step(actions[0])
    venv.reset(seed=0)
    return rate(lambda i: venv.step(actions[i % len(actions)]), n, venv.num_envs, chunks, ref)


def fairness_actions(env: gym.Env, n: int) -> list[np.ndarray]:
    fair = agents.make("fairness", env)
    obs, _ = env.reset(seed=0)
    out = []
    for _ in range(n):
        a, _ = fair.predict(obs)
        out.append(a)
        obs, *_ = env.step(a)
    return out


def agent_rate(name: str, n: int, **env_kw: Any) -> tuple[float, float]:
    """(decision ms, decision + env step ms) per slot, CPU time."""
    env = gym.make(ENV_ID, **env_kw)
    agent = agents.make(name, env)
    obs, _ = env.reset(seed=0)
    agent.predict(obs, episode_start=np.array([True]))  # warm the kernels
    decide = 0.0
    c0 = time.process_time()
    for i in range(n):
        d0 = time.process_time()
        a, _ = agent.predict(obs, episode_start=np.array([i == 0]))
        decide += time.process_time() - d0
        obs, _, _, trunc, _ = env.step(a)
        if trunc:
            obs, _ = env.reset()
    return 1e3 * decide / n, 1e3 * (time.process_time() - c0) / n


def authors_per_slot(path: str, slots: int) -> float:
    """CPU seconds per slot of the authors' ``OGASched.run()`` at L=10, R=128, K=6 (their
    defaults otherwise), from a copy whose global ``Parameter()`` is patched to that size."""
    tmp = tempfile.mkdtemp()
    try:
        shutil.copytree(os.path.join(path, "ogasched"), os.path.join(tmp, "ogasched"))
        par = os.path.join(tmp, "ogasched", "parameter.py")
        src = open(par).read()
        src, n = re.subn(r"^param = Parameter\(\)$", f"param = Parameter(time_slot_num={slots}, "
                         "job_type_num=10, node_num=128)", src, flags=re.M)
        if n != 1:
            raise RuntimeError(f"{par}: the 'param = Parameter()' line was not found")
        open(par, "w").write(src)
        code = ("import logging, time, random, numpy as np\n"
                "from ogasched.env import Env\nfrom ogasched.oga.oga import OGASched\n"
                "from ogasched.parameter import K, R, T\n"
                "logging.getLogger().setLevel(logging.WARNING)\n"
                "np.random.seed(0); random.seed(0)\n"
                "o = OGASched(Env(simplified=True, right_d_regular=True, "
                "utilities=[['linear'] * K] * R))\n"
                "c0 = time.process_time(); o.run(); print((time.process_time() - c0) / T)\n")
        out = subprocess.run([sys.executable, "-W", "ignore", "-c", code], cwd=tmp, check=True,
                             capture_output=True, text=True)
        return float(out.stdout.split()[-1])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def scenario_run(scenario: str) -> None:
    """Five agents, one seed, one process (``schedgym compare`` without workers)."""
    from schedgym.train.compare import run_compare

    t0, c0 = time.perf_counter(), time.process_time()
    results, _ = run_compare(ENV_ID, AGENTS, [0], scenario=scenario, workers=1,
                             benchmarks=False, show_progress=False)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"\n{scenario}, five agents, one seed, one process: {wall:.1f} s wall, {cpu:.1f} s "
          f"CPU (load average {os.getloadavg()[0]:.1f})")
    for r in results:
        print(f"  {r.agent:12s} episode {r.wall_time:7.1f} s, {r.steps} slots, avg reward "
              f"{r.metrics['avg_reward']:.1f}")


class _CallTimer:
    """Times every call of the named functions of ``module`` (CPU time) while active: the
    functions are replaced by timed wrappers and put back afterwards. The wrapper's own cost
    (two ``process_time`` calls, ~1 us each of CPU) is measured on a no-op at construction:
    ``overhead`` is that cost per call as seen from outside, ``inside`` the part of it that falls
    between the two clock reads (taken off the timed figure)."""

    def __init__(self, module: Any, names: tuple[str, ...]) -> None:
        self.module, self.names = module, names
        self.spent, self.calls = 0.0, 0
        noop, n_cal = self._timed(lambda: None), 20000
        c0 = time.process_time()
        for _ in range(n_cal):
            noop()
        self.overhead, self.inside = (time.process_time() - c0) / n_cal, self.spent / n_cal
        self.spent, self.calls = 0.0, 0

    def _timed(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            c0 = time.process_time()
            out = fn(*args, **kwargs)
            self.spent += time.process_time() - c0
            self.calls += 1
            return out
        return call

    def __enter__(self) -> _CallTimer:
        self.originals = {name: getattr(self.module, name) for name in self.names}
        for name, fn in self.originals.items():
            setattr(self.module, name, self._timed(fn))
        return self

    def __exit__(self, *exc: Any) -> None:
        for name, fn in self.originals.items():
            setattr(self.module, name, fn)

    @property
    def per_call(self) -> float:
        """CPU seconds per timed call, the timer's own cost taken off."""
        return self.spent / max(self.calls, 1) - self.inside


def kernel_split(run: Callable[[], tuple[float, float, float]], per_call: int = 1
                 ) -> tuple[float, float]:
    """``(step, kernel)`` CPU us per env-step of ``run()`` (a :func:`env_rate` or
    :func:`vec_rate` call) with ``dynamics._run`` (the compiled step both envs call through
    ``step_one``/``step_batch`` once their arguments are checked: decode, projection, reward,
    utilization) timed in place: the same calls on the same actions
    and arrivals, so ``step - kernel`` is the Python around them (checks, observation, info,
    wrappers). The timer's own cost is taken off both figures. Both are means
    over the whole run (``run`` measures one chunk), so they compare; the kernel's mean includes
    ``run``'s one untimed warm-up step."""
    from schedgym.envs.gain_overhead import dynamics

    with _CallTimer(dynamics, ("_run",)) as timer:
        step_rate = run()[1]
    return (1e6 / step_rate - 1e6 * timer.overhead / per_call,
            1e6 * timer.per_call / per_call)


def ogasched_split(n: int) -> tuple[float, float]:
    """``(decision, ascent)`` CPU us of OgaSched's decision with :func:`dynamics.ascent_step`
    (its compiled update: supergradient + exact projection) timed in place, so ``decision -
    ascent`` is the Python around it (observation check, encode, state); timer cost taken off."""
    from schedgym.envs.gain_overhead import dynamics

    with _CallTimer(dynamics, ("ascent_step",)) as timer:
        decision = agent_rate("ogasched", n)[0]
    return 1e3 * decision - 1e6 * timer.overhead, 1e6 * timer.per_call


def malloc_steady_state() -> None:
    """Put glibc's malloc where a long-running process (any training run) is, so that the
    figures do not depend on which arrays this process happened to free first. glibc serves a
    block above its mmap threshold (128 KiB at start) with fresh pages from the kernel, a page
    fault per 4 KiB on first write, and raises the threshold to the size of the largest such
    block freed so far. A native batch of 64 copies returns an allocation of about 1 MB per
    step: served by fresh pages, the step costs about 3x (measured: 0.21x CartPole per
    env-step with ``MALLOC_MMAP_THRESHOLD_=65536``, against 0.62x). Freeing one 16 MiB block
    lifts the threshold above every array here (no effect on another allocator)."""
    block = np.empty(16 << 20, dtype=np.uint8)
    del block


def throughput(steps: int) -> None:
    malloc_steady_state()
    cart = stepper(gym.make("CartPole-v1"), [0, 1] * 50)
    ref = (cart, 2 * steps)  # a CartPole chunk before each chunk of every figure (rate's ref)
    cart_rates = rate(cart, 10 * steps)
    env = gym.make(ENV_ID)
    inst: GainOverheadInstance = env.unwrapped.instance  # type: ignore[attr-defined]
    rng = np.random.default_rng(0)
    rand = [rng.uniform(-1, 1, env.action_space.shape).astype(np.float32) for _ in range(64)]
    fair = fairness_actions(env, 64)
    print(f"\nGainOverhead-v0 paper-default: L={inst.n_types}, R={inst.n_instances}, "
          f"K={inst.n_resources}, |E|={inst.n_edges}, action dim {inst.n_edges * inst.n_resources}")
    print(f"{'env (steps/s; batched: env-steps/s)':46s} {'wall':>9s} {'CPU-time':>9s} "
          f"{'x CartPole (CPU)':>17s}")

    def row(label: str, rates: tuple[float, float, float]) -> float:
        ratio = rates[1] / (cart_rates[1] if math.isnan(rates[2]) else rates[2])
        print(f"{label:46s} {rates[0]:9.0f} {rates[1]:9.0f} {ratio:17.3f}")
        return 1e6 / rates[1]

    row("CartPole-v1", cart_rates)
    split: dict[str, tuple[float, float]] = {}
    for label, pool in (("random", rand), ("Fairness", fair)):
        row(f"GainOverhead-v0, {label} actions", env_rate(env, pool, steps, ref=ref))
        split[f"single env, {label} actions"] = kernel_split(
            lambda pool=pool: env_rate(env, pool, steps, 1))  # type: ignore[misc]
    for n_vec, modes in ((64, ("vector_entry_point", "sync")),):
        for mode in modes:
            venv = gym.make_vec(ENV_ID, num_envs=n_vec, vectorization_mode=mode)
            for label, pool in (("random", rand), ("Fairness", fair)):
                acts = [np.stack([pool[(i + j) % 64] for j in range(n_vec)]) for i in range(8)]
                n = max(steps // n_vec, 20)
                row(f"  x{n_vec} {mode}, {label} actions", vec_rate(venv, acts, n, ref=ref))
                if mode == "vector_entry_point":
                    split[f"x{n_vec} native, {label} actions"] = kernel_split(
                        lambda v=venv, a=acts, n=n: vec_rate(v, a, n, 1),  # type: ignore[misc]
                        n_vec)
    print(f"\n{'CPU us per env-step (a second run, timed inside)':50s} {'step':>7s} "
          f"{'kernel':>7s} {'rest':>7s}")
    for label, (step_us, kernel_us) in split.items():
        print(f"{label:50s} {step_us:7.1f} {kernel_us:7.1f} {step_us - kernel_us:7.1f}")
    print("(kernel: dynamics._run, the compiled decode + projection + reward + "
          "utilization; rest: everything else of a step; the timer's own cost taken off both)")
    print("x CartPole: each figure against CartPole chunks interleaved with its own chunks "
          "(fastest chunk of each); CartPole's row: its own run")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=3000, help="steps per env-throughput figure")
    ap.add_argument("--authors", default=os.environ.get("SCHEDGYM_OGASCHED_AUTHORS"),
                    help="checkout of github.com/anonymity-for-review/OGASched (read only; "
                    "default: $SCHEDGYM_OGASCHED_AUTHORS)")
    ap.add_argument("--authors-slots", type=int, default=6, help="T of the authors' run")
    ap.add_argument("--skip-headline", action="store_true", help="skip the T=8000 run")
    ap.add_argument("--skip-compile", action="store_true", help="skip the compile-time probe")
    ap.add_argument("--large-scale", action="store_true", help="also run large-scale")
    args = ap.parse_args()
    print(f"python {platform.python_version()}, numpy {np.__version__}, "
          f"gymnasium {gym.__version__}, {platform.processor() or platform.machine()}, "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    if not args.skip_compile:
        (cold, cold_cpu), (warm, warm_cpu) = compile_time()
        print(f"first calls in a fresh process: empty numba cache {cold:.1f} s wall "
              f"({cold_cpu:.1f} s CPU); cached {warm:.1f} s wall ({warm_cpu:.1f} s CPU): "
              f"compile time ~ {cold_cpu - warm_cpu:.1f} s CPU, once per install")
    throughput(args.steps)
    print(f"\n{'agent':12s} {'ms/decision':>12s} {'ms/(decision+step)':>19s}")
    per_slot = {}
    for name in AGENTS:
        d, ds = agent_rate(name, min(args.steps, 2000))
        per_slot[name] = ds
        print(f"{name:12s} {d:12.3f} {ds:19.3f}")
    decision, ascent = ogasched_split(min(args.steps, 2000))
    print(f"ogasched decision (a second run, timed inside): {decision:.1f} us = ascent_step "
          f"{ascent:.1f} us (compiled update) + {decision - ascent:.1f} us (the rest: check, "
          "encode, Python)")
    if args.authors:
        theirs = authors_per_slot(args.authors, args.authors_slots)
        print(f"\nauthors' OGASched at 10 x 128 x 6: {1e3 * theirs:.1f} ms per slot (CPU, "
              f"T={args.authors_slots}); ours (decision + env step) {per_slot['ogasched']:.3f} "
              f"ms: {1e3 * theirs / per_slot['ogasched']:.0f}x")
    if not args.skip_headline:
        scenario_run("paper-headline")
    if args.large_scale:
        scenario_run("large-scale")


if __name__ == "__main__":
    main()
