"""Sphinx directive ``.. traced-table:: KIND``: what newtonad traces, read from the code.

The tables of the page "What newtonad traces" are generated at every build from the
dispatch tables of the AD core (the same tables ``Var.__array_ufunc__`` and
``Var.__array_function__`` consult), so the page cannot drift from the code:

``ufuncs``
    NumPy and ``scipy.special`` ufuncs called on traced values, with their number
    of inputs and whether the numba engine compiles them.
``reductions``
    ``ufunc.reduce`` (``np.add.reduce``, ...) and its keywords.
``functions``
    NumPy and SciPy functions (``__array_function__`` and the SciPy routing), each
    with the keywords of newtonad's implementation (``inspect.signature``).
``refused``
    Functions that are registered only to be refused with an explanation.
``methods``
    Methods and properties of traced arrays (``x.sum(axis=0)``, ``x.T``).
``numpy-only``
    Primitives that run on the NumPy evaluator even under the numba engine.

:func:`dispatch_tables` is the one place that knows where the tables live
(``newtonad.ad.dispatch`` now; ``newtonad.ad.var_ops`` before it), so a move of the
tables is a change here only.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
from typing import Any, Callable

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

#: where the dispatch tables have lived, newest first
TABLE_MODULES = ("newtonad.ad.dispatch", "newtonad.ad.var_ops")
#: importing these registers their traced functions (newtonad never imports them itself)
SCIPY_MODULES = ("scipy.special", "scipy.stats", "scipy.linalg")


def dispatch_tables() -> dict[str, dict]:
    """The dispatch tables of the AD core, wherever they live.

    Returns
    -------
    dict
        ``UFUNCS`` (ufunc name -> implementation), ``UFUNC_REDUCE``, ``FUNCTIONS``
        (function object -> implementation) and ``SCIPY_FUNCTIONS`` (dotted name
        -> implementation); a table missing from the module is empty.
    """
    import newtonad  # noqa: F401  (fills the tables)

    for name in SCIPY_MODULES:
        importlib.import_module(name)
    for name in TABLE_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(module, "FUNCTIONS") and hasattr(module, "UFUNCS"):
            return {table: dict(getattr(module, table, {}))
                    for table in ("UFUNCS", "UFUNC_REDUCE", "FUNCTIONS", "SCIPY_FUNCTIONS")}
    raise ImportError(f"no dispatch tables found in {', '.join(TABLE_MODULES)}: update "
                      "docs/_ext/traced.py's TABLE_MODULES")


def public_name(fn: Any) -> str:
    """Where users find ``fn``: ``numpy.sum``, ``numpy.linalg.det``, ``scipy.linalg.cho_solve``."""
    import numpy as np

    name = getattr(fn, "__name__", repr(fn))
    for home, module in (("numpy", np), ("numpy.linalg", np.linalg), ("numpy.fft", np.fft)):
        if getattr(module, name, None) is fn:
            return f"{home}.{name}"
    module = getattr(fn, "__module__", "") or ""
    return f"{'.'.join(module.split('.')[:2]) if module.startswith('scipy') else module}.{name}"


def _default(value: Any) -> str:
    if value is inspect.Parameter.empty:
        return ""
    if type(value) is object:  # a sentinel: "not given"
        return "=<not given>"
    return f"={value!r}" if not isinstance(value, type) else f"={value.__name__}"


def keywords(impl: Callable) -> str:
    """The arguments of ``impl`` as a call signature, ``out`` left out (always refused)."""
    try:
        signature = inspect.signature(impl)
    except (TypeError, ValueError):
        return "(see NumPy)"
    parts = []
    for p in signature.parameters.values():
        if p.name == "out":
            continue
        if p.kind is p.VAR_POSITIONAL:
            parts.append(f"*{p.name}")
        elif p.kind is p.VAR_KEYWORD:
            parts.append(f"**{p.name}")
        else:
            parts.append(f"{p.name}{_default(p.default)}")
    return ", ".join(parts)


def is_refusal(impl: Callable) -> bool:
    """Whether ``impl`` only refuses: its body (docstring aside) is one ``raise``."""
    try:
        source = textwrap.dedent(inspect.getsource(impl))
    except (OSError, TypeError):
        return False
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a lambda inside a larger expression: a real implementation
        return False
    if not tree.body or not isinstance(tree.body[0], ast.FunctionDef):
        return False
    body = [s for s in tree.body[0].body
            if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    return len(body) == 1 and isinstance(body[0], ast.Raise)


def _refusal_message(impl: Callable, *args: Any) -> str:
    """The first clause of what ``impl`` raises."""
    try:
        impl(*args)
    except Exception as exc:  # noqa: BLE001  (the refusal itself)
        return str(exc).split(";")[0]
    return ""


def _numpy_only(name: str, impl: Any) -> bool:
    """Whether the ufunc ``name`` runs on NumPy / SciPy under the numba engine.

    The table entry is a primitive itself, or a function wrapping the primitive of the
    ufunc's name (``erfinv``) or of its own name (``psi`` -> ``digamma``); anything else
    is composed of elementwise primitives, which the engine compiles.
    """
    from newtonad.ad.primitives.core import REGISTRY

    for candidate in (impl, REGISTRY.get(name), REGISTRY.get(getattr(impl, "__name__", ""))):
        if hasattr(candidate, "numpy_only"):
            return bool(candidate.numpy_only)
    return False


# ---- rows of each table ---------------------------------------------------------------------

def ufunc_rows() -> list[list[str]]:
    import numpy as np
    import scipy.special

    rows = []
    for name, impl in sorted(dispatch_tables()["UFUNCS"].items()):
        ufunc = getattr(np, name, None)
        home = "numpy"
        if not isinstance(ufunc, np.ufunc):
            ufunc, home = getattr(scipy.special, name, None), "scipy.special"
        nin = str(ufunc.nin) if isinstance(ufunc, np.ufunc) else ""
        engine = "NumPy / SciPy" if _numpy_only(name, impl) else "compiled"
        rows.append([f"``{home}.{name}``", nin, engine])
    return rows


def reduction_rows() -> list[list[str]]:
    return [[f"``numpy.{name}.reduce``", f"``{keywords(impl)}``"]
            for name, impl in sorted(dispatch_tables()["UFUNC_REDUCE"].items())]


def _function_entries() -> list[tuple[str, Callable]]:
    tables = dispatch_tables()
    entries = [(public_name(fn), impl) for fn, impl in tables["FUNCTIONS"].items()]
    entries += list(tables["SCIPY_FUNCTIONS"].items())
    return sorted(entries)


def function_rows() -> list[list[str]]:
    return [[f"``{name}``", f"``{keywords(impl)}``" if keywords(impl) else ""]
            for name, impl in _function_entries() if not is_refusal(impl)]


def refused_rows() -> list[list[str]]:
    return [[f"``{name}``", _refusal_message(impl)]
            for name, impl in _function_entries() if is_refusal(impl)]


def method_rows() -> list[list[str]]:
    import numpy as np

    import newtonad

    functions = dispatch_tables()["FUNCTIONS"]
    probe = newtonad.Var(np.ones(3))  # an eager value: refusing methods say why on it
    rows = []
    members: dict[str, object] = {}
    for cls in reversed(newtonad.Var.__mro__[:-1]):  # the ArrayMethods mixin's too
        members.update(vars(cls))
    for name, value in sorted(members.items()):
        if name.startswith("_") or name in getattr(newtonad.Var, "__slots__", ()):
            continue
        if isinstance(value, property):
            rows.append([f"``x.{name}``", "property"])
        elif not inspect.isfunction(value):
            continue
        elif is_refusal(value):
            rows.append([f"``x.{name}``", "refused: " + _refusal_message(value, probe)])
        else:
            signature = keywords(value).removeprefix("self").lstrip(", ")
            if signature == "*args, **kwargs" and getattr(np, name, None) in functions:
                signature = f"as ``numpy.{name}`` above"
            else:
                signature = f"``({signature})``"
            rows.append([f"``x.{name}``", signature])
    return rows


def numpy_only_rows() -> list[list[str]]:
    import newtonad  # noqa: F401  (registers every primitive)
    from newtonad.ad.primitives.core import REGISTRY

    return [[f"``{name}``", str(getattr(p, "kind", ""))]
            for name, p in sorted(REGISTRY.items()) if getattr(p, "numpy_only", False)]


TABLES: dict[str, tuple[list[str], Callable[[], list[list[str]]], list[int]]] = {
    "ufuncs": (["ufunc", "inputs", "numba engine runs it"], ufunc_rows, [40, 10, 50]),
    "reductions": (["method", "arguments"], reduction_rows, [30, 70]),
    "functions": (["function", "arguments (``out=`` is always refused)"], function_rows,
                  [30, 70]),
    "refused": (["function", "why"], refused_rows, [30, 70]),
    "methods": (["method", "arguments"], method_rows, [25, 75]),
    "numpy-only": (["primitive", "kind"], numpy_only_rows, [40, 60]),
}


def list_table(header: list[str], rows: list[list[str]], widths: list[int]) -> list[str]:
    """reStructuredText of a ``list-table`` (cells must not contain newlines)."""
    lines = [".. list-table::", "   :header-rows: 1", "   :widths: " + " ".join(map(str, widths)),
             ""]
    for row in [header] + rows:
        lines.append(f"   * - {row[0]}")
        lines += [f"     - {cell}" for cell in row[1:]]
    return lines


class TracedTable(SphinxDirective):
    """Render one of :data:`TABLES` from the live dispatch tables."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        kind = self.arguments[0]
        if kind not in TABLES:
            raise self.error(f"traced-table: unknown table {kind!r}; one of {sorted(TABLES)}")
        header, make_rows, widths = TABLES[kind]
        rows = make_rows()
        if not rows:
            raise self.error(f"traced-table {kind}: no entries found (did the tables move?)")
        container = nodes.container()
        self.state.nested_parse(StringList(list_table(header, rows, widths),
                                           source="<traced-table>"), self.content_offset,
                                container)
        return container.children


def setup(app: Any) -> dict[str, Any]:
    """Register the directive."""
    app.add_directive("traced-table", TracedTable)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
