"""A one-line notice on stderr when a process starts compiling schedgym's kernels.

The kernels are compiled on their first call after an install or a change of a kernel source,
then loaded from numba's on-disk cache. A first ``reset``/``step`` can therefore pause for
seconds with nothing to say why; this module says it once per process, at the start of the
first compile of one of schedgym's own functions (numba's documented event API reports real
compiles only, never loads from the cache). The notice goes to an interactive terminal only, so
piped output and captured logs stay exactly what the command writes. A progress bar drawn on
the terminal is never broken into: the notice is a line of its own above it (:func:`say`).
"""

from __future__ import annotations

import sys
from typing import Any

from numba.core import event

#: What the notice says (once per process).
NOTICE = ("schedgym: compiling the kernels on first use (once per install or kernel change; "
          "later runs load them from the cache)...")


#: What a worker process writes before its notice on the shared terminal: back to the start of
#: the line and clear it (the parent's progress bar is drawn there; it redraws itself below).
CLEAR_LINE = "\r\x1b[K"


def say(text: str) -> None:
    """Print ``text`` as one line of its own on stderr, also while a progress bar is drawn
    there: through tqdm's ``write`` (which clears the bars, prints the line and draws them again
    below it) when a tqdm bar is open in this process; from a worker process (whose parent may
    draw a bar on the same terminal) after :data:`CLEAR_LINE`; else a plain print. tqdm is not
    imported for this: a process that never imported it has no bar."""
    import multiprocessing

    std = sys.modules.get("tqdm.std")
    bar_cls = getattr(std, "tqdm", None)
    if bar_cls is not None and len(getattr(bar_cls, "_instances", ())) > 0:
        bar_cls.write(text, file=sys.stderr)
        sys.stderr.flush()
        return
    worker = multiprocessing.parent_process() is not None
    print((CLEAR_LINE if worker else "") + text, file=sys.stderr, flush=True)


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
            say(NOTICE)

    def on_end(self, ev: Any) -> None:
        pass


LISTENER = _FirstCompile()
event.register("numba:compile", LISTENER)
