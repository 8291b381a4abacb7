"""numba's on-disk cache, invalidated by any change to schedgym's sources.

numba stamps a cached kernel with its own source file only. A kernel that calls a kernel of
another module (``dynamics`` calling ``core.projection``, an agent calling ``dynamics``) would
then keep running the old callee's machine code after an edit or a package upgrade that changed
only the callee's file. :func:`install` gives schedgym's kernels a stamp that is the hash of every
schedgym source file that uses numba instead, so any change to a kernel recompiles them all (once);
numba's locators are unchanged for every other package. Imported by ``schedgym/__init__.py``
before any kernel module (numba picks a function's cache locator when it is decorated).
"""

from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from numba.core import caching

#: The package folder (its symlinked ``agents``/``train`` folders are followed).
_ROOT = Path(__file__).resolve().parent


@lru_cache(maxsize=1)
def source_hash() -> bytes:
    """SHA-256 over the relative path and content of every ``.py`` file of the package that
    mentions numba (the kernels and their callers; other edits keep the cache)."""
    h = hashlib.sha256()
    files: list[tuple[str, Path]] = []
    for folder, dirs, names in os.walk(_ROOT, followlinks=True):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        files += [(os.path.relpath(os.path.join(folder, n), _ROOT), Path(folder, n))
                  for n in names if n.endswith(".py")]
    for rel, path in sorted(files):
        data = path.read_bytes()
        if b"numba" in data:
            h.update(rel.encode())
            h.update(data)
    return h.digest()


def _ours(py_file: str) -> bool:
    real = os.path.realpath(py_file)
    roots = {str(_ROOT), os.path.realpath(_ROOT / "agents"), os.path.realpath(_ROOT / "train")}
    return any(real.startswith(r + os.sep) for r in roots)


def _stamped(base: type) -> type:
    """``base`` (a numba locator) restricted to schedgym's files, stamped by :func:`source_hash`."""

    class Stamped(base):
        def get_source_stamp(self) -> Any:
            return source_hash()

        @classmethod
        def from_function(cls, py_func: Any, py_file: str) -> Any:
            return super().from_function(py_func, py_file) if _ours(py_file) else None

    Stamped.__name__ = Stamped.__qualname__ = f"Schedgym{base.__name__}"
    return Stamped


_LOCATORS: list[Any] = [_stamped(b) for b in (caching.UserProvidedCacheLocator,
                                               caching.InTreeCacheLocator,
                                               caching.UserWideCacheLocator)]


def install() -> None:
    """Put the stamped locators first in numba's list (idempotent)."""
    classes = caching.CacheImpl._locator_classes
    if classes[: len(_LOCATORS)] != _LOCATORS:
        classes[:0] = _LOCATORS


install()
