"""Code as people write it: lists of traced values handed to NumPy, and errors that name
the real problem (what an objective returned, a traced value stored into a NumPy array,
where an unsupported function lives)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special

import newtonad as nad

from .helpers import assert_close, central_jvp

X = np.array([0.3, -1.2, 2.0])


def _fd_grad(f, x):
    return np.array([central_jvp(f, x, e) for e in np.eye(x.size)])


# ---- lists of traced values ---------------------------------------------------------------

LIST_CASES = {
    "np.array": lambda x: np.sum(np.array([x[0] * x[1], np.sin(x[2]), 2.0]) ** 2),
    "np.asarray": lambda x: np.sum(np.asarray([x[0], x[2] ** 2]) * np.array([1.0, 3.0])),
    "norm of a list": lambda x: np.linalg.norm([x[0], x[1]]),
    "np.append": lambda x: np.sum(np.append(x, [x[0] * 3, 8.0]) ** 2),
    "np.r_": lambda x: np.sum(np.r_[x, x[0], 1.0] ** 2),
    "np.c_": lambda x: np.sum(np.c_[x, x ** 2] ** 2),
    "ufunc of an object array": lambda x: np.sum(np.exp(np.array([x[0], x[1]]))),
    "matmul of a built array": lambda x: np.array([x[0], x[1]]) @ np.array([1.0, 2.0]),
    "dot of two built arrays": lambda x: np.dot(np.array([x[0], x[1]]), np.array([x[1], x[2]])),
    "nested lists": lambda x: np.sum(np.array([[x[0], 1.0], [x[1], x[2]]]) @ x[:2]),
}


@pytest.mark.parametrize("engine", ["numpy", "numba"])
@pytest.mark.parametrize("name", sorted(LIST_CASES))
def test_lists_of_traced_values(name, engine):
    f = LIST_CASES[name]
    value, g = nad.value_and_grad(f, engine=engine)(X)
    assert value == pytest.approx(f(X), rel=1e-13)
    assert_close(g, _fd_grad(f, X), 1e-6, 1e-7, name)


def test_hessian_through_a_list_of_residuals():
    def f(x):
        r = np.array([10.0 * (x[1] - x[0] ** 2), 1.0 - x[0]])
        return r @ r

    H = nad.hessian(f, engine="numpy")(X[:2])
    x0, x1 = X[:2]
    expected = np.array([[1200 * x0 ** 2 - 400 * x1 + 2, -400 * x0], [-400 * x0, 200.0]])
    assert_close(H, expected, 1e-12, 1e-12)


def test_eager_vars_in_a_list_keep_their_graph():
    v = nad.Var(X.copy())
    out = np.sum(np.array([v[0] * v[1], v[2]]) ** 2)
    out.backward()
    f = lambda x: np.sum(np.array([x[0] * x[1], x[2]]) ** 2)  # noqa: E731
    assert_close(v.grad, _fd_grad(f, X), 1e-6, 1e-7)


@pytest.mark.parametrize("reduce", [np.mean, np.std, np.var, np.max, np.min])
def test_numpy_statistics_of_a_list_name_np_stack(reduce):
    """NumPy computes these on an object array and converts the result with np.float64,
    which cannot hold a traced value: the error says to stack first."""
    with pytest.raises(nad.TracerBoolError, match=r"np\.stack"):
        nad.grad(lambda x: reduce([x[0], x[1] ** 2]), engine="numpy")(X)
    g = nad.grad(lambda x: reduce(np.stack([x[0], x[1] ** 2])), engine="numpy")(X)
    assert_close(g, _fd_grad(lambda x: reduce(np.stack([x[0], x[1] ** 2])), X), 1e-6, 1e-7)


# ---- what the objective returned ------------------------------------------------------------

@pytest.mark.parametrize("returned, message", [
    (lambda x: (np.sum(x), 2 * x), r"returned a tuple of 2 values.*scalar.*jac=True"),
    (lambda x: None, r"returned None.*`return`"),
    (lambda x: "abc", r"returned a str \('abc'\).*scalar"),
    (lambda x: {"f": np.sum(x)}, r"returned a dict.*scalar"),
    (lambda x: [np.sum(x)], r"returned a list of 1 values"),
])
def test_objective_returning_a_non_scalar_says_what_it_returned(returned, message):
    with pytest.raises(TypeError, match=message):
        nad.grad(returned, engine="numpy")(X)
    with pytest.raises(TypeError, match=message):
        nad.minimize(returned, X)


def test_objective_returning_an_array_says_reduce_it():
    with pytest.raises(ValueError, match=r"returned shape \(3,\); reduce it"):
        nad.grad(lambda x: x ** 2, engine="numpy")(X)


# ---- a traced value stored into a NumPy array ------------------------------------------------

def test_storing_a_traced_value_into_a_numpy_array_names_the_fix():
    def f(x):
        y = np.zeros(3)
        y[0] = 2 * x[0]
        return np.sum(y)

    with pytest.raises(nad.TracerBoolError, match=r"stored into a NumPy array.*np\.stack"):
        nad.grad(f, engine="numpy")(X)


def test_value_dependent_branch_follows_the_branch_taken():
    f = lambda x: np.sum(x) if x[0] > 0 else 0.0 * x[1]  # noqa: E731
    sign = 1.0 if X[0] > 0 else 0.0
    assert_close(nad.grad(f, engine="numpy")(X), sign * np.ones_like(X), 0, 0)
    assert_close(nad.grad(f, engine="numpy")(-X), (1 - sign) * np.ones_like(X), 0, 0)


# ---- functions named where users find them ------------------------------------------------

@pytest.mark.parametrize("f, name", [
    (lambda x: np.sum(scipy.special.gamma(x)), "scipy.special.gamma"),
    (lambda x: np.sum(scipy.special.zeta(x, 2.0)), "scipy.special.zeta"),
    (lambda x: np.sum(np.spacing(x)), "numpy.spacing"),
    (lambda x: np.sum(np.convolve(x, x)), "numpy.convolve"),
    (lambda x: np.linalg.matrix_rank(x.reshape(1, 3)), "numpy.linalg.matrix_rank"),
])
def test_unsupported_functions_are_named_by_their_public_home(f, name):
    with pytest.raises(NotImplementedError, match=rf"cannot trace {name.replace('.', '[.]')}:"):
        nad.grad(f, engine="numpy")(X + 2.0)


@pytest.mark.parametrize("engine", ["numpy", "numba"])
def test_an_objective_returning_one_entry_in_an_array_is_a_scalar(engine):
    """``x @ A @ x`` written with matrices returns shape (1, 1); scipy and autograd take
    its one entry as the value, and so does newtonad."""
    A = np.array([[2.0, 0.5], [0.5, 1.0]])
    f = lambda x: x.reshape(1, 2) @ A @ x.reshape(2, 1)  # noqa: E731
    x = np.array([0.3, -0.7])
    value, g = nad.value_and_grad(f, engine=engine)(x)
    assert value == pytest.approx(float(x @ A @ x), rel=1e-14)
    assert_close(g, 2 * A @ x, 1e-14, 1e-14)
    assert_close(nad.hessian(f, engine=engine)(x), 2 * A, 1e-14, 1e-14)


def test_minimize_takes_a_shape_1_objective_as_scipy_does():
    res = nad.minimize(lambda x: (x - 1.0) ** 2, np.array([3.0]), method="trust-ncg")
    assert res.success and res.x.shape == (1,)
    assert res.x[0] == pytest.approx(1.0, abs=1e-6)
