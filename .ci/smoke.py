"""Smoke test of an installed newtonad (``make check-install``), run outside the checkout.

Usage: ``python smoke.py CHECKOUT``. Fails unless newtonad is imported from the
environment's site-packages (not from ``CHECKOUT``), its metadata version is
``newtonad.__version__``, ``py.typed`` and the license file were installed, a
gradient is exact, Rosenbrock is minimised, and the ``newtonad`` command runs.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import numpy as np

import newtonad as nad


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def main(checkout: Path) -> None:
    package = Path(nad.__file__).resolve().parent
    assert checkout not in package.parents, f"imported from the checkout: {package}"
    version = importlib.metadata.version("newtonad")
    assert version == nad.__version__, (version, nad.__version__)
    assert (package / "py.typed").is_file(), "py.typed not installed"
    files = importlib.metadata.files("newtonad") or []
    assert any(f.name == "LICENSE" for f in files), "LICENSE not in the distribution"

    x = np.array([-1.2, 1.0])
    g = nad.grad(rosen)(x)
    exact = np.array([-400.0 * x[0] * (x[1] - x[0] ** 2) - 2.0 * (1.0 - x[0]),
                      200.0 * (x[1] - x[0] ** 2)])
    np.testing.assert_allclose(g, exact, rtol=1e-14)

    res = nad.minimize(rosen, np.tile([-1.2, 1.0], 10), method="trust-ncg")
    assert res.success and res.fun < 1e-10, res
    np.testing.assert_allclose(res.x, 1.0, atol=1e-5)

    script = Path(sys.executable).parent / "newtonad"
    out = subprocess.run([str(script), "--version"], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == f"newtonad {version}", out
    print(f"smoke: newtonad {version} from {package}: grad exact, Rosenbrock (n = 20) "
          f"solved in {res.nit} iterations, `newtonad --version` runs")


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve())
