"""The first-compile notice: once per process, for schedgym's functions, on a terminal only."""

from __future__ import annotations

import io
import os
import pty
import select
import subprocess
import sys
from types import SimpleNamespace

import pytest

from schedgym import _compile_notice
from schedgym._compile_notice import NOTICE


class _Stderr(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def _event(module: str) -> SimpleNamespace:
    return SimpleNamespace(data={"dispatcher": SimpleNamespace(py_func=SimpleNamespace(
        __module__=module))})


@pytest.mark.parametrize("tty", [True, False])
def test_said_once_for_schedgym_on_a_terminal_only(monkeypatch, tty):
    err = _Stderr(tty)
    monkeypatch.setattr(sys, "stderr", err)
    listener = _compile_notice._FirstCompile()
    listener.on_start(_event("numpy_user_module"))  # not ours: nothing
    assert err.getvalue() == ""
    listener.on_start(_event("schedgym.envs.gain_overhead.dynamics"))
    listener.on_start(_event("schedgym.agents.esdp"))
    assert err.getvalue() == (NOTICE + "\n" if tty else "")


def _run_on_a_terminal(code: str, cache: str) -> str:
    """stderr of ``python -c code`` attached to a pseudo-terminal, with numba's cache in
    ``cache``."""
    master, slave = pty.openpty()
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    proc = subprocess.Popen([sys.executable, "-c", code], stderr=slave, env=env)
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 120)
        if not ready:
            break
        try:
            data = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=120)
    os.close(master)
    return b"".join(chunks).decode()


def test_a_first_compile_says_so_and_a_cached_load_does_not(tmp_path):
    code = ("import numpy as np, schedgym\n"
            "from schedgym.core.pairwise import np_sum\n"
            "assert np_sum(np.ones(5), 0, 5) == 5.0\n")
    first = _run_on_a_terminal(code, str(tmp_path))
    assert first.count(NOTICE) == 1, first
    again = _run_on_a_terminal(code, str(tmp_path))
    assert NOTICE not in again, again
