"""The result store of one ``compare`` / ``reproduce`` run: nothing finished is ever lost.

A run folder holds

- ``meta.json``: everything needed to re-run or resume the run (command, env id, scenario,
  overrides, agents, seeds, instance seeds, settings), written once when the folder is created;
- ``episodes.jsonl``: one JSON record per finished task, appended (and flushed to disk) the
  moment the task ends. A record's ``key`` is ``[setting, agent, instance_seed, seed]``
  (``agent`` is ``"@benchmark"`` for the offline benchmark of an episode); ``status`` is
  ``"ok"`` (with ``metrics``, ``steps``, ``decision_ms``, ``wall_s``, the env and agent
  configuration) or ``"error"`` (with ``error``, the exception's one-line text). A later record
  of the same key replaces an earlier one (a resumed run retries failed tasks);
- ``curves/<id>.npy``: the cumulative reward after every step of one episode, float64
  ``(steps,)``, written *before* its record (a record always has its curve);
- ``steps/<id>.npz``: per-step scalars of one episode (only with ``compare --tensorboard``);
- ``.lock``: the process id of the run writing into the folder (removed at the end).

Folders are created with ``os.mkdir`` (atomic): two runs can never share one, and an existing
folder is refused unless the caller resumes or overwrites it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

META = "meta.json"
RECORDS = "episodes.jsonl"
LOCK = ".lock"
BENCHMARK = "@benchmark"

Key = tuple[str, str, int, int]


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


@dataclass
class RunStore:
    """An open run folder (see the module docstring). Use :meth:`create` or :meth:`open`."""

    path: Path
    meta: dict[str, Any]
    _records: dict[Key, dict[str, Any]] = field(default_factory=dict)
    _locked: bool = False

    # -- opening ---------------------------------------------------------------------------
    @classmethod
    def create(cls, path: str | Path, meta: dict[str, Any], overwrite: bool = False
               ) -> RunStore:
        """Create the run folder ``path`` (its parents too) and write ``meta.json``.

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
                _refuse_if_locked(path)
                if path.is_dir():
                    shutil.rmtree(path)
                else:
                    path.unlink()
            os.mkdir(path)
        except FileExistsError:
            raise ValueError(
                f"out={str(path)!r} is invalid: the run folder exists; finish it with "
                f"--resume {path}, replace it with --overwrite, or choose another --out"
            ) from None
        except OSError as exc:
            raise ValueError(f"out={str(path)!r} is not writable: {exc.strerror or exc}"
                             ) from None
        store = cls(path, dict(meta))
        try:
            store._lock()
            (path / "curves").mkdir()
            _write_json(path / META, store.meta)
            (path / RECORDS).touch()
        except OSError as exc:
            raise ValueError(f"out={str(path)!r} is not writable: {exc.strerror or exc}"
                             ) from None
        return store

    @classmethod
    def open(cls, path: str | Path, lock: bool = True) -> RunStore:
        """Open an existing run folder (``lock``: for writing, as ``--resume`` does)."""
        path = Path(path)
        if not (path / META).is_file():
            raise ValueError(f"run={str(path)!r} is invalid: not a schedgym run folder (no "
                             f"{META} in it)")
        meta = json.loads((path / META).read_text())
        store = cls(path, meta)
        store._records = dict(read_records(path))
        if lock:
            store._lock()
        return store

    def _lock(self) -> None:
        lock = self.path / LOCK
        _refuse_if_locked(self.path)
        with contextlib.suppress(FileNotFoundError):
            lock.unlink()
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            raise ValueError(f"run={str(self.path)!r} is in use by another schedgym process"
                             ) from None
        with os.fdopen(fd, "w") as fh:
            fh.write(str(os.getpid()))
        self._locked = True

    def close(self) -> None:
        """Release the folder (remove ``.lock``)."""
        if self._locked:
            with contextlib.suppress(FileNotFoundError):
                (self.path / LOCK).unlink()
            self._locked = False

    # -- writing ---------------------------------------------------------------------------
    def add(self, record: dict[str, Any], curve: np.ndarray | None = None,
            steps: dict[str, np.ndarray] | None = None) -> None:
        """Append one finished task's record; its curve (and per-step scalars) go to files
        first, then the record line is written and flushed to disk."""
        key = _key(record["key"])
        eid = episode_id(key)
        record = dict(record, key=list(key))
        if curve is not None:
            np.save(self.path / "curves" / f"{eid}.npy", np.asarray(curve, dtype=np.float64))
            record["curve"] = f"curves/{eid}.npy"
        if steps is not None:
            (self.path / "steps").mkdir(exist_ok=True)
            np.savez_compressed(self.path / "steps" / f"{eid}.npz",
                                **steps)  # type: ignore[arg-type]
            record["steps_file"] = f"steps/{eid}.npz"
        line = json.dumps(record, default=_plain_json, allow_nan=True) + "\n"
        with open(self.path / RECORDS, "a") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
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


def read_records(path: str | Path) -> Iterator[tuple[Key, dict[str, Any]]]:
    """``(key, record)`` for every line of ``episodes.jsonl`` (a torn last line, from a kill
    in the middle of a write, is skipped)."""
    with open(Path(path) / RECORDS) as fh:
        for line in fh:
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            yield _key(rec["key"]), rec


def _key(key: Sequence[Any]) -> Key:
    setting, agent, inst, seed = key
    return str(setting), str(agent), int(inst), int(seed)


def _refuse_if_locked(path: Path) -> None:
    lock = path / LOCK
    try:
        pid = int(lock.read_text().strip() or 0)
    except (FileNotFoundError, ValueError):
        return
    if pid and pid != os.getpid() and _pid_alive(pid):
        raise ValueError(f"run={str(path)!r} is in use by another schedgym process (pid {pid})")


def _write_json(path: Path, obj: Any) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(obj, indent=2, default=_plain_json))
    os.replace(tmp, path)


def _plain_json(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    return str(obj)
