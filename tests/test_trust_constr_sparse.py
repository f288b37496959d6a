"""trust-constr gets the sparse Hessian when the pattern is sparse.

``nad.minimize(..., method="trust-constr")`` goes through the scipy bridge; for an
``Objective(f, sparse=True)`` (or above the dense limit) whose Hessian pattern has at most
20% non-zeros, the bridge hands scipy ``hess`` returning a ``scipy.sparse`` matrix instead
of ``hessp``. The solutions must be those of the dense Hessian; a spy on the callbacks
scipy receives checks which form it got. Everything runs on the NumPy engine.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize
from scipy import sparse
from scipy.optimize import Bounds, NonlinearConstraint

import newtonad as nad
from newtonad.solvers import scipy_bridge

ENGINE = "numpy"


@pytest.fixture(autouse=True)
def numpy_engine():
    with nad.settings.override(engine=ENGINE):
        yield


def chained_rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def dense_quartic(x):
    """Every pair of variables interacts: a dense Hessian pattern."""
    return np.sum(x ** 4) + np.sum(x) ** 2 + np.sum((x - 0.5) ** 2)


class Spy:
    """Replaces the bridge's scipy.optimize.minimize; records the Hessian forms given."""

    def __init__(self, monkeypatch):
        self.kwargs = {}
        self.hess_types = []
        real = scipy_bridge.scipy_minimize

        def spy(*args, **kwargs):
            self.kwargs = dict(kwargs)
            hess = kwargs.get("hess")
            if callable(hess):
                def recorded(x, *rest):
                    h = hess(x, *rest)
                    self.hess_types.append(type(h))
                    return h
                kwargs["hess"] = recorded
            return real(*args, **kwargs)

        monkeypatch.setattr(scipy_bridge, "scipy_minimize", spy)


def _solve(fun, x0, sparse_hess, **kwargs):
    obj = nad.Objective(fun, sparse=sparse_hess)
    options = {"gtol": 1e-10, "xtol": 1e-12, "maxiter": 2000}
    return nad.minimize(obj, x0, method="trust-constr", options=options, **kwargs)


