"""The public API of API.md: shapes, composition, data arguments, and every error path."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize

import newtonad as nad

from .helpers import assert_close, central_jvp, check_grads, check_hvp


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def logistic(w, X, y, lam):
    z = X @ w
    return np.sum(np.logaddexp(0.0, -y * z)) + 0.5 * lam * (w @ w)


def minimal_surface(u, h):
    dx = (u[1:, :-1] - u[:-1, :-1]) / h
    dy = (u[:-1, 1:] - u[:-1, :-1]) / h
    return h * h * np.sum(np.sqrt(1.0 + dx ** 2 + dy ** 2))


X0 = np.array([-1.2, 1.0, -1.2, 1.0, 0.3])


def test_grad_of_rosenbrock_matches_scipy():
    assert_close(nad.grad(rosen)(X0), scipy.optimize.rosen_der(X0), 1e-13, 1e-13)


def test_value_and_grad():
    y, g = nad.value_and_grad(rosen)(X0)
    assert isinstance(y, float) and np.isclose(y, scipy.optimize.rosen(X0))
    assert_close(g, scipy.optimize.rosen_der(X0), 1e-13, 1e-13)


def test_hvp_frame_equals_hessian_columns():
    H = scipy.optimize.rosen_hess(X0)
    V = np.random.default_rng(0).standard_normal((5, 4))
    assert_close(nad.hvp(rosen, X0, V), H @ V, 1e-12, 1e-12)
    assert_close(nad.hessian(rosen)(X0), H, 1e-12, 1e-12)
    assert nad.hvp(rosen, X0, V[:, 0]).shape == (5,)


def test_frame_of_k_columns_equals_k_single_calls():
    V = np.random.default_rng(1).standard_normal((5, 3))
    HV = nad.hvp(rosen, X0, V)
    _, JV = nad.jvp(lambda x: np.sin(x) * x[::-1], X0, V)
    for j in range(3):
        assert_close(HV[:, j], nad.hvp(rosen, X0, V[:, j]), 1e-14, 1e-14)
        assert_close(JV[:, j], nad.jvp(lambda x: np.sin(x) * x[::-1], X0, V[:, j])[1], 1e-14, 1e-14)


def test_jacobian_forward_and_reverse_agree():
    f_wide = lambda x: np.outer(np.sin(x), x).ravel()  # more outputs than inputs: forward
    f_tall = lambda x: np.cumsum(x ** 2)[:2]            # fewer outputs: reverse
    for f in (f_wide, f_tall):
        J = nad.jacobian(f)(X0)
        for j in range(5):
            e = np.eye(5)[j]
            assert_close(J[..., j], central_jvp(f, X0, e), 1e-6, 1e-7)


def test_jacobian_shape_is_y_shape_plus_x_shape():
    x = np.random.default_rng(2).standard_normal((2, 3))
    J = nad.jacobian(lambda x: np.sin(x).T)(x)
    assert J.shape == (3, 2, 2, 3)
    assert np.allclose(J.reshape(6, 6), np.diag(np.cos(x).T.ravel())[:, np.argsort(
        np.arange(6).reshape(2, 3).T.ravel())])


def test_hessian_of_matrix_input():
    x = np.random.default_rng(3).standard_normal((2, 2))
    H = nad.hessian(lambda x: np.sum(x ** 3))(x)
    assert H.shape == (2, 2, 2, 2)
    assert np.allclose(H.reshape(4, 4), np.diag(6 * x.ravel()))


def test_linearize_reuses_primal_work_and_matches_jvp():
    f = lambda x: np.exp(x) * np.roll(x, 1)
    y, lin = nad.linearize(f, X0)
    assert_close(y, f(X0), 1e-14, 1e-14)
    V = np.random.default_rng(4).standard_normal((5, 2))
    assert_close(lin(V), nad.jvp(f, X0, V)[1], 1e-14, 1e-14)
    assert_close(lin(V[:, 1]), nad.jvp(f, X0, V[:, 1])[1], 1e-14, 1e-14)


def test_trace_lists_slots_and_steps():
    program = nad.trace(rosen, X0)
    text = str(program)
    assert "slice" in text and "reduce_sum" in text and "f64[5]" in text
    assert len(program.inputs) == 1 and program.out_slots[0].shape == ()


# ---- three typical objectives -----------------------------------------------------

def test_logistic_regression_with_data_args():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((40, 6))
    y = np.sign(rng.standard_normal(40))
    w = 0.1 * rng.standard_normal(6)
    check_grads(logistic, w, (X, y, 0.1))
    check_hvp(logistic, w, (X, y, 0.1))
    # exact gradient: -X^T (y σ(-y z)) + λ w
    z = X @ w
    expected = -X.T @ (y / (1 + np.exp(y * z))) + 0.1 * w
    assert_close(nad.grad(logistic)(w, X, y, 0.1), expected, 1e-12, 1e-12)


def test_data_args_are_inputs_not_constants():
    rng = np.random.default_rng(6)
    X1, X2 = rng.standard_normal((2, 10, 3))
    y = np.ones(10)
    w = rng.standard_normal(3)
    g = nad.grad(logistic)
    lam = np.float64(0.0)  # a NumPy scalar is data (a Python float would be static)
    g(w, X1, y, lam)
    program = nad.trace(logistic, w, X1, y, lam)
    assert len(program.inputs) == 4  # w, X, y, lam
    assert all(s.primitive.name != "const" or s.kwargs["value"].__class__ is not object
               for s in program.steps)
    # a new data array gives the right answer without re-tracing
    from newtonad._programs import TRACES
    n_traces = len(TRACES[logistic])
    z = X2 @ w
    assert_close(g(w, X2, y, lam), -X2.T @ (y / (1 + np.exp(y * z))), 1e-12, 1e-12)
    assert len(TRACES[logistic]) == n_traces


def test_minimal_surface_written_with_slicing():
    u = np.random.default_rng(7).standard_normal((6, 6)) * 0.3
    check_grads(minimal_surface, u, (0.2,))
    check_hvp(minimal_surface, u, (0.2,))


# ---- composition ---------------------------------------------------------------------------

def test_grad_of_grad_of_scalar_function():
    g = lambda x: np.sin(x) * x ** 3
    d2 = nad.grad(lambda x: nad.grad(g)(x))
    x = np.array(0.7)
    assert np.isclose(d2(x), -np.sin(x) * x ** 3 + 6 * np.cos(x) * x ** 2 + 6 * x * np.sin(x))


def test_jacobian_of_grad_is_the_hessian():
    H = nad.jacobian(nad.grad(rosen))(X0)
    assert_close(H, scipy.optimize.rosen_hess(X0), 1e-12, 1e-12)


def test_gradient_inside_an_objective():
    # a penalty on the gradient norm of rosen: needs second derivatives through grad
    f = lambda x: rosen(x) + 0.5 * np.sum(nad.grad(rosen)(x) ** 2)
    H = scipy.optimize.rosen_hess(X0)
    expected = scipy.optimize.rosen_der(X0) + H @ scipy.optimize.rosen_der(X0)
    assert_close(nad.grad(f)(X0), expected, 1e-12, 1e-12)
    check_hvp(f, X0)


def test_hvp_and_vjp_inside_a_trace():
    f = lambda x: np.sum(nad.hvp(rosen, x, np.ones_like(x)) * x)
    check_grads(f, X0, order=1)
    h = lambda x: np.sum(nad.vjp(np.sin, x, x)[1])  # sum(cos(x) * x)
    assert_close(nad.grad(h)(X0), np.cos(X0) - X0 * np.sin(X0), 1e-13, 1e-13)


def test_closure_over_an_outer_tracer():
    def f(x):
        inner = lambda z: np.sum(z ** 2 * x[0])
        return np.sum(nad.grad(inner)(x))  # 2 x x[0] summed
    x = np.array([1.5, -0.5, 2.0])
    expected = 2 * x[0] * np.ones(3) + np.array([2 * np.sum(x), 0, 0])
    assert_close(nad.grad(f)(x), expected, 1e-13, 1e-13)


# ---- errors ----------------------------------------------------------------------------------

def test_value_dependent_if_follows_the_branch_taken():
    def f(x):
        if x[0] > 0:
            return np.sum(x)
        return -np.sum(x)
    x = np.abs(X0) + 0.5
    assert_close(nad.grad(f)(x), np.ones_like(x), 0, 0)
    assert_close(nad.grad(f)(-x), -np.ones_like(x), 0, 0)


@pytest.mark.parametrize("conv", [float, int, lambda v: v.item()])
def test_concrete_conversions_are_refused(conv):
    with pytest.raises(nad.TracerBoolError, match="np.where"):
        nad.grad(lambda x: conv(x[0]) * np.sum(x))(X0)


def test_unsupported_numpy_function_names_it():
    with pytest.raises(NotImplementedError, match="numpy.convolve"):
        nad.grad(lambda x: np.sum(np.convolve(x, x)))(X0)
    with pytest.raises(NotImplementedError, match="numpy.spacing"):
        nad.grad(lambda x: np.sum(np.spacing(x)))(X0)


def test_non_scalar_output_for_grad():
    with pytest.raises(ValueError, match="scalar"):
        nad.grad(lambda x: x ** 2)(X0)
    with pytest.raises(ValueError, match="scalar"):
        nad.hvp(lambda x: x ** 2, X0, X0)


def test_wrong_frame_shape():
    with pytest.raises(ValueError, match=r"\(5,\) \+ \(k,\)"):
        nad.hvp(rosen, X0, np.ones((4, 2)))
    with pytest.raises(ValueError, match="frame"):
        nad.jvp(rosen, X0, np.ones((2, 5)))


def test_non_finite_and_integer_points():
    with pytest.raises(ValueError, match="non-finite"):
        nad.grad(rosen)(np.array([1.0, np.nan, 0.0]))
    with pytest.raises(TypeError, match="astype\\(float\\)"):
        nad.grad(rosen)(np.array([1, 2, 3]))


def test_item_assignment_is_refused_with_advice():
    def f(x):
        x[0] = 1.0
        return np.sum(x)
    with pytest.raises(TypeError, match="np.where"):
        nad.grad(f)(X0)


def test_traced_boolean_mask_is_refused():
    with pytest.raises(IndexError, match="np.where"):
        nad.grad(lambda x: np.sum(x[x > 0]))(X0)


def test_tuple_output_is_refused():
    with pytest.raises(TypeError, match="one array: combine them with np.stack"):
        nad.jacobian(lambda x: (x, x))(X0)


def test_residuals_listed_one_by_one_make_one_array():
    J = nad.jacobian(lambda x: [x[0] * x[1], np.sin(x[2]), 3.0])(X0)
    expected = np.zeros((3, X0.size))
    expected[0, :2] = X0[1], X0[0]
    expected[1, 2] = np.cos(X0[2])
    np.testing.assert_allclose(J, expected, rtol=1e-14)


def test_public_minimize_with_data_args_and_matrix_x0():
    """nad.minimize on plain NumPy code with args; the result keeps x0's shape."""
    rng = np.random.default_rng(8)
    X = rng.standard_normal((60, 4))
    y = np.sign(X @ np.array([1.0, -2.0, 0.5, 0.0]) + 0.1 * rng.standard_normal(60))
    res = nad.minimize(logistic, np.zeros(4), args=(X, y, 1.0), method="trust-krylov",
                       options={"gtol": 1e-8})
    assert res.success
    assert np.linalg.norm(nad.grad(logistic)(res.x, X, y, 1.0)) < 1e-8
    M = nad.minimize(lambda M: np.sum((M - 2.0) ** 2), np.zeros((2, 3)), method="newton-cg")
    assert M.x.shape == (2, 3) and np.allclose(M.x, 2.0)


