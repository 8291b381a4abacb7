"""Readers for Alibaba cluster traces, all returning one :class:`Trace` in common units.

Supported inputs (a path to a ``.csv`` or ``.csv.gz`` file each):

=====================  ==========================================  ===============================
reader                 files                                       header
=====================  ==========================================  ===============================
:func:`load_sample`    the derived gpu-v2023 sample shipped here   yes
:func:`load_gpu_v2023` ``openb_node_list_*.csv``,                  yes (upstream files have one)
                       ``openb_pod_list_*.csv``
:func:`load_gpu_v2020` ``pai_machine_spec.csv``,                   optional: upstream files have
                       ``pai_task_table.csv``                      none; columns then in the
                                                                   documented order
:func:`load_v2018`     ``machine_meta.csv``, ``batch_task.csv``    optional, as for v2020
=====================  ==========================================  ===============================

Common units of :class:`Trace` (column -> unit conversions):

============  ====================  ======================  ===============  ==================
quantity      gpu-v2023             gpu-v2020               v2018            unit in ``Trace``
============  ====================  ======================  ===============  ==================
node CPU      ``cpu_milli`` / 1000  ``cap_cpu``             ``cpu_num``      cores
node memory   ``memory_mib``/1024   ``cap_mem``             ``mem_size`` x   GB (v2023: GiB)
                                                            ``mem_gb_per_unit``
node GPUs     ``gpu``               ``cap_gpu``             0                GPUs
GPU model     ``model``             ``gpu_type`` (if        ``''``           str, ``''`` = none
                                    ``cap_gpu`` > 0)
task time     ``creation_time``     ``start_time``          ``start_time``   s
task CPU      ``cpu_milli`` / 1000  ``plan_cpu`` / 100      ``plan_cpu``/100 cores
task memory   ``memory_mib``/1024   ``plan_mem``            ``plan_mem`` x   GB
                                                            ``mem_gb_per_unit``
task GPUs     ``num_gpu``; if it    ``plan_gpu`` / 100      0                GPUs (fractional
              is 1: ``gpu_milli``   (empty = 0)                              = GPU sharing)
              / 1000
GPU models    ``gpu_spec`` (``A|B``)  ``gpu_type`` (one;    ``''``           ``'A|B'`` sorted,
allowed                             ``''``/``MISC``: any)                    ``''`` = any
duration      ``deletion_time`` -   ``end_time`` -          ``end_time`` -   s (NaN unknown)
              ``creation_time``     ``start_time``          ``start_time``
============  ====================  ======================  ===============  ==================

Rows are dropped (and counted in :attr:`Trace.notes`) when a filter excludes them (``phases``,
``statuses``) or when a needed number is *empty* (e.g. v2020 tasks that never started have no
``start_time``). Anything else that is wrong raises :class:`TraceFormatError` (a ``ValueError``)
naming the file, the column and, for a value, the line: a missing column, a value that is not a
number, a value outside its unit's range (e.g. ``gpu_milli`` > 1000, v2018 ``mem_size`` > 100, a
negative request, a size above :data:`MAX_CORES` / :data:`MAX_MEMORY_GB` / :data:`MAX_GPUS` or a
time beyond :data:`MAX_SECONDS`), or no rows left after filtering. A byte-order mark at the start
of a file (as spreadsheet programs write) is skipped.

A trace path must name a regular file (a symlink to one is fine; ``/dev/zero``, a FIFO or a
directory is refused) of at most :data:`MAX_TRACE_BYTES` bytes (16 GiB, on disk and, for a
``.gz`` file, decompressed too), with no line longer than :data:`MAX_LINE_CHARS` characters
(1 MiB): each limit is one :class:`TraceFormatError` line, so a hostile or mistaken file cannot
exhaust memory. Files are streamed row by row and only the needed columns are kept, so the full
traces (millions of rows) can be read, if slowly: pure Python, about 23 s per million
``pai_task_table`` rows on a shared 2-core machine (mapping them with ``build_trace_problem``
took another 13 s).
"""

from __future__ import annotations

import csv
import gzip
import io
import math
import os
import stat
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

from schedgym.core.arrays import readonly as _readonly

__all__ = [
    "Trace",
    "TraceFormatError",
    "load_sample",
    "load_gpu_v2023",
    "load_gpu_v2020",
    "load_v2018",
    "SAMPLE_FILES",
    "MAX_TRACE_BYTES",
    "MAX_LINE_CHARS",
    "MAX_CORES",
    "MAX_MEMORY_GB",
    "MAX_GPUS",
    "MAX_SECONDS",
    "V2020_MACHINE_COLUMNS",
    "V2020_TASK_COLUMNS",
    "V2018_MACHINE_COLUMNS",
    "V2018_TASK_COLUMNS",
]

