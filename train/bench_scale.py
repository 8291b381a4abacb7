"""``schedgym bench scale``: how each env and classical agent grows with the size of the world.

Per env and classical agent (``schedgym.agents.registry.names_for``, ``random`` left out): CPU
milliseconds per agent decision and per env step, and the peak resident memory, at ``1x``,
``4x``, ``16x``, ``64x`` the paper-default size and at the whole Alibaba cluster
(:func:`size_kwargs`), each (env, agent, size) in a fresh Python process (:func:`run_case`) so
that no case's memory or compiled code pollutes another's. Then the fitted growth exponent of
each figure in the number of channels/units (:func:`fit_exponent`: log-log least squares over
the ``Kx`` sizes) and the whole-cluster episode extrapolated from the per-step figures.

What one case measures (:func:`measure`, in the child process):

1. the **reference**: the env at its paper-default size with the same agent, timed the same
   way, in the same process just before (it also loads or compiles every kernel). Every time
   figure is printed beside its ratio to the reference's (``x paper``): on a machine shared with
   other work absolute times move by 2x between runs, a ratio taken minutes apart less so, and
   the time exponents are fitted on these ratios;
2. the **case**: ``gym.make`` + ``reset`` + the agent's construction (CPU seconds: "build"),
   one untimed step (specialisations compiled for new sizes), then ``steps`` steps, more
   while they took less than :data:`MIN_SECONDS` of CPU, fewer where they reach
   ``max_seconds`` (at least one), each decision and each env step timed apart
   (``time.process_time``); an episode that ends is reset untimed;
3. **memory**: the process's peak RSS during the case (Linux: ``VmHWM`` after the peak is
   reset once the reference is done, so the reference's and any compile's peaks are not
   counted; elsewhere ``ru_maxrss``), the process's imports and loaded kernels included, and
   "world MB", its part above the resident size just before the case's ``gym.make`` (the
   env, its tables, the agent and the steps' temporaries).

A case that the env or agent refuses (a ``ValueError``: the project's one-line refusal, e.g.
ESDP's dynamic program beyond its memory limit, DeadlineWelfare's offline ``P1TooLarge``) is a
row "refused: <reason>"; any other exception "error: <type>: <message>"; a case past
``case_timeout`` seconds "timed out". None breaks the table.

The step counts are few (the default 20 slots or jobs): an agent whose decision grows along
the episode (ESDP's budget levels grow with the slot) is timed at its cheap start, and the
extrapolated episode is a lower bound for it.

``--write-doc`` with ``--envs``/``--agents``/``--sizes`` merges into the doc's table
(:func:`merge_block`): the rows measured replace the same (env, agent, size) rows, the others
stay; one stamp line per run and a last column naming each row's run; the whole bench replaces
the block.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import math
import os
import re
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

#: The envs by short name, in table order.
ENVS = {"gain_overhead": "schedgym/GainOverhead-v0",
        "fluctuating_speed": "schedgym/FluctuatingSpeed-v0",
        "deadline_welfare": "schedgym/DeadlineWelfare-v0"}
SIZES = ("1x", "4x", "16x", "64x", "cluster")
#: What grows with ``Kx`` on the two slot envs: the paper-default number of instances (servers),
#: times K. GainOverhead: 10 job types x 128 instances (|E| ~ 2.5 R); FluctuatingSpeed: 8 ports
#: x 40 servers, so its cells L x R grow K-fold too (|E| ~ 0.1 L R + L). DeadlineWelfare:
#: ``benchmarks/dw_scale.py``'s ``scale_case`` (10 K instances x 24 slots, its 20 jobs).
PAPER_INSTANCES = {"schedgym/GainOverhead-v0": 128, "schedgym/FluctuatingSpeed-v0": 40}
#: The whole cluster on the slot envs: every node of the shipped trace.
CLUSTER = {"scenario": "alibaba-gpu-2023", "n_instances": "all"}
#: Agents that are not classical scheduling rules (left out by default).
NOT_CLASSICAL = ("random",)
#: Memory exponents are fitted over the sizes whose world takes at least this many MB (below
#: it the RSS difference is page and allocator noise).
MIN_WORLD_MB = 1.0
#: CPU seconds of timed steps that a case runs at least (past ``steps`` where steps are cheap:
#: a mean over 20 steps of 20 us moved by 2x between runs on the shared machine).
MIN_SECONDS = 0.2
#: Doc markers between which ``--write-doc`` puts the table.
BEGIN, END = "<!-- bench-scale:begin -->", "<!-- bench-scale:end -->"
BENCH_DIR = Path(__file__).resolve().parents[1] / "benchmarks"


def dw_scale() -> ModuleType:
    """``benchmarks/dw_scale.py`` (DeadlineWelfare's sizes and the log-log slope), loaded from
    the source checkout."""
    path = BENCH_DIR / "dw_scale.py"
    if not path.is_file():
        raise ValueError(f"{path} is missing: schedgym bench scale runs from a source checkout")
    spec = importlib.util.spec_from_file_location("schedgym_dw_scale", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def env_id_of(name: str) -> str:
    """``gain_overhead`` / ``GainOverhead-v0`` / ``schedgym/GainOverhead-v0`` -> the id."""
    for short, env_id in ENVS.items():
        if name in (short, env_id, env_id.split("/")[1], env_id.split("/")[1][:-3]):
            return env_id
    raise ValueError(f"env={name!r} is invalid: must be one of {', '.join(ENVS)}")


def size_factor(size: str) -> int | None:
    """``K`` of ``"Kx"`` (``None`` for ``"cluster"``); anything else is refused in one line."""
    if size == "cluster":
        return None
    if not size.endswith("x") or not size[:-1].isdigit() or int(size[:-1]) < 1:
        raise ValueError(f"size={size!r} is invalid: must be 'cluster' or 'Kx' with K >= 1, "
                         "e.g. 4x")
    return int(size[:-1])


def size_kwargs(env_id: str, size: str) -> dict[str, Any]:
    """``gym.make`` keyword arguments of ``size`` on ``env_id`` (module docstring, and
    :data:`PAPER_INSTANCES`); ``cluster``: every node of the shipped trace (DeadlineWelfare:
    one week of its test split, ``dw_scale.CLUSTER``)."""
    k = size_factor(size)
    if env_id == ENVS["deadline_welfare"]:
        return dict(dw_scale().scale_case(size))
    if env_id not in PAPER_INSTANCES:
        raise ValueError(f"env_id={env_id!r} is invalid: must be one of {', '.join(ENVS.values())}")
    return dict(CLUSTER) if k is None else {"n_instances": PAPER_INSTANCES[env_id] * k}


def classical_agents(env_id: str) -> list[str]:
    """The registered agents of ``env_id`` without :data:`NOT_CLASSICAL`, in registry order."""
    from schedgym.agents import registry

    return [a for a in registry.names_for(env_id) if a not in NOT_CLASSICAL]


@dataclass
class Case:
    """One measured (env, agent, size). Times are CPU milliseconds per call; ``ref_*`` the same
    figures at the paper-default size in the same process. ``status``: ``ok``, ``refused``,
    ``error`` or ``timeout`` (``reason`` says why)."""

    env_id: str
    agent: str
    size: str
    status: str = "ok"
    reason: str = ""
    channels: int = 0
    ms_decision: float = math.nan
    ms_step: float = math.nan
    ref_ms_decision: float = math.nan
    ref_ms_step: float = math.nan
    steps: int = 0
    episode_len: int = 0
    build_s: float = math.nan
    peak_rss_mb: float = math.nan
    world_mb: float = math.nan
    note: str = ""
    kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def ratio(self, what: str) -> float:
        """``ms_<what> / ref_ms_<what>`` (``decision`` or ``step``)."""
        ref = getattr(self, f"ref_ms_{what}")
        return getattr(self, f"ms_{what}") / ref if ref > 0 else math.nan

    @property
    def episode_min(self) -> float:
        """CPU minutes of a whole episode of this size, extrapolated: build + episode length x
        (decision + step)."""
        return (self.build_s + self.episode_len * (self.ms_decision + self.ms_step) / 1e3) / 60


# --------------------------------------------------------------------------- the child process

def _status_mb(field: str) -> float | None:
    """``VmRSS`` / ``VmHWM`` of this process in MB (Linux ``/proc/self/status``), else None."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def _reset_peak() -> None:
    """Start this process's peak RSS afresh (Linux: ``5 > /proc/self/clear_refs``), so that the
    reference's and the kernels' compile-time peaks do not mask the case's."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def _rss_now_mb() -> float:
    """Resident memory of this process now (MB; where the OS does not say: the peak)."""
    now = _status_mb("VmRSS")
    return _peak_rss_mb() if now is None else now


def _peak_rss_mb() -> float:
    """Peak resident memory of this process (MB) since :func:`_reset_peak` where the OS
    supports it, else since it started (``ru_maxrss``)."""
    peak = _status_mb("VmHWM")
    if peak is not None:
        return peak
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024  # bytes there, KiB here


def _episode_len(env: Any, info: dict[str, Any]) -> int:
    """Steps of one episode: the jobs of a DeadlineWelfare episode, else the horizon."""
    if "n_jobs" in info:
        return int(info["n_jobs"])
    horizon = getattr(env.unwrapped, "horizon", None)
    if horizon is None and env.spec is not None:
        horizon = env.spec.max_episode_steps
    return int(horizon or 0)


def _warm(env_id: str, play: dict[str, Any], agent: str, steps: int, max_seconds: float,
          seed: int) -> dict[str, Any]:
    """The reference (module docstring, step 1): the paper-default size played twice, the
    second time counted (the first loads or compiles the kernels and touches the caches)."""
    measure(env_id, dict(play), agent, min(steps, 3), max_seconds, seed, min_seconds=0.0)
    return measure(env_id, dict(play), agent, steps, max_seconds, seed)


def measure(env_id: str, kwargs: dict[str, Any], agent: str, steps: int, max_seconds: float,
            seed: int = 0, min_seconds: float | None = None) -> dict[str, Any]:
    """One env + agent in this process (module docstring, step 2): ``channels`` (|E|, or the
    units of DeadlineWelfare), ``build_s``, ``ms_decision``, ``ms_step`` (means over the timed
    steps), ``steps``, ``episode_len``."""
    import gymnasium as gym
    import numpy as np

    import schedgym  # noqa: F401 - registers the envs
    from schedgym import agents

    c0 = time.process_time()
    env = gym.make(env_id, **kwargs)
    obs, info = env.reset(seed=seed)
    ag = agents.make(agent, env)
    build_s = time.process_time() - c0
    inst = env.unwrapped.instance  # type: ignore[attr-defined]
    channels = int(getattr(inst, "n_units", 0) or inst.n_edges)
    length = _episode_len(env, info)
    start = True
    decide = stepped = 0.0
    n = -1  # the first step is not timed
    least = min(MIN_SECONDS if min_seconds is None else min_seconds, max_seconds)
    while n < 1 or ((n < steps or decide + stepped < least) and decide + stepped < max_seconds):
        c0 = time.process_time()
        action, _ = ag.predict(obs, episode_start=np.array([start]), deterministic=True)
        c1 = time.process_time()
        obs, _, term, trunc, _ = env.step(action)
        c2 = time.process_time()
        if n >= 0:
            decide, stepped = decide + c1 - c0, stepped + c2 - c1
        n, start = n + 1, bool(term or trunc)
        if start:
            obs, _ = env.reset(seed=seed + n + 1)
    env.close()
    return {"channels": channels, "build_s": build_s, "ms_decision": 1e3 * decide / max(n, 1),
            "ms_step": 1e3 * stepped / max(n, 1), "steps": n, "episode_len": length}


#: What ``gym.make`` appends to an env constructor's message.
_GYM_SUFFIX = re.compile(r" was raised from the environment creator for \S+ with kwargs \(.*\)$")


def _one_line(exc: BaseException) -> str:
    text = (str(exc).strip().splitlines() or [""])[0]
    return _GYM_SUFFIX.sub("", text)


def _measure_case(env_id: str, kwargs: dict[str, Any], agent: str, steps: int,
                  max_seconds: float, seed: int) -> tuple[dict[str, Any], str]:
    """:func:`measure` of the case; where an env of this version refuses ``n_instances="all"``
    the trace's node count is played instead, and the note says so."""
    try:
        return measure(env_id, kwargs, agent, steps, max_seconds, seed), ""
    except ValueError as exc:
        if kwargs.get("n_instances") != "all" or "n_instances='all'" not in str(exc):
            raise
    from schedgym.data.trace_mapping import resolve_n_instances

    nodes = resolve_n_instances("all")
    got = measure(env_id, {**kwargs, "n_instances": nodes}, agent, steps, max_seconds, seed)
    return got, f"n_instances={nodes} (this env refuses 'all')"


def child(payload: str) -> dict[str, Any]:
    """The child process's work (:func:`run_case`): the reference, then the case; a refusal or
    error of the case is a result, not a crash."""
    p = json.loads(payload)
    from schedgym.agents import registry

    play = registry.play_kwargs(p["agent"], p["env_id"])
    ref = _warm(p["env_id"], play, p["agent"], p["steps"], p["max_seconds"], p["seed"])
    out: dict[str, Any] = {"ref_ms_decision": ref["ms_decision"], "ref_ms_step": ref["ms_step"]}
    gc.collect()
    _reset_peak()
    base = _rss_now_mb()
    try:
        got, note = _measure_case(p["env_id"], {**play, **p["kwargs"]}, p["agent"], p["steps"],
                                  p["max_seconds"], p["seed"])
        out.update(got, note=note)
    except ValueError as exc:
        out.update(status="refused", reason=_one_line(exc))
    except Exception as exc:  # noqa: BLE001 - a row of the table, not a crash of the bench
        out.update(status="error", reason=f"{type(exc).__name__}: {_one_line(exc)}")
    peak = _peak_rss_mb()
    out.update(peak_rss_mb=peak, world_mb=max(peak - base, 0.0))
    return out


def _child_entry(payload: str, conn: Any) -> None:
    """The child process's target: :func:`child`'s result sent through ``conn``."""
    try:
        conn.send(child(payload))
    except BaseException as exc:  # noqa: BLE001 - the reference failed: an error row
        conn.send({"status": "error", "reason": f"{type(exc).__name__}: {_one_line(exc)}"})
    finally:
        conn.close()


def _context() -> Any:
    """Forked children where the OS has ``fork`` (they start with this process's imports and
    nothing else: no case ever runs in it), else spawned ones."""
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def run_case(env_id: str, agent: str, size: str, steps: int = 20, max_seconds: float = 3.0,
             case_timeout: float = 180.0, seed: int = 0) -> Case:
    """One (env, agent, size) in a fresh child process (:func:`child`); its death or a run past
    ``case_timeout`` wall seconds is the case's result."""
    import gymnasium  # noqa: F401 - imported once here, so that every forked child has them

    import schedgym.agents  # noqa: F401

    kwargs = size_kwargs(env_id, size)
    case = Case(env_id, agent, size, kwargs=kwargs)
    payload = json.dumps({"env_id": env_id, "agent": agent, "kwargs": kwargs, "steps": steps,
                          "max_seconds": max_seconds, "seed": seed})
    ctx = _context()
    here, there = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child_entry, args=(payload, there), daemon=True)
    proc.start()
    there.close()
    try:
        if not here.poll(case_timeout):
            case.status, case.reason = "timeout", f"timed out after {case_timeout:g} s"
            return case
        try:
            got = here.recv()
        except EOFError:
            proc.join(5)
            case.status = "error"
            case.reason = f"its process died (exit code {proc.exitcode})"
            return case
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join()
        here.close()
    for key, value in got.items():
        setattr(case, key, value)
    return case


