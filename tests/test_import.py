"""``import newtonad`` loads the AD core only; the rest is imported on first use.

A cold start (a fresh process to its first derivative) pays for every module
``import newtonad`` pulls in, so scipy, the solvers, the problem catalogue, the
command line and the numba engine wait until they are used. Each check runs in a
fresh interpreter, since the test process has imported everything already.
"""

from __future__ import annotations

import json
import subprocess
import sys

LAZY = ["scipy", "numba", "newtonad.solvers", "newtonad.problems", "newtonad.cli",
        "newtonad.ad.engine.numba_engine", "newtonad.ad.engine.numba_codegen"]


def fresh(code: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_import_newtonad_loads_the_core_only():
    loaded = fresh(f"""
import json, sys
import newtonad as nad
import numpy as np
# the auto engine runs a cold program with NumPy: it needs none of them
g = nad.grad(lambda x: np.sum(x ** 2), engine="auto")(np.arange(3.0))
assert g.tolist() == [0.0, 2.0, 4.0]
print(json.dumps([m for m in {LAZY!r} if m in sys.modules]))
""")
    assert loaded == []


def test_lazy_attributes_still_work():
    got = fresh("""
import json, sys
import newtonad as nad
assert "minimize" in dir(nad) and "problems" in dir(nad)
from newtonad import minimize
assert nad.minimize is minimize and "newtonad.solvers" in sys.modules
p = nad.problems.get("rosenbrock")
assert nad.problems is sys.modules["newtonad.problems"]
res = nad.minimize(p.fun, p.x0, method="trust-ncg")
try:
    nad.no_such_name
except AttributeError as e:
    missing = str(e)
print(json.dumps({"success": bool(res.success), "missing": missing}))
""")
    assert got["success"]
    assert "no_such_name" in got["missing"]
