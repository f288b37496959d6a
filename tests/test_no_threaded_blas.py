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
    # other programs than value_and_grad's (which also tests x): sums in another order
    assert obj.fun(x) == pytest.approx(value, rel=1e-14)
    np.testing.assert_allclose(obj.jac(x), g, rtol=1e-14, atol=1e-14 * np.max(np.abs(g)))
    np.testing.assert_allclose(obj.hessp(x, v), hv, rtol=1e-12, atol=1e-9)
    bad = x.copy()
    bad[N // 3] = np.inf
    with pytest.raises(ValueError, match="non-finite"):
        nad.grad(rosen, engine=engine)(bad)


@pytest.mark.parametrize("n", [N, _programs.PARALLEL_FROM + 3])  # serial, then threaded
def test_the_finiteness_test_is_exact_at_large_sizes(no_large_blas, n):
    import numba  # noqa: F401  (the compiled tests run once numba is loaded)

    x = np.full(n, 1e308)  # its sum overflows: the exact test must still say finite
    assert _programs._all_finite(x)
    for bad in (np.nan, np.inf, -np.inf):
        for at in (0, n // 2, n - 1):
            y = x.copy()
            y[at] = bad
            assert not _programs._all_finite(y)


def test_a_newton_solve_at_large_n_makes_no_blas_level_1_call(no_large_blas):
    x0 = np.tile([-1.2, 1.0], N // 2)
    res = nad.minimize(rosen, x0, method="trust-ncg", options={"maxiter": 5})
    assert res.nit == 5 and np.isfinite(res.fun)


def one_row_constraint(x):
    """A volume constraint written as a one-row matrix times x, squared."""
    return np.sum((ONE_ROW @ x - 1.0) ** 2) + 0.5 * np.sum(x ** 2)


ONE_ROW = np.cos(np.arange(N))[None, :] / N


def test_a_one_row_matrix_product_is_a_dot_product_on_serial_loops():
    """``A @ x`` with A of one row is a dot product (and its transpose a scaling): both
    engines run it on serial loops, never on OpenBLAS's threads, with the same numbers."""
    from newtonad.ad.engine.numba_engine import source as source_of
    from newtonad.ad.primitives.linalg import is_vector_product
    from newtonad.ad.transforms import hvp_program, value_and_grad_program

    assert is_vector_product("ij,j->i", (1, N), (N,))
    assert is_vector_product("i,ij->j", (1,), (1, N))  # the cotangent of x: a scaling
    assert not is_vector_product("ij,j->i", (3, N), (N,))  # a real matrix: BLAS
    assert not is_vector_product("ij,j->i", (1, 100), (100,))  # small: BLAS
    x = np.linspace(-1.0, 1.0, N)
    v = np.sin(np.arange(N))
    r = ONE_ROW @ x - 1.0
    grad = 2.0 * r[0] * ONE_ROW[0] + x
    hv = 2.0 * (ONE_ROW[0] @ v) * ONE_ROW[0] + v
    program = nad.trace(one_row_constraint, x)
    for derived in (value_and_grad_program(program), hvp_program(program, None)):
        assert "np.dot" not in source_of(derived)
    for engine in ("numpy", "numba"):
        value, g = nad.value_and_grad(one_row_constraint, engine=engine)(x)
        assert value == pytest.approx(one_row_constraint(x), rel=1e-13)
        np.testing.assert_allclose(g, grad, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(nad.hvp(one_row_constraint, x, v, engine=engine), hv,
                                   rtol=1e-12, atol=1e-15)
