"""Complex points and directions are refused with an error naming the argument and the fix
(a cast would silently drop the imaginary part: H·Re(V) instead of H·V)."""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
import pytest

import newtonad as nad

X = np.array([0.5, -1.0, 2.0])
V = np.array([1.0, 2.0, -1.0]) + 1j * np.array([0.5, 0.0, 1.0])


def f(x):
    return np.sum(x ** 3) + x[0] * x[1]


def g(x):
    return np.sin(x) * x[0]


def refused(call: Callable[[], Any], name: str) -> None:
    """``call`` raises TypeError naming ``name`` as complex and saying what to pass; no
    NumPy casting warning is the only sign."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a ComplexWarning would be a silent cast
        with pytest.raises(TypeError, match=rf"^{name} has complex dtype complex128.*{name}\.real"):
            call()


def test_complex_directions_are_refused_by_the_api():
    refused(lambda: nad.hvp(f, X, V), "V")
    refused(lambda: nad.hvp(f, X, np.stack([V, V], axis=-1)), "V")
    refused(lambda: nad.jvp(g, X, V), "V")
    refused(lambda: nad.vjp(g, X, V), "W")
    _, lin = nad.linearize(g, X)
    refused(lambda: lin(V), "V")


@pytest.mark.parametrize("call", [
    lambda x: nad.grad(f)(x),
    lambda x: nad.value_and_grad(f)(x),
    lambda x: nad.hvp(f, x, X),
    lambda x: nad.jvp(g, x, X),
    lambda x: nad.vjp(g, x, X),
    lambda x: nad.linearize(g, x),
    lambda x: nad.jacobian(g)(x),
    lambda x: nad.hessian(f)(x),
    lambda x: nad.hessian(f, sparse=True)(x),
    lambda x: nad.jacobian(g, sparse=True)(x),
    lambda x: nad.trace(f, x),
], ids=["grad", "value_and_grad", "hvp", "jvp", "vjp", "linearize", "jacobian", "hessian",
        "sparse hessian", "sparse jacobian", "trace"])
def test_a_complex_point_is_refused_by_the_api(call):
    refused(lambda: call(X + 0j), "x")


@pytest.mark.parametrize("method", ["fun", "jac", "value_and_grad", "hess", "linearize_hessp"])
def test_a_complex_point_is_refused_by_the_objective(method):
    obj = nad.Objective(f, engine="numpy")
    refused(lambda: getattr(obj, method)(X + 0j), "x")
    refused(lambda: obj.hessp(X + 0j, X), "x")


@pytest.mark.parametrize("engine", ["numpy", "numba"])
def test_complex_directions_are_refused_by_the_objective(engine):
    # large enough to linearise (the products at one point then run the linear map)
    n = 200
    x = np.linspace(-1.0, 1.0, n)
    v = np.ones(n) + 1j
    obj = nad.Objective(f, engine=engine)
    refused(lambda: obj.hessp(x, v), "p")
    obj.hessp(x, v.real)
    obj.hessp(x, v.real)  # the point's residuals are there now
    refused(lambda: obj.hessp(x, v), "p")
    refused(lambda: obj.hessp(x, np.stack([v, v], axis=-1)), "p")
    hessp_at_x = obj.linearize_hessp(x)
    refused(lambda: hessp_at_x(v), "p")
    assert np.allclose(hessp_at_x(v.real), obj.hessp(x, v.real), rtol=1e-14, atol=0)


def test_real_parts_give_the_complex_product_by_linearity():
    # the fix the error names: H (a + ib) = H a + i H b
    H = nad.hessian(f)(X)
    hv = nad.hvp(f, X, V.real) + 1j * nad.hvp(f, X, V.imag)
    np.testing.assert_allclose(hv, H @ V, rtol=1e-14, atol=1e-14)
