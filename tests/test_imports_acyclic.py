"""The modules of newtonad import each other without cycles.

Every ``import`` statement of every module is read with :mod:`ast` -- at the top of the
module and inside functions and classes alike, since a function-level import only
postpones a cycle -- relative imports are resolved, and the graph of newtonad's modules
must have no cycle. ``from pkg import name`` is an edge to ``pkg.name`` when that is a
module, to ``pkg`` otherwise; the implicit import of a module's parent packages is not an
edge (every module would otherwise depend on ``newtonad/__init__``).

Print the graph (one ``module -> imported module`` edge per line, then the cycles)::

    python tests/test_imports_acyclic.py [package prefix]
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "newtonad"
#: The engine package, whose cycles are reported by their own test below.
ENGINE = "newtonad.ad.engine"


def module_names(root: Path = ROOT) -> dict[str, Path]:
    """Dotted module name -> source file, for every module of the package."""
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the newtonad modules it imports (anywhere in its source)."""
    modules = module_names(root)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(name, is_package, node)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                           for a in node.names]
            for target in targets:
                while target and target not in modules:  # `import a.b.c` of a non-module c
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
                elif target == name:
                    graph[name].add(name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with a cycle (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:  # recursion depth is bounded by the module count
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
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
            if len(component) > 1 or v in graph[v]:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def _in_engine(component: list[str]) -> bool:
    return all(m == ENGINE or m.startswith(ENGINE + ".") for m in component)


def test_the_graph_is_read_from_every_kind_of_import(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from . import a\n")
    (pkg / "a.py").write_text("import pkg.sub.c\n\ndef f():\n    from .sub import b\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("class K:\n    def m(self):\n        from ..a import f\n")
    (pkg / "sub" / "c.py").write_text("from .. import sub\nfrom ..sub.b import K\n")
    graph = import_graph(pkg)
    assert graph == {"pkg": {"pkg.a"}, "pkg.a": {"pkg.sub.c", "pkg.sub.b"},
                     "pkg.sub": set(), "pkg.sub.b": {"pkg.a"},
                     "pkg.sub.c": {"pkg.sub", "pkg.sub.b"}}
    assert cycles(graph) == [["pkg.a", "pkg.sub.b", "pkg.sub.c"]]  # a -> c -> b -> a


def test_newtonad_has_no_import_cycles():
    found = [c for c in cycles(import_graph()) if not _in_engine(c)]
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


def test_engines_register_one_way():
    """The engine package imports the reference evaluator and knows the other engines by
    module name; no engine module imports the package back into a cycle."""
    assert not [c for c in cycles(import_graph()) if ENGINE in c]


def test_the_engine_has_no_import_cycles():
    assert not [c for c in cycles(import_graph()) if _in_engine(c)]


def test_the_ad_core_flows_one_way():
    """Low modules never reach the NumPy layer, tracing, transforms or the API."""
    graph = import_graph()
    low = ["newtonad.ad.program", "newtonad.ad.dispatch", "newtonad.ad.var"]
    high = {"newtonad.ad.numpy_api", "newtonad.ad.trace", "newtonad.ad.transforms",
            "newtonad.ad.eager", "newtonad.api"}
    high |= {m for m in graph if m.startswith("newtonad.ad.numpy_")}  # the whole NumPy layer
    for module in low:
        reached, todo = set(), [module]
        while todo:
            for m in graph[todo.pop()] - reached:
                reached.add(m)
                todo.append(m)
        assert not reached & high, (module, sorted(reached & high))


def main(prefix: str = "newtonad") -> None:
    graph = import_graph()
    for m in sorted(graph):
        if m.startswith(prefix):
            for t in sorted(graph[m]):
                print(f"{m} -> {t}")
    found = cycles(graph)
    print(f"# {sum(len(v) for v in graph.values())} edges, {len(found)} cycles")
    for c in found:
        print("# cycle: " + " <-> ".join(c))


if __name__ == "__main__":
    main(*sys.argv[1:])
