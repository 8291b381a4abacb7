"""schedgym's numba cache is stamped by every kernel source, so editing or upgrading one kernel
module can never leave a caller running the callee's old machine code."""

from __future__ import annotations

import pytest

from schedgym import _numba_cache
from schedgym.core import projection


def test_schedgym_kernels_are_stamped_by_the_package_sources():
    kernels = [v for v in vars(projection).values() if getattr(v, "_cache", None) is not None
               and hasattr(v._cache, "_impl")]
    assert kernels, "projection has cached numba kernels"
    for k in kernels:
        locator = k._cache._impl._locator
        assert type(locator).__name__.startswith("Schedgym")
        assert locator.get_source_stamp() == _numba_cache.source_hash()


def test_other_packages_keep_numbas_own_locators(tmp_path):
    src = tmp_path / "mod.py"
    src.write_text("def f():\n    return 1\n")
    ns: dict = {}
    exec(compile(src.read_text(), str(src), "exec"), ns)
    for cls in _numba_cache._LOCATORS:
        assert cls.from_function(ns["f"], str(src)) is None


@pytest.fixture
def tree(tmp_path, monkeypatch):
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "kernel.py").write_text("import numba\n@numba.njit\ndef f(): return 1\n")
    (tmp_path / "cli.py").write_text("print('no kernels here')\n")
    monkeypatch.setattr(_numba_cache, "_ROOT", tmp_path)
    _numba_cache.source_hash.cache_clear()
    yield tmp_path
    _numba_cache.source_hash.cache_clear()


def test_the_stamp_changes_with_any_kernel_source_and_only_with_them(tree):
    before = _numba_cache.source_hash()
    (tree / "cli.py").write_text("print('still no kernels')\n")
    _numba_cache.source_hash.cache_clear()
    assert _numba_cache.source_hash() == before
    (tree / "core" / "kernel.py").write_text("import numba\n@numba.njit\ndef f(): return 2\n")
    _numba_cache.source_hash.cache_clear()
    assert _numba_cache.source_hash() != before
