"""The native solvers always end, keep their best point and report honestly.

Objectives here misbehave on purpose: nan or inf values at trial points,
Hessian products with nan or inf in them, singular, infinite or indefinite
Hessians at ``x0``, ``x0`` at a kink, gradients exactly zero with ``gtol = 0``.
Every run must come back within its ``maxiter`` / ``max_time``, with a finite
``x`` whose value is ``fun``, no worse than ``f(x0)``, and success only where
the gradient test really holds. Plain NumPy objectives run on the NumPy engine
(no numba compiles); the rest are hand-coded (``test_solvers_objectives``).
"""

from __future__ import annotations

import math
import threading
import time
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import newtonad as nad
from newtonad.solvers.gltr import GLTRSubproblem
from newtonad.solvers.problem import FlatProblem
from newtonad.solvers.tridiagonal import solve_tridiagonal_trs

from .builders import AnalyticObjective, rosenbrock

NATIVE = ["newton-cg", "trust-ncg", "trust-krylov", "trust-exact"]


@pytest.fixture(autouse=True)
def numpy_engine():
    """Derived programs run on the NumPy evaluator: no numba compiles in this module."""
    with nad.settings.override(engine="numpy"):
        yield


def bounded(fn, seconds=30.0):
    """``fn()``, failing the test if it has not returned after ``seconds`` (a hang)."""
    out = {}

    def target():
        try:
            out["value"] = fn()
        except BaseException as exc:  # re-raised in the test's thread
            out["error"] = exc

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        pytest.fail(f"did not return within {seconds} s")
    if "error" in out:
        raise out["error"]
    return out["value"]


def solve(f, x0, method, **options):
    """``nad.minimize`` with nan/inf warnings from the objective silenced, under a watchdog."""
    def run():
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return nad.minimize(f, x0, method=method, options=options)
    return bounded(run)


def value(f, x):
    with np.errstate(all="ignore"):
        return float(f(np.asarray(x, dtype=float)))


def assert_honest(res, f, grad, x0, gtol, maxiter):
    """The properties every run must have, whatever the objective did."""
    x = np.asarray(res.x)
    assert np.isfinite(x).all(), res
    assert math.isfinite(res.fun)
    assert res.fun == value(f, x)  # fun is the value at x, not some other point's
    assert res.fun <= value(f, x0) + 1e-12 * max(1.0, abs(value(f, x0)))
    assert res.nit <= maxiter
    if res.success:
        assert res.status == 0
        with np.errstate(all="ignore"):
            g = np.asarray(grad(x), dtype=float)
        assert np.linalg.norm(g) < gtol or np.linalg.norm(g) == 0.0, (res.message, g)
    else:
        assert res.status in (1, 2, 3, 4) and res.message


# ------------------------------------------------ non-finite Hessian products
def abs_15(x):
    """sum |x|^1.5: minimum 0 at 0, where the Hessian is +inf (its product nan)."""
    return np.sum(np.abs(x) ** 1.5)


@pytest.mark.parametrize("method", NATIVE)
def test_infinite_hessian_at_kink_ends_at_minimum(method):
    # trust-krylov looped forever in the tridiagonal solve; trust-exact raised
    # "array must not contain infs or NaNs"; trust-ncg stopped at x0 with status 2
    x0 = np.array([0.0, 1.0, 0.0, -2.0])
    res = solve(abs_15, x0, method, maxiter=100, max_time=5.0)
    assert res.success, res.message
    assert np.isfinite(res.x).all() and res.x[0] == 0.0 and res.x[2] == 0.0
    assert res.fun < 1e-8 and res.fun == value(abs_15, res.x)


def test_infinite_hessian_at_kink_numba_engine():
    """The hang of trust-krylov, on the default (compiled) engine."""
    with nad.settings.override(engine="numba"):
        res = solve(abs_15, np.array([0.0, 1.0, 0.0, -2.0]), "trust-krylov", maxiter=100,
                    max_time=30.0)
        assert res.success and res.fun < 1e-8 and np.isfinite(res.x).all(), res.message


def sphere_with_bad_hessian(bad):
    """sum(x^2) whose Hessian products are ``bad`` (nan or inf) in every entry."""
    return AnalyticObjective(lambda x: float(np.sum(x ** 2)), lambda x: 2.0 * x,
                             lambda x: (lambda v: np.full(np.shape(v), bad)))


@pytest.mark.parametrize("bad", [np.nan, np.inf])
@pytest.mark.parametrize("method", NATIVE)
def test_unusable_hessian_gives_steepest_descent(method, bad):
    x0 = np.array([3.0, -4.0, 1.0])
    res = solve(sphere_with_bad_hessian(bad), x0, method, maxiter=200, gtol=1e-6)
    assert res.success, res.message
    np.testing.assert_allclose(res.x, 0.0, atol=1e-6)
    # an honest failure when the budget is too small says what went wrong
    res = solve(sphere_with_bad_hessian(bad), x0, method, maxiter=1, gtol=1e-12)
    assert res.status == 1 and not res.success
    assert "Hessian" in res.message and "nan or inf" in res.message
    assert np.isfinite(res.x).all() and res.fun <= 26.0


