"""Every benchmark script imports: its module-level code (imports of the package's names
included) runs without its ``__main__`` block, so a renamed or moved helper breaks a test
instead of the next ``schedgym bench`` or a docs command."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

SCRIPTS = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("*.py"))


def test_there_are_benchmark_scripts():
    assert len(SCRIPTS) >= 5


@pytest.mark.parametrize("path", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_benchmark_script_imports(path):
    names = runpy.run_path(str(path), run_name="benchmark_import_check")
    assert "__doc__" in names
