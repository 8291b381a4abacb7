"""Each job's values on its own units only: the per-job tables of DeadlineWelfare-v0.

Job ``n`` may use only the units of ℛ_n = 𝒦_n x [s_n, e_n] (paper Eq. 1): its allowed
instances and the slots of its window. Its capability x̄_nr, utility coefficient a_nr and
cluster weight β_nr matter only there (constraint (5) zeroes every other unit), so nothing in the
env holds them for the whole mesh:

- the **layout** of job ``n`` is its units in ascending flat order ``u = r * T + t``: for every
  allowed instance ``r`` (ascending) the slots ``s_n .. e_n``; ``|ℛ_n| = |𝒦_n| (e_n - s_n + 1)``
  entries (:func:`job_sizes`, :func:`layout_into`);
- a **chunk** (:class:`JobChunk`) holds the values of consecutive jobs on their layouts, in
  compressed rows (job ``first + j``'s entries are ``[ptr[j], ptr[j + 1])``);
- a :class:`JobRows` cursor builds the chunks in arrival order from the jobs' value source
  (:class:`UnitValues`: arrays a user gave, :class:`DenseValues`, or the generator's named
  random streams, :class:`~.generator.StreamValues`), at most :data:`CHUNK_ENTRIES` entries and
  :data:`CHUNK_DRAWS` mesh draws per chunk. An episode that fits one chunk (every paper-sized
  one) is built once; a larger one is built chunk by chunk as the episode advances, so its
  memory is one chunk, whatever the number of jobs.

Values are the same as those of the whole ``(N, R, T)`` arrays
(:attr:`~.types.Jobs.capability` etc., which are built only when read, for small instances and
tests): the generator draws job ``n``'s values from each stream in arrival order, which is the
order of the whole draw (``tests/envs/deadline_welfare/test_tables.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

import numba
import numpy as np

#: Most (job, unit) entries one chunk holds (4 float64/int64 arrays: 32 bytes an entry).
CHUNK_ENTRIES = 1 << 20
#: Most mesh values one chunk draws from each uniform stream (jobs x R T; 8 bytes each): the
#: generator draws a job's values for the whole mesh to stay in step with its streams.
CHUNK_DRAWS = 1 << 20


def job_sizes(arrival: np.ndarray, deadline: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """int64 ``(N,)``: ``|ℛ_n| = |𝒦_n| (e_n - s_n + 1)``, the entries of each job's layout."""
    counts = np.count_nonzero(allowed, axis=1).astype(np.int64)
    return counts * (np.asarray(deadline, dtype=np.int64) - arrival + 1)


@numba.njit(cache=True)
def layout_into(arrival: np.ndarray, deadline: np.ndarray, allowed: np.ndarray, n0: int,
                n1: int, horizon: int, ptr: np.ndarray, units: np.ndarray,
                rows: np.ndarray) -> None:
    """The layouts of jobs ``n0 .. n1 - 1``: ``units`` int64 (flat ``r * T + t``, ascending per
    job), ``rows`` int64 (the job's offset ``n - n0`` per entry) and ``ptr`` int64
    ``(n1 - n0 + 1,)`` (job ``n0 + j``'s entries are ``[ptr[j], ptr[j + 1])``)."""
    k = 0
    ptr[0] = 0
    for j in range(n1 - n0):
        n = n0 + j
        for r in range(allowed.shape[1]):
            if allowed[n, r]:
                for t in range(arrival[n], deadline[n] + 1):
                    units[k] = r * horizon + t
                    rows[k] = j
                    k += 1
        ptr[j + 1] = k