#: Files of the shipped sample (package ``schedgym.data``), made by
#: ``scripts/make_alibaba_sample.py``.
SAMPLE_FILES: tuple[str, str] = ("alibaba_gpu_v2023_nodes.csv.gz", "alibaba_gpu_v2023_pods.csv.gz")
#: Column order of the header-less upstream gpu-v2020 files (cluster-trace-gpu-v2020 README).
V2020_MACHINE_COLUMNS = ("machine", "gpu_type", "cap_cpu", "cap_mem", "cap_gpu")
V2020_TASK_COLUMNS = ("job_name", "task_name", "inst_num", "status", "start_time", "end_time",
                      "plan_cpu", "plan_mem", "plan_gpu", "gpu_type")
#: Column order of the header-less upstream v2018 files (cluster-trace-v2018 schema.md).
V2018_MACHINE_COLUMNS = ("machine_id", "time_stamp", "failure_domain_1", "failure_domain_2",
                         "cpu_num", "mem_size", "status")
V2018_TASK_COLUMNS = ("task_name", "instance_num", "job_name", "task_type", "status", "start_time",
                      "end_time", "plan_cpu", "plan_mem")

#: Largest trace file read, in bytes (on disk, and decompressed for a ``.gz`` file): 16 GiB, far
#: above the largest upstream file, below what a machine running the env could hold anyway.
MAX_TRACE_BYTES = 16 * 2**30
#: Longest line of a trace file, in characters (upstream lines are under 1 KiB).
MAX_LINE_CHARS = 2**20
#: Largest plausible size of one node or one task, per resource: 100,000 cores, 10^7 GB of
#: memory (10 PB), 10,000 GPUs. Far above any real machine; a larger value is a wrong unit or a
#: damaged file, and left in it would overflow the mapping's arithmetic.
MAX_CORES, MAX_MEMORY_GB, MAX_GPUS = 1e5, 1e7, 1e4
#: Largest plausible trace time, in seconds either side of 0 (about 3,170 years): the slot
#: arithmetic (int64 slot numbers) stays exact far beyond it.
MAX_SECONDS = 1e11

_NAN_TOKENS = frozenset({"", "nan", "NaN", "NAN", "null", "NULL", "None", "\\N"})


class TraceFormatError(ValueError):
    """A trace file cannot be read: the message names the file, the column and the line.

    Every reader error is one of these (never a raw ``zlib.error``, ``IsADirectoryError`` or a
    silently shifted row), so the command line reports it as one line.
    """


#: What reading a (possibly gzipped) CSV file raises for a damaged file.
_READ_ERRORS = (OSError, EOFError, UnicodeDecodeError, csv.Error, zlib.error)


