"""The shape of the house, read from the source with `ast` (issues 21, 36): imports go one way (no
circle among rankkit's modules, counting imports inside functions too), down the layer table
(LAYERS: no module imports one in a layer above its own, and the faces import no other face but
Dask the Python face), no module imports another module's private name, and the README's layout
section (with docs/layout.md, module by module) names the tree as it is. Imports under `if TYPE_CHECKING:` are for the type checker only
and do not count."""

from __future__ import annotations

import ast
import functools
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


def _tree(path: Path) -> ast.Module:
    """The file's syntax tree, parsed once per test process while the file is unchanged (the
    checks below each read every module; callers only walk it)."""
    st = path.stat()
    return _parsed(path, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=None)
def _parsed(path: Path, mtime_ns: int, size: int) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _imports(name: str, path: Path) -> tuple:
    """(target module, imported name or None, inside a function?) of every rankkit import (found
    once per test process while the file is unchanged: the tree walks cost ~1 s of a core per check)."""
    st = path.stat()
    return _found_imports(name, path, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=None)
def _found_imports(name: str, path: Path, mtime_ns: int, size: int) -> tuple:
    return tuple(_walk_imports(name, path))


def _walk_imports(name: str, path: Path):
    tree = _tree(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    inside = set()
    typing_only = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for sub in ast.walk(node):
                inside.add(id(sub))
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for sub in node.body:
                typing_only.update(id(n) for n in ast.walk(sub))
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
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


# -- layers (issue 36) -------------------------------------------------------------------------------
# Bottom to top; a module may import its own layer and those below, never one above. A module is
# placed by the longest entry that names it or a package holding it ("" is the package itself).
LAYERS = [
    ("base", ["errors", "config", "console", "threads", "limits", "interrupts", "processes", "text"]),
    ("kernels and data", ["data", "sparse", "sorting", "vectors", "metrics", "stats", "compiler", "feature_maps"]),
    ("io and objectives", ["io", "datasets", "objectives"]),
    ("algorithms", ["solvers", "paths", "resources"]),
    # selection.py: choosing C on a path (the model header, the plot); parts/: training on parts, in
    # one process or on a Dask cluster, for every face
    ("use cases", ["training", "experiments", "evaluation", "scoring", "report", "plot", "selection", "parts"]),
    # dask.py: DaskRankSVM and evaluate over dask collections (the Dask face, over the Python face)
    ("faces", ["cli", "__main__", "commands", "app", "estimators", "regularization", "distributed", "dask"]),
    ("package", ["", "warmup"]),  # rankkit/__init__ (the public names, lazily) and the kernel warm-up tool
]
# the faces, by the modules of each; Dask may import the Python face, no face any other
FACES = {"cli": "CLI", "__main__": "CLI", "commands": "CLI", "app": "CLI",
         "estimators": "Python", "regularization": "Python", "distributed": "Dask", "dask": "Dask"}
FACE_MAY_IMPORT = {("Dask", "Python")}


def _place(module: str, table=None) -> tuple[int, str]:
    """(layer index, the table entry that placed it) of a module."""
    rest = module.split(".", 1)[1] if "." in module else ""
    best = None
    for i, (_, entries) in enumerate(table or LAYERS):
        for e in entries:
            if rest == e or (e and rest.startswith(e + ".")) or (not e and not rest):
                if best is None or len(e) > len(best[1]):
                    best = (i, e)
    if best is None:
        raise AssertionError(f"{module} is in no layer of tests/test_architecture.py's LAYERS")
    return best


def _face(entry: str) -> str | None:
    """The face of a module placed by `entry` (None below the faces)."""
    return FACES.get(entry)


def _layer_breaches(edges: dict[str, set[str]], table=None) -> list[str]:
    found = []
    for m in sorted(edges):
        lm, em = _place(m, table)
        for dep in sorted(edges[m]):
            ld, ed = _place(dep, table)
            names = [n for n, _ in (table or LAYERS)]
            if ld > lm:
                found.append(f"{m} ({names[lm]}) imports {dep} ({names[ld]}): upward")
            fm, fd = _face(em), _face(ed)
            if fm and fd and fm != fd and (fm, fd) not in FACE_MAY_IMPORT:
                found.append(f"{m} (the {fm} face) imports {dep} (the {fd} face)")
    return found


def test_every_module_has_a_layer():
    for m in MODULES:
        _place(m)


def test_each_folder_is_one_layer():
    """The table names top-level modules and packages only: a package's modules all sit in its layer
    (no module placed apart from its folder), so the tree shows the layers."""
    assert [e for _, entries in LAYERS for e in entries if "." in e] == []


def test_imports_go_down_the_layers_and_no_face_imports_another():
    """In-function imports count (a late import is still an import); TYPE_CHECKING blocks do not."""
    assert _layer_breaches(_graph()) == []


def test_the_layer_check_finds_an_upward_import_and_a_face_importing_a_face():
    table = [("low", ["data"]), ("high", ["training"]), ("faces", ["estimators", "distributed", "app"])]
    assert _layer_breaches({"rankkit.data": {"rankkit.training"}, "rankkit.training": set()}, table) == [
        "rankkit.data (low) imports rankkit.training (high): upward"]
    assert _layer_breaches({"rankkit.estimators": {"rankkit.distributed"}, "rankkit.distributed": {"rankkit.estimators"},
                            "rankkit.app.path": {"rankkit.distributed.path"}, "rankkit.distributed.path": set()},
                           table) == [
        "rankkit.app.path (the CLI face) imports rankkit.distributed.path (the Dask face)",
        "rankkit.estimators (the Python face) imports rankkit.distributed (the Dask face)"]


def test_the_path_algorithms_take_a_fit_and_know_no_solver():
    """rankkit/paths/ (the grid and exact path algorithms) imports no solver: the grid path runs the
    fit(C, w0) its caller hands it (rankkit.selection, rankkit.experiments, rankkit.distributed.path),
    with what the fits share along the path (rankkit.solvers.newton.path_memory) handed in too."""
    found = [f"{m} imports {t}" for m, p in MODULES.items() if m.startswith("rankkit.paths")
             for t, _, _ in _imports(m, p) if t == "rankkit.solvers" or t.startswith("rankkit.solvers.")]
    assert found == []


def test_type_checking_imports_do_not_count(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from rankkit.cli import cli\n"
                 "def g():\n    from rankkit.app import train\n")
    assert list(_imports("rankkit.data", f)) == [("rankkit.app", "train", True)]


def _layout_section() -> str:
    """The README's Layout section (the layers in a picture) and docs/layout.md (module by module)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("## Layout")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else None] + "\n" + (ROOT / "docs" / "layout.md").read_text(encoding="utf-8")


def test_readme_layout_names_the_tree_as_it_is():
    """Every rankkit/... path the layout section names exists, and every module and package of
    rankkit is named there (a package by its folder, or each of its modules)."""
    section = _layout_section()
    named = set(re.findall(r"rankkit/[\w/]*(?:\.py|/)", section))
    for path in named:
        assert (ROOT / path).exists(), f"README/docs layout names {path}, which is not in the tree"
    # modules named by their bare file name after a folder line (e.g. "dispatch.py" under rankkit/compiler/)
    bare = set(re.findall(r"\b([\w]+\.py)\b", section))
    missing = []
    for p in sorted(PKG.rglob("*.py")):
        rel = p.relative_to(ROOT).as_posix()
        folder = p.parent.relative_to(ROOT).as_posix() + "/"
        if rel in named or (folder in named and folder != "rankkit/") or p.name in bare:
            continue
        missing.append(rel)
    assert missing == [], f"not in the README's layout section nor docs/layout.md: {missing}"


def test_the_core_speaks_no_faces_language():
    """Below the faces no function takes a `style=` and no code names a face ("cli", "python"):
    a use case takes the face's Words (rankkit.solvers.options.Words), and each face passes its own
    (issue 36, "face words stay in the faces")."""
    faces = [i for i, (name, _) in enumerate(LAYERS) if name == "faces"][0]
    found = []
    for m, p in MODULES.items():
        if _place(m)[0] >= faces:
            continue
        for node in ast.walk(_tree(p)):
            if isinstance(node, ast.arg) and node.arg == "style":
                found.append(f"{m}: a parameter style (line {node.lineno})")
            elif isinstance(node, ast.Constant) and node.value in ("cli", "python"):
                found.append(f"{m}: the string {node.value!r} (line {node.lineno})")
    assert found == []
