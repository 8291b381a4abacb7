"""First use of each env with an empty numba cache: CPU seconds of a fresh process.

For every env, two fresh Python processes, each with ``NUMBA_CACHE_DIR`` set to a new empty
temporary folder (so every kernel compiles, as on a fresh install):

- ``env``: ``import schedgym``, ``gym.make`` in the default mode, ``reset`` and 3 steps with
  random actions;
- ``env+agents``: the same env, then every agent registered for it
  (:func:`schedgym.agents.registry.names_for`), each on the env in the action mode it plays in
  (:func:`~schedgym.agents.registry.play_kwargs`): make it, reset, one decision, one step.

Prints the CPU seconds (user + system) of each whole process, interpreter start and imports
included: what a user pays once per install. CPU time, not wall time, so that other processes
on a shared machine do not count (they still slow the caches down a little).

Usage: ``python benchmarks/first_use.py [ENV ...]`` (default: every schedgym env).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile

ENVS = ("GainOverhead-v0", "FluctuatingSpeed-v0", "DeadlineWelfare-v0")

_ENV = """
import gymnasium as gym, schedgym
env = gym.make("schedgym/{env}")
env.reset(seed=0)
env.action_space.seed(0)
for _ in range(3):
    env.step(env.action_space.sample())
"""

_AGENTS = _ENV + """
from schedgym.agents import registry
for name in registry.names_for("schedgym/{env}"):
    play = gym.make("schedgym/{env}", **registry.play_kwargs(name, "schedgym/{env}"))
    agent = registry.make(name, play)
    obs, _ = play.reset(seed=0)
    play.step(agent.predict(obs)[0])
"""


def cpu_seconds(code: str) -> float:
    """CPU seconds (user + system) of a fresh ``python -c code`` with an empty numba cache."""
    with tempfile.TemporaryDirectory() as cache:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-c", code], check=True,
                       env={**os.environ, "NUMBA_CACHE_DIR": cache})
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("envs", nargs="*", metavar="ENV",
                    help=f"env ids without the schedgym/ prefix (default: {', '.join(ENVS)})")
    args = ap.parse_args()
    # checked here, not by argparse's choices, which refuses an empty list for nargs="*"
    for env in args.envs:
        if env not in ENVS:
            ap.error(f"ENV {env!r} is invalid: must be one of {', '.join(ENVS)}")
    envs = args.envs or list(ENVS)
    print(f"load average before: {', '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print(f"{'env':<22}{'env CPU s':>12}{'env+agents CPU s':>19}")
    for env in envs:
        alone = cpu_seconds(_ENV.format(env=env))
        with_agents = cpu_seconds(_AGENTS.format(env=env))
        print(f"{env:<22}{alone:>12.1f}{with_agents:>19.1f}", flush=True)
    print(f"load average after: {', '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
