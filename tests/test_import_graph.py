"""The internal import graphs of the library ``qpviz`` and of the dashboard ``app/`` (issue 23): no
import circles, no private names imported across modules.

Every module of ``qpviz/`` is parsed with :mod:`ast`; module-level AND function-level imports
count (a lazy import inside a function is how a circle hides). An edge A -> B means module A
imports (something from) module B; ``from qpviz.x import y`` where ``y`` is a submodule of
``qpviz.x`` is an edge to ``qpviz.x.y``. A package's ``__init__`` imports its submodules by
design, so ``pkg.sub -> pkg`` (a submodule reaching for its own package) would be the circle; both
directions are edges.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "qpviz"
#: The dashboard's modules import each other by their bare names (``app/`` is on the path).
APP = ROOT.parent / "app"


def _module_name(path: Path, base: Path) -> str:
    parts = list(path.relative_to(base).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(root: Path = ROOT) -> dict[str, Path]:
    """{module name: path} of a package (names from its parent: ``qpviz.x``) or of ``app/`` (bare names)."""
    base = root.parent if (root / "__init__.py").exists() else root
    return {_module_name(p, base): p for p in sorted(root.rglob("*.py"))}


def _resolve(module: str, level: int, current: str, is_package: bool) -> str:
    """The absolute name of ``from <level dots><module> import ...`` inside ``current``."""
    if level == 0:
        return module
    base = current.split(".") if is_package else current.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _imports(modules: dict[str, Path]):
    """(edges: module -> set of qpviz modules it imports, private: list of (module, target, name))."""
    edges: dict[str, set[str]] = {name: set() for name in modules}
    private: list[tuple[str, str, str]] = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in modules:
                        edges[name].add(alias.name)
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(node.module or "", node.level, name, is_package)
                if target not in modules:
                    continue
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    if sub in modules:
                        edges[name].add(sub)
                    else:
                        edges[name].add(target)
                        if alias.name.startswith("_") and not alias.name.startswith("__") and target != name:
                            private.append((name, target, alias.name))
    for name in edges:
        edges[name].discard(name)
    return edges, private


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each as a sorted list."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def _a_cycle(component: list[str], edges) -> list[str]:
    """One closed path through the first module of ``component`` (for the failure message)."""
    members = set(component)
    start = component[0]
    path, seen = [start], {start}
    parents = {start: None}
    queue = [start]
    while queue:  # breadth-first back to start within the component
        v = queue.pop(0)
        for w in sorted(edges[v] & members):
            if w == start:
                chain = [v]
                while parents[chain[-1]] is not None:
                    chain.append(parents[chain[-1]])
                return list(reversed(chain)) + [start]
            if w not in seen:
                seen.add(w)
                parents[w] = v
                queue.append(w)
    return path


def _describe(cycles, edges) -> str:
    return "\n".join(" -> ".join(_a_cycle(c, edges)) + f"   (component: {', '.join(c)})" for c in cycles)


EDGES, PRIVATE = _imports(_modules())
APP_EDGES, APP_PRIVATE = _imports(_modules(APP))


def test_the_graph_sees_function_level_imports():
    # the fixture the circles hid behind: a lazy import inside a function is an edge too
    source = "def f():\n    from qpviz.inference.fit import fit\n"
    tree = ast.parse(source)
    found = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert found and found[0].module == "qpviz.inference.fit"
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("where", ["qpviz", "app"])
def test_no_import_cycle(where):
    edges = EDGES if where == "qpviz" else APP_EDGES
    assert len(edges) > 30  # the graph was read
    cycles = _cycles(edges)
    assert not cycles, f"{len(cycles)} import circle(s) in {where}:\n{_describe(cycles, edges)}"


@pytest.mark.parametrize("where", ["qpviz", "app"])
def test_no_private_name_imported_across_modules(where):
    lines = [f"{src} imports {name} from {dst}" for src, dst, name in (PRIVATE if where == "qpviz" else APP_PRIVATE)]
    assert not lines, f"private names imported across {where} modules:\n" + "\n".join(lines)
