"""The result store of one ``compare`` / ``reproduce`` run: nothing finished is ever lost.

A run folder holds

- ``meta.json``: everything needed to re-run or resume the run (command, env id, scenario,
  overrides, agents, seeds, instance seeds, settings: a
  :class:`~schedgym.train.runspec.RunSpec`), written once when the folder is created;
- ``episodes.jsonl``: one JSON record per finished task, appended (and flushed to disk) the
  moment the task ends. A record's ``key`` is ``[setting, agent, instance_seed, seed]``
  (``agent`` is ``"@benchmark"`` for the offline benchmark of an episode); ``status`` is
  ``"ok"`` (with ``metrics``, ``steps``, ``decision_ms``, ``wall_s``, the env and agent
  configuration) or ``"error"`` (with ``error``, the exception's one-line text). A later record
  of the same key replaces an earlier one (a resumed run retries failed tasks);
- ``curves/<id>.npy``: the cumulative reward after every step of one episode, float64
  ``(steps,)``, written (to a temporary file, then renamed) *before* its record, so a record
  always has its whole curve;
- ``steps/<id>.npz``: per-step scalars of one episode (only with ``compare --tensorboard``);
- ``.lock``: held (``flock``) by the process writing into the folder, with its process id in
  it for the error message; removed at the end. The kernel releases the lock when its process
  dies, even by ``kill -9``, so a stale ``.lock`` never blocks a resume and two openers can
  never both hold it.

Folders are created with ``os.mkdir`` (atomic): two runs can never share one, and an existing
folder is refused unless the caller resumes or overwrites it.

Reading checks everything against ``meta.json``: a damaged ``meta.json`` is refused with one
line naming it; lines of ``episodes.jsonl`` that are not records of this run (not JSON, not a
record, a key, agent or configuration the run does not have, an ``ok`` record without its
curve file) are ignored, with one warning line on stderr naming the file, how many and the
first of each kind (``--resume`` then plays those episodes again). The last line of a run
killed in the middle of a write is cut short: it is skipped on read, and removed when the
folder is opened for writing, so that a resumed run never appends onto it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from schedgym.train.runspec import RunSpec, RunSpecError
from schedgym.train.tasks import BENCHMARK, plan, task_config

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: an O_EXCL lock file, see _acquire_lock
    fcntl = None  # type: ignore[assignment]

META = "meta.json"
RECORDS = "episodes.jsonl"
LOCK = ".lock"

Key = tuple[str, str, int, int]


class StoreWriteError(ValueError):
    """Writing into the run folder failed (disk full, permissions): a user-facing one-line
    error (a ``ValueError``, so the command line prints it as one line) that says what is kept
    and how to resume."""


def short_hash(obj: Any, n: int = 8) -> str:
    """First ``n`` hex digits of the SHA-1 of ``obj``'s canonical JSON."""
    text = json.dumps(obj, sort_keys=True, default=str)
    return hashlib.sha1(text.encode()).hexdigest()[:n]


def run_folder_name(env_id: str, scenario: str | None, overrides: dict[str, Any],
                    config: Any) -> str:
    """``GainOverhead-v0-paper-default-utility=mixed-1a2b3c4d``: env, scenario, overrides (at
    most 60 characters of them) and a short hash of the whole ``config``."""
    parts = [env_id.split("/")[-1], scenario or "paper-default"]
    parts += [f"{k}={v}" for k, v in sorted(overrides.items())]
    base = re.sub(r"[^A-Za-z0-9_.=\-]+", "_", "-".join(parts))
    if len(base) > 90:
        base = base[:90]
    return f"{base}-{short_hash(config)}"


def episode_id(key: Sequence[Any]) -> str:
    """File-name-safe id of a record key (16 hex digits)."""
    return short_hash(list(key), 16)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _warn(text: str) -> None:
    print(f"schedgym: {text}", file=sys.stderr)


class RunFolderExists(ValueError):
    """The run folder to create is already there (a one-line ``ValueError`` for the user)."""


