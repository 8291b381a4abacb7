"""A folder named ``schedgym`` in the working directory (the checkout itself, seen from the folder
``git clone`` ran in) must not shadow the installed package (``compare --ray`` and any
script started beside the checkout got a namespace package with no envs).

Python imports a *regular* package (one with ``__init__.py``) found anywhere on ``sys.path`` before
a namespace portion found earlier (the working directory's ``schedgym/`` without one). setuptools'
default ("strict") editable install puts the package behind an import hook that runs only after
``sys.path`` is searched, so the namespace portion wins; the ``compat`` editable mode README
installs with puts the checkout root on ``sys.path`` through a ``.pth`` file instead, and the
regular package wins.
"""

from __future__ import annotations

import re
import site
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_IMPORT = ("import schedgym, gymnasium; gymnasium.make('schedgym/FluctuatingSpeed-v0'); "
           "print(schedgym.__file__)")


def _installs() -> list[str]:
    text = (ROOT / "README.md").read_text() + (ROOT / ".ci" / "run").read_text()
    return re.findall(r"pip install [^&\n]*-e [^&\n]*", text)


def test_every_editable_install_command_uses_compat_mode():
    installs = _installs()
    assert len(installs) >= 3  # README's two commands and CI's
    for cmd in installs:
        assert "--config-settings editable_mode=compat" in cmd, cmd


def _checkout_on_sys_path() -> bool:
    """Whether this interpreter's install is a compat-mode one (a .pth naming the checkout)."""
    for folder in site.getsitepackages():
        for pth in Path(folder).glob("__editable__*.pth"):
            if str(ROOT) in pth.read_text().splitlines():
                return True
    return False


@pytest.mark.parametrize("emulate", [False, True])
def test_a_schedgym_folder_in_the_working_directory_does_not_shadow_the_package(tmp_path,
                                                                                  emulate):
    """``emulate``: append the checkout to ``sys.path`` as the compat install's ``.pth`` does
    (for an interpreter installed otherwise, such as a developer's strict editable install);
    without it, the test runs only on a compat install, where it checks the real thing."""
    if not emulate and not _checkout_on_sys_path():
        pytest.skip("this interpreter's schedgym is not a compat-mode editable install")
    (tmp_path / "schedgym").mkdir()  # the checkout as the folder it was cloned into sees it
    code = (f"import sys; sys.path.append({str(ROOT)!r}); " if emulate else "") + _IMPORT
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == str(ROOT / "schedgym" / "__init__.py")