@numba.njit(cache=True)
def chunk_bounds(sizes: np.ndarray, n_units: int, max_entries: int,
                 max_draws: int) -> np.ndarray:
    """int64 job boundaries ``[0, b_1, ..., N]`` of the chunks: consecutive jobs while the
    chunk holds at most ``max_entries`` entries and ``max_draws`` mesh values (jobs x
    ``n_units``); at least one job a chunk."""
    N = sizes.size
    out = np.empty(N + 1, dtype=np.int64)
    out[0] = 0
    k = 1
    entries = 0
    jobs = 0
    for n in range(N):
        if jobs > 0 and (entries + sizes[n] > max_entries or (jobs + 1) * n_units > max_draws):
            out[k] = n
            k += 1
            entries = 0
            jobs = 0
        entries += sizes[n]
        jobs += 1
    if N > 0:
        out[k] = N
        k += 1
    return out[:k]


@dataclass(frozen=True, eq=False)
class JobUnits:
    """One job's values on its units ℛ_n, float64 ``(m,)`` each, ``m = |ℛ_n|`` (views of its
    chunk: read them, never write): ``units`` int64 flat ``r * T + t`` (ascending),
    ``capability`` x̄, ``coef`` a, ``weight`` β."""

    units: np.ndarray
    capability: np.ndarray
    coef: np.ndarray
    weight: np.ndarray

    @property
    def size(self) -> int:
        """``|ℛ_n|``."""
        return int(self.units.size)


@dataclass(frozen=True, eq=False)
class JobChunk:
    """The values of jobs ``first .. stop - 1`` on their layouts, compressed rows: job
    ``first + j``'s entries are ``[ptr[j], ptr[j + 1])`` of ``units`` (int64, flat
    ``r * T + t``), ``capability``, ``coef`` and ``weight`` (float64)."""

    first: int
    ptr: np.ndarray
    units: np.ndarray
    capability: np.ndarray
    coef: np.ndarray
    weight: np.ndarray

    @property
    def stop(self) -> int:
        """One past the chunk's last job."""
        return self.first + self.ptr.size - 1

    def job(self, n: int) -> JobUnits:
        """Job ``n``'s values (``first <= n < stop``)."""
        lo, hi = int(self.ptr[n - self.first]), int(self.ptr[n - self.first + 1])
        return JobUnits(self.units[lo:hi], self.capability[lo:hi], self.coef[lo:hi],
                        self.weight[lo:hi])