@pytest.mark.parametrize("method", ["trust-ncg", "trust-krylov", "newton-cg"])
def test_hessian_product_failing_midway_keeps_the_subspace(method):
    """The third product at each point is nan: CG / Lanczos stop with what they have."""
    a = np.diag(np.geomspace(1.0, 100.0, 8))
    calls = {}

    def operator(x):
        key = x.tobytes()

        def apply(v):
            calls[key] = calls.get(key, 0) + 1
            return a @ v if calls[key] < 3 else np.full(np.shape(v), np.nan)
        return apply

    obj = AnalyticObjective(lambda x: 0.5 * float(x @ a @ x), lambda x: a @ x, operator)
    x0 = np.linspace(1.0, 2.0, 8)
    res = solve(obj, x0, method, maxiter=500, gtol=1e-6)
    assert res.success, res.message
    np.testing.assert_allclose(res.x, 0.0, atol=1e-5)


def test_gltr_with_nan_hessian_returns_finite_step():
    obj = sphere_with_bad_hessian(np.nan)
    problem = FlatProblem(obj, (3,))
    x = np.array([1.0, 2.0, 2.0])
    model = GLTRSubproblem(problem, x, obj.fun(x), obj.jac(x))
    p, hits = bounded(lambda: model.solve(0.5))
    assert np.isfinite(p).all() and hits
    np.testing.assert_allclose(p, -0.5 * x / 3.0)
    assert model.predicted_decrease(p) == pytest.approx(0.5 * 6.0)


def test_tridiagonal_subproblem_rejects_nan():
    # used to spin forever looking for a positive definite shift of a nan matrix
    with pytest.raises(ValueError, match="finite"):
        bounded(lambda: solve_tridiagonal_trs(np.array([np.nan, 1.0]), np.array([0.5]),
                                              1.0, 1.0), seconds=10)


# ------------------------------------------------ zero gradient and gtol = 0
def sphere(x):
    return np.sum((x - 1.0) ** 2)


@pytest.mark.parametrize("method", NATIVE)
@pytest.mark.parametrize("opts", [{"gtol": 0.0}, {"tol": 0.0}, {}])
def test_zero_gradient_is_success(method, opts):
    # trust-ncg and trust-krylov divided by ||g|| = 0 (ZeroDivisionError) with gtol 0;
    # newton-cg and trust-exact ended with status 2 instead of success
    opts = dict(opts)
    tol = opts.pop("tol", None)
    res = bounded(lambda: nad.minimize(sphere, np.ones(3), method=method, tol=tol,
                                       options=opts))
    assert res.success and res.status == 0 and res.nit == 0, res.message
    assert res.fun == 0.0


@pytest.mark.parametrize("method", ["newton-cg", "trust-ncg", "trust-krylov"])
def test_gtol_zero_runs_to_exact_stationary_point(method):
    # one Newton step lands exactly on the minimum; the next iteration used to
    # divide by ||g|| = 0 (trust-exact's Cholesky step lands 1e-16 away: not here)
    obj = AnalyticObjective(lambda x: float((x[0] - 1.0) ** 2), lambda x: 2.0 * (x - 1.0),
                            lambda x: (lambda v: 2.0 * v))
    res = bounded(lambda: nad.minimize(obj, [0.5], method=method, options={"gtol": 0.0,
                                                                           "maxiter": 50}))
    assert res.success and res.x[0] == 1.0 and res.nit <= 2, res.message


# ------------------------------------------------ time limits hold inside the inner loops
def slow_quadratic(n=300, delay=0.01):
    """An ill-conditioned quadratic whose Hessian products take ``delay`` seconds each."""
    d = np.geomspace(1.0, 1e6, n)

    def operator(x):
        def apply(v):
            time.sleep(delay)
            return (d.reshape((n,) + (1,) * (np.ndim(v) - 1))) * v
        return apply
    return AnalyticObjective(lambda x: 0.5 * float(d @ (x * x)), lambda x: d * x, operator)


@pytest.mark.parametrize("method", ["newton-cg", "trust-ncg", "trust-krylov"])
def test_max_time_holds_inside_inner_iterations(method):
    # near the minimum the forcing tolerance is tight and the radius large, so
    # one CG / Lanczos solve takes 600 products (6 s); the deadline used to be
    # checked only between outer iterations. (trust-exact's inner work is one
    # Hessian frame and a few dense factorisations.)
    x0 = 1e-13 * np.random.default_rng(0).standard_normal(300)
    options = {"max_time": 0.3, "gtol": 1e-15}
    if method != "newton-cg":
        options["initial_trust_radius"] = 1e3
    start = time.perf_counter()
    res = bounded(lambda: nad.minimize(slow_quadratic(), x0, method=method, options=options))
    elapsed = time.perf_counter() - start
    assert elapsed < 1.5, elapsed
    assert res.status == 4 and "max_time" in res.message
    assert res.fun < slow_quadratic().fun(x0)


# ------------------------------------------------ fuzz: misbehaving objectives
def log_barrier(x):
    """nan at every trial point with an entry <= 0."""
    return np.sum(x - np.log(x))


