"""The floor "no function over 80 lines", held by a test so that it stays true: every
function and method of the shipped code (``schedgym/``, ``agents/``, ``train/``, ``configs/``)
and of the benchmark scripts, docstring included."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("schedgym", "agents", "train", "configs", "benchmarks")
LIMIT = 80


def long_functions(limit: int = LIMIT) -> list[str]:
    """``path:line name (n lines)`` of every function longer than ``limit`` lines."""
    out = []
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    n = node.end_lineno - node.lineno + 1  # type: ignore[operator]
                    if n > limit:
                        where = f"{path.relative_to(ROOT)}:{node.lineno}"
                        out.append(f"{where} {node.name} ({n} lines)")
    return out


def test_no_function_is_over_80_lines():
    assert long_functions() == []


def test_the_check_finds_a_long_function():
    assert long_functions(limit=3), "every folder scanned has functions over 3 lines"