@dataclass(frozen=True, eq=False)
class Trace:
    """Nodes and tasks of a cluster trace in common units (read-only numpy arrays).

    Attributes:
        node_cpu: float64 ``(M,)`` CPU cores of each node.
        node_mem: float64 ``(M,)`` memory of each node, GB.
        node_gpu: float64 ``(M,)`` GPUs of each node.
        node_model: str ``(M,)`` GPU model of each node, ``''`` for none.
        task_time: float64 ``(N,)`` arrival time of each task (creation / start), seconds.
        task_cpu: float64 ``(N,)`` CPU request, cores.
        task_mem: float64 ``(N,)`` memory request, GB.
        task_gpu: float64 ``(N,)`` GPU request, GPUs (``0 < g < 1`` = a share of one GPU).
        task_gpu_spec: str ``(N,)`` allowed GPU models, sorted and ``|``-joined; ``''`` = any.
        task_duration: float64 ``(N,)`` run time in seconds (NaN where unknown).
        source: where the data came from (format and files).
        notes: what the reader dropped or assumed, one line each.
    """

    node_cpu: np.ndarray
    node_mem: np.ndarray
    node_gpu: np.ndarray
    node_model: np.ndarray
    task_time: np.ndarray
    task_cpu: np.ndarray
    task_mem: np.ndarray
    task_gpu: np.ndarray
    task_gpu_spec: np.ndarray
    task_duration: np.ndarray
    source: str = ""
    notes: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        m = len(self.node_cpu)
        n = len(self.task_time)
        for name in ("node_cpu", "node_mem", "node_gpu", "node_model"):
            arr = np.asarray(getattr(self, name))
            if arr.shape != (m,):
                raise ValueError(f"{name} has shape {arr.shape}: must have shape ({m},)")
        for name in ("task_time", "task_cpu", "task_mem", "task_gpu", "task_gpu_spec",
                     "task_duration"):
            arr = np.asarray(getattr(self, name))
            if arr.shape != (n,):
                raise ValueError(f"{name} has shape {arr.shape}: must have shape ({n},)")
        for name in ("node_cpu", "node_mem", "node_gpu", "task_time", "task_cpu", "task_mem",
                     "task_gpu", "task_duration"):
            object.__setattr__(self, name,
                               _readonly(np.asarray(getattr(self, name), dtype=np.float64)))
        for name in ("node_model", "task_gpu_spec"):
            object.__setattr__(self, name, _readonly(np.asarray(getattr(self, name), dtype=str)
                                                     .reshape(-1)))
        object.__setattr__(self, "notes", tuple(self.notes))

    @property
    def n_nodes(self) -> int:
        """``M``, the number of nodes."""
        return int(self.node_cpu.shape[0])

    @property
    def n_tasks(self) -> int:
        """``N``, the number of tasks."""
        return int(self.task_time.shape[0])

    @property
    def node_resources(self) -> np.ndarray:
        """float64 ``(M, 3)``: (cores, GB, GPUs) of every node."""
        return np.stack([self.node_cpu, self.node_mem, self.node_gpu], axis=1)

    @property
    def task_requests(self) -> np.ndarray:
        """float64 ``(N, 3)``: (cores, GB, GPUs) requested by every task."""
        return np.stack([self.task_cpu, self.task_mem, self.task_gpu], axis=1)

    def summary(self) -> str:
        """A few lines: sizes, time span, GPU models."""
        models, counts = np.unique(self.node_model[self.node_gpu > 0], return_counts=True)
        span = (self.task_time.max() - self.task_time.min()) / 86400 if self.n_tasks else 0.0
        return (f"{self.source}\n{self.n_nodes} nodes ({int((self.node_gpu > 0).sum())} with GPUs: "
                + ", ".join(f"{m or '?'} x{c}" for m, c in zip(models, counts, strict=True))
                + f"); {self.n_tasks} tasks over {span:.1f} days, "
                f"{int((self.task_gpu > 0).sum())} requesting GPUs, "
                f"{int((self.task_gpu_spec != '').sum())} with GPU-model constraints")


# ----------------------------------------------------------------- CSV reading
def _display(src: Any) -> str:
    return os.fspath(src) if isinstance(src, (str, os.PathLike)) else str(src)


def _open_text(src: Any) -> io.TextIOBase:
    name = _display(src)
    gz = name.endswith(".gz")
    if isinstance(src, (str, os.PathLike)):
        if not os.path.exists(src):
            raise TraceFormatError(f"{name}: file not found")
        if os.path.isdir(src):
            raise TraceFormatError(f"{name}: is a directory, not a CSV file (give the file "
                                   "inside it)")
        info = os.stat(src)  # follows a symlink: what is read is the file it points to
        if not stat.S_ISREG(info.st_mode):
            raise TraceFormatError(f"{name}: not a regular file (a device, FIFO or socket "
                                   "cannot be a trace)")
        if info.st_size > MAX_TRACE_BYTES:
            raise TraceFormatError(f"{name}: {info.st_size:,} bytes, above the limit of "
                                   f"{MAX_TRACE_BYTES:,} bytes (MAX_TRACE_BYTES) of a trace file")
        # gzip.open owns (and closes) the file it opens, unlike GzipFile(fileobj=...)
        raw: Any = gzip.open(src, "rb") if gz else open(src, "rb")  # noqa: SIM115 - closed by the caller via the wrapper
    else:  # importlib.resources Traversable (the shipped sample): small, read into memory
        with src.open("rb") as fh:
            data = fh.read()
        if gz:
            try:
                data = gzip.decompress(data)
            except (OSError, EOFError, zlib.error) as exc:
                raise TraceFormatError(f"{name}: cannot be decompressed ({exc})") from None
        raw = io.BytesIO(data)
    # utf-8-sig: a byte-order mark (as spreadsheet programs write) is not part of the header
    return io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")


def _capped_lines(f: io.TextIOBase, name: str) -> Iterator[str]:
    """The lines of ``f``, refusing a line above :data:`MAX_LINE_CHARS` characters or a file
    above :data:`MAX_TRACE_BYTES` characters in all (decompressed), before either is held in
    memory (a newline-free file would otherwise be read whole as one line)."""
    total = 0
    line_no = 0
    while True:
        line = f.readline(MAX_LINE_CHARS + 1)
        if not line:
            return
        line_no += 1
        if len(line) > MAX_LINE_CHARS:
            raise TraceFormatError(f"{name}: line {line_no} is longer than {MAX_LINE_CHARS:,} "
                                   "characters (MAX_LINE_CHARS): not a trace CSV file")
        total += len(line)
        if total > MAX_TRACE_BYTES:
            raise TraceFormatError(f"{name}: more than {MAX_TRACE_BYTES:,} characters "
                                   "(MAX_TRACE_BYTES) once decompressed")
        yield line


