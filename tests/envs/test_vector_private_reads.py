"""The native vector envs read their template env through its public interface only.

A scan of each ``vector.py``'s syntax tree: no ``obj._name`` attribute access on anything but
``self`` (the vector env's own state), and no ``getattr(obj, "_name", ...)``; dunders are
allowed. The template envs document what their vector twin reads (GainOverhead-v0:
``flat_space``, ``entity_encoder``, ``instance_feature_values``, ``price_ceiling``,
``share_arrivals``, ``sync_state``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "schedgym" / "envs"


def private_reads(source: str) -> list[str]:
    """``line: expression`` of every private attribute read on something other than ``self``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute):
            name, owner = node.attr, node.value
            if (name.startswith("_") and not name.startswith("__")
                    and not (isinstance(owner, ast.Name) and owner.id == "self")):
                found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "hasattr", "setattr") and len(node.args) >= 2
              and not (isinstance(node.args[0], ast.Name) and node.args[0].id == "self")
              and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
              and node.args[1].value.startswith("_")
              and not node.args[1].value.startswith("__")):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_the_scan_finds_what_it_looks_for():
    src = ("class V:\n"
           "    def f(self, first):\n"
           "        a = first._flat_space\n"
           "        b = self._envs[0]._ceiling\n"
           "        c = getattr(first, '_features', None)\n"
           "        d = self._own + first.public + first.__class__.__name__.__len__()\n"
           "        e = getattr(self, '_mine', None)\n")
    assert private_reads(src) == ["3: first._flat_space", "4: self._envs[0]._ceiling",
                                  "5: getattr(first, '_features', None)"]


@pytest.mark.parametrize("env", ["gain_overhead", "deadline_welfare", "fluctuating_speed"])
def test_vector_env_reads_no_private_attribute_of_its_template(env):
    path = ROOT / env / "vector.py"
    assert private_reads(path.read_text()) == []