class ValueReader(Protocol):
    """Reads the per-unit values of consecutive chunks of one :class:`~.types.Jobs`."""

    def read(self, n0: int, n1: int, rows: np.ndarray,
             units: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(capability, coef, weight)`` float64 ``(m,)`` of jobs ``n0 .. n1 - 1`` at their
        layout entries (``rows``: job offset ``n - n0``, ``units``: flat unit)."""
        ...


class Jobs(Protocol):
    """What this module reads of a :class:`~.types.Jobs` (declared here so that ``types`` may
    import this module without a circle)."""

    @property
    def n_jobs(self) -> int: ...
    @property
    def n_instances(self) -> int: ...
    @property
    def n_slots(self) -> int: ...
    @property
    def sizes(self) -> np.ndarray: ...
    @property
    def values(self) -> UnitValues: ...
    @property
    def arrival(self) -> np.ndarray: ...
    @property
    def deadline(self) -> np.ndarray: ...
    @property
    def allowed(self) -> np.ndarray: ...


class UnitValues(Protocol):
    """Where a :class:`~.types.Jobs`' per-unit values come from (picklable)."""

    def dense(self, jobs: Jobs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The whole ``(N, R, T)`` float64 arrays ``(capability, coef, weight)``."""
        ...

    def reader(self, jobs: Jobs) -> ValueReader:
        """A fresh reader at job 0 (a reader may need its chunks in arrival order)."""
        ...


@dataclass(frozen=True, eq=False)
class DenseValues:
    """Per-unit values given as whole ``(N, R, T)`` float64 arrays (a user's own jobs)."""

    capability: np.ndarray
    coef: np.ndarray
    weight: np.ndarray

    def dense(self, jobs: Jobs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The arrays themselves."""
        return self.capability, self.coef, self.weight

    def reader(self, jobs: Jobs) -> DenseValues:
        """Itself: it reads any chunk in any order."""
        return self

    def read(self, n0: int, n1: int, rows: np.ndarray,
             units: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The arrays at the entries (a gather)."""
        N = self.capability.shape[0]
        cap, coef, weight = (np.asarray(a).reshape(N, -1)[n0 + rows, units]
                             for a in (self.capability, self.coef, self.weight))
        return cap, coef, weight


class JobRows:
    """A cursor over a :class:`~.types.Jobs`' chunks (see the module docstring): ``chunk(n)``
    is the chunk holding job ``n``, built on demand in arrival order; the last chunk built is
    kept, so an episode that fits one chunk is built once. Going back to an earlier chunk
    builds again from job 0 (the generator's streams are read in order).

    Args:
        jobs: the jobs.
        max_entries, max_draws: chunk limits (:data:`CHUNK_ENTRIES`, :data:`CHUNK_DRAWS`).
    """

    def __init__(self, jobs: Jobs, max_entries: int = CHUNK_ENTRIES,
                 max_draws: int = CHUNK_DRAWS) -> None:
        self.jobs = jobs
        #: job boundaries of the chunks ``[0, ..., N]`` (just ``[0]`` without jobs)
        self.bounds = chunk_bounds(jobs.sizes, jobs.n_instances * jobs.n_slots,
                                   int(max_entries), int(max_draws)) if jobs.n_jobs else \
            np.zeros(1, dtype=np.int64)
        self._reader: ValueReader | None = None
        self._next = 0  # index of the next chunk the reader can build without restarting
        self._chunk: JobChunk | None = None

    @property
    def n_chunks(self) -> int:
        """Number of chunks (0 without jobs)."""
        return int(self.bounds.size - 1)

    def chunk(self, n: int) -> JobChunk:
        """The chunk holding job ``n`` (``0 <= n < N``)."""
        c = self._chunk
        if c is not None and c.first <= n < c.stop:
            return c
        if not 0 <= n < self.jobs.n_jobs:
            raise IndexError(f"job {n} is out of range: the episode has {self.jobs.n_jobs} jobs")
        return self._build(int(np.searchsorted(self.bounds, n, side="right")) - 1)

    def __iter__(self) -> Iterator[JobChunk]:
        """Every chunk in order (the last one stays current)."""
        for i in range(self.n_chunks):
            c = self._chunk
            yield c if c is not None and c.first == self.bounds[i] else self._build(i)

    def _build(self, i: int) -> JobChunk:
        jobs = self.jobs
        if self._reader is None or i < self._next:
            self._reader = jobs.values.reader(jobs)
        n0, n1 = int(self.bounds[i]), int(self.bounds[i + 1])
        m = int(jobs.sizes[n0:n1].sum())
        ptr = np.empty(n1 - n0 + 1, dtype=np.int64)
        units = np.empty(m, dtype=np.int64)
        rows = np.empty(m, dtype=np.int64)
        layout_into(jobs.arrival, jobs.deadline, jobs.allowed, n0, n1, jobs.n_slots, ptr,
                    units, rows)
        cap, coef, weight = self._reader.read(n0, n1, rows, units)
        # writable arrays (the cursor's own; the kernels' one array type): Jobs.job gives
        # read-only views of them
        self._chunk = JobChunk(n0, ptr, units, cap, coef, weight)
        self._next = i + 1
        return self._chunk

    def table(self) -> JobChunk:
        """One chunk of every job (the chunks concatenated): ``Σ_n |ℛ_n|`` entries."""
        parts = list(self)
        if len(parts) == 1:
            return parts[0]
        if not parts:
            e = np.zeros(0)
            return JobChunk(0, np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64), e, e, e)
        sizes = self.jobs.sizes
        ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        return JobChunk(0, ptr, *(np.concatenate([getattr(p, k) for p in parts])
                                  for k in ("units", "capability", "coef", "weight")))
