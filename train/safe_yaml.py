"""Reading the YAML files a user hands to the command line (experiments, hyperparameter configs).

Such a file is data, so it is read with PyYAML's ``SafeLoader`` (a ``!!python/...`` tag is an
error, never code), refused when it is not a regular file (a FIFO, ``/dev/zero``) or larger than
:data:`MAX_BYTES`, and refused when it uses an alias (``*name``): aliases are what a
"billion laughs" file nests to expand a few hundred bytes into gigabytes, and no schedgym file
needs one. Every refusal is a ``ValueError`` naming the file, which the command line prints as
one line before any work starts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

#: Largest YAML file read, in bytes (the shipped configs are a few KiB).
MAX_BYTES = 1 << 20


class _NoAliasLoader(yaml.SafeLoader):
    """``SafeLoader`` that refuses aliases (anchors alone are harmless and still parse)."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None, None, f"an alias (*{event.anchor}) is not allowed: write the value out",
                event.start_mark)
        return super().compose_node(parent, index)


def _one_line(exc: yaml.YAMLError) -> str:
    """A YAML error as ``PROBLEM (line N, column M)``."""
    if isinstance(exc, yaml.MarkedYAMLError):
        problem = exc.problem or exc.context or "invalid YAML"
        mark = exc.problem_mark or exc.context_mark
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        return " ".join(f"{problem}{where}".split())
    return " ".join(str(exc).split())


def read_text_capped(path: str | Path, what: str, max_bytes: int = MAX_BYTES) -> str:
    """The text of ``path`` if it is a regular file of at most ``max_bytes`` bytes (read at
    most that many bytes, so a file that grows meanwhile cannot exhaust memory either);
    ``what`` names the parameter in the ``ValueError``."""
    p = Path(path)
    if not p.exists():
        raise ValueError(f"{what}={str(p)!r} is invalid: file does not exist")
    if not p.is_file():
        raise ValueError(f"{what}={str(p)!r} is invalid: not a regular file")
    size = p.stat().st_size
    if size > max_bytes:
        raise ValueError(f"{what}={str(p)!r} is invalid: {size:,} bytes, above the "
                         f"{max_bytes:,}-byte limit of a YAML file")
    with open(p, "rb") as fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ValueError(f"{what}={str(p)!r} is invalid: above the {max_bytes:,}-byte limit "
                         "of a YAML file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{what}={str(p)!r} is invalid: not UTF-8 text ({exc.reason} at "
                         f"byte {exc.start})") from None


def load_yaml(path: str | Path, what: str) -> Any:
    """Parse ``path`` as safe, alias-free YAML (see the module docstring); ``what`` names the
    parameter in the ``ValueError`` (e.g. ``"experiment"``, ``"config"``)."""
    text = read_text_capped(path, what)
    try:
        return yaml.load(text, Loader=_NoAliasLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise ValueError(f"{what}={str(path)!r} is invalid: {_one_line(exc)}") from None
