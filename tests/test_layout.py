"""The package layout reads as the data flow: no import cycles between gramask's modules.

Every import of one gramask module by another counts, the lazy ones inside functions included:
a lazy import that closes a cycle still makes two modules that cannot be read one before the
other (it only hides the cycle from the interpreter).
"""

from __future__ import annotations

import ast
from pathlib import Path

import gramask

ROOT = Path(gramask.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]


def import_graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    mod = ".".join([*base, node.module] if node.module else base)
                else:
                    mod = node.module or ""
                # `from pkg import name` imports pkg.name when that is a module
                targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in modules else mod
                           for a in node.names]
            for t in targets:
                while t and t not in modules:
                    t = t.rpartition(".")[0]
                # a package's own __init__ is run by importing anything under it: not an edge
                if t and t != name and not name.startswith(t + "."):
                    graph[name].add(t)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_cycle_finder_sees_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycles() -> None:
    assert cycles(import_graph()) == []


# One module one job, one class one job: the sizes the structure pass (issue 18) holds to.
MAX_MODULE_LINES = 550
MAX_CLASS_LINES = 400
# Modules allowed past the sizes while another branch splits them (none now).
SPLIT_ELSEWHERE: set[str] = set()


def class_sizes(source: str) -> list[tuple[str, int]]:
    """(name, lines) of every class in ``source``, nested ones included."""
    return [(n.name, (n.end_lineno or n.lineno) - n.lineno + 1)
            for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef)]


def oversized() -> list[str]:
    out = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent).as_posix()
        if rel in SPLIT_ELSEWHERE:
            continue
        text = path.read_text(encoding="utf-8")
        n = len(text.splitlines())
        if n > MAX_MODULE_LINES:
            out.append(f"{rel}: {n} lines")
        out += [f"{rel}: class {name}, {size} lines" for name, size in class_sizes(text)
                if size > MAX_CLASS_LINES]
    return out


def test_class_sizes_are_measured() -> None:
    src = "class A:\n" + "    x = 1\n" * 450 + "\n\nclass B:\n    class C:\n        y = 2\n"
    assert class_sizes(src) == [("A", 451), ("B", 3), ("C", 2)]


def test_modules_and_classes_stay_small() -> None:
    assert oversized() == []
