"""One rule for a start where the objective or its gradient is not finite.

Every method ``newtonad.minimize`` accepts -- the native ones and every method of
``scipy.optimize.minimize`` it delegates -- returns ``success=False``, status 5, ``x``
a copy of ``x0`` (never nan) and ``fun = f(x0)``, with a message that says what was
not finite. ``maxiter=-1`` does what scipy does for the method.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.optimize import Bounds, rosen, rosen_der

import newtonad as nad
from newtonad.solvers.scipy_bridge import SCIPY_METHODS

from .builders import AnalyticObjective

NATIVE = ["newton-cg", "trust-ncg", "trust-krylov", "trust-exact"]
METHODS = NATIVE + [f"scipy:{m}" if m in NATIVE else m for m in SCIPY_METHODS]
#: methods that never ask for a gradient: a nan gradient at x0 does not stop them
DERIVATIVE_FREE = {"nelder-mead", "powell", "cobyla", "cobyqa"}
X0 = np.array([1.0, 2.0])


def constant(value):
    """f(x) = value + sum(x^2): traceable, value nan or inf everywhere."""
    def f(x):
        return value + np.sum(x ** 2)
    return f


def nan_gradient():
    """f finite everywhere, gradient nan at x0 (a hand-written objective)."""
    return AnalyticObjective(lambda x: float(np.sum(x ** 2)),
                             lambda x: np.full_like(x, np.nan),
                             lambda x: (lambda v: 2.0 * v))


def run(fun, method, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return nad.minimize(fun, X0.copy(), method=method, **kwargs)


def assert_refused(res, what):
    assert not res.success
    assert res.status == 5
    assert np.isfinite(res.x).all()
    np.testing.assert_array_equal(res.x, X0)
    assert "not finite at the initial point" in res.message
    assert what in res.message


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_nonfinite_value_at_x0(method, value):
    res = run(constant(value), method)
    assert_refused(res, f"f(x0) = {value}")
    assert res.fun == value or (np.isnan(value) and np.isnan(res.fun))
    assert res.nit == 0


@pytest.mark.parametrize("method", METHODS)
def test_nonfinite_gradient_at_x0(method):
    res = run(nan_gradient(), method)
    if method in DERIVATIVE_FREE:
        assert np.isfinite(res.x).all()  # no gradient asked for: the method runs
        assert res.status != 5
        return
    assert_refused(res, "gradient")
    assert res.fun == pytest.approx(5.0)


def test_x0_is_copied():
    x0 = X0.copy()
    res = nad.minimize(constant(np.nan), x0, method="bfgs")
    assert res.x is not x0
    res.x[0] = 7.0
    assert x0[0] == 1.0


def test_nonfinite_value_of_the_shaped_start():
    x0 = np.ones((2, 3))
    res = nad.minimize(constant(np.inf), x0, method="trust-ncg")
    assert res.x.shape == (2, 3) and res.status == 5


def test_bounds_clip_the_start_before_the_test():
    # log(x) is nan at x0 = -1, finite at the clipped start 0.5: L-BFGS-B starts there
    def f(x):
        return np.sum(x - np.log(x))
    with np.errstate(invalid="ignore"):
        res = nad.minimize(f, np.array([-1.0, 2.0]), method="L-BFGS-B",
                           bounds=[(0.5, 3.0), (0.5, 3.0)])
    assert res.success, res.message
    np.testing.assert_allclose(res.x, 1.0, atol=1e-5)


def test_bounds_clip_the_refused_start():
    res = run(constant(np.nan), "l-bfgs-b", bounds=Bounds([1.5, -1.0], [3.0, 1.0]))
    assert res.status == 5
    np.testing.assert_array_equal(res.x, [1.5, 1.0])


def test_finite_start_counts_no_extra_evaluation():
    # the front's evaluation at x0 is the one the method would make: the objective's
    # cache gives it to scipy, so the objective computes what scipy counts
    obj = nad.Objective(rosen)
    res = nad.minimize(obj, np.array([-1.2, 1.0]), method="BFGS", options={"maxiter": 5})
    assert obj.nfev == res.nfev


@pytest.mark.parametrize("method", NATIVE)
def test_negative_maxiter_stops_at_once(method):
    # scipy's Newton-CG: status 1 at x0 (scipy's test_ncg_negative_maxiter)
    res = nad.minimize(rosen, np.array([-1.2, 1.0]), method=method, jac=rosen_der,
                       options={"maxiter": -1})
    assert res.status == 1 and not res.success and res.nit == 0
    np.testing.assert_array_equal(res.x, [-1.2, 1.0])