@dataclass
class RunStore:
    """An open run folder (see the module docstring). Use :meth:`create` or :meth:`open`.

    ``ignored``: ``(line number, why)`` of the lines of ``episodes.jsonl`` that were not taken
    as records of this run when it was opened."""

    path: Path
    spec: RunSpec
    _records: dict[Key, dict[str, Any]] = field(default_factory=dict)
    _lock_fd: int | None = None
    ignored: list[tuple[int, str]] = field(default_factory=list)

    # -- opening ---------------------------------------------------------------------------
    @classmethod
    def create(cls, path: str | Path, spec: RunSpec, overwrite: bool = False
               ) -> RunStore:
        """Create the run folder ``path`` (its parents too) and write ``spec`` to
        ``meta.json``.

        Raises ``ValueError`` (one line) if ``path`` exists (unless ``overwrite``: then it is
        emptied, refused while another live process holds it) or is not writable."""
        path = Path(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ValueError(f"out={str(path)!r} is not writable: cannot create "
                             f"{str(path.parent)!r} ({exc.strerror or exc})") from None
        try:
            if overwrite and path.exists():
                if path.is_dir() and any(path.iterdir()) and not (path / META).is_file():
                    raise ValueError(f"out={str(path)!r} is invalid for --overwrite: it is not "
                                     f"a schedgym run folder (no {META}), so it is left alone")
                if path.is_dir():
                    fd = _acquire_lock(path)  # refused while a live run holds it
                    try:
                        shutil.rmtree(path)
                    finally:
                        os.close(fd)
                else:
                    path.unlink()
            os.mkdir(path)
        except FileExistsError:
            raise RunFolderExists(
                f"out={str(path)!r} is invalid: the run folder exists; finish it with "
                f"--resume {path}, replace it with --overwrite, or choose another --out"
            ) from None
        except OSError as exc:
            raise ValueError(f"out={str(path)!r} is not writable: {exc.strerror or exc}"
                             ) from None
        store = cls(path, spec)
        try:
            store._lock()
            (path / "curves").mkdir()
            _write_json(path / META, spec.to_json())
            (path / RECORDS).touch()
        except OSError as exc:
            store.close()
            raise ValueError(f"out={str(path)!r} is not writable: {exc.strerror or exc}"
                             ) from None
        return store

    @classmethod
    def create_free(cls, path: str | Path, spec: RunSpec) -> RunStore:
        """:meth:`create` in the first free folder of ``path``, ``path-2``, ``path-3``, ...
        (a default run folder): when another process creates the chosen one first (two
        identical commands started at once), the next free name is taken instead."""
        from schedgym.train.cli_options import free_run_folder

        for _ in range(100):
            try:
                return cls.create(free_run_folder(path), spec)
            except RunFolderExists:
                continue  # taken between the look and the mkdir: look again
        raise ValueError(f"out={str(path)!r}: could not claim a free run folder; give --out")

    @classmethod
    def open(cls, path: str | Path, lock: bool = True) -> RunStore:
        """Open an existing run folder (``lock``: for writing, as ``--resume`` does).

        Raises ``ValueError`` (one line) if it is not a run folder, its ``meta.json`` is
        damaged, or (``lock``) another process writes into it. Lines of ``episodes.jsonl``
        that are not records of this run are left out, with one warning line on stderr."""
        path = Path(path)
        if not (path / META).is_file():
            raise ValueError(f"run={str(path)!r} is invalid: not a schedgym run folder (no "
                             f"{META} in it)")
        store = cls(path, read_spec(path))
        if lock:
            store._lock()
            try:
                store._mend_torn_tail()
            except OSError as exc:
                store.close()
                raise ValueError(f"run={str(path)!r} is not writable: "
                                 f"{exc.strerror or exc}") from None
        try:
            store._load()
        except BaseException:
            store.close()
            raise
        return store

    def _load(self) -> None:
        """Read ``episodes.jsonl``, keeping the records of this run (see :func:`check_records`)."""
        try:
            scan = scan_records(self.path)
        except OSError as exc:
            raise ValueError(f"run={str(self.path)!r} is invalid: cannot read "
                             f"{self.path / RECORDS} ({exc.strerror or exc})") from None
        good, self.ignored = check_records(self.path, self.spec, scan.records)
        self.ignored = sorted(self.ignored + scan.bad)
        self._records = dict(good)
        if self.ignored:
            _warn("warning: " + ignored_summary(self.path / RECORDS, self.ignored))

    def _mend_torn_tail(self) -> None:
        """A last line without its newline was cut mid-write (a killed run): remove it (that
        task runs again), or end it if it is a whole record, so the next append starts a new
        line."""
        path = self.path / RECORDS
        if not path.is_file():
            return
        with open(path, "rb+") as fh:
            size = fh.seek(0, os.SEEK_END)
            if size == 0:
                return
            fh.seek(size - 1)
            if fh.read(1) == b"\n":
                return
            start = max(0, size - (1 << 20))
            fh.seek(start)
            chunk = fh.read()
            nl = chunk.rfind(b"\n")
            while nl < 0 and start > 0:  # a tail longer than the chunk: search further back
                start = max(0, start - (1 << 20))
                fh.seek(start)
                chunk = fh.read(size - start)
                nl = chunk.rfind(b"\n")
            cut = start + nl + 1 if nl >= 0 else 0
            if _parse_record(chunk[nl + 1:])[1] is None:
                fh.write(b"\n")
            else:
                fh.truncate(cut)
                _warn(f"note: {path}: its last line was a record cut mid-write (a killed run); "
                      f"removed it ({size - cut} bytes), that episode runs again")
            fh.flush()
            os.fsync(fh.fileno())

    def _lock(self) -> None:
        self._lock_fd = _acquire_lock(self.path)

    def close(self) -> None:
        """Release the folder (remove ``.lock``, then unlock it)."""
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                (self.path / LOCK).unlink()
            os.close(self._lock_fd)
            self._lock_fd = None

    # -- writing ---------------------------------------------------------------------------
    def add(self, record: dict[str, Any], curve: np.ndarray | None = None,
            steps: dict[str, np.ndarray] | None = None) -> None:
        """Append one finished task's record; its curve (and per-step scalars) go to files
        first (each written whole or not at all), then the record line is written and flushed
        to disk. Raises :class:`StoreWriteError` (one line) if the disk is full or the folder
        unwritable: the record is then not stored (its task runs again on ``--resume``),
        every earlier one is kept."""
        key = _key(record["key"])
        eid = episode_id(key)
        record = dict(record, key=list(key))
        what = "the curve"
        try:
            if curve is not None:
                arr = np.asarray(curve, dtype=np.float64)
                write_atomic(self.path / "curves" / f"{eid}.npy",
                              lambda fh: np.save(fh, arr))
                record["curve"] = f"curves/{eid}.npy"
            if steps is not None:
                what = "the per-step scalars"
                (self.path / "steps").mkdir(exist_ok=True)
                write_atomic(self.path / "steps" / f"{eid}.npz",
                              lambda fh: np.savez_compressed(fh, **steps))  # type: ignore
                record["steps_file"] = f"steps/{eid}.npz"
            what = "the record"
            line = json.dumps(record, default=_plain_json, allow_nan=True) + "\n"
            _append_line(self.path / RECORDS, line.encode())
        except OSError as exc:
            cmd = self.spec.command
            raise StoreWriteError(
                f"cannot write {what} of {'/'.join(map(str, key))} into the run folder "
                f"{self.path}: {exc.strerror or exc}; every episode finished before is kept in "
                f"it: make room, then resume with: schedgym {cmd} --resume {self.path}"
            ) from None
        self._records[key] = record

    # -- reading ---------------------------------------------------------------------------
    def done(self) -> set[Key]:
        """Keys of the tasks finished successfully (``--resume`` skips them)."""
        return {k for k, r in self._records.items() if r.get("status") == "ok"}

    def records(self) -> list[dict[str, Any]]:
        """The latest record of every key, in the order they were first written."""
        return list(self._records.values())

    def curve(self, record: dict[str, Any]) -> np.ndarray:
        """The cumulative-reward curve of an ``ok`` episode record."""
        return np.load(self.path / record["curve"])

    def steps(self, record: dict[str, Any]) -> list[dict[str, float]]:
        """The per-step scalars of an episode recorded with steps, as a list of dicts."""
        with np.load(self.path / record["steps_file"]) as data:
            cols = {k: data[k] for k in data.files}
        n = len(next(iter(cols.values()))) if cols else 0
        return [{k: float(v[i]) for k, v in cols.items() if np.isfinite(v[i])}
                for i in range(n)]


# -- meta.json -------------------------------------------------------------------------------
def read_spec(path: str | Path) -> RunSpec:
    """The :class:`~schedgym.train.runspec.RunSpec` of run folder ``path``'s ``meta.json``;
    ``ValueError`` (one line naming the file and what is wrong) if it is unreadable, not JSON or
    not a run description."""
    file = Path(path) / META
    try:
        meta = json.loads(file.read_bytes().decode())
    except OSError as exc:
        raise ValueError(f"run={str(path)!r} is invalid: cannot read {file} "
                         f"({exc.strerror or exc})") from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        raise ValueError(f"run={str(path)!r} is invalid: {file} is damaged (not JSON: "
                         f"{str(exc).splitlines()[0]})") from None
    try:
        return RunSpec.from_json(meta)
    except RunSpecError as exc:
        raise ValueError(f"run={str(path)!r} is invalid: {file} is damaged ({exc}); it "
                         "describes the run, which cannot be reported or resumed without it"
                         ) from None


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


# -- episodes.jsonl --------------------------------------------------------------------------
@dataclass
class Scan:
    """The lines of an ``episodes.jsonl``: ``records`` ``(line number, key, record)`` of the
    well-formed ones, ``bad`` ``(line number, why)`` of the others (not counting a torn last
    line), ``torn``: the last line was cut mid-write."""

    records: list[tuple[int, Key, dict[str, Any]]] = field(default_factory=list)
    bad: list[tuple[int, str]] = field(default_factory=list)
    torn: bool = False


def _parse_record(raw: bytes) -> tuple[Any, str | None]:
    """``(record, None)`` or ``(None, why it is not a record)`` of one line."""
    try:
        rec = json.loads(raw.decode())
    except ValueError:
        return None, "not JSON"
    why = record_problem(rec)
    return (rec, None) if why is None else (None, why)


def record_problem(rec: Any) -> str | None:
    """Why ``rec`` (one parsed line) is not a well-formed record (``None`` if it is one)."""
    if not isinstance(rec, dict):
        return "not a record"
    key = rec.get("key")
    if not (isinstance(key, list) and len(key) == 4 and isinstance(key[0], str)
            and isinstance(key[1], str) and _is_int(key[2]) and _is_int(key[3])):
        return "not a record"
    status = rec.get("status")
    if status == "error":
        return None if isinstance(rec.get("error"), str) else "not a record"
    if status != "ok":
        return "not a record"
    metrics = rec.get("metrics")
    if not isinstance(metrics, dict) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in metrics.values()):
        return "not a record"
    if key[1] != BENCHMARK and "reward" not in metrics:
        return "not a record"
    if key[1] != BENCHMARK and not (
            _is_int(rec.get("steps")) and isinstance(rec.get("curve"), str)
            and all(isinstance(rec.get(k), (int, float)) for k in ("decision_ms", "wall_s"))):
        return "not a record"
    return None


