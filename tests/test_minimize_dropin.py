"""``newtonad.minimize`` as a drop-in for ``scipy.optimize.minimize``.

The ideas come from scipy's own tests of ``minimize`` (scipy/optimize/tests/
test_optimize.py: Rosenbrock with ``rosen_der`` / ``rosen_hess`` /
``rosen_hess_prod``, ``jac=True``, finite-difference keywords, quasi-Newton
strategies, sparse Hessians, automatic method choice, args, callbacks, result
fields, ``maxiter``, ``x0`` shapes); the tests are written afresh and run
against ``newtonad.minimize``: each native method and several scipy methods.
AD runs on the NumPy reference engine except in one numba check.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import scipy.optimize as so
from numpy.testing import assert_allclose
from scipy.optimize import BFGS, SR1, rosen, rosen_der, rosen_hess, rosen_hess_prod
from scipy.sparse import csr_array
from scipy.sparse.linalg import aslinearoperator

import newtonad
from newtonad.solvers import minimize

NATIVE = ["newton-cg", "trust-ncg", "trust-krylov", "trust-exact"]
X0 = np.array([-1.2, 1.0])


@pytest.fixture(autouse=True)
def numpy_engine():
    with newtonad.settings.override(engine="numpy"):
        yield


class Spy:
    """A callable that counts its calls with arrays (AD's traced calls are not counted)."""

    def __init__(self, fn):
        self.fn, self.calls, self.kinds = fn, 0, set()

    def __call__(self, x, *rest):
        self.kinds.add(type(x))
        if type(x) is np.ndarray:
            self.calls += 1
        return self.fn(x, *rest)


def at_minimum(res, atol=1e-3):
    assert res.success, res.message
    assert_allclose(res.x, [1.0, 1.0], atol=atol)


# ------------------------------------------------------------ signature and dispatch
def test_signature_is_scipys():
    ours = inspect.signature(minimize).parameters
    theirs = inspect.signature(so.minimize).parameters
    assert list(ours) == list(theirs)
    assert [p.default for p in ours.values()] == [p.default for p in theirs.values()]


def test_positional_call_in_scipys_order():
    hessp = Spy(rosen_hess_prod)
    res = minimize(rosen, X0, (), "trust-ncg", rosen_der, None, hessp, None, (), 1e-8)
    at_minimum(res, atol=1e-7)
    assert hessp.calls == res.nhev > 0


def test_method_none_chooses_as_scipy():
    # scipy's test_minimize_automethod: x^2 with x >= 2 and/or 5 <= x <= 10
    def f(x):
        return np.sum(x ** 2)
    con = [{"type": "ineq", "fun": lambda x: x - 2.0}]
    cases = [({}, 0.0), ({"constraints": con}, 2.0), ({"bounds": [(5, 10)]}, 5.0),
             ({"constraints": con, "bounds": [(5, 10)]}, 5.0),
             ({"constraints": con, "bounds": [(1, 10)]}, 2.0)]
    for kwargs, x_star in cases:
        res = minimize(f, np.array([10.0]), **kwargs)
        ref = so.minimize(f, np.array([10.0]), **kwargs)
        assert res.success, (kwargs, res.message)
        assert_allclose(res.x, [x_star], atol=1e-7)
        if kwargs:  # the same scipy method ran: same message and iterations
            assert (res.message, res.nit) == (ref.message, ref.nit), kwargs
    from newtonad.solvers.minimize import DEFAULT_METHOD, choose_method
    assert choose_method(None, None, ()) == DEFAULT_METHOD == "trust-ncg"
    assert choose_method(None, [(0, 1)], ()) == "L-BFGS-B"
    assert choose_method(None, None, so.NonlinearConstraint(np.sum, 0, 1)) == "SLSQP"
    assert choose_method(None, [(0, 1)], [{"type": "eq", "fun": np.sum}]) == "SLSQP"
    assert choose_method("BFGS", [(0, 1)], ()) == "BFGS"


def test_method_none_without_constraints_is_native_trust_ncg():
    res = minimize(rosen, X0)
    ref = minimize(rosen, X0, method="trust-ncg")
    assert "nhvp" in res and (res.nit, res.nfev, res.nhev) == (ref.nit, ref.nfev, ref.nhev)


# ------------------------------------------------------------ the caller's derivatives win
@pytest.mark.parametrize("method", NATIVE)
def test_user_jac_with_ad_hessian(method):
    jac = Spy(rosen_der)
    res = minimize(rosen, X0, method=method, jac=jac, options={"gtol": 1e-8})
    at_minimum(res, atol=1e-6)
    assert jac.calls == res.njev > 0
    assert res.nhev > 0  # AD supplied the second order
    plain = minimize(rosen, X0, method=method, options={"gtol": 1e-8})
    assert res.nit == plain.nit  # the same mathematics


@pytest.mark.parametrize("method", NATIVE)
def test_user_jac_and_hessp(method):
    jac, hessp = Spy(rosen_der), Spy(rosen_hess_prod)
    res = minimize(rosen, X0, method=method, jac=jac, hessp=hessp, tol=1e-8)
    at_minimum(res, atol=1e-6)
    assert jac.calls > 0 and hessp.calls > 0
    if method == "trust-exact":  # the dense Hessian from one product per column
        assert hessp.calls == 2 * res.nhev and res.nhvp == hessp.calls
    else:
        assert hessp.calls == res.nhev == res.nhvp


@pytest.mark.parametrize("method", NATIVE + ["scipy:newton-cg", "trust-constr", "dogleg"])
def test_user_jac_and_hess(method):
    hess = Spy(rosen_hess)
    x0 = np.array([1.3, 0.7]) if method == "dogleg" else X0
    res = minimize(rosen, x0, method=method, jac=rosen_der, hess=hess, tol=1e-8)
    at_minimum(res, atol=1e-6)
    if method in NATIVE:
        assert hess.calls == res.nhev > 0  # scipy's count: Hessian matrices evaluated
    else:  # scipy ran it with the caller's hess: scipy's own counts
        ref_hess = Spy(rosen_hess)
        ref = so.minimize(rosen, x0, method=method.replace("scipy:", ""), jac=rosen_der,
                          hess=ref_hess, tol=1e-8)
        assert (res.nit, res.nhev, hess.calls) == (ref.nit, ref.nhev, ref_hess.calls)


def test_hessp_used_for_products_and_hess_for_the_dense_hessian():
    hess, hessp = Spy(rosen_hess), Spy(rosen_hess_prod)
    at_minimum(minimize(rosen, X0, method="trust-ncg", jac=rosen_der, hess=hess, hessp=hessp))
    assert hessp.calls > 0 and hess.calls == 0
    hess, hessp = Spy(rosen_hess), Spy(rosen_hess_prod)
    at_minimum(minimize(rosen, X0, method="trust-exact", jac=rosen_der, hess=hess, hessp=hessp))
    assert hess.calls > 0 and hessp.calls == 0


def test_user_hess_without_jac_gets_ad_gradient():
    hess = Spy(rosen_hess)
    res = minimize(rosen, X0, method="newton-cg", hess=hess)
    at_minimum(res)
    assert hess.calls == res.nhev > 0


@pytest.mark.parametrize("method", NATIVE + ["BFGS", "trust-constr", "scipy:trust-krylov",
                                             "L-BFGS-B", "SLSQP"])
def test_jac_true(method):
    fun = Spy(lambda x: (rosen(x), rosen_der(x)))
    res = minimize(fun, X0, method=method, jac=True, options={"maxiter": 2000})
    at_minimum(res, atol=2e-3)
    assert fun.calls >= res.nfev > 0
    assert np.ndarray in fun.kinds


def test_jac_true_values_come_from_fun_not_ad():
    # fun's first output is traced only for Hessian products: the values the solver sees
    # are fun's own (here shifted by 7 in the value, which AD of the trace also sees, and
    # a gradient that AD could not know)
    calls = []

    def fun(x):
        calls.append(type(x))
        return rosen(x) + 7.0, rosen_der(x)
    res = minimize(fun, X0, method="trust-ncg", jac=True)
    at_minimum(res)
    assert res.fun == pytest.approx(7.0)
    assert calls.count(np.ndarray) == res.nfev


def test_jac_true_needs_a_pair():
    with pytest.raises(ValueError, match=r"jac=True, fun\(x\) must return a tuple"):
        minimize(rosen, X0, method="trust-ncg", jac=True)


# ------------------------------------------------------------ finite differences
@pytest.mark.parametrize("method", NATIVE)
@pytest.mark.parametrize("jac", ["2-point", "3-point", "cs"])
def test_finite_difference_gradient_on_native_methods(method, jac):
    fun = Spy(rosen)
    res = minimize(fun, X0, method=method, jac=jac)
    at_minimum(res, atol=1e-3)
    assert res.nfev == fun.calls > res.njev  # the differences' evaluations count, as in scipy


@pytest.mark.parametrize("method", NATIVE + ["scipy:newton-cg", "scipy:trust-ncg",
                                             "trust-constr", "dogleg", "scipy:trust-exact"])
@pytest.mark.parametrize("hess", ["2-point", "3-point"])
def test_finite_difference_hessian(method, hess):
    # scipy's test_finite_differences_hess, extended to dogleg and trust-exact (scipy
    # needs a callable there; newtonad estimates the matrix and hands one over)
    jac = Spy(rosen_der)
    x0 = np.array([1.3, 0.7]) if method == "dogleg" else X0
    res = minimize(rosen, x0, method=method, jac=jac, hess=hess)
    at_minimum(res, atol=1e-3)
    assert jac.calls > res.nit  # the Hessian came from differences of the gradient


def test_finite_difference_gradient_is_passed_on_to_scipy():
    fun = Spy(rosen)
    for method in ("BFGS", "L-BFGS-B", "CG", "TNC"):
        res = minimize(fun, X0, method=method, jac="2-point")
        ref = so.minimize(rosen, X0, method=method, jac="2-point")
        assert (res.nit, res.nfev) == (ref.nit, ref.nfev), method
        assert_allclose(res.x, ref.x)


# ------------------------------------------------------------ quasi-Newton and sparse Hessians
@pytest.mark.parametrize("method", NATIVE + ["scipy:newton-cg", "trust-constr",
                                             "scipy:trust-ncg"])
@pytest.mark.parametrize("strategy", [BFGS, SR1])
def test_hessian_update_strategy(method, strategy):
    res = minimize(rosen, X0, method=method, jac=rosen_der, hess=strategy(),
                   options={"maxiter": 500})
    at_minimum(res, atol=1e-3)


@pytest.mark.parametrize("method", NATIVE + ["scipy:newton-cg", "trust-constr"])
@pytest.mark.parametrize("wrap", [csr_array, aslinearoperator])
def test_sparse_or_operator_hessian(method, wrap):
    # scipy's test_sparse_hessian: native methods take the same steps with the same
    # counts as with the dense matrix; scipy's methods behave as scipy does with it
    x0 = np.array([2.0, 2.0])
    hess = lambda x: wrap(rosen_hess(x))  # noqa: E731
    other = minimize(rosen, x0, method=method, jac=rosen_der, hess=hess)
    if method in NATIVE:
        ref = minimize(rosen, x0, method=method, jac=rosen_der, hess=rosen_hess)
    else:
        ref = so.minimize(rosen, x0, method=method[6:] if ":" in method else method,
                          jac=rosen_der, hess=hess)
    assert_allclose(other.x, ref.x)
    assert (other.nit, other.nfev, other.njev, other.nhev) == (
        ref.nit, ref.nfev, ref.njev, ref.nhev)


# ------------------------------------------------------------ counters and fields
def test_trust_exact_nhev_counts_dense_hessians():
    def chained(x):
        return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    n = 10
    res = minimize(chained, np.tile(X0, n // 2), method="trust-exact")
    assert res.success
    assert 0 < res.nhev <= res.nit + 1
    assert res.nhvp == n * res.nhev  # each dense Hessian is n AD products


@pytest.mark.parametrize("method", NATIVE + ["tron"])
def test_counts_are_the_runs_own_when_an_objective_is_reused(method):
    """scipy's counts are per run: an Objective used before, or solved with twice,
    reports this run's evaluations, the same as a fresh one's."""
    x0 = np.tile(X0, 5)
    fresh = minimize(so.rosen, x0, method=method)
    obj = newtonad.Objective(so.rosen)
    for k in range(7):
        obj.value_and_grad(x0 + k)
        obj.hessp(x0, x0)
    before = obj.nfev
    assert before > 0
    first = minimize(obj, x0, method=method)
    again = minimize(obj, x0, method=method)
    for res in (first, again):
        assert (res.nfev, res.njev, res.nhev, res.nhvp) == (
            fresh.nfev, fresh.njev, fresh.nhev, fresh.nhvp)
    assert obj.nfev == before + first.nfev + again.nfev   # the Objective's own total goes on


@pytest.mark.parametrize("method", NATIVE)
def test_result_fields(method):
    # scipy's TestOptimizeResultAttributes, plus newtonad's own fields
    res = minimize(rosen, X0, method=method, jac=rosen_der)
    for name in ("x", "fun", "jac", "nit", "nfev", "njev", "nhev", "status", "success",
                 "message", "nhvp", "ncg", "time"):
        assert name in res, name
    assert_allclose(res.jac, rosen_der(res.x), atol=1e-12)
    assert res.fun == pytest.approx(rosen(res.x))


@pytest.mark.parametrize("method", NATIVE + ["BFGS", "scipy:trust-ncg"])
def test_maxiter_respected(method):
    hessp = None if method == "BFGS" else rosen_hess_prod
    res = minimize(rosen, X0, method=method, jac=rosen_der, hessp=hessp, options={"maxiter": 3})
    assert res.nit == 3 and not res.success


# ------------------------------------------------------------ args, callbacks, shapes
@pytest.mark.parametrize("method", NATIVE + ["trust-constr"])
def test_args_reach_every_callable(method):
    seen = set()

    def fun(x, a, b):
        return a * rosen(x) + b

    def jac(x, a, b):
        seen.add(("jac", a, b))
        return a * rosen_der(x)

    def hessp(x, p, a, b):
        seen.add(("hessp", a, b))
        return a * rosen_hess_prod(x, p)
    res = minimize(fun, X0, args=(2.0, 3.0), method=method, jac=jac, hessp=hessp)
    at_minimum(res, atol=1e-3)
    assert seen == {("jac", 2.0, 3.0), ("hessp", 2.0, 3.0)}
    assert res.fun == pytest.approx(3.0, abs=1e-6)


def test_non_tuple_args_are_wrapped():
    res = minimize(lambda x, a: np.sum((x - a) ** 2), np.zeros(3), args=2.0,
                   jac=lambda x, a: 2.0 * (x - a))
    assert_allclose(res.x, 2.0)


@pytest.mark.parametrize("method", NATIVE + ["BFGS", "scipy:trust-ncg"])
def test_callback_forms(method):
    xs, results = [], []
    minimize(rosen, X0, method=method, jac=rosen_der, callback=lambda xk: xs.append(xk))
    minimize(rosen, X0, method=method, jac=rosen_der,
             callback=lambda intermediate_result: results.append(intermediate_result))
    assert len(xs) > 3 and len(results) > 3
    assert all(r.fun == pytest.approx(rosen(r.x)) for r in results)

    def stop(intermediate_result):
        raise StopIteration
    res = minimize(rosen, X0, method=method, jac=rosen_der, callback=stop)
    assert res.status == 99 and not res.success


@pytest.mark.parametrize("method", NATIVE + ["BFGS", "L-BFGS-B"])
def test_scalar_x0_becomes_a_vector_as_in_scipy(method):
    res = minimize(lambda x: np.sum((x - 3.0) ** 2), 17.0, method=method)
    ref = so.minimize(lambda x: np.sum((x - 3.0) ** 2), 17.0, method="BFGS")
    assert res.x.shape == ref.x.shape == (1,)
    assert_allclose(res.x, [3.0], atol=1e-5)


def test_shaped_x0_with_user_derivatives():
    target = np.arange(6.0).reshape(2, 3)
    hessp = Spy(lambda x, p: 2.0 * p)
    res = minimize(lambda x: np.sum((x - target) ** 2), np.zeros((2, 3)), method="trust-exact",
                   jac=lambda x: 2.0 * (x - target), hessp=hessp)
    assert res.x.shape == (2, 3) and res.jac.shape == (2, 3)
    assert_allclose(res.x, target, atol=1e-12)
    assert hessp.calls == 6 * res.nhev


# ------------------------------------------------------------ bounds and constraints
def test_bounds_lbfgsb_with_user_jac_matches_scipy():
    bounds = [(-2.0, 0.5), (-2.0, 2.0)]
    res = minimize(rosen, X0, method="L-BFGS-B", jac=rosen_der, bounds=bounds)
    ref = so.minimize(rosen, X0, method="L-BFGS-B", jac=rosen_der, bounds=bounds)
    assert (res.nit, res.nfev) == (ref.nit, ref.nfev)
    assert_allclose(res.x, ref.x)


def test_constraints_slsqp_with_jac_true_matches_scipy():
    con = {"type": "ineq", "fun": lambda x: 1.0 - x[0] - x[1],
           "jac": lambda x: np.array([-1.0, -1.0])}
    fun = lambda x: (rosen(x), rosen_der(x))  # noqa: E731
    res = minimize(fun, X0, jac=True, constraints=[con])  # method=None: SLSQP
    ref = so.minimize(fun, X0, jac=True, constraints=[con])
    assert res.success and res.nit == ref.nit
    assert_allclose(res.x, ref.x, rtol=1e-8)


# ------------------------------------------------------------ warnings, fallback and errors
def test_derivative_free_method_warns_about_jac_as_scipy():
    with pytest.warns(RuntimeWarning, match="does not use gradient information"):
        minimize(rosen, X0, method="Nelder-Mead", jac=rosen_der)
    with pytest.warns(RuntimeWarning, match="does not use Hessian information"):
        minimize(rosen, X0, method="BFGS", hess=rosen_hess)


@pytest.mark.parametrize("method", ["trust-ncg", "trust-exact", "scipy:trust-ncg"])
def test_untraceable_fun_with_user_jac_falls_back_to_differences(method):
    from newtonad.solvers import HessianFallbackWarning
    def fun(x):
        return rosen(np.array([float(v) for v in x]))  # float() cannot be traced
    with pytest.warns(HessianFallbackWarning, match="cannot trace fun"):
        res = minimize(fun, X0, method=method, jac=rosen_der)
    at_minimum(res, atol=1e-3)


def test_untraceable_fun_without_jac_falls_back_to_scipy_differences():
    # the public contract: called directly, '2-point' gradients, one TraceFallbackWarning
    import newtonad as nad

    def fun(x):
        return rosen(np.array([float(v) for v in x]))
    with pytest.warns(nad.TraceFallbackWarning, match="float"):
        res = minimize(fun, X0, method="trust-ncg")
    at_minimum(res, atol=1e-3)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"jac": "2point"}, ValueError, "jac must be"), ({"jac": np.ones(2)}, ValueError, "jac must"),
    ({"hess": "bfgs"}, ValueError, "hess must be"),
    ({"hess": np.eye(2)}, ValueError, "pass a function that returns the matrix"),
    ({"hessp": 3.0}, TypeError, "hessp must be a callable"),
])
def test_bad_derivative_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        minimize(rosen, X0, **kwargs)


