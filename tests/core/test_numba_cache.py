"""schedgym's numba cache follows every kernel source, so editing or upgrading one kernel module
can never leave a caller running the callee's old machine code, and it touches no other
project's cache."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from schedgym import _numba_cache


def _tree(root: Path) -> Path:
    (root / "core").mkdir(parents=True)
    (root / "core" / "kernel.py").write_text("import numba\n@numba.njit\ndef f(): return 1\n")
    (root / "cli.py").write_text("print('no kernels here')\n")
    return root


def test_the_hash_changes_with_any_kernel_source_and_only_with_them(tmp_path):
    root = _tree(tmp_path)
    before = _numba_cache.source_hash(root)
    (root / "cli.py").write_text("print('still no kernels')\n")
    assert _numba_cache.source_hash(root) == before
    (root / "core" / "kernel.py").write_text("import numba\n@numba.njit\ndef f(): return 2\n")
    assert _numba_cache.source_hash(root) != before


def test_install_deletes_the_kernels_cache_once_per_change(tmp_path, monkeypatch):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    root = _tree(tmp_path)
    cache = root / "core" / "__pycache__"
    cache.mkdir()
    ours = [cache / "kernel.f-3.py312.nbi", cache / "kernel.f-3.py312.1.nbc"]
    kept = [cache / "kernel.cpython-312.pyc", root / "cli.py"]

    def fill() -> None:
        for f in ours + kept[:1]:
            f.write_bytes(b"x")

    fill()
    assert _numba_cache.install(root)  # no stamp yet
    assert not any(f.exists() for f in ours) and all(f.exists() for f in kept)
    assert (root / _numba_cache.STAMP).read_text() == _numba_cache.source_hash(root)
    fill()
    assert not _numba_cache.install(root)  # same sources: the cache stays
    assert all(f.exists() for f in ours)
    (root / "core" / "other.py").write_text("import numba\n")
    assert _numba_cache.install(root)
    assert not any(f.exists() for f in ours)


def test_numba_cache_dir_loses_only_schedgyms_own_cache(tmp_path, monkeypatch):
    """Under NUMBA_CACHE_DIR, numba names a module's cache folder after the module's folder;
    another project's module of the same name (``core/kernel.py`` too) has its own folder and
    keeps its cache."""
    root = _tree(tmp_path / "pkg")
    user = tmp_path / "user"
    ours_dir = _numba_cache.user_cache_dirs(root / "core", user)[0]
    other_dir = _numba_cache.user_cache_dirs(tmp_path / "other" / "core", user)[0]
    assert ours_dir.name.startswith("core_") and other_dir.name.startswith("core_")
    assert ours_dir != other_dir
    ours = [ours_dir / "kernel.f-3.py312.nbi", ours_dir / "kernel.f-3.py312.1.nbc"]
    kept = [other_dir / "kernel.f-3.py312.nbi", other_dir / "kernel.f-3.py312.1.nbc",
            ours_dir / "notes.txt", user / "kernel.f-3.py312.nbi"]
    for f in ours + kept:
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(b"x")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(user))
    assert _numba_cache.install(root)
    assert not any(f.exists() for f in ours)
    assert all(f.exists() for f in kept)


def test_a_linked_folder_is_looked_up_under_both_its_paths(tmp_path):
    real = tmp_path / "agents"
    real.mkdir()
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "agents").symlink_to(real)
    dirs = _numba_cache.user_cache_dirs(tmp_path / "pkg" / "agents", tmp_path / "cache")
    assert [d.name.split("_")[0] for d in dirs] == ["agents", "agents"] and len(set(dirs)) == 2


def test_a_read_only_tree_is_left_alone(tmp_path, monkeypatch):
    root = _tree(tmp_path)
    cache = root / "core" / "__pycache__"
    cache.mkdir()
    (cache / "kernel.f-3.py312.nbi").write_bytes(b"x")
    real_mkdir = Path.mkdir

    def refuse(self, *args, **kwargs):
        if self.name == "__pycache__":
            raise PermissionError(13, "Permission denied", str(self))
        return real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", refuse)
    assert not _numba_cache.install(root)
    assert (cache / "kernel.f-3.py312.nbi").exists()


def _pythonpath(tmp_path: Path) -> str:
    """``tmp_path``, then the folder of the schedgym under test (so a subprocess imports this
    schedgym, not another install)."""
    import schedgym

    return os.pathsep.join([str(tmp_path), str(Path(schedgym.__file__).resolve().parents[1])])


def test_a_caller_sees_its_callee_edited_in_another_file(tmp_path):
    """The hole this closes, end to end: a cached caller in one file, its callee in another;
    the callee is edited (same size, so numba's own stamp of the caller cannot notice) and a
    fresh process must run the new callee."""
    pkg = tmp_path / "pkgx"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(textwrap.dedent("""\
        from pathlib import Path
        from schedgym import _numba_cache
        _numba_cache.install(Path(__file__).parent)
    """))
    (pkg / "callee.py").write_text("import numba\n@numba.njit(cache=True)\ndef g(): return 1\n")
    (pkg / "caller.py").write_text(textwrap.dedent("""\
        import numba
        from pkgx.callee import g
        @numba.njit(cache=True)
        def f(): return g() + 10
    """))
    env = {**os.environ, "PYTHONPATH": _pythonpath(tmp_path)}
    env.pop("NUMBA_CACHE_DIR", None)
    code = "from pkgx.caller import f; print(f())"

    def run() -> str:
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, timeout=300, cwd=tmp_path)
        assert out.returncode == 0, out.stderr[-2000:]
        return out.stdout.strip()

    assert run() == "11"
    assert any(p.suffix == ".nbi" for p in (pkg / "__pycache__").iterdir())  # cached
    (pkg / "callee.py").write_text("import numba\n@numba.njit(cache=True)\ndef g(): return 2\n")
    assert run() == "12"


def test_the_folder_named_is_where_numba_caches_and_a_namesake_survives(tmp_path):
    """End to end under NUMBA_CACHE_DIR: numba writes the cache where
    :func:`user_cache_dirs` says, an edit of the callee is seen by a fresh process, and the
    same-named cache of another project in the same NUMBA_CACHE_DIR is left alone."""
    pkg = tmp_path / "pkgx"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(textwrap.dedent("""\
        from pathlib import Path
        from schedgym import _numba_cache
        _numba_cache.install(Path(__file__).parent)
    """))
    (pkg / "callee.py").write_text("import numba\n@numba.njit(cache=True)\ndef g(): return 1\n")
    (pkg / "caller.py").write_text(textwrap.dedent("""\
        import numba
        from pkgx.callee import g
        @numba.njit(cache=True)
        def f(): return g() + 10
    """))
    cache = tmp_path / "numba-cache"
    env = {**os.environ, "PYTHONPATH": _pythonpath(tmp_path), "NUMBA_CACHE_DIR": str(cache)}
    code = "from pkgx.caller import f; print(f())"

    def run() -> str:
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, timeout=300, cwd=tmp_path)
        assert out.returncode == 0, out.stderr[-2000:]
        return out.stdout.strip()

    assert run() == "11"
    ours = _numba_cache.user_cache_dirs(pkg, cache)[0]
    written = sorted(p.relative_to(cache) for p in cache.rglob("*.nb[ic]"))
    assert written and all(p.parent == Path(ours.name) for p in written), written
    theirs = _numba_cache.user_cache_dirs(tmp_path / "elsewhere" / "pkgx", cache)[0]
    theirs.mkdir()
    namesakes = [theirs / p.name for p in written]  # another project's caller.py, callee.py
    for f in namesakes:
        f.write_bytes(b"theirs")
    (pkg / "callee.py").write_text("import numba\n@numba.njit(cache=True)\ndef g(): return 2\n")
    assert run() == "12"
    assert all(f.read_bytes() == b"theirs" for f in namesakes)