def _same_solution(res, ref):
    assert res.success and ref.success, (res.message, ref.message)
    np.testing.assert_allclose(res.x, ref.x, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(res.fun, ref.fun, rtol=1e-8, atol=1e-12)


def test_sparse_objective_gives_trust_constr_a_sparse_hessian(monkeypatch):
    x0 = np.linspace(-1.0, 0.5, 20)
    ref = _solve(chained_rosenbrock, x0, False)
    spy = Spy(monkeypatch)
    res = _solve(chained_rosenbrock, x0, True)
    assert "hessp" not in spy.kwargs and callable(spy.kwargs["hess"])
    assert spy.hess_types and all(issubclass(t, sparse.sparray) for t in spy.hess_types)
    _same_solution(res, ref)
    np.testing.assert_allclose(res.x, np.ones(20), atol=1e-5)


def test_plain_objective_keeps_hessian_vector_products(monkeypatch):
    spy = Spy(monkeypatch)
    res = _solve(chained_rosenbrock, np.zeros(10), False)
    assert "hess" not in spy.kwargs and callable(spy.kwargs["hessp"])
    assert res.success


def test_sparse_hessian_with_bounds(monkeypatch):
    x0 = np.full(20, 0.5)
    bounds = Bounds(np.full(20, -2.0), np.full(20, 0.8))  # the minimum x = 1 is cut off
    ref = _solve(chained_rosenbrock, x0, False, bounds=bounds)
    spy = Spy(monkeypatch)
    res = _solve(chained_rosenbrock, x0, True, bounds=bounds)
    assert spy.hess_types and all(issubclass(t, sparse.sparray) for t in spy.hess_types)
    _same_solution(res, ref)
    assert np.all(res.x <= 0.8 + 1e-8) and np.any(np.isclose(res.x, 0.8, atol=1e-6))


@pytest.mark.parametrize("form", ["dict", "NonlinearConstraint"])
def test_sparse_hessian_with_a_nonlinear_constraint(monkeypatch, form):
    n = 20
    x0 = np.full(n, 0.3)

    def ball(x):  # sum(x^2) <= n / 4: the unconstrained minimum (ones) is outside
        return n / 4.0 - np.sum(x ** 2)

    constraint = ({"type": "ineq", "fun": ball} if form == "dict"
                  else NonlinearConstraint(ball, 0.0, np.inf))
    ref = _solve(chained_rosenbrock, x0, False, constraints=constraint)
    spy = Spy(monkeypatch)
    res = _solve(chained_rosenbrock, x0, True, constraints=constraint)
    assert spy.hess_types and all(issubclass(t, sparse.sparray) for t in spy.hess_types)
    _same_solution(res, ref)
    assert abs(ball(res.x)) < 1e-6  # active at the solution


def test_equality_constraint_and_bounds_together(monkeypatch):
    n = 20
    x0 = np.full(n, 0.2)
    con = {"type": "eq", "fun": lambda x: np.sum(x) - 5.0}
    bounds = Bounds(np.zeros(n), np.full(n, 1.0))
    ref = _solve(chained_rosenbrock, x0, False, constraints=con, bounds=bounds)
    spy = Spy(monkeypatch)
    res = _solve(chained_rosenbrock, x0, True, constraints=con, bounds=bounds)
    assert spy.hess_types and all(issubclass(t, sparse.sparray) for t in spy.hess_types)
    _same_solution(res, ref)
    assert abs(np.sum(res.x) - 5.0) < 1e-8


def test_dense_pattern_falls_back_to_products_with_a_note(monkeypatch, capsys):
    """More than 20% non-zeros: the Hessian-vector products, as before."""
    spy = Spy(monkeypatch)
    obj = nad.Objective(dense_quartic, sparse=True)
    res = nad.minimize(obj, np.zeros(6), method="trust-constr", options={"disp": True})
    assert "hess" not in spy.kwargs and callable(spy.kwargs["hessp"])
    assert "dense path" in capsys.readouterr().out
    ref = scipy.optimize.minimize(dense_quartic, np.zeros(6), method="trust-constr",
                                  jac=nad.grad(dense_quartic), hess=nad.hessian(dense_quartic))
    np.testing.assert_allclose(res.x, ref.x, atol=1e-6)


def test_callers_own_hessp_wins(monkeypatch):
    spy = Spy(monkeypatch)
    obj = nad.Objective(chained_rosenbrock, sparse=True)
    calls = []

    def hessp(x, p):
        calls.append(1)
        return obj.hessp(x, p)

    res = nad.minimize(obj, np.zeros(20), method="trust-constr", hessp=hessp)
    assert "hess" not in spy.kwargs and calls
    np.testing.assert_allclose(res.x, np.ones(20), atol=1e-4)


def test_shaped_x0_gets_a_flat_sparse_hessian(monkeypatch):
    x0 = np.full((4, 5), 0.5)
    spy = Spy(monkeypatch)
    obj = nad.Objective(lambda X: chained_rosenbrock(X.ravel()), sparse=True)
    res = nad.minimize(obj, x0, method="trust-constr", options={"gtol": 1e-10})
    assert spy.hess_types and all(issubclass(t, sparse.sparray) for t in spy.hess_types)
    assert res.x.shape == (4, 5)
    np.testing.assert_allclose(res.x, np.ones((4, 5)), atol=1e-5)


def test_large_plain_function_goes_sparse_by_itself(monkeypatch):
    """Above the dense limit (n > 5000) the pattern is looked at without sparse=True."""
    spy = Spy(monkeypatch)
    n = 5001
    res = nad.minimize(chained_rosenbrock, np.zeros(n), method="trust-constr",
                       options={"maxiter": 3})
    assert "hessp" not in spy.kwargs
    assert spy.hess_types and all(issubclass(t, sparse.sparray) for t in spy.hess_types)
    assert res.nit <= 3


def test_scipy_directly_with_a_sparse_objectives_hess():
    """A user passing Objective(sparse=True).hess to scipy's trust-constr gets the same
    solution as with the products, and scipy is handed sparse matrices."""
    x0 = np.linspace(-1.0, 0.5, 15)
    obj = nad.Objective(chained_rosenbrock, sparse=True)
    seen = []

    def hess(x):
        h = obj.hess(x)
        seen.append(sparse.issparse(h))
        return h

    options = {"gtol": 1e-10, "xtol": 1e-12, "maxiter": 2000}
    res = scipy.optimize.minimize(obj.fun, x0, jac=obj.jac, hess=hess, method="trust-constr",
                                  options=options)
    ref = scipy.optimize.minimize(obj.fun, x0, jac=obj.jac, hessp=obj.hessp,
                                  method="trust-constr", options=options)
    assert seen and all(seen)
    _same_solution(res, ref)


def test_large_constraint_jacobian_goes_to_trust_constr_sparse():
    # 1000 dynamics rows x 2000 variables: a dense Jacobian would be 2e6 entries per call;
    # at n = 1e5 it would not fit in memory
    from scipy.sparse import issparse

    from newtonad.problems import constrained

    p = constrained.get("cubic-control", 2000)
    res = nad.minimize(p.fun, p.x0, method="trust-constr", constraints=p.constraints,
                       options={"maxiter": 200})
    assert issparse(res.jac[0]) and res.jac[0].shape == (1000, 2000)
    assert res.jac[0].nnz <= 3 * 1000
    assert res.fun == pytest.approx(p.fstar, rel=1e-7)
