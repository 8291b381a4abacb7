"""schedgym's numba cache follows every kernel source, so editing or upgrading one kernel module
can never leave a caller running the callee's old machine code."""

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


def test_numba_cache_dir_is_purged_by_module_name(tmp_path, monkeypatch):
    root = _tree(tmp_path / "pkg")
    user = tmp_path / "user"
    (user / "core_0123").mkdir(parents=True)
    ours = user / "core_0123" / "kernel.f-3.py312.nbi"
    other = user / "core_0123" / "theirs.g-1.py312.nbi"
    for f in (ours, other):
        f.write_bytes(b"x")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(user))
    assert _numba_cache.install(root)
    assert not ours.exists() and other.exists()


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
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
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