def scan_records(path: str | Path) -> Scan:
    """Every line of ``episodes.jsonl`` of run folder ``path``, sorted into records and the
    rest (see :class:`Scan`)."""
    scan = Scan()
    with open(Path(path) / RECORDS, "rb") as fh:
        for n, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            rec, why = _parse_record(raw)
            if why is None:
                scan.records.append((n, _key(rec["key"]), rec))
            elif not raw.endswith(b"\n") and why == "not JSON":
                scan.torn = True  # the last line, cut mid-write by a kill
            else:
                scan.bad.append((n, why))
    return scan


def read_records(path: str | Path) -> Iterator[tuple[Key, dict[str, Any]]]:
    """``(key, record)`` for every well-formed record line of ``episodes.jsonl`` (a torn last
    line, from a kill in the middle of a write, and lines that are not records are skipped;
    :meth:`RunStore.open` also checks them against ``meta.json``)."""
    for _, key, rec in scan_records(path).records:
        yield key, rec


def _norm(obj: Any) -> Any:
    return json.loads(json.dumps(obj, sort_keys=True, default=_plain_json))


def check_records(path: Path, spec: RunSpec,
                  records: list[tuple[int, Key, dict[str, Any]]]
                  ) -> tuple[list[tuple[Key, dict[str, Any]]], list[tuple[int, str]]]:
    """Split well-formed records into those of this run (a task of ``spec``'s plan, with that
    task's env configuration and, if ``ok``, its curve file) and the others ``(line, why)``."""
    expected = {t.key: _norm(task_config(t)) for t in plan(spec)}
    good, bad = [], []
    for n, key, rec in records:
        want = expected.get(key)
        if want is None:
            bad.append((n, "a key (setting, agent, instance seed, seed) the run does not have"))
        elif _norm({k: rec.get(k) for k in want}) != want:
            bad.append((n, "another configuration (env id, scenario, overrides or mode)"))
        elif rec["status"] == "ok" and key[1] != BENCHMARK and (
                rec["curve"] != f"curves/{episode_id(key)}.npy"
                or not (path / rec["curve"]).is_file()
                or rec.get("steps_file") not in (None, f"steps/{episode_id(key)}.npz")):
            bad.append((n, "an episode whose curve file is missing"))
        else:
            good.append((key, rec))
    return good, bad