def _rows(
    src: Any, needed: Sequence[str], schema: Sequence[str] | None, optional: Sequence[str] = ()
) -> Iterator[tuple[int, dict[str, str]]]:
    """Yield ``(line number, {column: text})`` for the ``needed`` (+ present ``optional``) columns.

    A first row containing any name of ``schema`` (or any needed name) is a header; otherwise
    the file must be header-less with the columns in ``schema`` order (``schema=None``: header
    required).
    """
    name = _display(src)
    with _open_text(src) as f:
        reader = csv.reader(_capped_lines(f, name))
        try:
            first = next(reader)
        except StopIteration:
            raise TraceFormatError(f"{name}: the file is empty (no header, no rows)") from None
        except _READ_ERRORS as exc:
            raise TraceFormatError(f"{name}: cannot be read as CSV text at line 1 "
                                   f"({type(exc).__name__}: {exc})") from None
        cells = [c.strip() for c in first]
        columns, pending, line0 = _layout(name, cells, needed, schema, optional)
        idx = {c: columns.index(c) for c in (*needed, *optional) if c in columns}
        width = len(cells)  # every row has exactly as many fields as the first line

        def pick(row: list[str], line: int) -> dict[str, str]:
            if len(row) != width:
                raise TraceFormatError(_width_message(name, line, len(row), width, columns))
            return {c: row[i].strip() for c, i in idx.items()}

        if pending is not None:
            yield 1, pick(pending, 1)
        line = line0 - 1
        try:
            for k, row in enumerate(reader):
                line = line0 + k
                if not row:
                    continue
                yield line, pick(row, line)
        except _READ_ERRORS as exc:
            raise TraceFormatError(f"{name}: cannot be read as CSV text at line {line + 1} "
                                   f"({type(exc).__name__}: {exc})") from None


def _layout(name: str, cells: list[str], needed: Sequence[str], schema: Sequence[str] | None,
            optional: Sequence[str]) -> tuple[list[str], list[str] | None, int]:
    """``(column names, first data row or None, line number of the next row)`` from the first
    line: a header if it names a known column, else (with ``schema``) a header-less data row."""
    known = set(schema or ()) | set(needed) | set(optional)
    if any(c in known for c in cells):
        columns, pending, line0 = cells, None, 2
    elif schema is None:
        raise TraceFormatError(
            f"{name}: line 1 is not a header naming the columns "
            f"{', '.join(needed)} (got {', '.join(cells[:8])})"
        )
    else:
        if len(cells) < len(schema):
            raise TraceFormatError(
                f"{name}: no header and {len(cells)} fields per row: a header-less file must "
                f"have the {len(schema)} columns {', '.join(schema)} in this order"
            )
        columns, pending, line0 = list(schema), cells, 2
    for col in needed:
        if col not in columns:
            raise TraceFormatError(
                f"{name}: missing column {col!r} (the file has: {', '.join(columns)})"
            )
    return columns, pending, line0


def _width_message(name: str, line: int, got: int, width: int, columns: Sequence[str]) -> str:
    """A row with a missing or extra field: which columns would shift."""
    first = "the header" if len(columns) == width else "line 1"
    span = f"columns {columns[0]!r}..{columns[-1]!r}"
    what = "a field is missing" if got < width else "extra fields"
    return (f"{name}: line {line}, {span}: the row has {got} fields, {first} has {width}: "
            f"{what} (the columns after it would shift)")


class _Num:
    """Parse one numeric column with a unit range check."""

    def __init__(self, file: str, column: str, low: float | None = 0.0,
                 high: float | None = None, unit: str = "") -> None:
        self.file, self.column, self.low, self.high, self.unit = file, column, low, high, unit

    def __call__(self, text: str, line: int) -> float:
        """The value, or NaN for an empty / NaN cell; raises on anything else that is wrong."""
        if text in _NAN_TOKENS:
            return math.nan
        try:
            v = float(text)
        except ValueError:
            raise TraceFormatError(
                f"{self.file}: column {self.column!r}, line {line}: value {text!r} is not a number"
            ) from None
        if not math.isfinite(v):
            raise TraceFormatError(
                f"{self.file}: column {self.column!r}, line {line}: value {text!r} is not finite"
            )
        if (self.low is not None and v < self.low) or (self.high is not None and v > self.high):
            lo = "-inf" if self.low is None else f"{self.low:g}"
            hi = "inf" if self.high is None else f"{self.high:g}"
            raise TraceFormatError(
                f"{self.file}: column {self.column!r}, line {line}: value {text!r} is outside "
                f"[{lo}, {hi}]" + (f" ({self.unit})" if self.unit else "")
                + ": wrong unit or wrong file?"
            )
        return v


