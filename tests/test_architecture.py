"""The shape of the house, read from the source with `ast` (issue 21): imports go one way (no
circle among rankkit's modules, counting imports inside functions too), no module imports
another module's private name, and the README's layout section names the tree as it is."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "rankkit"


def _modules() -> dict[str, Path]:
    mods = {}
    for p in PKG.rglob("*.py"):
        parts = list(p.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = p
    return mods


MODULES = _modules()


def _imports(name: str, path: Path):
    """(target module, imported name or None, inside a function?) of every rankkit import."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    inside = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for sub in ast.walk(node):
                inside.add(id(sub))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "rankkit":
                continue
            for alias in node.names:
                yield target, alias.name, id(node) in inside
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "rankkit":
                    yield alias.name, None, id(node) in inside


def _graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {m: set() for m in MODULES}
    for m, p in MODULES.items():
        for target, name, _ in _imports(m, p):
            full = f"{target}.{name}" if name else target
            dep = full if full in MODULES else target
            if dep in MODULES and dep != m:
                edges[m].add(dep)
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
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

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_no_import_circle_among_rankkits_modules():
    """Imports inside functions count: a circle dodged by a late import is still a circle."""
    assert _cycles(_graph()) == []


def test_the_circle_finder_finds_circles():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_imports_another_modules_private_name():
    found = []
    for m, p in MODULES.items():
        for target, name, _ in _imports(m, p):
            if name is None or not name.startswith("_") or name.startswith("__"):
                continue
            if f"{target}.{name}" in MODULES:  # a private module of the same package is imported whole
                if target == m.rsplit(".", 1)[0] or target == m:
                    continue
            found.append(f"{m}: from {target} import {name}")
    assert found == []


def _layout_section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("## Layout")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def test_readme_layout_names_the_tree_as_it_is():
    """Every rankkit/... path the layout section names exists, and every module and package of
    rankkit is named there (a package by its folder, or each of its modules)."""
    section = _layout_section()
    named = set(re.findall(r"rankkit/[\w/]*(?:\.py|/)", section))
    for path in named:
        assert (ROOT / path).exists(), f"README layout names {path}, which is not in the tree"
    # modules named by their bare file name after a folder line (e.g. "dispatch.py" under rankkit/compiler/)
    bare = set(re.findall(r"\b([\w]+\.py)\b", section))
    missing = []
    for p in sorted(PKG.rglob("*.py")):
        rel = p.relative_to(ROOT).as_posix()
        folder = p.parent.relative_to(ROOT).as_posix() + "/"
        if rel in named or (folder in named and folder != "rankkit/") or p.name in bare:
            continue
        missing.append(rel)
    assert missing == [], f"not in the README's layout section: {missing}"
