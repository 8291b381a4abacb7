"""A watchdog that ends every process a command started if the command dies without stopping
them (``kill -9``, a crash): for a local Ray, whose raylet, GCS, workers and agents would
otherwise outlive it (Ray's dashboard and runtime-env agents do).

:func:`start` launches ``python -I reaper.py PID`` (this file, isolated: the standard library
only, whatever the current folder holds) with a pipe on its stdin. The
reaper records the process tree under ``PID`` twice a second (Linux ``/proc``: process id and
start time, so a reused process id is never taken for a recorded one) and waits for the end of
its stdin. :meth:`Reaper.stop` writes ``done`` first: the command ended normally and stopped
its processes itself, nothing is killed. An end without ``done`` means the command died: every
recorded process still alive gets ``SIGKILL``. Where ``/proc`` is missing, :func:`start`
returns ``None`` and nothing is watched.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

#: seconds between two records of the process tree
POLL_S = 0.5


class Reaper:
    """The running watchdog of this process (see the module docstring)."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc

    def stop(self) -> None:
        """This process stopped what it started: end the watchdog, killing nothing."""
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(b"done\n")
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def start() -> Reaper | None:
    """Start the watchdog of this process (``None`` without Linux's ``/proc``)."""
    if not Path(f"/proc/{os.getpid()}/stat").exists():
        return None
    proc = subprocess.Popen([sys.executable, "-I", __file__, str(os.getpid())],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, close_fds=True)
    return Reaper(proc)


def _table() -> dict[int, tuple[int, int]]:
    """``pid -> (parent pid, start time in clock ticks)`` of every process."""
    out = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            out[int(stat.parent.name)] = (int(fields[1]), int(fields[19]))
        except (OSError, IndexError, ValueError):
            continue
    return out


def descendants(root: int, table: dict[int, tuple[int, int]]) -> dict[int, int]:
    """``pid -> start time`` of every process below ``root`` in ``table``."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: dict[int, int] = {}
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        if pid not in found:
            found[pid] = table[pid][1]
            todo += children.get(pid, [])
    return found


def watch(parent: int) -> None:
    """The reaper's loop (in its own process): record, wait for stdin's end, kill if needed."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the command's to handle
    ended: list[bytes] = []

    def read() -> None:
        ended.append(sys.stdin.buffer.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    known: dict[int, int] = {}
    me = os.getpid()
    while reader.is_alive():
        known.update(descendants(parent, _table()))
        known.pop(me, None)
        reader.join(timeout=POLL_S)
    if ended and b"done" in ended[0]:
        return
    table = _table()
    for pid, started in known.items():
        if table.get(pid, (0, -1))[1] == started:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


if __name__ == "__main__":
    watch(int(sys.argv[1]))