def _canon_spec(text: str, ignore: Iterable[str] = ()) -> str:
    ign = set(ignore)
    models = {m.strip() for m in text.split("|")}
    models -= {"", "nan", "NaN"} | ign
    return "|".join(sorted(models))


def _filter_check(file: str, column: str, kept: int, allowed: Any, seen: set[str]) -> None:
    if kept == 0:
        shown = ", ".join(sorted(seen)[:10]) or "none"
        raise TraceFormatError(
            f"{file}: no rows left after filtering on column {column!r} (kept values "
            f"{tuple(allowed)!r}; values in the file: {shown})"
        )


def _empty_check(file: str, kept: int, what: str) -> None:
    if kept == 0:
        raise TraceFormatError(f"{file}: no rows left after filtering ({what})")


# ------------------------------------------------------------------- gpu-v2023
def _read_v2023_nodes(src: Any) -> dict[str, Any]:
    name = _display(src)
    cpu = _Num(name, "cpu_milli", high=MAX_CORES * 1000, unit="milli-cores")
    mem = _Num(name, "memory_mib", high=MAX_MEMORY_GB * 1024, unit="MiB")
    gpu = _Num(name, "gpu", high=MAX_GPUS, unit="GPU count")
    out: dict[str, list] = {"cpu": [], "mem": [], "gpu": [], "model": []}
    dropped = 0
    for line, r in _rows(src, ("cpu_milli", "memory_mib", "gpu"), None, ("model",)):
        c, m, g = cpu(r["cpu_milli"], line), mem(r["memory_mib"], line), gpu(r["gpu"], line)
        if math.isnan(c) or math.isnan(m):
            dropped += 1
            continue
        g = 0.0 if math.isnan(g) else g
        model = r.get("model", "")
        model = "" if model in _NAN_TOKENS or g == 0 else model
        out["cpu"].append(c / 1000.0)
        out["mem"].append(m / 1024.0)
        out["gpu"].append(g)
        out["model"].append(model)
    _empty_check(name, len(out["cpu"]), "every row lacks cpu_milli or memory_mib")
    out["notes"] = [f"{name}: {dropped} node rows without cpu_milli/memory_mib dropped"] \
        if dropped else []
    return out


def _read_v2023_pods(src: Any, phases: Sequence[str] | None, qos: Sequence[str] | None,
                     constraints: bool) -> dict[str, Any]:
    name = _display(src)
    cpu = _Num(name, "cpu_milli", high=MAX_CORES * 1000, unit="milli-cores")
    mem = _Num(name, "memory_mib", high=MAX_MEMORY_GB * 1024, unit="MiB")
    ngpu = _Num(name, "num_gpu", high=MAX_GPUS, unit="GPU count")
    mgpu = _Num(name, "gpu_milli", high=1000.0, unit="milli-GPUs of one GPU")
    ctime = _Num(name, "creation_time", low=-MAX_SECONDS, high=MAX_SECONDS, unit="s")
    dtime = _Num(name, "deletion_time", low=-MAX_SECONDS, high=MAX_SECONDS, unit="s")
    needed = ["cpu_milli", "memory_mib", "num_gpu", "creation_time"]
    if phases is not None:
        needed.append("pod_phase")
    if qos is not None:
        needed.append("qos")
    out: dict[str, list] = {k: [] for k in ("time", "cpu", "mem", "gpu", "spec", "dur")}
    seen_phase: set[str] = set()
    seen_qos: set[str] = set()
    n_rows = dropped_empty = passed_phase = passed_qos = 0
    for line, r in _rows(src, needed, None, ("gpu_milli", "gpu_spec", "deletion_time")):
        n_rows += 1
        if phases is not None:
            seen_phase.add(r["pod_phase"])
            if r["pod_phase"] not in phases:
                continue
        passed_phase += 1
        if qos is not None:
            seen_qos.add(r["qos"])
            if r["qos"] not in qos:
                continue
        passed_qos += 1
        t, c, m, n = (ctime(r["creation_time"], line), cpu(r["cpu_milli"], line),
                      mem(r["memory_mib"], line), ngpu(r["num_gpu"], line))
        if math.isnan(t) or math.isnan(c) or math.isnan(m):
            dropped_empty += 1
            continue
        n = 0.0 if math.isnan(n) else n
        g = n
        if n == 1.0 and "gpu_milli" in r:
            share = mgpu(r["gpu_milli"], line)
            if not math.isnan(share) and share > 0:
                g = share / 1000.0
        d = dtime(r["deletion_time"], line) if "deletion_time" in r else math.nan
        out["time"].append(t)
        out["cpu"].append(c / 1000.0)
        out["mem"].append(m / 1024.0)
        out["gpu"].append(g)
        out["spec"].append(_canon_spec(r.get("gpu_spec", "")) if constraints and g > 0 else "")
        out["dur"].append(d - t)
    if phases is not None:
        _filter_check(name, "pod_phase", passed_phase, phases, seen_phase)
    if qos is not None:
        _filter_check(name, "qos", passed_qos, qos, seen_qos)
    _empty_check(name, len(out["time"]), "every row lacks creation_time, cpu_milli or memory_mib")
    notes = []
    if dropped_empty:
        notes.append(f"{name}: {dropped_empty} rows with an empty number dropped")
    if phases is not None or qos is not None:
        notes.append(f"{name}: kept {len(out['time'])} of {n_rows} rows "
                     f"(pod_phase in {phases}, qos in {qos})")
    out["notes"] = notes
    return out


