"""numba's on-disk cache, invalidated by any change to schedgym's kernel sources.

numba keys a cached kernel on its own source file and says so: changes to functions defined
in another file are not seen. A kernel that calls a kernel of another module (``dynamics``
calling ``core.projection``, an agent calling ``dynamics``) would then keep running the old
callee's machine code after an edit, a branch switch or an upgrade that changed only the
callee's file.

:func:`install` closes that hole with what numba documents: cache files are ``.nbi`` (index)
and ``.nbc`` (code) files named after the source module,
``<module>.<function>-<line>.py<version>.nbi`` and ``...<n>.nbc``, and numba tolerates
missing cache files. It keeps the SHA-256 of every package source that mentions numba in
``__pycache__/numba-sources.sha256``; when the sources no longer match it, the cache files of
those modules are deleted, so each kernel recompiles once. A tree whose ``__pycache__`` cannot
be written is left alone: it changes only through a reinstall. Called by
``schedgym/__init__.py`` before any kernel module is imported.

Only schedgym's own cache files are touched. numba keeps them in ``__pycache__`` beside the
source, or, with ``NUMBA_CACHE_DIR`` set, in a folder of it named after the source's folder:
``<folder name>_<SHA-1 of the folder's absolute path>`` (numba's
``_CacheLocator.get_suitable_cache_subpath``), so another project's module of the same name,
cached under the same ``NUMBA_CACHE_DIR``, lives in another folder and keeps its cache
(:func:`user_cache_dirs`).
"""

from __future__ import annotations

import os
from hashlib import sha1, sha256
from pathlib import Path

#: The package folder, as it is imported (its symlinked ``agents``/``train`` folders are
#: followed): numba names a cache folder after the path a module is imported from.
_ROOT = Path(os.path.abspath(__file__)).parent

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


def user_cache_dirs(source_dir: Path, cache_dir: str | Path) -> list[Path]:
    """The folders under ``cache_dir`` (``NUMBA_CACHE_DIR``) where numba keeps the cache of the
    modules of ``source_dir``: ``<folder name>_<SHA-1 of its absolute path>``, for the path as
    given (a module is cached under the path it is imported from) and, where a link leads
    elsewhere, for its resolved path too."""
    found = []
    for folder in dict.fromkeys((os.path.abspath(source_dir), os.path.realpath(source_dir))):
        name = f"{os.path.basename(folder)}_{sha1(folder.encode()).hexdigest()}"
        found.append(Path(cache_dir, name))
    return found


def _cache_files(sources: list[Path]) -> list[Path]:
    """numba's cache files of the modules ``sources``: beside them and, with
    ``NUMBA_CACHE_DIR``, in their own folders of it (:func:`user_cache_dirs`)."""
    files = [f for p in sources for f in (p.parent / "__pycache__").glob(f"{p.stem}.*.nb[ic]")]
    user_dir = os.environ.get("NUMBA_CACHE_DIR")
    if user_dir:
        files += [f for p in sources for d in user_cache_dirs(p.parent, user_dir)
                  for f in d.glob(f"{p.stem}.*.nb[ic]")]
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
