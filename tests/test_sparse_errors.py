"""Bad input to the sparse derivatives says what is wrong and what to do.

``hessian(f, sparse=True)`` and ``hessian_sparsity(f)`` need ``f`` to return a scalar,
``jacobian(f, sparse=True)`` and ``jacobian_sparsity(f)`` one array; anything else is
refused with a message naming the output ``f`` gave and the fix. A scalar output is
an array for the Jacobian (its sparse Jacobian is the ``1 x n`` gradient row, as the
dense ``jacobian`` gives the gradient), and one entry in an array is a scalar for the
Hessian, as for the dense ``hessian``.
"""

from __future__ import annotations

import numpy as np
import pytest

import newtonad as nad

ENGINE = "numpy"
X = np.array([0.5, -1.0, 2.0, 1.5])


def sparse_hessian(f):
    return nad.hessian(f, sparse=True, engine=ENGINE)


def sparse_jacobian(f):
    return nad.jacobian(f, sparse=True, engine=ENGINE)


# ---- Hessians: f must return a scalar ------------------------------------------------------

@pytest.mark.parametrize("out", [lambda x: x ** 2, lambda x: np.outer(x, x)],
                         ids=["vector", "matrix"])
def test_sparse_hessian_of_an_array_output_names_shape_and_fix(out):
    shape = np.shape(out(X))
    with pytest.raises(ValueError, match=r"hessian\(f, sparse=True\) needs a function with "
                                         r"one scalar output") as info:
        sparse_hessian(out)(X)
    message = str(info.value)
    assert f"shape {shape}" in message
    assert "np.sum" in message and "jacobian(f, sparse=True)" in message


def test_hessian_sparsity_of_an_array_output_points_to_jacobian_sparsity():
    with pytest.raises(ValueError, match="one scalar output") as info:
        nad.hessian_sparsity(lambda x: np.sin(x))(X)
    assert "shape (4,)" in str(info.value) and "jacobian_sparsity(f)" in str(info.value)


def test_sparse_hessian_of_a_tuple_of_numbers_says_tuple():
    """Not 'output shapes [(2,)]': the tuple was not meant as an array of outputs."""
    def value_and_extra(x):
        return np.sum(x ** 2), 1.0

    with pytest.raises(TypeError, match="returned a tuple of 2 values") as info:
        sparse_hessian(value_and_extra)(X)
    assert "need a scalar" in str(info.value) and "return f alone" in str(info.value)


def test_sparse_hessian_of_a_tuple_of_arrays_does_not_suggest_stacking_them():
    """np.stack would give an array, which the Hessian refuses next: not a fix."""
    for what in (sparse_hessian, nad.hessian_sparsity):
        with pytest.raises(TypeError, match="need a scalar") as info:
            what(lambda x: (x, x ** 2))(X)
        assert "np.stack" not in str(info.value)


@pytest.mark.parametrize("out, shown", [(lambda x: {"f": np.sum(x)}, "returned a dict"),
                                        (lambda x: "f", "returned a str"),
                                        (lambda x: None, "returned None")],
                         ids=["dict", "str", "None"])
def test_sparse_hessian_of_a_non_array_says_what_it_got(out, shown):
    with pytest.raises(TypeError, match=shown) as info:
        sparse_hessian(out)(X)
    assert "scalar" in str(info.value)


def test_sparse_hessian_of_one_entry_in_an_array_is_the_scalars():
    """As the dense hessian takes it (x @ A @ x with matrices has shape (1, 1))."""
    A = np.diag([1.0, 2.0, 3.0, 4.0]) + 0.5 * np.eye(4, k=1)

    def quad(x):
        return x[None, :] @ A @ x[:, None] + np.sum(x ** 4)

    H = sparse_hessian(quad)(X)
    np.testing.assert_allclose(H.toarray(), A + A.T + np.diag(12.0 * X ** 2), rtol=1e-13)
    np.testing.assert_allclose(H.toarray(), nad.hessian(quad, engine=ENGINE)(X), rtol=1e-13)


def test_errors_raised_inside_f_are_not_rewritten():
    def broken(x):
        if x.shape[0] != 3:
            raise ValueError("broken: needs three variables")
        return np.sum(x)

    with pytest.raises(ValueError, match="^broken: needs three variables$"):
        sparse_hessian(broken)(X)
    with pytest.raises(ValueError, match="^broken: needs three variables$"):
        sparse_jacobian(broken)(X)


def test_sparse_objective_hessian_of_an_array_output_says_so():
    obj = nad.Objective(lambda x: x ** 2, sparse=True, engine=ENGINE)
    with pytest.raises(ValueError, match=r"must return a scalar .* shape \(4,\).*np\.sum"):
        obj.hess(X)


def test_sparse_hessian_inside_a_trace_points_to_the_dense_form():
    def outer(x):
        return np.sum(sparse_hessian(lambda y: np.sum(y ** 3))(x).toarray())

    with pytest.raises(TypeError, match="not inside a trace.*dense form"):
        nad.grad(outer, engine=ENGINE)(X)


# ---- Jacobians: f must return one array ----------------------------------------------------

def test_sparse_jacobian_of_a_tuple_of_arrays_says_how_to_combine():
    for what in (sparse_jacobian, nad.jacobian_sparsity):
        with pytest.raises(TypeError, match="returned a tuple of 2 arrays") as info:
            what(lambda x: (x, x ** 2))(X)
        assert "need one array" in str(info.value) and "np.concatenate" in str(info.value)


@pytest.mark.parametrize("out, shown", [(lambda x: {"r": x}, "returned a dict"),
                                        (lambda x: "r", "returned a str"),
                                        (lambda x: None, "returned None")],
                         ids=["dict", "str", "None"])
def test_sparse_jacobian_of_a_non_array_says_what_it_got(out, shown):
    for what in (sparse_jacobian, nad.jacobian_sparsity):
        with pytest.raises(TypeError, match=shown) as info:
            what(out)(X)
        assert "must return an array computed from x" in str(info.value)


def test_sparse_jacobian_of_a_scalar_is_the_gradient_row():
    def f(x):
        return np.sum(x[1:] * x[:-1]) + x[0] ** 3

    J = sparse_jacobian(f)(X)
    assert J.shape == (1, 4)
    np.testing.assert_allclose(J.toarray()[0], nad.grad(f, engine=ENGINE)(X), rtol=1e-14)
    np.testing.assert_allclose(J.toarray()[0], nad.jacobian(f, engine=ENGINE)(X), rtol=1e-14)


def test_sparse_jacobian_of_numbers_listed_one_by_one_is_their_array():
    """Residuals written as a list of scalars are one array (as np.array makes them)."""
    def residuals(x):
        return [x[0] - 1.0, 10.0 * (x[1] - x[0] ** 2), x[2] * x[3]]

    J = sparse_jacobian(residuals)(X)
    expected = np.array([[1.0, 0, 0, 0], [-20.0 * X[0], 10.0, 0, 0], [0, 0, X[3], X[2]]])
    np.testing.assert_allclose(J.toarray(), expected, rtol=1e-14)


def test_sparse_hessian_error_under_the_default_engine():
    """The refusal happens at tracing, before any engine runs: the same message."""
    with pytest.raises(ValueError, match="one scalar output.*shape \\(4,\\)"):
        nad.hessian(lambda x: x ** 2, sparse=True)(X)