def _make_trace(nodes: dict[str, Any], tasks: dict[str, Any], source: str) -> Trace:
    return Trace(
        node_cpu=np.asarray(nodes["cpu"]), node_mem=np.asarray(nodes["mem"]),
        node_gpu=np.asarray(nodes["gpu"]),
        node_model=np.asarray(nodes["model"], dtype=str).reshape(-1),
        task_time=np.asarray(tasks["time"]), task_cpu=np.asarray(tasks["cpu"]),
        task_mem=np.asarray(tasks["mem"]), task_gpu=np.asarray(tasks["gpu"]),
        task_gpu_spec=np.asarray(tasks["spec"], dtype=str).reshape(-1),
        task_duration=np.asarray(tasks["dur"]),
        source=source, notes=(*nodes["notes"], *tasks["notes"]),
    )


def load_gpu_v2023(
    node_file: str | os.PathLike[str],
    pod_file: str | os.PathLike[str],
    *,
    phases: Sequence[str] | None = None,
    qos: Sequence[str] | None = None,
    constraints: bool = True,
) -> Trace:
    """Read Alibaba cluster-trace-gpu-v2023 files (``csv/openb_*.csv``, header required).

    Args:
        node_file: a node list, e.g. ``openb_node_list_all_node.csv`` (columns ``cpu_milli,
            memory_mib, gpu, model``).
        pod_file: a pod list, e.g. ``openb_pod_list_gpuspec33.csv`` (columns ``cpu_milli,
            memory_mib, num_gpu, gpu_milli, creation_time``; optional ``gpu_spec``,
            ``deletion_time``; ``pod_phase`` / ``qos`` when filtering on them).
        phases: keep only pods whose ``pod_phase`` is listed (``None``: all, the default: a pod
            that failed or is still pending was still submitted, i.e. an arrival).
        qos: keep only pods whose ``qos`` is listed (``None``: all).
        constraints: read ``gpu_spec`` (``False``: every task unconstrained, as in
            ``openb_pod_list_default.csv``).
    """
    nodes = _read_v2023_nodes(node_file)
    tasks = _read_v2023_pods(pod_file, phases, qos, constraints)
    return _make_trace(nodes, tasks, f"Alibaba cluster-trace-gpu-v2023: {_display(node_file)}, "
                                     f"{_display(pod_file)}")


@lru_cache(maxsize=4)
def load_sample(constraints: bool = True) -> Trace:
    """The derived gpu-v2023 sample shipped in ``schedgym/data`` (1,523 nodes, 8,126 pods).

    See ``schedgym/data/NOTICE.md`` for source, terms and the derivation. Cached: every call
    returns the same immutable :class:`Trace`.
    """
    base = resources.files("schedgym.data")
    nodes = _read_v2023_nodes(base.joinpath(SAMPLE_FILES[0]))
    tasks = _read_v2023_pods(base.joinpath(SAMPLE_FILES[1]), None, None, constraints)
    return _make_trace(nodes, tasks, "Alibaba cluster-trace-gpu-v2023 (schedgym sample: "
                                     "openb_node_list_all_node + openb_pod_list_gpuspec33)")


