"""The house rules that a linter does not check: no import cycles between cuzk_ray's modules
(lazy imports inside functions count: they hide a cycle, they do not remove it) and no private
name (``_x``) used across modules, whether imported (``from m import _x``) or reached through a
module (``m._x``). Each rule has a negative twin on a made-up package, so the check can fail."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "cuzk_ray"


def module_files(root: Path, package: str) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file of the package."""
    out = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module an ``ImportFrom`` names (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, list[str], int]]:
    """(imported module, names taken from it, line) for every import in the file, at any depth."""
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, [], node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(module, is_package, node)
            names = []
            for a in node.names:
                sub = f"{target}.{a.name}"
                if sub in modules:  # `from pkg import submodule`
                    out.append((sub, [], node.lineno))
                else:
                    names.append(a.name)
            if names:
                out.append((target, names, node.lineno))
    return out


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    return {m: {t for t, _, _ in imports_of(m, p, modules) if t in modules and t != m} for m, p in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
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


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_uses(modules: dict[str, Path], package: str) -> list[str]:
    """'file:line: name from module' for private names crossing a module boundary."""
    found = []
    for m, path in modules.items():
        imports = imports_of(m, path, modules)
        for target, names, line in imports:
            if target.split(".")[0] == package and target != m:
                found += [f"{path.name}:{line}: {n} from {target}" for n in names if _private(n)]
        # module aliases bound in this file (import a.b as x, from a import b) -> attribute uses x._y
        tree = ast.parse(path.read_text(), str(path))
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.split(".")[0] == package:
                        aliases[a.asname or a.name] = a.name
            elif isinstance(node, ast.ImportFrom):
                target = _absolute(m, path.name == "__init__.py", node)
                for a in node.names:
                    if f"{target}.{a.name}" in modules:
                        aliases[a.asname or a.name] = f"{target}.{a.name}"
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr):
                base = ast.unparse(node.value)
                if base in aliases and aliases[base] != m:
                    found.append(f"{path.name}:{node.lineno}: {node.attr} of {aliases[base]}")
    return found


def test_no_import_cycles_in_the_package():
    modules = module_files(ROOT, PACKAGE)
    assert len(modules) > 20  # the walk found the package
    assert cycles(import_graph(modules)) == []


def test_no_private_names_across_modules():
    assert private_uses(module_files(ROOT, PACKAGE), PACKAGE) == []


def test_jobs_use_no_private_names():
    modules = module_files(ROOT, PACKAGE)
    bad = []
    for path in sorted((ROOT / "jobs").glob("*.py")):
        for target, names, line in imports_of("jobs." + path.stem, path, modules):
            bad += [f"{path.name}:{line}: {n} from {target}" for n in names
                    if target.startswith(PACKAGE) and _private(n)]
    assert bad == []


def _fake_package(tmp_path: Path, files: dict[str, str]) -> dict[str, Path]:
    for name, text in files.items():
        p = tmp_path / "pkg" / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return module_files(tmp_path, "pkg")


def test_checks_find_a_lazy_cycle_and_private_names(tmp_path):
    """The negative twin: a cycle hidden in a function, a private import, a private attribute."""
    mods = _fake_package(tmp_path, {
        "__init__.py": "",
        "a.py": "from .b import f\n\ndef g():\n    return f()\n",
        "b.py": "def f():\n    from . import a\n    from .c import _secret\n    return a, _secret\n",
        "c.py": "_secret = 1\n",
        "d.py": "from . import c\n\nx = c._secret\n",
        "sub/__init__.py": "",
        "sub/e.py": "from ..c import __name__ as ok\n",
    })
    assert cycles(import_graph(mods)) == [["pkg.a", "pkg.b"]]
    uses = private_uses(mods, "pkg")
    assert any("_secret from pkg.c" in u for u in uses) and any("_secret of pkg.c" in u for u in uses)
    assert not any("e.py" in u for u in uses)  # dunders are not private