def test_python_values_in_args_are_static_in_every_derivative_function():
    """``if lam > 0``, ``range(n)`` and a norm chosen by name work on Python values in
    ``args``, in grad, value_and_grad, hvp, jacobian and hessian (dense and sparse)."""
    def f(x, lam, n, norm):
        s = 0.0
        for i in range(n):
            s = s + x[i] ** 2
        if lam > 0:
            s = s + lam * np.sum(np.abs(x) if norm == "l1" else x ** 2)
        return s

    x = np.array([0.5, -1.0, 2.0])
    for lam, n, norm in [(0.1, 2, "l2"), (0.0, 3, "l1"), (0.3, 1, "l1")]:
        def plain(z, lam=lam, n=n, norm=norm):
            return f(z, lam, n, norm)
        args = (lam, n, norm)
        check_grads(plain, x)
        assert_close(nad.grad(f)(x, *args), nad.grad(plain)(x), 1e-15, 0)
        value, g = nad.value_and_grad(f)(x, *args)
        assert value == pytest.approx(plain(x)) and np.allclose(g, nad.grad(plain)(x))
        H = nad.hessian(f)(x, *args)
        assert_close(nad.hvp(f, x, np.eye(3), args), H, 1e-14, 1e-14)
        assert_close(nad.hessian(f, sparse=True)(x, *args).toarray(), H, 1e-14, 1e-14)
        assert_close(H, nad.hessian(plain)(x), 1e-14, 1e-14)
    J = nad.jacobian(lambda z, k: z[:k] * 2)(x, 2)
    assert_close(J, 2 * np.eye(3)[:2], 0, 0)