def _read_batch_tasks(
    task_file: Any,
    schema: Sequence[str],
    statuses: Sequence[str] | None,
    *,
    mem_high: float | None,
    mem_unit: str,
    mem_scale: float,
    with_gpu: bool,
    constraints: bool,
) -> dict[str, list]:
    """Task rows of a v2020 ``pai_task_table`` or v2018 ``batch_task`` file (same layout:
    ``start_time``, ``end_time``, ``status``, ``plan_cpu`` in percent of a core, ``plan_mem``;
    v2020 adds ``plan_gpu`` in percent of a GPU and ``gpu_type``). Rows whose ``status`` is not
    in ``statuses`` are skipped; rows without start time, CPU or memory are dropped and counted.
    Memory is multiplied by ``mem_scale`` to get GB."""
    tname = _display(task_file)
    pcpu = _Num(tname, "plan_cpu", high=MAX_CORES * 100,
                unit="percent of a core (100 = 1 core)")
    pmem = _Num(tname, "plan_mem", high=mem_high, unit=mem_unit)
    pgpu = _Num(tname, "plan_gpu", high=MAX_GPUS * 100, unit="percent of a GPU (100 = 1 GPU)")
    st = _Num(tname, "start_time", low=-MAX_SECONDS, high=MAX_SECONDS, unit="s")
    et = _Num(tname, "end_time", low=-MAX_SECONDS, high=MAX_SECONDS, unit="s")
    tasks: dict[str, list] = {k: [] for k in ("time", "cpu", "mem", "gpu", "spec", "dur")}
    needed = ["start_time", "plan_cpu", "plan_mem"] + (["status"] if statuses is not None else [])
    optional = ("end_time", "plan_gpu", "gpu_type") if with_gpu else ("end_time",)
    seen: set[str] = set()
    n_rows = passed = dropped = 0
    for line, r in _rows(task_file, needed, schema, optional):
        n_rows += 1
        if statuses is not None:
            seen.add(r["status"])
            if r["status"] not in statuses:
                continue
        passed += 1
        t, c, m = st(r["start_time"], line), pcpu(r["plan_cpu"], line), pmem(r["plan_mem"], line)
        g = pgpu(r["plan_gpu"], line) if with_gpu and "plan_gpu" in r else 0.0
        if math.isnan(t) or math.isnan(c) or math.isnan(m):
            dropped += 1
            continue
        g = 0.0 if math.isnan(g) else g / 100.0
        e = et(r["end_time"], line) if "end_time" in r else math.nan
        tasks["time"].append(t)
        tasks["cpu"].append(c / 100.0)
        tasks["mem"].append(m * mem_scale)
        tasks["gpu"].append(g)
        tasks["spec"].append(_canon_spec(r.get("gpu_type", ""), ("MISC",))
                             if constraints and g > 0 else "")
        tasks["dur"].append(e - t)
    if statuses is not None:
        _filter_check(tname, "status", passed, statuses, seen)
    _empty_check(tname, len(tasks["time"]), "every row lacks start_time, plan_cpu or plan_mem")
    tasks["notes"] = [f"{tname}: kept {len(tasks['time'])} of {n_rows} task rows (status in "
                      f"{statuses}; {dropped} without start_time/plan_cpu/plan_mem dropped)"]
    return tasks


