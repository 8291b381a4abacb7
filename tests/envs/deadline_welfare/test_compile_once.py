"""First-use compile time: every DeadlineWelfare kernel is compiled once per process, whatever
the caller (single env, vector env, OnSocMax, baselines, any utility family).

numba compiles a kernel once per tuple of argument types, and a bare constant (``0``,
``True``) passed between kernels is a type of its own (``Literal[int](0)``), and so is a
read-only array: each extra specialisation costs its compile again on a fresh install (and
in every kernel that calls it). This runs the env, the native vector env and the agents in a
fresh process (the kernels then come from the on-disk cache, or are compiled) and checks
that no kernel of these modules holds two specialisations or a literal argument type.
"""

from __future__ import annotations

import json
import subprocess
import sys

#: Prepended to each workload: one episode per agent, and the kernels' compiled signatures.
_HELPERS = r"""
import json
from schedgym import agents


def play(env, names):
    for name in names:  # one episode each (None: random actions)
        obs, _ = env.reset(seed=1)
        ag = agents.make(name, env) if name else None
        done = False
        while not done:
            a = ag.predict(obs)[0] if ag else env.action_space.sample()
            obs, _, term, trunc, _ = env.step(a)
            done = term or trunc


def report(*mods):
    out = {}
    for mod in mods:
        for name, f in vars(mod).items():
            if hasattr(f, "signatures") and getattr(f, "py_func", None) is not None \
                    and f.py_func.__module__ == mod.__name__:
                out[f"{mod.__name__.split('.')[-1]}.{name}"] = [str(s) for s in f.signatures]
    print(json.dumps(out))
"""

_WORKLOAD = r"""
import gymnasium as gym, numpy as np, schedgym
from schedgym.agents import onsocmax
from schedgym.agents.baselines import deadline_welfare as bl
from schedgym.envs.deadline_welfare import demand, dynamics, generator, pricing, tables, types
from schedgym.envs.deadline_welfare import vector
from schedgym.core import pairwise

for u in ("linear", "log", "sqrt"):
    env = gym.make("schedgym/DeadlineWelfare-v0", utility=u, n_jobs=6)
    play(env, ("onsocmax", "max-first", "equal-share", "jsq", None))
    vec = gym.make_vec("schedgym/DeadlineWelfare-v0", num_envs=3, utility=u, n_jobs=4,
                       vectorization_mode="vector_entry_point")
    vec.reset(seed=0)
    for _ in range(6):
        vec.step(vec.action_space.sample())
report(demand, dynamics, generator, pricing, tables, types, vector, onsocmax, bl, pairwise)
"""

_FS_WORKLOAD = r"""
import gymnasium as gym, numpy as np, schedgym
from schedgym.agents import esdp
from schedgym.agents.baselines import fluctuating_speed as bl
from schedgym.core import knapsack
from schedgym.envs.fluctuating_speed import dynamics, vector

for kw in ({}, {"compute_oracle": False}):
    env = gym.make("schedgym/FluctuatingSpeed-v0", horizon=30, **kw)
    play(env, ("esdp", "hauf", "lcf", "lwtf", "oracle", None))
    vec = gym.make_vec("schedgym/FluctuatingSpeed-v0", num_envs=3, horizon=5,
                       vectorization_mode="vector_entry_point", **kw)
    vec.reset(seed=0)
    for _ in range(12):
        vec.step(np.stack([env.action_space.sample() for _ in range(3)]))
report(dynamics, vector, esdp, bl, knapsack)
"""

#: Kernels that legitimately hold two specialisations: the dispatch decode takes the single
#: env's float32 action and the vector env's float64 actions (validated as float64, so an
#: action too large for float32 is clipped rather than refused).
ALLOWED = {"dynamics.decode_units": 2}


def _signatures(workload: str) -> dict[str, list[str]]:
    res = subprocess.run([sys.executable, "-c", _HELPERS + workload], capture_output=True,
                         text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_every_kernel_is_compiled_once_without_literal_arguments():
    sigs = _signatures(_WORKLOAD)
    # the scan saw them
    assert {"onsocmax._x_unit", "dynamics.step_job", "tables.layout_into"} <= set(sigs)
    literal = {k: v for k, v in sigs.items() if any("Literal" in s for s in v)}
    assert not literal, f"kernels specialised on a literal argument: {literal}"
    extra = {k: v for k, v in sigs.items() if len(v) > ALLOWED.get(k, 1)}
    assert not extra, f"kernels compiled more than once: {extra}"


def test_fluctuating_speed_kernels_are_compiled_once():
    """The same for FluctuatingSpeed-v0 (with and without the oracle), its vector env, ESDP,
    HAUF, LCF, LWTF, the oracle and the knapsack they share."""
    sigs = _signatures(_FS_WORKLOAD)
    assert "dynamics.slot_kernel" in sigs and "knapsack._knapsack_kernel" in sigs
    bad = {k: v for k, v in sigs.items() if len(v) > 1 or any("Literal" in s for s in v)}
    assert not bad, f"kernels compiled more than once or for a literal argument: {bad}"


#: Modules with kernels of DeadlineWelfare, FluctuatingSpeed and their agents.
KERNEL_FILES = ("schedgym/envs/deadline_welfare/*.py", "schedgym/envs/fluctuating_speed/*.py",
                "agents/onsocmax.py", "agents/esdp.py", "agents/baselines/deadline_welfare.py",
                "agents/baselines/fluctuating_speed.py")


def _recursive_kernels(source: str) -> list[str]:
    """Kernels (``@numba.njit`` functions) of ``source`` that reach themselves through calls of
    the module's kernels."""
    import ast

    tree = ast.parse(source)
    kernels = {f.name: f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
               and any("njit" in ast.unparse(d) for d in f.decorator_list)}
    calls = {k: {c.func.id for c in ast.walk(f) if isinstance(c, ast.Call)
                 and isinstance(c.func, ast.Name) and c.func.id in kernels}
             for k, f in kernels.items()}
    found = []
    for k in kernels:
        todo, seen = list(calls[k]), set()
        while todo:
            c = todo.pop()
            if c not in seen:
                seen.add(c)
                todo += calls[c]
        if k in seen:
            found.append(k)
    return found


def test_no_kernel_is_recursive():
    """numba's cache cannot reload a kernel that calls a recursive kernel (a process loading
    ``step_one`` from the cache crashed when ``np_sum`` was recursive): none may recurse."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    files = [p for pattern in KERNEL_FILES for p in sorted(root.glob(pattern))]
    assert len(files) > 10
    found = {str(p.relative_to(root)): r for p in files
             if (r := _recursive_kernels(p.read_text()))}
    assert not found, f"recursive kernels: {found}"
    # the scan finds recursion where there is some (the former pairwise sum of the baselines)
    assert _recursive_kernels("@numba.njit(cache=True)\ndef s(a):\n    return s(a[1:]) if a.size "
                              "else 0.0\n") == ["s"]