def inf_outside_ball(x):
    """inf outside the ball of radius 2; the minimum of the finite part lies outside."""
    return np.sum((x - 3.0) ** 2) + np.where(np.sum(x * x) > 4.0, np.inf, 0.0)


def l1(x):
    """Kinks everywhere x_i = 1; Hessian zero (singular)."""
    return np.sum(np.abs(x - 1.0))


def double_well(x):
    """Indefinite Hessian near 0."""
    return np.sum((x * x - 1.0) ** 2)


def quartic(x):
    """Singular Hessian at 0."""
    return np.sum(x ** 4) + np.sum(x) ** 2


def unbounded(x):
    """No minimum: values fall to -inf (and past the float range)."""
    return -np.sum(x * x) + 0.1 * np.sum(x)


def cusp(x):
    """Hessian infinite where x_i = 0; a valley with a kink."""
    return np.sum(np.abs(x) ** 1.5) + np.sum((x[1:] - x[:-1]) ** 2)


#: objective -> a strategy for points where it is finite
FUZZ = {
    log_barrier: st.floats(0.01, 20.0),
    inf_outside_ball: st.floats(-1.0, 1.0),
    l1: st.sampled_from([1.0, 0.0, 2.5, -1.0]),
    double_well: st.floats(-0.2, 0.2),
    quartic: st.sampled_from([0.0, 1.0, -0.5]),
    unbounded: st.floats(-2.0, 2.0),
    cusp: st.sampled_from([0.0, 0.5, -1.0, 2.0]),
}


@pytest.mark.parametrize("method", NATIVE)
@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzz_misbehaving_objectives(method, data):
    f = data.draw(st.sampled_from(list(FUZZ)), label="objective")
    n = data.draw(st.integers(1, 4), label="n")
    x0 = np.array(data.draw(st.lists(FUZZ[f], min_size=n, max_size=n), label="x0"))
    maxiter, gtol = 40, 1e-6
    start = time.perf_counter()
    res = solve(f, x0, method, maxiter=maxiter, max_time=3.0, gtol=gtol)
    assert time.perf_counter() - start < 10.0
    assert_honest(res, f, nad.grad(f), x0, gtol, maxiter)


@pytest.mark.parametrize("method", NATIVE)
def test_fuzz_objective_nan_at_random_trial_points(method):
    """Hand-coded Rosenbrock that returns nan (value or gradient) at a third of new points."""
    from scipy.optimize import rosen, rosen_der
    rng = np.random.default_rng(7)
    bad = {}

    def poisoned(fn):
        def wrapped(x):
            key = x.tobytes()
            if key not in bad:
                bad[key] = rng.random() < 1 / 3 and bool(bad)  # x0 stays finite
            return np.nan * fn(x) if bad[key] else fn(x)
        return wrapped
    obj = AnalyticObjective(poisoned(rosen), poisoned(rosen_der), rosenbrock()._op)
    x0 = np.array([-1.2, 1.0, -1.2, 1.0])
    res = solve(obj, x0, method, maxiter=300, max_time=5.0)
    assert np.isfinite(res.x).all() and res.fun <= rosen(x0)
    assert res.fun == rosen(res.x)
    if res.success:
        assert np.linalg.norm(rosen_der(res.x)) < 1e-4
    else:
        assert "nan or inf" in res.message


# ------------------------------------------------ bad arguments name the problem
@pytest.mark.parametrize("method", ["trust-ncg", "newton-cg", "BFGS"])
@pytest.mark.parametrize("options", [5, "maxiter", [("maxiter", 3)]])
def test_options_must_be_a_dict(method, options):
    with pytest.raises(TypeError, match=f"options must be a dict.*{type(options).__name__}"):
        nad.minimize(sphere, np.zeros(2), method=method, options=options)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"options": {"maxiter": "10"}}, TypeError, "'maxiter' must be an integer.*str"),
    ({"options": {"maxiter": 2.5}}, TypeError, "'maxiter' must be an integer"),
    ({"options": {"gtol": -1.0}}, ValueError, "'gtol' must be >= 0"),
    ({"options": {"max_time": float("nan")}}, ValueError, "'max_time' is nan"),
    ({"tol": "1e-6"}, TypeError, "tol must be a real number"),
    ({"tol": -1.0}, ValueError, "tol must be >= 0"),
    ({"callback": 5}, TypeError, "callback must be callable"),
])
def test_bad_arguments_are_named(kwargs, error, match):
    with pytest.raises(error, match=match):
        nad.minimize(sphere, np.zeros(2), method="trust-ncg", **kwargs)


def test_integral_float_maxiter_accepted():
    res = nad.minimize(sphere, np.zeros(2), method="trust-ncg", options={"maxiter": 1e3})
    assert res.success


def test_non_callable_objective_and_nan_x0():
    with pytest.raises(TypeError, match="must be a callable.*not its value fun\\(x0\\)"):
        nad.minimize(sphere(np.zeros(2)), np.zeros(2))
    with pytest.raises(ValueError, match="non-finite.*start from a finite point"):
        nad.minimize(sphere, np.array([0.0, np.nan]))