# ------------------------------------------------------------------- gpu-v2020
def load_gpu_v2020(
    machine_file: str | os.PathLike[str],
    task_file: str | os.PathLike[str],
    *,
    statuses: Sequence[str] | None = ("Terminated",),
    constraints: bool = True,
) -> Trace:
    """Read Alibaba cluster-trace-gpu-v2020 ``pai_machine_spec.csv`` and ``pai_task_table.csv``.

    The upstream files have no header: columns are then taken in the documented order
    (:data:`V2020_MACHINE_COLUMNS`, :data:`V2020_TASK_COLUMNS`); a file with a header naming them
    also works. Tasks without ``start_time`` (never started) or without ``plan_cpu``/``plan_mem``
    are dropped; an empty ``plan_gpu`` is 0. A task's ``gpu_type`` other than ``''``/``MISC``
    constrains it to machines of that ``gpu_type`` (``constraints=False`` ignores it).

    Args:
        statuses: keep only tasks whose ``status`` is listed (default ``("Terminated",)``, the
            tasks that completed; ``None``: all).
    """
    mname, tname = _display(machine_file), _display(task_file)
    cpu = _Num(mname, "cap_cpu", high=MAX_CORES, unit="cores")
    mem = _Num(mname, "cap_mem", high=MAX_MEMORY_GB, unit="GB")
    gpu = _Num(mname, "cap_gpu", high=MAX_GPUS, unit="GPU count")
    nodes: dict[str, list] = {"cpu": [], "mem": [], "gpu": [], "model": []}
    nd = 0
    for line, r in _rows(machine_file, ("cap_cpu", "cap_mem", "cap_gpu"), V2020_MACHINE_COLUMNS,
                         ("gpu_type",)):
        c, m, g = cpu(r["cap_cpu"], line), mem(r["cap_mem"], line), gpu(r["cap_gpu"], line)
        if math.isnan(c) or math.isnan(m):
            nd += 1
            continue
        g = 0.0 if math.isnan(g) else g
        model = r.get("gpu_type", "")
        nodes["cpu"].append(c)
        nodes["mem"].append(m)
        nodes["gpu"].append(g)
        nodes["model"].append("" if g == 0 or model in _NAN_TOKENS else model)
    _empty_check(mname, len(nodes["cpu"]), "every row lacks cap_cpu or cap_mem")
    nodes["notes"] = [f"{mname}: {nd} machine rows without cap_cpu/cap_mem dropped"] if nd else []

    tasks = _read_batch_tasks(task_file, V2020_TASK_COLUMNS, statuses, mem_high=MAX_MEMORY_GB,
                              mem_unit="GB", mem_scale=1.0, with_gpu=True,
                              constraints=constraints)
    return _make_trace(nodes, tasks, f"Alibaba cluster-trace-gpu-v2020: {mname}, {tname}")


# ---------------------------------------------------------------------- v2018
def load_v2018(
    machine_file: str | os.PathLike[str],
    task_file: str | os.PathLike[str],
    *,
    mem_gb_per_unit: float = 5.12,
    statuses: Sequence[str] | None = ("Terminated",),
) -> Trace:
    """Read Alibaba cluster-trace-v2018 ``machine_meta.csv`` and ``batch_task.csv``.

    Header-less upstream files use the documented column order (:data:`V2018_MACHINE_COLUMNS`,
    :data:`V2018_TASK_COLUMNS`). ``machine_meta`` has one row per machine *event*: the first row
    of each ``machine_id`` gives its ``cpu_num`` and ``mem_size``. Memory is normalised to
    [0, 100] in this trace; ``mem_gb_per_unit`` converts it to GB (default 5.12, i.e. the largest
    machine = 512 GB, docs/spec/ogasched.md §6.2 item 1). There are no GPUs. Tasks without
    ``start_time``, ``plan_cpu`` or ``plan_mem`` are dropped.

    Args:
        statuses: keep only tasks whose ``status`` is listed (default ``("Terminated",)``).
    """
    if not (isinstance(mem_gb_per_unit, (int, float)) and math.isfinite(mem_gb_per_unit)
            and mem_gb_per_unit > 0):
        raise ValueError(f"mem_gb_per_unit={mem_gb_per_unit!r} is invalid: must be a finite "
                         "number > 0")
    mname, tname = _display(machine_file), _display(task_file)
    cpu = _Num(mname, "cpu_num", high=MAX_CORES, unit="cores")
    mem = _Num(mname, "mem_size", high=100.0, unit="normalised memory in [0, 100]")
    nodes: dict[str, list] = {"cpu": [], "mem": [], "gpu": [], "model": []}
    seen_ids: set[str] = set()
    nd = 0
    for line, r in _rows(machine_file, ("cpu_num", "mem_size"), V2018_MACHINE_COLUMNS,
                         ("machine_id",)):
        mid = r.get("machine_id", f"line{line}")
        if mid in seen_ids:
            continue
        c, m = cpu(r["cpu_num"], line), mem(r["mem_size"], line)
        if math.isnan(c) or math.isnan(m):
            nd += 1
            continue
        seen_ids.add(mid)
        nodes["cpu"].append(c)
        nodes["mem"].append(m * mem_gb_per_unit)
        nodes["gpu"].append(0.0)
        nodes["model"].append("")
    _empty_check(mname, len(nodes["cpu"]), "every row lacks cpu_num or mem_size")
    nodes["notes"] = [f"{mname}: {len(nodes['cpu'])} machines (first row per machine_id); "
                      f"{nd} rows without cpu_num/mem_size skipped"]

    tasks = _read_batch_tasks(task_file, V2018_TASK_COLUMNS, statuses, mem_high=100.0,
                              mem_unit="normalised memory in [0, 100]",
                              mem_scale=mem_gb_per_unit, with_gpu=False, constraints=False)
    return _make_trace(nodes, tasks, f"Alibaba cluster-trace-v2018: {mname}, {tname}")

