"""No threaded BLAS call on large vectors in the per-call paths.

OpenBLAS runs level-1 routines (``ddot``, ``daxpy``, ...) on all its threads from
10 000 entries, and a threaded call waits for every core: on a busy machine that is a
scheduler time slice per call (8 ms measured, where the kernel took 0.12 ms). So the
finiteness test of a point and the solvers' vector kernels go to serial loops at those
sizes. These tests make every BLAS entry point those paths used to reach raise on a
large vector, then run the paths.
"""

from __future__ import annotations

import numpy as np
import pytest

import newtonad as nad
from newtonad import _programs
from newtonad.solvers import linalg

N = 1 << 16  # above OpenBLAS's threading threshold


def rosen(x):
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def _refuse_large(real):
    def guarded(*args, **kwargs):
        if any(getattr(a, "size", 0) >= 10_000 for a in args):
            raise AssertionError(f"{getattr(real, '__name__', real)} called on a large vector")
        return real(*args, **kwargs)
    return guarded


@pytest.fixture
def no_large_blas(monkeypatch):
    monkeypatch.setattr(np, "vdot", _refuse_large(np.vdot))
    monkeypatch.setattr(np, "dot", _refuse_large(np.dot))
    for name in ("_ddot", "_daxpy", "_dscal", "_dasum"):
        monkeypatch.setattr(linalg, name, _refuse_large(getattr(linalg, name)))


@pytest.mark.parametrize("engine", ["numpy", "numba"])
def test_derivative_calls_check_points_without_blas(no_large_blas, engine):
    x = np.linspace(-1.0, 1.0, N)
    v = np.cos(np.arange(N))
    value, g = nad.value_and_grad(rosen, engine=engine)(x)
    hv = nad.hvp(rosen, x, v, engine=engine)
    obj = nad.Objective(rosen, engine=engine)
    assert obj.fun(x) == value
    np.testing.assert_array_equal(obj.jac(x), g)
    np.testing.assert_allclose(obj.hessp(x, v), hv, rtol=1e-12, atol=1e-9)
    bad = x.copy()
    bad[N // 3] = np.inf
    with pytest.raises(ValueError, match="non-finite"):
        nad.grad(rosen, engine=engine)(bad)


def test_the_finiteness_test_is_exact_at_large_sizes(no_large_blas):
    x = np.full(N, 1e308)  # its sum overflows: the exact test must still say finite
    assert _programs._all_finite(x)
    for bad in (np.nan, np.inf, -np.inf):
        y = x.copy()
        y[-1] = bad
        assert not _programs._all_finite(y)


def test_a_newton_solve_at_large_n_makes_no_blas_level_1_call(no_large_blas):
    x0 = np.tile([-1.2, 1.0], N // 2)
    res = nad.minimize(rosen, x0, method="trust-ncg", options={"maxiter": 5})
    assert res.nit == 5 and np.isfinite(res.fun)
