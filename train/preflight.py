"""Before a command's first timed episode: its agents' names checked, and each agent built and
played for a step or two in this process.

:func:`check_agents` refuses an unknown agent name (with the closest registered name) and a
spec given twice. :func:`warm_up` plays an agent's first decisions, so the env's and the
agent's kernels compile here, once, and are then loaded from numba's on-disk cache by every
worker: no timed episode includes a compile. :func:`compile_notice` says on a terminal that the
kernels are compiling when that takes a while.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from schedgym.agents.spec import AgentSpec

#: Seconds the warm-up may take before the command says it is compiling.
NOTICE_AFTER_S = 3.0


def check_agent_name(spec: str | AgentSpec) -> None:
    """An agent spec whose name is no registered agent (nor ``ALGO:path.zip``) is a
    ``ValueError`` suggesting the closest name (``ogashed`` -> did you mean 'ogasched'?)."""
    import difflib

    from schedgym.agents import registry

    agent = AgentSpec.parse(spec)
    if agent.is_learned:
        return
    name = agent.name
    known = registry.names()
    if name in known:
        return
    close = difflib.get_close_matches(name.lower(), known, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise ValueError(f"agent={name!r} is invalid: {hint}must be one of {', '.join(known)}, or "
                     "ALGO:path.zip for a trained model (schedgym list shows each env's agents)")


def check_agents(specs: list[str]) -> None:
    """Unknown agent names (with a "did you mean") and duplicate agent specs (they would be
    pooled into one row) are errors."""
    for spec in specs:
        check_agent_name(spec)
    seen: set[str] = set()
    for spec in specs:
        if spec in seen:
            raise ValueError(f"agents={','.join(specs)!r} is invalid: {spec!r} is given twice; "
                             "give each agent once (options make distinct agents, e.g. "
                             "ogasched,ogasched[timing=lookahead])")
        seen.add(spec)


@contextlib.contextmanager
def compile_notice(after_s: float = NOTICE_AFTER_S) -> Iterator[None]:
    """Say on stderr that the kernels are compiling when the enclosed warm-up takes over
    ``after_s`` seconds (first use after an install or a kernel change), and how long it took.

    On an interactive terminal only, like the package's own first-compile notice
    (:mod:`schedgym._compile_notice`, which this one stands in for here): piped and captured
    stderr carries only what the command reports, whether the kernel cache is cold or warm."""
    if not (sys.stderr is not None and sys.stderr.isatty()):
        yield
        return
    from schedgym._compile_notice import LISTENER, say

    LISTENER.said = True  # one notice, this one
    shown = threading.Event()

    def notice() -> None:
        shown.set()
        say("preparing the agents: the first use compiles the kernels (once per install or "
            "kernel change; later runs load them from the cache)...")

    timer = threading.Timer(after_s, notice)
    timer.daemon = True
    t0 = time.perf_counter()
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
    if shown.is_set():
        say(f"ready after {time.perf_counter() - t0:.0f} s")


def warm_up(env: Any, agent: Any, steps: int = 2) -> None:
    """Play the first ``steps`` decisions of ``agent`` in this process, before any timed episode:
    the env's and the agent's kernels compile here (then the on-disk kernel cache serves every
    worker), so the ``ms/decision`` column never includes a compile."""
    obs, _ = env.reset(seed=0)
    for k in range(steps):
        action, _ = agent.predict(obs, episode_start=np.array([k == 0]), deterministic=True)
        obs, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            break
