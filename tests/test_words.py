"""The shipped code speaks for itself: no issue-tracker numbers in its code, docstrings or
messages (they mean nothing to a reader of the package, and a message would send a user to a
tracker they cannot see). Say what the thing is or does instead."""

from __future__ import annotations

import os
import re
from pathlib import Path

import schedgym

ROOT = Path(schedgym.__file__).resolve().parent
#: "issue 24", "Issue 13:", "issue24"
ISSUE = re.compile(r"\bissue ?\d+", re.IGNORECASE)
#: Files of other helpers' branches that still name an issue, each removed from this list when
#: its branch lands (the test refuses a stale entry).
EXEMPT: frozenset[str] = frozenset()


def _sources() -> dict[str, str]:
    out = {}
    for folder, dirs, names in os.walk(ROOT, followlinks=True):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in names:
            if name.endswith(".py"):
                path = Path(folder, name)
                out[path.relative_to(ROOT).as_posix()] = path.read_text()
    return out


def test_no_issue_numbers_in_the_package():
    sources = _sources()
    found = [f"{rel}:{n}: {line.strip()}" for rel, text in sorted(sources.items())
             if rel not in EXEMPT
             for n, line in enumerate(text.splitlines(), 1) if ISSUE.search(line)]
    assert not found, "issue numbers in the package:\n" + "\n".join(found)
    stale = sorted(rel for rel in EXEMPT if not ISSUE.search(sources.get(rel, "")))
    assert not stale, f"remove from EXEMPT (no issue number left): {stale}"


def test_no_issue_numbers_in_the_tests_and_benchmarks():
    """The tests and benchmarks are read as the package's specification: the same rule."""
    repo = ROOT.parent
    found = []
    for folder in ("tests", "benchmarks"):
        for path in sorted((repo / folder).rglob("*.py")):
            if path.name == "test_words.py":
                continue  # names the pattern it looks for
            for n, line in enumerate(path.read_text().splitlines(), 1):
                if ISSUE.search(line):
                    found.append(f"{path.relative_to(repo)}:{n}: {line.strip()}")
    assert not found, "issue numbers in tests or benchmarks:\n" + "\n".join(found)