def ignored_summary(file: Path, ignored: list[tuple[int, str]]) -> str:
    """One line: how many lines of ``file`` were ignored, grouped by why, first line of each."""
    first: dict[str, int] = {}
    count: dict[str, int] = {}
    for n, why in sorted(ignored):
        first.setdefault(why, n)
        count[why] = count.get(why, 0) + 1
    parts = [f"{count[w]} {w} (first: line {first[w]})" for w in first]
    return (f"{file}: ignored {len(ignored)} line{'s' if len(ignored) != 1 else ''} that "
            f"{'are' if len(ignored) != 1 else 'is'} not a record of this run: "
            + "; ".join(parts))


def _key(key: Sequence[Any]) -> Key:
    setting, agent, inst, seed = key
    return str(setting), str(agent), int(inst), int(seed)


# -- files -----------------------------------------------------------------------------------
def _acquire_lock(folder: Path) -> int:
    """Lock ``folder`` for this process: the open, ``flock``-ed ``.lock`` (with this process's
    id in it). Atomic: of any number of concurrent callers exactly one gets it; a ``.lock``
    left by a dead process is free (the kernel dropped its lock). ``ValueError`` (one line)
    while another process (or another open store in this one) holds it."""
    lock = folder / LOCK
    if fcntl is None:  # pragma: no cover - not POSIX
        return _acquire_lock_excl(folder)
    for _ in range(1000):
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _read_pid(fd)
            os.close(fd)
            holder = f" (pid {pid})" if pid and _pid_alive(pid) else ""
            raise ValueError(f"run={str(folder)!r} is in use by another schedgym process"
                             f"{holder}") from None
        except BaseException:
            os.close(fd)
            raise
        try:  # still the folder's lock file? (a run that closes unlinks it before unlocking)
            current = os.stat(lock)
        except FileNotFoundError:
            current = None
        if current is not None and os.path.samestat(os.fstat(fd), current):
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
            return fd
        os.close(fd)
    raise ValueError(f"run={str(folder)!r} could not be locked: its {LOCK} keeps changing")


