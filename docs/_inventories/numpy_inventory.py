"""Write ``numpy.inv``, the intersphinx inventory of NumPy used when the docs are built.

The docs build reads every intersphinx inventory from this folder, so it needs no
network. ``python.inv`` and ``scipy.inv`` are the inventories their projects publish
(Debian's ``python3-doc`` and ``python-scipy-doc`` ship them). No NumPy inventory could
be fetched where this was written, so this script builds one from the installed NumPy:
each public function, ufunc, class and ``ndarray`` method with the address NumPy's
reference gives it (``reference/generated/<name>.html#<name>``, relative to the base URL
in ``docs/conf.py``), in the object types NumPy's own inventory uses (ufuncs are
``py:data``). Replace it with NumPy's published ``objects.inv`` where that can be
downloaded::

    python docs/_inventories/numpy_inventory.py   # writes docs/_inventories/numpy.inv
"""

from __future__ import annotations

import inspect
import types
import zlib
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def _entries() -> list[tuple[str, str]]:
    """``(name, domain:role)`` for NumPy's public namespace, sorted."""
    out: dict[str, str] = {}
    for home, prefix in ((np, "numpy"), (np.linalg, "numpy.linalg"), (np.fft, "numpy.fft"),
                         (np.random, "numpy.random")):
        for name in dir(home):
            if name.startswith("_"):
                continue
            obj = getattr(home, name)
            if isinstance(obj, types.ModuleType):
                continue
            if isinstance(obj, np.ufunc):
                out[f"{prefix}.{name}"] = "py:data"
            elif inspect.isclass(obj):
                out[f"{prefix}.{name}"] = "py:class"
            elif callable(obj):
                out[f"{prefix}.{name}"] = "py:function"
    for cls in (np.ndarray, np.ufunc, np.dtype, np.random.Generator):
        for name in dir(cls):
            if name.startswith("_"):
                continue
            attr = inspect.getattr_static(cls, name)
            role = "py:method" if callable(getattr(cls, name)) and not isinstance(
                attr, property) and "getset" not in type(attr).__name__ else "py:attribute"
            out[f"numpy.{cls.__name__}.{name}"] = role
    for name in ("ArrayLike", "NDArray", "DTypeLike"):
        out[f"numpy.typing.{name}"] = "py:data"
    for term in ("array_like", "broadcast", "ufunc"):  # glossary terms the docs name
        out[term] = "std:term"
    return sorted(out.items())


def _uri(name: str) -> str:
    if not name.startswith("numpy."):
        return f"glossary.html#term-{name}"
    if name.startswith("numpy.typing."):
        return f"reference/typing.html#{name}"
    return f"reference/generated/{name}.html#{name}"


def main() -> None:
    """Write ``numpy.inv`` beside this script."""
    lines = "".join(f"{name} {role} 1 {_uri(name)} -\n" for name, role in _entries())
    header = (f"# Sphinx inventory version 2\n# Project: NumPy\n# Version: {np.__version__}\n"
              "# The remainder of this file is compressed using zlib.\n")
    (HERE / "numpy.inv").write_bytes(header.encode() + zlib.compress(lines.encode()))


if __name__ == "__main__":
    main()