# --------------------------------------------------------------------------- fits and tables

def fit_exponent(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """The least-squares slope of log(y) against log(x) (``dw_scale.slope``): ``y ~ x^slope``.
    ``None`` with fewer than two distinct positive x (nothing to fit)."""
    pts = [(x, y) for x, y in zip(xs, ys, strict=True) if x > 0 and y > 0 and math.isfinite(y)]
    if len({x for x, _ in pts}) < 2:
        return None
    return float(dw_scale().slope([x for x, _ in pts], [y for _, y in pts]))


def exponents(cases: Iterable[Case]) -> dict[tuple[str, str], dict[str, float | None]]:
    """Per (env id, agent): the exponents of ms/decision and ms/step (fitted on the ratios to
    the reference) and of world MB (over the sizes with at least :data:`MIN_WORLD_MB`) in the
    channels/units, over the measured ``Kx`` sizes."""
    groups: dict[tuple[str, str], list[Case]] = {}
    for c in cases:
        if c.ok and c.size != "cluster":
            groups.setdefault((c.env_id, c.agent), []).append(c)
    out: dict[tuple[str, str], dict[str, float | None]] = {}
    for key, cs in groups.items():
        x = [float(c.channels) for c in cs]
        big = [c for c in cs if c.world_mb >= MIN_WORLD_MB]
        out[key] = {"decision": fit_exponent(x, [c.ratio("decision") for c in cs]),
                    "step": fit_exponent(x, [c.ratio("step") for c in cs]),
                    "memory": fit_exponent([float(c.channels) for c in big],
                                           [c.world_mb for c in big]),
                    "sizes": float(len(cs)), "memory_sizes": float(len(big))}
    return out


def _ms(v: float) -> str:
    return "—" if not math.isfinite(v) else f"{v:.3f}" if v < 10 else f"{v:,.1f}"


def _x(v: float) -> str:
    return "—" if not math.isfinite(v) else f"{v:.2f}x" if v < 100 else f"{v:,.0f}x"


def _dur(minutes: float) -> str:
    return f"{60 * minutes:.1f} s" if minutes < 1 else f"{minutes:,.1f} min"


def _short(env_id: str) -> str:
    return env_id.split("/")[-1]


def case_row(c: Case) -> str:
    """One markdown row of :func:`table`."""
    head = f"| {_short(c.env_id)} | {c.agent} | {c.size} |"
    if not c.ok:
        word = {"refused": "refused", "timeout": "timed out"}.get(c.status, "error")
        reason = c.reason if c.status != "timeout" else c.reason.removeprefix("timed out ")
        cells = f" {c.channels or '—'} | {word}: {reason.replace('|', '/')} | | | |"
        return head + cells + (f" {c.peak_rss_mb:,.0f} | {c.world_mb:,.0f} | |"
                               if math.isfinite(c.peak_rss_mb) else " | | |")
    note = f" ({c.note})" if c.note else ""
    return (head + f" {c.channels:,} | {_ms(c.ms_decision)} | {_x(c.ratio('decision'))} | "
            f"{_ms(c.ms_step)} | {_x(c.ratio('step'))} | {c.peak_rss_mb:,.0f} | "
            f"{c.world_mb:,.0f} | {_dur(c.episode_min)} ({c.episode_len:,} steps){note} |")


TABLE_HEAD = ("| env | agent | size | channels / units | ms / decision | x paper | ms / env step "
              "| x paper | peak RSS MB | world MB | episode (extrapolated, CPU) |\n"
              "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|")


def table(cases: Iterable[Case]) -> str:
    """The markdown table of every case, in the order given."""
    return "\n".join([TABLE_HEAD, *(case_row(c) for c in cases)])


def _e(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}"


def exponent_table(cases: Sequence[Case], limit_min: float = 10.0) -> str:
    """Per (env, agent): the fitted exponents and the extrapolated whole-cluster episode against
    ``limit_min`` CPU minutes."""
    fits = exponents(cases)
    cluster = {(c.env_id, c.agent): c for c in cases if c.size == "cluster"}
    rows = ["| env | agent | exponent: ms / decision | ms / env step | world MB | "
            "whole-cluster episode (extrapolated) |", "|---|---|---:|---:|---:|---|"]
    keys = list(dict.fromkeys([(c.env_id, c.agent) for c in cases]))
    for key in keys:
        f = fits.get(key, {})
        mem = _e(f.get("memory"))
        if f and f.get("memory") is not None:
            mem += f" ({f['memory_sizes']:.0f} sizes)"
        c = cluster.get(key)
        if c is None:
            ep = "not measured"
        elif not c.ok:
            ep = f"{c.status}: {c.reason.replace('|', '/')}"
        else:
            verdict = "within" if c.episode_min <= limit_min else "over"
            ep = f"{_dur(c.episode_min)}: {verdict} {limit_min:g} min"
        rows.append(f"| {_short(key[0])} | {key[1]} | {_e(f.get('decision'))} | "
                    f"{_e(f.get('step'))} | {mem} | {ep} |")
    return "\n".join(rows)


def _block_span(path: Path, doc: str) -> tuple[int, int]:
    """Where the text between :data:`BEGIN` and :data:`END` of ``doc`` starts and ends (both
    markers must be there, once each, in that order)."""
    i, j = doc.find(BEGIN), doc.find(END)
    if i < 0 or j < i or doc.count(BEGIN) != 1 or doc.count(END) != 1:
        raise ValueError(f"--write-doc {path} is invalid: it must hold the lines {BEGIN} and "
                         f"{END} once each, in that order")
    return i + len(BEGIN), j


def read_block(path: str | Path) -> str:
    """The text of ``path`` between :data:`BEGIN` and :data:`END` (refused in one line where the
    markers are not there once each)."""
    path = Path(path)
    doc = path.read_text()
    i, j = _block_span(path, doc)
    return doc[i:j]


def write_doc(path: str | Path, text: str) -> None:
    """Replace the part of ``path`` between :data:`BEGIN` and :data:`END` by ``text`` (both
    markers must be there, once each, in that order)."""
    path = Path(path)
    doc = path.read_text()
    i, j = _block_span(path, doc)
    path.write_text(doc[:i] + "\n" + text.rstrip() + "\n" + doc[j:])


# --------------------------------------------------------------------------- merging into the doc
#
# The doc's block: one stamp line per run ("run N: <date>, commit, load, ...; measured <env>:
# <agents> at <sizes>."), the case table with a last column "run" (the stamp that measured the
# row), then the exponent table. A partial run (``--envs``/``--agents``/``--sizes``) replaces
# the rows it measured and keeps every other row as it was; a run that measured none of a
# stamp's remaining rows drops that stamp, and the stamps are renumbered in order. A block
# written before the run column existed (one stamp line, no "run" column) is read as run 1.

#: The case table's head in the doc: :data:`TABLE_HEAD` and the column of the run.
DOC_HEAD = "\n".join(line + (" run |" if k == 0 else "---:|")
                     for k, line in enumerate(TABLE_HEAD.splitlines()))
#: A stamp line: ``run N: text``.
_STAMP = re.compile(r"^run (\d+): (.+)$")
#: The episode cell of an ``ok`` row: ``2.4 min (2,000 steps)`` and maybe ``(note)``.
_EPISODE = re.compile(r"^([\d,.]+) (s|min) \(([\d,]+) steps\)(?: \((.*)\))?$")
_NOT_OK = {"refused": "refused", "timed out": "timeout", "error": "error"}
#: The case table's columns (the doc's has one more: the run).
_N_CELLS = len(TABLE_HEAD.splitlines()[0].strip().strip("|").split("|"))


@dataclass
class DocRow(Case):
    """A case read back from the doc's table (:func:`parse_block`): the figures as printed
    (rounded: ``ref_ms_*`` is the printed figure over its printed ratio), the episode as
    printed (``episode_given``, CPU minutes), the row's text without its run cell and the run
    (stamp number) that measured it."""

    episode_given: float = math.nan
    text: str = ""
    run: int = 1

    @property
    def episode_min(self) -> float:
        return self.episode_given


@dataclass
class Block:
    """The doc's block as :func:`parse_block` reads it: the stamp lines by run number (the text
    after ``run N: ``), the case rows in table order, the exponent table's rows by
    ``(env id, agent)``."""

    stamps: dict[int, str]
    rows: list[DocRow]
    fits: dict[tuple[str, str], str]


def _num(cell: str) -> float:
    """A printed figure (``1,591.1``, ``4,687x``, ``—``) -> float (``—``: NaN)."""
    cell = cell.strip().removesuffix("x").replace(",", "")
    if cell in ("—", ""):
        return math.nan
    return float(cell)


def _cells(line: str) -> list[str]:
    if not (line.startswith("|") and line.endswith("|")):
        raise ValueError("not a table row")
    return [c.strip() for c in line[1:-1].split("|")]


def _env_of_short(short: str) -> str:
    for env_id in ENVS.values():
        if _short(env_id) == short:
            return env_id
    raise ValueError(f"env {short!r} is not one of {', '.join(_short(e) for e in ENVS.values())}")


def parse_row(line: str, run: int | None) -> DocRow:
    """One row of the doc's case table -> :class:`DocRow`; ``run``: the stamp of a block
    without the run column (else the last cell says it). Anything else is a ValueError."""
    cells = _cells(line)
    run_given = run is not None
    if run is None:
        if len(cells) != _N_CELLS + 1 or not cells[-1].isdigit():
            raise ValueError(f"expected {_N_CELLS + 1} cells, the last the run number")
        run, cells = int(cells[-1]), cells[:-1]
    elif len(cells) != _N_CELLS:
        raise ValueError(f"expected {_N_CELLS} cells")
    env, agent, size = cells[0], cells[1], cells[2]
    size_factor(size)
    # the row as printed, without its run cell
    text = line if run_given else "|" + "|".join(line[1:-1].split("|")[:-1]) + "|"
    row = DocRow(_env_of_short(env), agent, size, text=text, run=run)
    row.channels = 0 if cells[3] == "—" else int(_num(cells[3]))
    first = cells[4]
    word = next((w for w in _NOT_OK if first.startswith(w + ": ")), None)
    if word is not None:
        row.status = _NOT_OK[word]
        reason = first[len(word) + 2:]
        row.reason = f"timed out {reason}" if row.status == "timeout" else reason
        row.peak_rss_mb, row.world_mb = _num(cells[8]), _num(cells[9])
        return row
    m = _EPISODE.match(cells[10])
    if m is None:
        raise ValueError(f"episode cell {cells[10]!r} is not 'N s|min (N steps)'")
    row.ms_decision, row.ms_step = _num(cells[4]), _num(cells[6])
    r_dec, r_step = _num(cells[5]), _num(cells[7])
    row.ref_ms_decision = row.ms_decision / r_dec if r_dec > 0 else math.nan
    row.ref_ms_step = row.ms_step / r_step if r_step > 0 else math.nan
    row.peak_rss_mb, row.world_mb = _num(cells[8]), _num(cells[9])
    value = _num(m.group(1))
    row.episode_given = value / 60 if m.group(2) == "s" else value
    row.episode_len = int(_num(m.group(3)))
    row.note = m.group(4) or ""
    return row


def parse_block(block: str, path: str | Path = "the doc") -> Block:
    """The doc's block (:func:`read_block`) -> :class:`Block`. An empty block is an empty one;
    one that cannot be read whole is refused in one line (a partial run never drops rows it
    cannot read)."""
    lines = [ln.strip() for ln in block.strip().splitlines()]
    stamps: dict[int, str] = {}
    rows: list[DocRow] = []
    fits: dict[tuple[str, str], str] = {}
    legacy: str | None = None
    part = "stamps"
    run_column: bool | None = None
    seen: set[tuple[str, str, str]] = set()
    for k, line in enumerate(lines, 1):
        try:
            if not line:
                continue
            if line == DOC_HEAD.splitlines()[0] or line == TABLE_HEAD.splitlines()[0]:
                if part != "stamps":
                    raise ValueError("a second case table")
                part, run_column = "head", line == DOC_HEAD.splitlines()[0]
            elif line.startswith("| env | agent | exponent:"):
                if part not in ("rows", "head"):
                    raise ValueError("the exponent table before the case table")
                part = "fit-head"
            elif line.startswith("|---"):
                if part not in ("head", "fit-head"):
                    raise ValueError("a stray separator line")
                part = "rows" if part == "head" else "fits"
            elif part == "stamps":
                m = _STAMP.match(line)
                if m:
                    if int(m.group(1)) in stamps:
                        raise ValueError(f"run {m.group(1)} stamped twice")
                    stamps[int(m.group(1))] = m.group(2)
                elif legacy is None and not stamps:
                    legacy = line
                else:
                    raise ValueError("expected one stamp line per run, 'run N: ...'")
            elif part == "rows":
                row = parse_row(line, None if run_column else 1)
                key = (row.env_id, row.agent, row.size)
                if key in seen:
                    raise ValueError(f"a second row of {_short(key[0])} {key[1]} {key[2]}")
                seen.add(key)
                rows.append(row)
            elif part == "fits":
                cells = _cells(line)
                if len(cells) != 6:
                    raise ValueError("expected 6 cells in the exponent table")
                fits[(_env_of_short(cells[0]), cells[1])] = line
            else:
                raise ValueError("text where a table was expected")
        except ValueError as exc:
            raise ValueError(f"--write-doc {path} is invalid: its bench-scale block cannot be "
                             f"merged (line {k} of the block, {line[:60]!r}: {exc}); fix it or "
                             "run the whole bench (no --envs/--agents/--sizes)") from None
    where = f"--write-doc {path} is invalid: its bench-scale block cannot be merged"
    if lines and part not in ("rows", "fits"):
        raise ValueError(f"{where} (no case table found); fix it or run the whole bench")
    if legacy is not None:
        if run_column:
            raise ValueError(f"{where} (rows name runs but no line says 'run N: ...')")
        stamps = {1: legacy}
    missing = sorted({r.run for r in rows} - set(stamps))
    if missing:
        raise ValueError(f"{where} (rows of run {missing[0]}, which no stamp line names)")
    return Block(stamps, rows, fits)


def coverage(cases: Sequence[Case]) -> str:
    """What a run measured, per env: ``GainOverhead-v0: drf, fairness at 1x, cluster``."""
    out = []
    for env_id in dict.fromkeys(c.env_id for c in cases):
        mine = [c for c in cases if c.env_id == env_id]
        agents = ", ".join(dict.fromkeys(c.agent for c in mine))
        sizes = ", ".join(dict.fromkeys(c.size for c in mine))
        out.append(f"{_short(env_id)}: {agents} at {sizes}")
    return "; ".join(out)


def _with_run(text: str, run: int) -> str:
    return f"{text} {run} |"


def merge_block(old: Block | None, cases: Sequence[Case], stamp: str) -> str:
    """The doc's new block: ``old`` (None: a full run, nothing kept) with the rows of ``cases``
    in place of the same (env, agent, size) rows, the others kept as they were; ``stamp`` (this
    run's line, without ``run N: ``) after the older stamps that still measured a row; the
    exponent table recomputed for every (env, agent) measured now from its rows in the merged
    table (older rows of it as printed), the other pairs' rows kept."""
    new = {(c.env_id, c.agent, c.size): c for c in cases}
    rows: list[Case] = []
    runs: dict[tuple[str, str, str], int] = {}
    placed: set[tuple[str, str, str]] = set()
    for d in old.rows if old else []:
        key = (d.env_id, d.agent, d.size)
        if key in new:
            rows.append(new[key])
            placed.add(key)
        else:
            rows.append(d)
            runs[key] = d.run
    for c in cases:  # a row the doc did not have: after its pair's rows, else its env's, else last
        key = (c.env_id, c.agent, c.size)
        if key in placed:
            continue
        same_pair = [k for k, r in enumerate(rows) if (r.env_id, r.agent) == key[:2]]
        same_env = [k for k, r in enumerate(rows) if r.env_id == key[0]]
        at = (same_pair or same_env or [len(rows) - 1])[-1] + 1
        rows.insert(at, c)
        placed.add(key)
    kept = sorted(set(runs.values()))
    number = {old_run: k for k, old_run in enumerate(kept, 1)}
    now = len(kept) + 1
    stamps = [f"run {number[r]}: {old.stamps[r]}" for r in kept] if old else []
    stamps.append(f"run {now}: {stamp}")
    lines = [DOC_HEAD]
    for r in rows:
        key = (r.env_id, r.agent, r.size)
        if key in runs:
            assert isinstance(r, DocRow)
            lines.append(_with_run(r.text, number[runs[key]]))
        else:
            lines.append(_with_run(case_row(r), now))
    measured = {(c.env_id, c.agent) for c in cases}
    fresh = exponent_table([r for r in rows if (r.env_id, r.agent) in measured]).splitlines()
    fresh_rows = {(_env_of_short(_cells(ln)[0]), _cells(ln)[1]): ln for ln in fresh[2:]}
    fit_rows = fresh[:2]
    for pair in dict.fromkeys((r.env_id, r.agent) for r in rows):
        if pair in fresh_rows:
            fit_rows.append(fresh_rows[pair])
        elif old and pair in old.fits:
            fit_rows.append(old.fits[pair])
        else:  # a pair the old exponent table lacked: from its rows as printed
            fit_rows.append(exponent_table([r for r in rows
                                            if (r.env_id, r.agent) == pair]).splitlines()[2])
    return "\n\n".join(["\n".join(stamps), "\n".join(lines), "\n".join(fit_rows)])


def is_full(opts: Options) -> bool:
    """Whether ``opts`` runs the whole bench (every env, agent, size): its table replaces the
    doc's block whole; any other run merges into it (:func:`merge_block`)."""
    return (opts.agents is None and set(opts.envs) == set(ENVS.values())
            and set(opts.sizes) == set(SIZES))


# --------------------------------------------------------------------------- the command

def add_arguments(p: argparse._ActionsContainer) -> None:
    """The options of the scale bench (``schedgym bench scale`` and the script). Defaults are
    ``None`` so that ``schedgym bench`` can tell them given; :func:`options` fills them in."""
    p.add_argument("--envs", default=None,
                   help=f"comma-separated envs (default: all): {', '.join(ENVS)}")
    p.add_argument("--agents", default=None,
                   help="comma-separated agents (default: every classical agent of each env; "
                   "one an env lacks is skipped there)")
    p.add_argument("--sizes", default=None,
                   help=f"comma-separated sizes, Kx or cluster (default: {','.join(SIZES)})")
    p.add_argument("--steps", type=int, default=None,
                   help="timed steps per case and per reference (default 20; more while they took "
                   f"less than {MIN_SECONDS:g} s of CPU)")
    p.add_argument("--max-seconds", type=float, default=None,
                   help="CPU seconds of timed steps per case, at most (default 3)")
    p.add_argument("--case-timeout", type=float, default=None,
                   help="wall seconds of one case's process, build included (default 180)")
    p.add_argument("--write-doc", default=None, metavar="PATH",
                   help=f"also write the tables into PATH between the lines {BEGIN} and {END}")
    p.add_argument("--json", default=None, metavar="PATH", help="also write every case as JSON")


@dataclass
class Options:
    """The scale bench's settings (see :func:`add_arguments`)."""

    envs: list[str]
    agents: list[str] | None
    sizes: list[str]
    steps: int = 20
    max_seconds: float = 3.0
    case_timeout: float = 180.0
    write_doc: str | None = None
    json: str | None = None


def _split(text: str | None) -> list[str] | None:
    return None if text is None else [t.strip() for t in text.split(",") if t.strip()]


def options(args: argparse.Namespace) -> Options:
    """:class:`Options` from parsed arguments, every value checked (one line naming it)."""
    envs = [env_id_of(e) for e in _split(args.envs) or list(ENVS)]
    sizes = _split(args.sizes) or list(SIZES)
    for s in sizes:
        size_factor(s)
    steps = 20 if args.steps is None else args.steps
    if steps < 1:
        raise ValueError(f"--steps {steps} is invalid: must be >= 1")
    limits = {"--max-seconds": (args.max_seconds, 3.0), "--case-timeout": (args.case_timeout,
                                                                            180.0)}
    values = {}
    for flag, (given, default) in limits.items():
        value = default if given is None else float(given)
        if not value > 0 or not math.isfinite(value):
            raise ValueError(f"{flag} {given} is invalid: must be a positive number of seconds")
        values[flag] = value
    return Options(envs, _split(args.agents), sizes, steps, values["--max-seconds"],
                   values["--case-timeout"], args.write_doc, args.json)


def plan(opts: Options) -> list[tuple[str, str, str]]:
    """Every ``(env id, agent, size)`` to run, grouped by env and agent, sizes in order; an
    agent named in ``opts.agents`` that supports no env given is refused in one line."""
    out = []
    for env_id in opts.envs:
        names = classical_agents(env_id)
        if opts.agents is not None:
            names = [a for a in opts.agents if a in names]
        out += [(env_id, a, s) for a in names for s in opts.sizes]
    if opts.agents is not None:
        used = {a for _, a, _ in out}
        unknown = [a for a in opts.agents if a not in used]
        if unknown:
            known = sorted({a for e in opts.envs for a in classical_agents(e)})
            raise ValueError(f"--agents {','.join(unknown)} is invalid: no env given has it "
                             f"(classical agents: {', '.join(known)})")
    return out


def header(opts: Options) -> str:
    """The run's context: command line, commit, host, load."""
    import platform

    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, cwd=Path(__file__).parent, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    return (f"{when}, commit {commit or 'unknown'}, Python {platform.python_version()} on "
            f"{platform.machine()}, {os.cpu_count()} cores, load average "
            f"{os.getloadavg()[0]:.1f}; per case {opts.steps} timed steps (more up to "
            f"{MIN_SECONDS:g} s of CPU, fewer at {opts.max_seconds:g} s)")


def run(opts: Options, echo: Callable[[str], None] = print) -> list[Case]:
    """Every case of :func:`plan`, a row echoed as each ends; then the exponents; the tables
    written where ``opts`` says (a partial run merged into the doc's block, which is read and
    checked before the first case runs, so that an unreadable one is refused at once, and read
    again to merge into at the end, so that what changed there meanwhile is kept)."""
    old = None
    if opts.write_doc and not is_full(opts):
        old = parse_block(read_block(opts.write_doc), opts.write_doc)
    start = header(opts)
    echo(start)
    echo(TABLE_HEAD)
    cases = []
    for env_id, agent, size in plan(opts):
        c = run_case(env_id, agent, size, opts.steps, opts.max_seconds, opts.case_timeout)
        cases.append(c)
        echo(case_row(c))
    fits = exponent_table(cases)
    echo("")
    echo(fits)
    end = f"load average at the end {os.getloadavg()[0]:.1f}"
    echo(end)
    if opts.json:
        Path(opts.json).write_text(json.dumps([asdict(c) for c in cases], indent=1))
    if opts.write_doc:
        if old is not None:  # read again: the doc may have changed during the run
            old = parse_block(read_block(opts.write_doc), opts.write_doc)
        stamp = f"{start}; {end}; measured {coverage(cases) or 'nothing'}."
        write_doc(opts.write_doc, merge_block(old, cases, stamp))
    return cases


def main(argv: list[str] | None = None) -> int:
    """``python benchmarks/bench_scale.py [options]``."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    add_arguments(ap)
    run(options(ap.parse_args(argv)), echo=lambda s: print(s, flush=True))
    return 0