def _acquire_lock_excl(folder: Path) -> int:  # pragma: no cover - not POSIX
    lock = folder / LOCK
    with contextlib.suppress(FileNotFoundError, ValueError):
        pid = int(lock.read_text().strip() or 0)
        if pid and _pid_alive(pid):
            raise ValueError(f"run={str(folder)!r} is in use by another schedgym process "
                             f"(pid {pid})")
        lock.unlink()
    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_RDWR)
    except FileExistsError:
        raise ValueError(f"run={str(folder)!r} is in use by another schedgym process"
                         ) from None
    os.write(fd, str(os.getpid()).encode())
    return fd


def _read_pid(fd: int) -> int:
    try:
        return int(os.pread(fd, 32, 0).decode().strip() or 0)
    except (OSError, ValueError):
        return 0


def write_atomic(path: Path, write: Callable[[IO[bytes]], Any]) -> None:
    """Write ``path`` whole or not at all: into a temporary file beside it, flushed to disk,
    then renamed over it (the temporary file is removed if anything fails)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def _append_line(path: Path, data: bytes) -> None:
    """Append one line to ``path`` and flush it to disk; if that fails, the file is cut back
    to its old length (no partial line is left). A last line without its newline (written by
    another writer) is ended first."""
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        start = os.lseek(fd, 0, os.SEEK_END)
        if start and os.pread(fd, 1, start - 1) != b"\n":
            data = b"\n" + data
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, start)
            raise
    finally:
        os.close(fd)


def _write_json(path: Path, obj: Any) -> None:
    write_atomic(path, lambda fh: fh.write(
        json.dumps(obj, indent=2, default=_plain_json).encode()))


def _plain_json(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    return str(obj)
