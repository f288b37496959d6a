"""minimize and least_squares never do less than scipy: derivative-free methods call fun
directly, untraceable objectives fall back to scipy's finite differences with one
TraceFallbackWarning, and the answers and counts are scipy's own."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.optimize as so

import newtonad as nad

DERIVATIVE_FREE = ["Nelder-Mead", "Powell", "COBYLA", "COBYQA"]
X0 = np.array([3.0, 2.0])


def untraceable(x):
    """A smooth bowl with its minimum at (1, 0), written with code a tracer refuses."""
    if x[0] > -100:                             # a branch on a value
        a = math.pow(float(x[0]) - 1.0, 2)      # math.* and float()
    else:
        a = 0.0
    y = np.zeros(2)
    y[0] = x[1]                                  # item assignment into a NumPy array
    return a + float(y @ y)


class Counted:
    """``untraceable`` with a call counter."""

    def __init__(self):
        self.calls = 0

    def __call__(self, x):
        self.calls += 1
        return untraceable(x)


def quiet(fn, *args, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn(*args, **kwargs)
    return out, [w for w in caught if issubclass(w.category, nad.TraceFallbackWarning)]


# ---- derivative-free methods ---------------------------------------------------------------

@pytest.mark.parametrize("method", DERIVATIVE_FREE)
def test_derivative_free_methods_call_fun_as_scipy_does(method):
    ours, theirs = Counted(), Counted()
    res, fallbacks = quiet(nad.minimize, ours, X0, method=method)
    ref = so.minimize(theirs, X0, method=method)
    assert fallbacks == []  # nothing was traced, so nothing fell back
    assert ours.calls == res.nfev == ref.nfev == theirs.calls
    np.testing.assert_array_equal(res.x, ref.x)


@pytest.mark.parametrize("method", DERIVATIVE_FREE)
def test_random_draws_are_not_frozen(method):
    rng = np.random.default_rng(0)
    draws = []

    def noisy(x):
        draws.append(rng.random())
        return float(np.sum((x - 1.0) ** 2)) + 1e-9 * draws[-1]

    res = nad.minimize(noisy, X0, method=method)
    assert len(draws) == res.nfev > 3
    assert len(set(draws)) == len(draws)
    np.testing.assert_allclose(res.x, 1.0, atol=1e-3)


@pytest.mark.parametrize("method", ["Nelder-Mead", "Powell"])
def test_derivative_free_fun_writing_into_x_does_not_move_the_iterate(method):
    def clobbering(x):
        value = float(np.sum((x - 1.0) ** 2))
        x[:] = 1e3  # scipy gh-13740: fun must get a copy
        return value

    res = nad.minimize(clobbering, X0, method=method)
    np.testing.assert_allclose(res.x, 1.0, atol=1e-3)


# ---- the fallback of the gradient methods ----------------------------------------------------

@pytest.mark.parametrize("method", ["BFGS", "L-BFGS-B", "CG", "SLSQP", "TNC"])
def test_untraceable_fun_runs_scipy_differences_with_scipy_counts(method):
    ours = Counted()
    res, fallbacks = quiet(nad.minimize, ours, X0, method=method)
    ref = so.minimize(untraceable, X0, method=method)  # scipy's default: '2-point'
    assert len(fallbacks) == 1
    assert res.nfev == ref.nfev
    # and two calls on tracers that failed: without values (stopped at the branch), then
    # along the branch taken at x0 (stopped at float())
    assert ours.calls == res.nfev + 2
    np.testing.assert_allclose(res.x, ref.x, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("method", ["newton-cg", "trust-ncg", "trust-krylov", "trust-exact",
                                    "trust-constr", "dogleg", "scipy:trust-ncg"])
def test_untraceable_fun_on_hessian_methods_finds_the_minimum(method):
    ours = Counted()
    res, fallbacks = quiet(nad.minimize, ours, X0, method=method)
    assert len(fallbacks) == 1
    assert res.success, res.message
    assert ours.calls == res.nfev + 2
    np.testing.assert_allclose(res.x, [1.0, 0.0], atol=1e-4)


@pytest.mark.parametrize("method", ["trust-ncg", "newton-cg", "BFGS", "L-BFGS-B",
                                    "Nelder-Mead", "tron"])
def test_an_objective_of_an_untraceable_fun_given_to_minimize_falls_back(method):
    # the caller's own Objective, not a plain fun: it falls back by itself, once
    res, fallbacks = quiet(nad.minimize, nad.Objective(untraceable), X0, method=method)
    assert len(fallbacks) == 1
    assert res.success, res.message
    np.testing.assert_allclose(res.x, [1.0, 0.0], atol=1e-3)


def test_the_warning_names_the_reason_and_the_users_line():
    with pytest.warns(nad.TraceFallbackWarning) as record:
        nad.minimize(untraceable, X0, method="BFGS")
    assert len(record) == 1
    message = str(record[0].message)
    assert "TracerBoolError" in message
    assert "test_fallback.py" in message and "math.pow(float(x[0]) - 1.0, 2)" in message
    assert record[0].filename == __file__  # attributed to the caller of minimize


def test_derivative_functions_still_raise():
    with pytest.raises(nad.TracerBoolError):
        nad.grad(untraceable)(X0)
    with pytest.raises(nad.TracerBoolError):
        nad.hvp(untraceable, X0, X0)


def test_an_error_of_fun_itself_propagates():
    def broken(x):
        if x[0] > 0:
            raise ZeroDivisionError("fun's own error")
        return float(x[0])

    with pytest.raises(ZeroDivisionError, match="fun's own error"):
        nad.minimize(broken, X0, method="BFGS")


def test_traceable_fun_does_not_warn():
    _, fallbacks = quiet(nad.minimize, lambda x: np.sum((x - 1.0) ** 2), X0, method="BFGS")
    assert fallbacks == []


def test_native_fun_writing_into_x_with_its_jac_does_not_move_the_iterate():
    def clobbering(x):
        value = so.rosen(x)
        x[:] = np.nan
        return value

    def grad(x):
        g = so.rosen_der(x)
        x[:] = np.nan
        return g

    res = nad.minimize(clobbering, np.array([-1.2, 1.0]), jac=grad, hess=so.rosen_hess,
                       method="trust-exact")
    ref = so.minimize(so.rosen, np.array([-1.2, 1.0]), jac=so.rosen_der, hess=so.rosen_hess,
                      method="trust-exact")
    np.testing.assert_allclose(res.x, ref.x, atol=1e-6)


# ---- least_squares ---------------------------------------------------------------------------

def residuals_untraceable(x):
    r = np.zeros(2)
    r[0] = 10.0 * (x[1] - float(x[0]) ** 2)
    r[1] = 1.0 - x[0]
    return r


def test_least_squares_falls_back_to_scipy_two_point():
    x0 = np.array([-1.2, 1.0])
    res, fallbacks = quiet(nad.least_squares, residuals_untraceable, x0)
    ref = so.least_squares(residuals_untraceable, x0)
    assert len(fallbacks) == 1 and res.jac_mode == "fallback"
    assert res.nfev == ref.nfev
    np.testing.assert_allclose(res.x, ref.x, rtol=1e-12)


def test_least_squares_takes_scipys_positional_order():
    def rosen_residuals(x):
        return np.array([10.0 * (x[1] - x[0] ** 2), 1.0 - x[0]])

    x0 = np.array([-1.2, 1.0])
    res = nad.least_squares(rosen_residuals, x0, "2-point", ([-2.0, -2.0], [0.5, 2.0]))
    ref = so.least_squares(rosen_residuals, x0, "2-point", ([-2.0, -2.0], [0.5, 2.0]))
    assert res.jac_mode == "user"
    np.testing.assert_array_equal(res.x, ref.x)
    exact = nad.least_squares(rosen_residuals, x0, None, ([-2.0, -2.0], [0.5, 2.0]))
    np.testing.assert_allclose(exact.x, ref.x, atol=1e-7)
    assert exact.x[0] <= 0.5


# ---- Python values in args are static ----------------------------------------------------------

def penalised(x, lam, n, norm):
    total = 0.0
    for i in range(n):                      # a loop count from args
        total = total + (x[i] - i) ** 2
    if lam > 0:                             # a branch on a Python float from args
        total = total + lam * (np.sum(np.abs(x)) if norm == "l1" else np.sum(x ** 2))
    return total


def test_static_args_in_minimize_give_exact_derivatives():
    x0 = np.full(3, 0.5)
    res = nad.minimize(penalised, x0, args=(0.0, 3, "l1"), method="trust-ncg")
    np.testing.assert_allclose(res.x, [0.0, 1.0, 2.0], atol=1e-8)
    # lam * ||x||^2 penalty: minimum of (x - i)^2 + lam x^2 is i / (1 + lam)
    res = nad.minimize(penalised, x0, args=(0.5, 3, "l2"), method="trust-exact")
    np.testing.assert_allclose(res.x, np.arange(3) / 1.5, atol=1e-8)


def test_static_args_in_objective_and_least_squares():
    obj = nad.Objective(penalised, args=(0.5, 2, "l2"))
    x = np.array([1.0, 2.0, 3.0])
    value, grad = obj.value_and_grad(x)
    assert value == pytest.approx(1.0 + 1.0 + 0.5 * 14.0)
    np.testing.assert_allclose(grad, [2.0 + 1.0, 2.0 + 2.0, 3.0])

    def residuals(x, scale, kind):
        return scale * (x - 1.0) if kind == "shifted" else scale * x

    res = nad.least_squares(residuals, np.zeros(2), args=(2.0, "shifted"))
    np.testing.assert_allclose(res.x, 1.0, atol=1e-10)
    assert res.jac_mode == "dense"


def test_array_args_stay_traced_data():
    traces = []

    def f(x, target):
        traces.append(1)  # runs only while tracing
        return np.sum((x - target) ** 2)

    for target in (np.ones(2), np.full(2, 3.0)):
        res = nad.minimize(f, np.zeros(2), args=(target,), method="trust-ncg")
        np.testing.assert_allclose(res.x, target, atol=1e-8)
    assert len(traces) == 1


# ---- scipy's behaviour at the edges -----------------------------------------------------------

def test_sparse_constraint_jacobian_goes_to_trust_constr():
    from scipy.sparse import csr_array

    con = so.NonlinearConstraint(lambda x: x[0] + x[1], 1.0, 1.0,
                                 jac=lambda x: csr_array(np.ones((1, 2))))
    res = nad.minimize(lambda x: np.sum(x ** 2), np.array([2.0, 0.0]), method="trust-constr",
                       constraints=[con])
    np.testing.assert_allclose(res.x, [0.5, 0.5], atol=1e-6)


def test_custom_method_gets_bounds_and_constraints_untouched():
    bounds = [(-2, 2), (0, 3)]
    constraints = "constraints"
    seen = {}

    def custom(fun, x0, **options):
        seen.update(options)
        return so.OptimizeResult(x=x0, fun=fun(x0), success=True)

    nad.minimize(so.rosen, np.ones(2), method=custom, bounds=bounds, constraints=constraints)
    assert seen["bounds"] is bounds and seen["constraints"] is constraints


@pytest.mark.parametrize("method, category", [("newton-cg", so.OptimizeWarning),
                                              ("trust-ncg", RuntimeWarning),
                                              ("trust-krylov", RuntimeWarning),
                                              ("trust-exact", RuntimeWarning)])
def test_maxiter_with_disp_warns_as_scipy(method, category, capsys):
    with pytest.warns(category, match="Maximum number"):
        res = nad.minimize(so.rosen, np.zeros(2), method=method,
                           options={"disp": True, "maxiter": 2})
    assert not res.success
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nad.minimize(so.rosen, np.zeros(2), method=method, options={"maxiter": 2})
