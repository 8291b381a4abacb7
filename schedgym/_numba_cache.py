"""numba's on-disk cache, invalidated by any change to schedgym's kernel sources.

numba keys a cached kernel on its own source file and says so: changes to functions defined
in another file are not seen. A kernel that calls a kernel of another module (``dynamics``
calling ``core.projection``, an agent calling ``dynamics``) would then keep running the old
callee's machine code after an edit, a branch switch or an upgrade that changed only the
callee's file.

:func:`install` closes that hole with what numba documents: cache files are ``.nbi`` (index)
and ``.nbc`` (code) files named after the source module, kept in ``__pycache__`` beside the
source or under ``NUMBA_CACHE_DIR``, and numba tolerates missing cache files. It keeps the
SHA-256 of every package source that mentions numba in ``__pycache__/numba-sources.sha256``;
when the sources no longer match it, the cache files of those modules are deleted, so each
kernel recompiles once. Under ``NUMBA_CACHE_DIR`` files are matched by module name only, so a
same-named module of another package may lose its cache too (a recompile, never a wrong
result). A tree whose ``__pycache__`` cannot be written is left alone: it changes only through
a reinstall. Called by ``schedgym/__init__.py`` before any kernel module is imported.
"""

from __future__ import annotations

import os
from hashlib import sha256
from pathlib import Path

#: The package folder (its symlinked ``agents``/``train`` folders are followed).
_ROOT = Path(__file__).resolve().parent

#: Where the digest of the kernel sources is kept, relative to the package folder.
STAMP = Path("__pycache__", "numba-sources.sha256")


def kernel_sources(root: Path) -> list[Path]:
    """Every ``.py`` file under ``root`` that mentions numba (the kernels and their callers),
    sorted by path relative to ``root``."""
    found: list[tuple[str, Path]] = []
    for folder, dirs, names in os.walk(root, followlinks=True):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        found += [(os.path.relpath(os.path.join(folder, n), root), Path(folder, n))
                  for n in names if n.endswith(".py")]
    return [path for _, path in sorted(found) if b"numba" in path.read_bytes()]


def source_hash(root: Path, sources: list[Path] | None = None) -> str:
    """Hex SHA-256 over the relative path and content of each of ``sources`` (default
    :func:`kernel_sources` of ``root``)."""
    h = sha256()
    for path in kernel_sources(root) if sources is None else sources:
        h.update(os.path.relpath(path, root).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def _cache_files(sources: list[Path]) -> list[Path]:
    """numba's cache files of the modules ``sources``: beside them and under NUMBA_CACHE_DIR."""
    stems = {p.stem for p in sources}
    files = [f for p in sources for f in (p.parent / "__pycache__").glob(f"{p.stem}.*.nb[ic]")]
    user_dir = os.environ.get("NUMBA_CACHE_DIR")
    if user_dir and os.path.isdir(user_dir):
        files += [f for f in Path(user_dir).rglob("*.nb[ic]") if f.name.split(".")[0] in stems]
    return files


def install(root: Path = _ROOT) -> bool:
    """Delete numba's cache of every kernel under ``root`` if any kernel source changed since
    the last call; returns whether it did."""
    stamp = root / STAMP
    sources = kernel_sources(root)
    digest = source_hash(root, sources)  # one walk of the package per import
    try:
        if stamp.read_text() == digest:
            return False
    except OSError:
        pass  # no stamp yet: a fresh checkout or install, or a cache from before the stamp
    try:
        stamp.parent.mkdir(exist_ok=True)
        tmp = stamp.with_name(f"{stamp.name}.{os.getpid()}.tmp")
        tmp.write_text(digest)
    except OSError:
        return False  # read-only tree: only a reinstall changes it
    for f in _cache_files(sources):
        f.unlink(missing_ok=True)
    os.replace(tmp, stamp)
    return True


install()
