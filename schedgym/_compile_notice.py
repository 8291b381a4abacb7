"""A one-line notice on stderr when a process starts compiling schedgym's kernels.

The kernels are compiled on their first call after an install or a change of a kernel source,
then loaded from numba's on-disk cache. A first ``reset``/``step`` can therefore pause for
seconds with nothing to say why; this module says it once per process, at the start of the
first compile of one of schedgym's own functions (numba's documented event API reports real
compiles only, never loads from the cache). The notice goes to an interactive terminal only, so
piped output and captured logs stay exactly what the command writes.
"""

from __future__ import annotations

import sys
from typing import Any

from numba.core import event

#: What the notice says (once per process).
NOTICE = ("schedgym: compiling the kernels on first use (once per install or kernel change; "
          "later runs load them from the cache)...")


class _FirstCompile(event.Listener):
    """Prints :data:`NOTICE` when the first compile of a ``schedgym`` function starts."""

    def __init__(self) -> None:
        self.said = False

    def on_start(self, ev: Any) -> None:
        if self.said:
            return
        module = getattr(getattr(ev.data.get("dispatcher"), "py_func", None), "__module__", "")
        if module.startswith("schedgym") and sys.stderr is not None and sys.stderr.isatty():
            self.said = True
            print(NOTICE, file=sys.stderr, flush=True)

    def on_end(self, ev: Any) -> None:
        pass


LISTENER = _FirstCompile()
event.register("numba:compile", LISTENER)