def test_jac_true_with_an_objective_is_refused():
    from newtonad.objective import Objective
    with pytest.raises(ValueError, match="drop jac=True"):
        minimize(Objective(rosen), X0, jac=True)


def test_user_jac_overrides_an_objectives_own():
    from newtonad.objective import Objective
    obj, jac = Objective(rosen), Spy(rosen_der)
    res = minimize(obj, X0, method="trust-krylov", jac=jac)
    at_minimum(res)
    assert jac.calls == res.njev > 0 and obj.nhev > 0


# ------------------------------------------------------------ the default engine
def test_user_jac_with_numba_hessian_products():
    with newtonad.settings.override(engine="numba"):
        jac = Spy(rosen_der)
        res = minimize(rosen, X0, method="trust-ncg", jac=jac)
        at_minimum(res)
        assert jac.calls > 0 and res.nhev > 0


def test_wrong_sized_user_derivatives_are_named():
    with pytest.raises(ValueError, match=r"gradient at x0 has shape \(3,\) but x0 has shape"):
        minimize(rosen, X0, method="trust-ncg", jac=lambda x: np.zeros(3))
    with pytest.raises(ValueError, match=r"hess\(x\) must return an \(n, n\) = \(2, 2\)"):
        minimize(rosen, X0, method="trust-exact", jac=rosen_der, hess=lambda x: np.eye(3))


def test_a_misspelt_method_is_answered_with_the_nearest_name():
    import newtonad as nad

    with pytest.raises(ValueError, match=r"trust-krylv \(did you mean 'trust-krylov'\?\)"):
        nad.minimize(lambda x: np.sum(x ** 2), np.ones(2), method="trust-krylv")


@pytest.mark.parametrize("method", ["Nelder-Mead", "Powell", "COBYLA"])
def test_derivative_free_methods_see_the_dtypes_scipy_s_own_give(method):
    # scipy's Nelder-Mead and COBYLA keep a float32 start's type; Powell mixes in float64
    def dtypes(solve):
        seen = set()

        def f(x):
            seen.add(x.dtype)
            return float(np.sum((x - 1.0) ** 2))

        solve(f, np.array([5.0, 4.0], dtype=np.float32), method=method)
        return seen

    assert dtypes(minimize) == dtypes(so.minimize)
