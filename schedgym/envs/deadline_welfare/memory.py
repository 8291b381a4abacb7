"""How much memory one DeadlineWelfare-v0 episode needs, counted table by table.

The env checks this before it allocates anything (at construction, from the scenario's sizes)
and again at every reset (from the episode's own jobs), and refuses a setting or an episode
above its ``memory_limit_mb`` with one line naming the largest table. What an episode holds,
in bytes (``U = R T`` mesh units, ``N`` jobs, ``E = Σ_n |ℛ_n|`` (job, unit) entries, the
units the jobs may use):

================================  =====================================================
table                             bytes
================================  =====================================================
the env's objects                 :data:`FIXED_BYTES` (spaces, infos, an agent's state)
mesh (flat observation)           :data:`MESH_BYTES` per unit: capacity, usage, the step's
                                  dispatch and scratch, two observations alive (the one
                                  returned and the caller's previous one), an agent's
                                  decoded action
entity observation                :data:`ENTITY_BYTES` per unit more with
                                  ``obs_mode="entities"`` (13 float64 feature columns
                                  while encoding, two float32 observations alive)
expected later demand             ``(T + 1) U`` float64 when the env builds it
                                  (``obs_mode="entities"``, ``action_mode="demand_price"``;
                                  the ``time-of-use`` agent asks for it too)
jobs                              :data:`JOB_BYTES` + ``R`` (locality) per job
dispatch history                  8 per entry (``env.dispatch``: each job's dispatch on its
                                  units)
current chunk                     :data:`ENTRY_BYTES` per entry of one chunk (at most
                                  :data:`.tables.CHUNK_ENTRIES`, and jobs of twice the mean
                                  size) and :data:`DRAW_BYTES` per mesh value drawn for it
                                  (its jobs x ``U``, at most :data:`.tables.CHUNK_DRAWS` or
                                  one job's ``U``)
trace tasks                       :data:`TASK_BYTES` per task of a trace scenario
================================  =====================================================

The per-unit and per-job figures are upper ends of what the code allocates (measured against
``tracemalloc`` in ``tests/envs/deadline_welfare/test_memory.py``), not the process's fixed
cost (Python, numpy, numba: about 200 MB of resident memory).
"""

from __future__ import annotations

import math
from typing import Any

from schedgym.envs.deadline_welfare.tables import CHUNK_DRAWS, CHUNK_ENTRIES

#: Bytes per mesh unit, flat observation (see the module table).
MESH_BYTES = 160
#: Bytes per mesh unit added by the entity observation.
ENTITY_BYTES = 800
#: Bytes per job (scalars, observation rows of the job's scalars, chunk pointers), besides
#: its ``R`` locality bytes.
JOB_BYTES = 96
#: Bytes per (job, unit) entry of a chunk: unit, capability, coefficient, weight and the
#: layout's temporaries.
ENTRY_BYTES = 64
#: Bytes per mesh value drawn for a chunk (the raw draw of a stream and its gathers).
DRAW_BYTES = 12
#: Bytes per task of a trace scenario's sampler (time, duration, class).
TASK_BYTES = 24
#: Bytes of the env's own objects whatever its size (spaces, info dicts, compiled-call
#: arguments, an agent's state).
FIXED_BYTES = 64 * 2**10


def expected_window(duration_mean: float, horizon: int) -> float:
    """Upper end of the mean window ``e_n - s_n + 1`` of the paper's deadlines: ``floor(D) + 1``
    with ``D ~ Exp(duration_mean)`` has mean ``1 + 1 / (exp(1 / mean) - 1)``, and the window
    never exceeds ``T`` slots."""
    if duration_mean > 1e6:
        return float(horizon)
    return min(float(horizon), 1.0 + 1.0 / math.expm1(1.0 / duration_mean))


def poisson_jobs(arrival_rate: float, horizon: int) -> float:
    """Jobs of an ``n_jobs=None`` episode: the Poisson count's mean + 6 sd + 10 (exceeded with
    probability < 1e-9)."""
    mean = arrival_rate * horizon
    return mean + 6.0 * math.sqrt(mean) + 10.0


def breakdown(n_instances: int, horizon: int, n_jobs: float, entries: float, *,
              entities: bool = False, later: bool = False, tasks: int = 0,
              node_classes: int = 0) -> dict[str, float]:
    """Bytes of each table of one episode (the module table): ``n_jobs`` jobs with ``entries``
    (job, unit) entries in all; ``entities``: the entity observation; ``later``: the expected
    later demand table; ``tasks``/``node_classes``: a trace scenario's tasks and locality
    classes."""
    R, T = float(n_instances), float(horizon)
    U = R * T
    N, E = float(n_jobs), float(entries)
    per_chunk = max(1.0, float(CHUNK_DRAWS // max(int(U), 1)))  # jobs a chunk draws at most
    chunk = min(E, CHUNK_ENTRIES, per_chunk * min(U, 2.0 * E / max(N, 1.0)))
    draws = min(N, per_chunk) * U
    return {
        "the env's objects": float(FIXED_BYTES),
        "the mesh": MESH_BYTES * U,
        "the entity observation": ENTITY_BYTES * U if entities else 0.0,
        "the expected-later-demand table (T + 1) x R T": 8.0 * (T + 1) * U if later else 0.0,
        "the jobs": (JOB_BYTES + R) * N,
        "the dispatch history": 8.0 * E,
        "the current chunk": ENTRY_BYTES * chunk + DRAW_BYTES * draws,
        "the trace tasks": TASK_BYTES * float(tasks) + R * float(node_classes),
    }


def estimate_mb(parts: dict[str, float]) -> float:
    """Total of :func:`breakdown`, MB."""
    return sum(parts.values()) / 2**20


def refuse(what: str, parts: dict[str, float], limit_mb: float, hint: str) -> None:
    """Raise one ``ValueError`` line if ``parts`` (:func:`breakdown`) exceed ``limit_mb``:
    ``what`` needs about X MB (the largest table: Y MB): more than the limit, and ``hint``."""
    need = estimate_mb(parts)
    if need <= limit_mb:
        return
    name, big = max(parts.items(), key=lambda kv: kv[1])
    raise ValueError(f"{what} need about {need:,.0f} MB per episode ({name}: {big / 2**20:,.0f} "
                     f"MB): more than memory_limit_mb={limit_mb:,.0f} ({hint})")


def generator_entries(params: dict[str, Any], n_jobs: float) -> float:
    """Expected ``Σ_n |ℛ_n|`` of the paper generator: ``n_jobs`` x allowed instances x the mean
    window (:func:`expected_window`), with a margin of 6 sd of the sum plus one window."""
    k = params["locality_size"] or params["n_instances"]
    T = int(params["horizon"])
    w = expected_window(float(params["duration_mean"]), T)
    mean = float(n_jobs) * k * w
    return mean + 6.0 * k * math.sqrt(float(n_jobs) * w * w) + k * T
