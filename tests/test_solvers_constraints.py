"""Constraints written for scipy's finite differences keep working through ``nad.minimize``.

Constraints that trace get AD Jacobians (and, for trust-constr, AD Hessians of
the Lagrangian term; a value-dependent ``if`` traces the branch taken); one that
cannot be traced (``float(x[0])``) falls back on scipy's finite differences for that
constraint alone, with a ``ConstraintFallbackWarning`` that says why. SLSQP
gets no constraint ``hess`` it would warn about. The objectives run on the
NumPy engine (no numba compiles).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.optimize as so
from numpy.testing import assert_allclose
from scipy.optimize import NonlinearConstraint

import newtonad as nad
from newtonad.solvers.scipy_bridge import ConstraintFallbackWarning

#: min sum((x - 2)^2) on the unit disc: x* = (1, 1) / sqrt(2)
X_STAR = np.full(2, 1.0 / np.sqrt(2.0))
X0 = np.array([0.5, 0.25])


@pytest.fixture(autouse=True)
def numpy_engine():
    with nad.settings.override(engine="numpy"):
        yield


def objective(x):
    return np.sum((x - 2.0) ** 2)


def disc(x):
    """Traceable: 1 - ||x||^2 >= 0."""
    return 1.0 - x[0] ** 2 - x[1] ** 2


def disc_float(x):
    """The same written with float(): evaluates, cannot be traced."""
    return 1.0 - float(x[0]) ** 2 - x[1] ** 2


def disc_branch(x):
    """The same with a value-dependent branch (both arms equal)."""
    if x[0] > 0:
        return 1.0 - x[0] ** 2 - x[1] ** 2
    return 1.0 - x[1] ** 2 - x[0] ** 2


def strict(call):
    """Run ``call`` with every warning an error except ConstraintFallbackWarning; return those."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("error")
        warnings.simplefilter("always", ConstraintFallbackWarning)
        res = call()
    return res, [w for w in caught if issubclass(w.category, ConstraintFallbackWarning)]


# ------------------------------------------------ no hess for methods that ignore it
def test_slsqp_nonlinear_constraint_gets_no_hess():
    # newtonad used to pass its AD Lagrangian Hessian, and scipy warned that
    # SLSQP ignores `hess`
    con = NonlinearConstraint(disc, 0.0, np.inf)
    res, fallbacks = strict(lambda: nad.minimize(objective, X0, method="SLSQP",
                                                 constraints=con))
    assert not fallbacks
    assert res.success
    assert_allclose(res.x, X_STAR, atol=2e-5)  # SLSQP's default ftol is 1e-6


def spy_on_derivatives(monkeypatch):
    """Record the constraints given AD derivatives and count their Hessian products."""
    from newtonad.solvers import scipy_bridge
    real = scipy_bridge.constraint_derivatives
    seen = {"funs": [], "hvp": 0}

    def spy(fun, args=(), sparse=False):
        seen["funs"].append(fun)
        jac, hvp = real(fun, args, sparse)

        def counted(x, v, p):
            seen["hvp"] += 1
            return hvp(x, v, p)
        return jac, counted
    monkeypatch.setattr(scipy_bridge, "constraint_derivatives", spy)
    return seen


def test_slsqp_constraint_jacobian_still_from_ad(monkeypatch):
    seen = spy_on_derivatives(monkeypatch)
    res = nad.minimize(objective, X0, method="SLSQP",
                       constraints=NonlinearConstraint(disc, 0.0, np.inf))
    assert seen["funs"] == [disc] and seen["hvp"] == 0 and res.success


def test_trust_constr_keeps_ad_hessian(monkeypatch):
    seen = spy_on_derivatives(monkeypatch)
    con = NonlinearConstraint(disc, 0.0, np.inf)
    res, fallbacks = strict(lambda: nad.minimize(objective, X0, method="trust-constr",
                                                 constraints=con))
    assert not fallbacks and res.success
    assert_allclose(res.x, X_STAR, atol=1e-5)
    assert seen["funs"] == [disc] and seen["hvp"] > 1  # the probe, then scipy's products


# ------------------------------------------------ untraceable constraints fall back
@pytest.mark.parametrize("fun", [disc_float])
@pytest.mark.parametrize("method", ["SLSQP", "trust-constr"])
@pytest.mark.parametrize("form", ["dict", "NonlinearConstraint"])
def test_untraceable_constraint_falls_back_to_finite_differences(fun, method, form):
    # these raised newtonad's TracerBoolError from inside scipy
    con = ({"type": "ineq", "fun": fun} if form == "dict"
           else NonlinearConstraint(fun, 0.0, np.inf))
    res, fallbacks = strict(lambda: nad.minimize(objective, X0, method=method,
                                                 constraints=[con]))
    assert len(fallbacks) == 1
    text = str(fallbacks[0].message)
    assert f"constraint 0 ({fun.__name__}) cannot be traced" in text
    assert "TracerBoolError" in text and "finite differences" in text
    assert "\n" not in text  # the first line of the original error only
    assert fallbacks[0].filename == __file__  # points at the call of minimize
    assert res.success, res.message
    assert_allclose(res.x, X_STAR, atol=1e-4)
    # the same problem in plain scipy, which uses finite differences throughout
    ref = so.minimize(objective, X0, method=method, constraints=[con])
    assert_allclose(res.x, ref.x, atol=1e-4)


@pytest.mark.parametrize("method", ["SLSQP", "trust-constr"])
def test_a_constraint_with_a_branch_traces_the_branch_taken(method):
    res, fallbacks = strict(lambda: nad.minimize(objective, X0, method=method,
                                                 constraints=[{"type": "ineq",
                                                               "fun": disc_branch}]))
    assert not fallbacks and res.success, res.message
    assert_allclose(res.x, X_STAR, atol=1e-5)


def test_only_the_untraceable_constraint_falls_back():
    cons = [{"type": "ineq", "fun": disc},
            {"type": "ineq", "fun": lambda x: 0.6 - float(x[0])}]  # x0 <= 0.6
    res, fallbacks = strict(lambda: nad.minimize(objective, X0, method="SLSQP",
                                                 constraints=cons))
    assert len(fallbacks) == 1 and "constraint 1 (<lambda>)" in str(fallbacks[0].message)
    assert res.success
    assert_allclose(res.x, [0.6, 0.8], atol=1e-5)


def test_vector_constraint_built_with_np_array():
    """np.array([c1, c2]) of traced values: traced (if supported) or else falls back."""
    def box(x):
        return np.array([0.6 - x[0], 1.0 - x[0] ** 2 - x[1] ** 2])

    for method in ("SLSQP", "trust-constr"):
        res, fallbacks = strict(lambda method=method: nad.minimize(
            objective, X0, method=method, constraints=NonlinearConstraint(box, 0.0, np.inf)))
        assert len(fallbacks) <= 1
        assert res.success, res.message
        assert_allclose(res.x, [0.6, 0.8], atol=1e-4)


def test_constraint_errors_of_its_own_propagate():
    def broken(x):
        return 1.0 - x[5]  # a bug in the constraint, not a tracing limit

    with pytest.raises(IndexError):
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConstraintFallbackWarning)
            nad.minimize(objective, X0, method="SLSQP",
                         constraints={"type": "ineq", "fun": broken})


def test_derivative_free_methods_never_trace_constraints():
    con = NonlinearConstraint(disc_float, 0.0, np.inf)
    res, fallbacks = strict(lambda: nad.minimize(objective, X0, method="COBYLA",
                                                 constraints=con))
    assert not fallbacks
    assert_allclose(res.x, X_STAR, atol=1e-3)
