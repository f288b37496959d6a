"""Type checkers see newtonad's public names with their real types, lazy ones included.

``nad.minimize``, ``nad.FiniteSum`` and ``nad.problems`` are imported on first use at run
time (a module ``__getattr__``, so ``import newtonad`` loads neither scipy nor dask); a
type checker reads them from ``newtonad/__init__.py``'s ``TYPE_CHECKING`` imports. This
test runs ``mypy --strict`` on a small user script and reads its ``reveal_type`` notes:
each must be the real signature or class, not ``Any``.

newtonad is found through ``MYPYPATH`` (mypy cannot follow the import hook of an editable
install); ``--follow-imports=silent`` reports errors of the user script only, as mypy
does for a package installed in site-packages.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = '''\
import numpy as np
import newtonad as nad


def f(x: np.ndarray) -> float:
    return float(np.sum(x ** 2))


def term(w: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
    return float(np.sum((X @ w - y) ** 2))


reveal_type(nad.minimize)
reveal_type(nad.grad)
reveal_type(nad.Objective)
reveal_type(nad.FiniteSum)
reveal_type(nad.problems.get)
reveal_type(nad.scipy_routing)
obj = nad.Objective(f)
reveal_type(obj)
reveal_type(obj.jac)
res = nad.minimize(obj.fun, np.ones(3), jac=obj.jac, method="trust-ncg")
g = nad.grad(f)
fs = nad.FiniteSum(term, data=(np.ones((4, 3)), np.ones(4)))
reveal_type(fs)
'''


def test_mypy_strict_sees_the_real_types(tmp_path, request):
    script = tmp_path / "user_script.py"
    script.write_text(SCRIPT)
    cache = request.config.cache.mkdir("mypy_typed_imports")  # warm after the first run
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent",
         "--no-error-summary", "--cache-dir", str(cache), str(script)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
        env={"MYPYPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    revealed = re.findall(r':(\d+): note: Revealed type is "(.*)"', out.stdout)
    errors = [line for line in out.stdout.splitlines() if ": error:" in line]
    assert not errors, out.stdout  # the script type-checks under --strict
    assert len(revealed) == 9, out.stdout + out.stderr
    types = [t for _, t in revealed]
    assert all(t != "Any" for t in types), types
    minimize, grad, objective, finite_sum, get, routing, obj, jac, fs = types
    assert minimize.startswith("def (fun: Any, x0: Any, args:") and "options:" in minimize
    assert grad.startswith("def (f: def (*Any, **Any) -> Any, *, engine: str | None")
    assert objective.endswith("-> newtonad.objective.Objective")
    assert finite_sum.startswith("def (term:") and finite_sum.endswith(
        "-> newtonad.finite_sum.objective.FiniteSum")
    assert get.startswith("def (name: str") and "Problem" in get
    assert routing == "def (enabled: bool) -> newtonad.ad.scipy_dispatch.scipy_routing"
    assert obj == "newtonad.objective.Objective"
    assert jac.startswith("def (x: ")
    assert fs == "newtonad.finite_sum.objective.FiniteSum"
