"""Derivatives of functions that call ``grad`` themselves, traced and eager.

An inner function may take the outer point as an argument, or close over it and be
evaluated at a constant point. Either way the outer level differentiates through the
inner derivative (no perturbation confusion): checked against central differences of
the same function evaluated on plain arrays.
"""

from __future__ import annotations

import numpy as np
import pytest

import newtonad as nad

from .helpers import assert_close, central_jvp

Y0 = np.array([1.0, 2.0, -0.5])
X = np.array([0.5, -1.5, 0.8])


def _f(x):
    return np.sum(np.sin(x) * x ** 2)


def argument_form(x):
    """``grad`` at the outer point itself."""
    return np.sum(nad.grad(_f)(x) ** 2)


def closure_form(x):
    """``grad`` of an inner function that closes over the outer point, at a constant."""
    def inner(y):
        return np.sum(np.exp(x * y) + x ** 2 * y ** 3)
    g = nad.grad(inner)(Y0)  # = x exp(x y) + 3 x^2 y^2
    return np.sum(g * np.cos(x))


def hvp_closure_form(x):
    """An HVP of an inner function closing over x, inside the objective."""
    def inner(y):
        return np.sum(x * y ** 4)
    return np.sum(nad.hvp(inner, Y0, np.ones(3)) * x)


def _fd_grad(f, x, eps=1e-6):
    return np.array([central_jvp(f, x, e, eps=eps) for e in np.eye(x.size)])


CASES = [argument_form, closure_form, hvp_closure_form]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_grad_of_a_function_calling_grad(f):
    assert_close(nad.grad(f, engine="numpy")(X), _fd_grad(f, X), 1e-6, 1e-6, f.__name__)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_hvp_and_jacobian_of_grad_agree_with_differences(f):
    g = nad.grad(f, engine="numpy")
    H_fd = np.array([central_jvp(g, X, e, eps=1e-5) for e in np.eye(3)]).T
    assert_close(nad.hvp(f, X, np.eye(3), engine="numpy"), H_fd, 1e-5, 1e-5, "hvp")
    assert_close(nad.jacobian(g, engine="numpy")(X), H_fd, 1e-5, 1e-5, "jacobian of grad")
    assert_close(nad.hessian(f, engine="numpy")(X), H_fd, 1e-5, 1e-5, "hessian")


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_eager_backward_keeps_the_inner_dependence(f):
    x = nad.Var(X.copy())
    out = f(x)
    out.backward()
    assert_close(x.grad, _fd_grad(f, X), 1e-6, 1e-6, f.__name__)


def test_grad_of_grad_matches_the_hessian_diagonal():
    second = nad.grad(lambda x: np.sum(nad.grad(_f)(x)), engine="numpy")(X)
    assert_close(second, nad.hessian(_f, engine="numpy")(X).sum(axis=0), 1e-12, 1e-12)


def test_closure_form_under_the_compiled_engine():
    assert_close(nad.grad(closure_form)(X), _fd_grad(closure_form, X), 1e-6, 1e-6)


def test_linearize_over_an_enclosing_trace_says_what_to_use():
    def outer(x):
        _, lin = nad.linearize(lambda y: x * y, Y0)
        return np.sum(lin(np.ones(3)))

    with pytest.raises(TypeError, match="use jvp"):
        nad.grad(outer, engine="numpy")(X)
