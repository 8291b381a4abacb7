"""The installed package's modules import each other without a circle.

The graph is read from the source (the AST), so it counts every ``import`` and ``from ...
import`` statement wherever it stands: at module level, inside a function (a lazy import is
still a dependency), under ``if TYPE_CHECKING``. Nodes are the modules of ``schedgym``,
``schedgym.agents`` and ``schedgym.train`` (the last two are the top-level ``agents/`` and
``train/`` folders, reached through the package's links); an edge ``a -> b`` means ``a`` names
``b``: ``import b``, ``from b import name`` (``b`` itself when ``name`` is not a submodule) or
``from pkg import b``. Importing a submodule also runs its parent packages' ``__init__``, but
that is not an edge: a package's ``__init__`` importing its own submodules would otherwise make
every package a circle.

The layering this guards is written down in ``train/__init__.py``: core below envs, envs below
agents, agents below train, and in train the libraries below the command modules (one per
subcommand), which only ``schedgym.train.cli`` imports.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import schedgym

#: Edges left out of the graph, each with the reason (none today).
EXEMPT: frozenset[tuple[str, str]] = frozenset()


def package_modules(root: Path, package: str = "schedgym") -> dict[str, Path]:
    """``{module name: source file}`` of every ``.py`` file of the package folder ``root``
    (links followed, so ``schedgym/agents`` and ``schedgym/train`` are included)."""
    found: dict[str, Path] = {}
    for folder, dirs, names in os.walk(root, followlinks=True):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__"
                         and (Path(folder, d) / "__init__.py").is_file())
        rel = Path(folder).relative_to(root).parts
        for name in names:
            if not name.endswith(".py"):
                continue
            parts = (package, *rel) if name == "__init__.py" else (package, *rel, name[:-3])
            found[".".join(parts)] = Path(folder, name)
    return found


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module name of a (possibly relative) ``from ... import``."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(module: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that the source of ``module`` imports (see the docstring)."""
    tree = ast.parse(path.read_text(), str(path))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom):
            src = _absolute(module, path.name == "__init__.py", node)
            for alias in node.names:
                sub = f"{src}.{alias.name}"
                if sub in known:
                    out.add(sub)
                elif src in known:
                    out.add(src)
    out.discard(module)
    return out


def import_graph(root: Path) -> dict[str, set[str]]:
    """``{module: modules it imports}`` of the package at ``root``, :data:`EXEMPT` left out."""
    mods = package_modules(root)
    known = set(mods)
    return {m: {t for t in imports_of(m, p, known) if (m, t) not in EXEMPT}
            for m, p in sorted(mods.items())}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle ``[a, b, ..., a]`` of ``graph``, or ``None`` (depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)) is not None:
            return found
    return None


def test_the_graph_sees_every_kind_of_import(tmp_path):
    pkg = tmp_path / "schedgym"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from . import b\n")
    (pkg / "a.py").write_text("def f():\n    from schedgym.sub.b import x\n")
    (pkg / "sub" / "b.py").write_text("import schedgym.c\nx = 1\n")
    (pkg / "c.py").write_text("from .sub import b\n")
    graph = import_graph(pkg)
    assert graph["schedgym.a"] == {"schedgym.sub.b"}  # a function-level import counts
    assert graph["schedgym.sub"] == {"schedgym.sub.b"}
    assert graph["schedgym.sub.b"] == {"schedgym.c"}
    assert graph["schedgym.c"] == {"schedgym.sub.b"}  # relative, to a submodule
    assert find_cycle(graph) == ["schedgym.sub.b", "schedgym.c", "schedgym.sub.b"]


def _package_graph() -> dict[str, set[str]]:
    graph = import_graph(Path(schedgym.__file__).resolve().parent)
    assert "schedgym.train.training" in graph and "schedgym.agents.registry" in graph
    return graph


def test_the_package_has_no_import_circle():
    cycle = find_cycle(_package_graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


#: Layers, lowest first: a module may import its own layer's modules and lower layers' only.
LAYERS = ("schedgym.core", "schedgym.envs", "schedgym.agents", "schedgym.train")


def _layer(module: str) -> int | None:
    for i, prefix in enumerate(LAYERS):
        if module == prefix or module.startswith(prefix + "."):
            return i
    return None


def test_no_import_runs_up_the_layers():
    graph = _package_graph()
    up = sorted(f"{m} -> {t}" for m, targets in graph.items() for t in targets
                if _layer(m) is not None and _layer(t) is not None and _layer(t) > _layer(m))
    assert not up, "imports running up the layers (core <- envs <- agents <- train): " + \
        "; ".join(up)


def test_only_the_cli_imports_a_command_module():
    from schedgym.train.cli import SUBCOMMANDS

    graph = _package_graph()
    commands = set(SUBCOMMANDS.values())
    bad = sorted(f"{m} -> {t}" for m, targets in graph.items() for t in targets & commands
                 if m != "schedgym.train.cli")
    assert not bad, "command modules imported by others than the cli: " + "; ".join(bad)


def test_playing_a_classical_agent_imports_neither_train_nor_torch():
    """The graph above is what the source says; this is what a process loads: building an env
    and a classical agent by name (the registry, the spec, the model checks all imported)."""
    import subprocess
    import sys

    code = ("import sys, gymnasium as gym\n"
            "import schedgym.agents\n"
            "from schedgym.agents import learned, record, registry, spec\n"
            "schedgym.agents.make('drf', gym.make('schedgym/GainOverhead-v0'))\n"
            "print(sorted(m for m in sys.modules if m.startswith('schedgym.train')\n"
            "             or m.split('.')[0] in ('torch', 'stable_baselines3')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]", out.stdout
