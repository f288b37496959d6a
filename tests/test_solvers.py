"""Tests of the native solvers, the minimize front and the scipy bridge.

The objectives here are hand-coded (``test_solvers_objectives``), so these tests
exercise the solvers without the AD core.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.optimize as so
from numpy.testing import assert_allclose
from scipy.optimize import OptimizeWarning, rosen, rosen_der, rosen_hess_prod

from newtonad.solvers import minimize, scipy_bridge
from newtonad.solvers.exact import MAX_DENSE_N, solve_dense_trs
from newtonad.solvers.gltr import GLTRSubproblem
from newtonad.solvers.options import ACCEPTED_OPTIONS
from newtonad.solvers.problem import FlatProblem
from newtonad.solvers.steihaug import SteihaugSubproblem
from newtonad.solvers.tridiagonal import solve_tridiagonal_trs
from newtonad.solvers.trust_region import boundary_intersections

from .builders import AnalyticObjective, quadratic, rosen_start, rosenbrock

NATIVE = ["newton-cg", "trust-ncg", "trust-krylov", "trust-exact"]


# --------------------------------------------------------------- test functions
def double_well(n=3):
    """sum((x_i^2 - 1)^2): indefinite Hessian near 0, minima f = 0 at |x_i| = 1."""
    def f(x):
        return np.sum((x ** 2 - 1.0) ** 2)

    def g(x):
        return 4.0 * x * (x ** 2 - 1.0)

    def op(x):
        d = 12.0 * x ** 2 - 4.0
        return lambda v: (d.reshape(d.shape + (1,) * (v.ndim - d.ndim))) * v
    return AnalyticObjective(f, g, op)


def log_barrier():
    """sum(x - log x): minimum 1 at x = 1; nan (value and gradient) for x <= 0."""
    def f(x):
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.sum(x - np.log(np.where(x > 0, x, np.nan)))

    def g(x):
        return np.where(x > 0, 1.0 - 1.0 / np.where(x > 0, x, 1.0), np.nan)

    def op(x):
        d = 1.0 / x ** 2
        return lambda v: (d.reshape(d.shape + (1,) * (v.ndim - d.ndim))) * v
    return AnalyticObjective(f, g, op)


def random_spd(rng, n, cond=100.0):
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    return (q * np.geomspace(1.0, cond, n)) @ q.T


# ----------------------------------------------------------- known optima
@pytest.mark.parametrize("method", NATIVE)
def test_rosenbrock_2d(method):
    res = minimize(rosenbrock(), [-1.2, 1.0], method=method, options={"gtol": 1e-6})
    assert res.success, res.message
    assert_allclose(res.x, [1.0, 1.0], atol=1e-5)
    assert res.fun < 1e-10
    assert np.linalg.norm(res.jac) < 1e-5


@pytest.mark.parametrize("method", NATIVE)
def test_chained_rosenbrock_100(method):
    res = minimize(rosenbrock(), rosen_start(100), method=method)
    assert res.success, res.message
    if method == "trust-exact":
        # like scipy's trust-exact, the exact step from this start leads into the
        # known local minimum of chained Rosenbrock near x = (-1, 1, ..., 1)
        assert res.fun == pytest.approx(3.98662385, rel=1e-6)
    else:
        # the stop at ‖g‖ < gtol (1e-4 for the trust-region methods) bounds the end: with
        # the Hessian's smallest eigenvalue 0.4988 at x*, near it |x - 1| <= ‖g‖ / 0.4988
        # and f <= ‖g‖² / (2 * 0.4988) (scipy's trust-krylov ends at f = 6.6e-10 with
        # |x - 1| = 4.5e-5)
        assert res.fun < 1e-8
        assert_allclose(res.x, np.ones(100), atol=2e-4)


@pytest.mark.parametrize("method", NATIVE)
def test_convex_quadratic_any_shape(method):
    rng = np.random.default_rng(0)
    a = random_spd(rng, 12, cond=1e3)
    b = rng.standard_normal(12)
    obj = quadratic(a, b)
    shaped = AnalyticObjective(lambda x: obj._f(x.ravel()),
                               lambda x: obj._grad(x.ravel()).reshape(3, 4),
                               lambda x: (lambda v: (a @ v.reshape(12, -1)).reshape(v.shape)))
    res = minimize(shaped, np.zeros((3, 4)), method=method, options={"gtol": 1e-10})
    assert res.success, res.message
    assert res.x.shape == (3, 4) and res.jac.shape == (3, 4)
    assert_allclose(res.x.ravel(), np.linalg.solve(a, -b), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("method", NATIVE)
def test_indefinite_hessian_at_start(method):
    obj = double_well()
    x0 = np.array([0.1, -0.2, 0.05])
    assert (12 * x0 ** 2 - 4 < 0).all()  # negative definite at x0
    res = minimize(obj, x0, method=method, options={"gtol": 1e-6})
    assert res.success, res.message
    assert res.fun < 1e-10
    assert_allclose(np.abs(res.x), 1.0, atol=1e-5)


# ------------------------------------------------ iteration counts vs scipy
@pytest.mark.parametrize("method", ["newton-cg", "trust-ncg", "trust-krylov", "trust-exact"])
@pytest.mark.parametrize("n", [2, 100])
def test_iterations_no_worse_than_scipy(method, n):
    x0 = rosen_start(n)
    if method == "trust-exact":
        kw = {"hess": so.rosen_hess}
    else:
        kw = {"hessp": rosen_hess_prod}
    # scipy with the same exact derivatives, run to the same accuracy
    opts = {"xtol": 1e-10} if method == "newton-cg" else {"gtol": 1e-5}
    ref = so.minimize(rosen, x0, jac=rosen_der, method=method, options=opts, **kw)
    res = minimize(rosenbrock(), x0, method=method,
                   options=None if method == "newton-cg" else opts)
    assert res.fun <= max(ref.fun, 1e-10) or res.fun == pytest.approx(ref.fun, rel=1e-6)
    # A run of hundreds of iterations follows its own rounding: the two sides use different
    # BLAS routines (and OpenBLAS kernels per CPU), which moves a long trust-region path by a
    # few iterations either way (455 against 453 on a Sandybridge kernel), so 2% of slack.
    assert res.nit <= max(ref.nit + 2, 1.02 * ref.nit), (res.nit, ref.nit)


# ------------------------------------------------------ subproblem solvers
def check_trs_optimality(h, g, p, radius, rtol=1e-6):
    """(H + λI)p = -g, λ >= 0, H + λI PSD, λ(Δ - ‖p‖) = 0: the global optimality conditions."""
    pn = np.linalg.norm(p)
    assert pn <= radius * (1 + rtol)
    if pn < radius * (1 - rtol):
        lam = 0.0
    else:
        lam = -(p @ (h @ p + g)) / (p @ p)  # least-squares multiplier
    scale = np.linalg.norm(h, 2) * radius + np.linalg.norm(g)
    assert np.linalg.norm(h @ p + lam * p + g) <= rtol * scale
    assert lam >= -rtol * np.linalg.norm(h, 2)
    assert np.linalg.eigvalsh(h + lam * np.eye(len(g)))[0] >= -rtol * np.linalg.norm(h, 2)
    assert abs(lam * (radius - pn)) <= rtol * scale * radius
    return lam


def hard_case(rng, n):
    """H with eigenvalues -2, 1, 2, ...; g orthogonal to the eigenvector of -2."""
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    mu = np.concatenate([[-2.0], np.linspace(1.0, 5.0, n - 1)])
    h = (q * mu) @ q.T
    g = q[:, 1:] @ rng.standard_normal(n - 1) * 0.1
    return h, g


def model(h, g, p):
    return g @ p + 0.5 * p @ h @ p


def quadratic_model(cls, h, g, **opts):
    obj = quadratic(h, g)
    problem = FlatProblem(obj, g.shape)
    return cls(problem, np.zeros(g.size), 0.0, g.copy(), **opts)


@pytest.mark.parametrize("kind", ["pd", "indefinite", "hard"])
@pytest.mark.parametrize("radius", [0.05, 1.0, 100.0])
def test_dense_and_gltr_subproblems(kind, radius):
    rng = np.random.default_rng({"pd": 1, "indefinite": 2, "hard": 3}[kind])
    n = 30
    if kind == "pd":
        h, g = random_spd(rng, n), rng.standard_normal(n)
    elif kind == "indefinite":
        b = rng.standard_normal((n, n))
        h, g = (b + b.T) / 2, rng.standard_normal(n)
    else:
        h, g = hard_case(rng, n)
    exact = solve_dense_trs(h, g, radius)
    check_trs_optimality(h, g, exact.p, radius)
    if kind != "pd":
        assert exact.hits_boundary
    m = quadratic_model(GLTRSubproblem, h, g, inexact=False)
    p, hits = m.solve(radius)
    assert m.predicted_decrease(p) == pytest.approx(-model(h, g, p), rel=1e-8, abs=1e-12)
    if kind == "hard":
        # the Krylov space of g never contains the eigenvector of -2 (GLTR's known
        # limit): GLTR returns the best step in that space, no better than the
        # global one, and a decrease at least the Cauchy step's
        assert np.linalg.norm(p) <= radius * (1 + 1e-10)
        assert model(h, g, p) >= model(h, g, exact.p) - 1e-10
        cauchy = -min(radius / np.linalg.norm(g), (g @ g) / (g @ h @ g)) * g
        assert model(h, g, p) <= model(h, g, cauchy)
    else:
        assert hits == exact.hits_boundary
        check_trs_optimality(h, g, p, radius, rtol=1e-5)
        assert model(h, g, p) == pytest.approx(model(h, g, exact.p), rel=1e-6, abs=1e-10)


@pytest.mark.parametrize("kind", ["pd", "indefinite", "hard"])
@pytest.mark.parametrize("radius", [0.1, 2.0, 50.0])
def test_tridiagonal_subproblem(kind, radius):
    rng = np.random.default_rng(7)
    k = 12
    diag, off = rng.standard_normal(k), rng.standard_normal(k - 1)
    if kind == "pd":
        diag = diag + 6.0
    t = np.diag(diag) + np.diag(off, 1) + np.diag(off, -1)
    c = rng.standard_normal(k)
    if kind == "hard":
        v = np.linalg.eigh(t)[1][:, 0]
        c -= (c @ v) * v
        c *= 0.01
    sol = solve_tridiagonal_trs(diag, off, c, radius)
    lam = check_trs_optimality(t, c, sol.h, radius, rtol=1e-7)
    if sol.hits_boundary:
        assert lam == pytest.approx(sol.lam, rel=1e-6, abs=1e-8)
    ref = solve_dense_trs(t, c, radius)
    assert model(t, c, sol.h) == pytest.approx(model(t, c, ref.p), rel=1e-7, abs=1e-12)


def test_tridiagonal_subproblems_of_a_few_rows_on_floats_agree_with_the_general_path():
    """GLTR's first steps (T of one to three rows, c = γ e₁) are solved on Python floats,
    operation for operation as the LAPACK path (dpttrf / dpttrs): the same h, λ and
    boundary flag, for definite and indefinite T, with and without a warm start.

    Not to the bit on every machine: an optimised LAPACK may fuse a multiply and an add
    (AVX-512 builds of OpenBLAS do), so a factorisation differs in its last bit, and the
    Moré–Sorensen iteration carries that on. Each solve with T + λI is backward stable, so
    the two paths' h differ by a few rounding errors per operation amplified by the
    condition number κ of T + λI: the test allows 16 ε κ ‖h‖ (k ≤ 3 rows, a few Newton
    steps), and for λ 16 ε κ (|λ| + ‖T‖) (the shift is computed from such solves).
    A wrong formula on either path is off by far more than rounding.
    """
    from newtonad.solvers import tridiagonal

    eps = np.finfo(float).eps
    rng = np.random.default_rng(1)
    fast = 0
    for t in range(3000):
        k = 1 + t % 3
        diag = rng.standard_normal(k) * 10.0 ** rng.uniform(-2, 2)
        if t % 4 == 0:
            diag = np.abs(diag) + 0.1
        off = rng.standard_normal(k - 1) * 10.0 ** rng.uniform(-2, 1)
        c = float(rng.standard_normal() * 10.0 ** rng.uniform(-3, 3))
        radius = float(10.0 ** rng.uniform(-3, 2))
        lam0 = 0.0 if t % 3 else float(abs(rng.standard_normal()) * 10.0 ** rng.uniform(-2, 2))
        few = tridiagonal._solve_few(list(diag), list(off), -c, radius, lam0)
        if few is None:  # the hard case or no shift found: the general path's to solve
            continue
        fast += 1
        general = solve_tridiagonal_trs(diag, off, np.r_[c, np.zeros(k - 1)], radius, lam0)
        T = np.diag(diag) + np.diag(off, 1) + np.diag(off, -1)
        kappa = np.linalg.cond(T + general.lam * np.eye(k))
        case = (diag, off, c, radius, lam0)
        h_norm = np.linalg.norm(general.h)
        assert np.linalg.norm(few.h - general.h) <= 16 * eps * kappa * h_norm, case
        t_norm = np.linalg.norm(T, 2)
        assert abs(few.lam - general.lam) <= 16 * eps * kappa * (abs(general.lam) + t_norm), case
        assert few.hits_boundary == general.hits_boundary, case
    assert fast >= 2900


def test_tridiagonal_subproblem_at_the_rounding_level_of_a_badly_scaled_t(monkeypatch):
    """meyer's T (entries from 6e4 to 7e11): ‖h(λ)‖ jitters by 2e-8 of Δ near the root,
    so the 1e-10 test is never met; the iteration stops once Newton's steps stop gaining
    instead of running to its limit (61 factorisations), with a step as good as the
    dense eigendecomposition's."""
    from newtonad.solvers import tridiagonal

    diag = np.array([5.8498300919013414e+09, 7.4115925556501257e+11, 5.7907609442781875e+04])
    off = np.array([6.5845645843469910e+10, 2.5636663828513972e+05])
    c, radius = 153.88462556381435, 4.0
    solves = []
    shifted = tridiagonal._solve_shifted
    monkeypatch.setattr(tridiagonal, "_solve_shifted",
                        lambda *a: solves.append(1) or shifted(*a))
    sol = solve_tridiagonal_trs(diag, off, c, radius)
    assert len(solves) <= 6
    assert sol.hits_boundary and np.linalg.norm(sol.h) == pytest.approx(radius, rel=1e-14)
    t = np.diag(diag) + np.diag(off, 1) + np.diag(off, -1)
    cv = np.array([c, 0.0, 0.0])
    ref = solve_dense_trs(t, cv, radius)
    assert model(t, cv, sol.h) <= model(t, cv, ref.p) + 1e-6 * abs(model(t, cv, ref.p))


def test_hard_case_dense_boundary():
    rng = np.random.default_rng(11)
    h, g = hard_case(rng, 20)
    radius = 10.0  # ‖(H + 2I)^+ g‖ is far below 10: the hard case proper
    sol = solve_dense_trs(h, g, radius)
    assert sol.hits_boundary and sol.lam == pytest.approx(2.0, rel=1e-6)
    check_trs_optimality(h, g, sol.p, radius)


@pytest.mark.parametrize("kind", ["pd", "indefinite"])
def test_steihaug_subproblem(kind):
    rng = np.random.default_rng(5)
    n = 25
    if kind == "pd":
        h = random_spd(rng, n)
    else:
        b = rng.standard_normal((n, n))
        h = (b + b.T) / 2
    g = rng.standard_normal(n)
    gn = np.linalg.norm(g)
    for radius in [1e-3, 0.5, 1e3]:
        m = quadratic_model(SteihaugSubproblem, h, g)
        p, hits = m.solve(radius)
        assert np.linalg.norm(p) <= radius * (1 + 1e-12)
        if hits:
            assert np.linalg.norm(p) == pytest.approx(radius, rel=1e-10)
        assert m.predicted_decrease(p) == pytest.approx(-model(h, g, p), rel=1e-8)
        # at least the Cauchy decrease (Nocedal & Wright lemma 4.3 / theorem 7.? )
        ghg = g @ h @ g
        tau = 1.0 if ghg <= 0 else min(1.0, gn ** 3 / (radius * ghg))
        cauchy = -tau * radius / gn * g
        assert model(h, g, p) <= model(h, g, cauchy) * (1 - 1e-12)
    if kind == "pd":  # big radius: the (inexact) Newton step, interior
        m = quadratic_model(SteihaugSubproblem, h, g)
        p, hits = m.solve(1e6)
        assert not hits
        assert np.linalg.norm(h @ p + g) <= min(0.5, np.sqrt(gn)) * gn


def test_steihaug_replays_path_after_rejection():
    rng = np.random.default_rng(9)
    h, g = random_spd(rng, 40, cond=1e4), rng.standard_normal(40)
    m = quadratic_model(SteihaugSubproblem, h, g)
    m.solve(10.0)
    nhev = m.problem.counts()["nhev"]
    for radius in [2.0, 0.5, 0.01]:
        p, hits = m.solve(radius)
        fresh = quadratic_model(SteihaugSubproblem, h, g)
        q, hits2 = fresh.solve(radius)
        assert hits == hits2
        assert_allclose(p, q, rtol=1e-9, atol=1e-12)
        assert m.predicted_decrease(p) == pytest.approx(fresh.predicted_decrease(q), rel=1e-9)
    assert m.problem.counts()["nhev"] == nhev  # no Hessian products for smaller radii


@pytest.mark.parametrize("zd", [-3.0, 0.0, 2.0])
def test_boundary_intersections(zd):
    z = np.array([0.3, -0.1, 0.2])
    d = np.array([1.0, 2.0, -0.5]) * (zd if zd else 1.0)
    if zd == 0.0:
        z = np.zeros(3)
    ta, tb = boundary_intersections(z @ z, z @ d, d @ d, 1.5)
    assert ta < 0 < tb
    for t in (ta, tb):
        assert np.linalg.norm(z + t * d) == pytest.approx(1.5, rel=1e-14)


# ------------------------------------------------------------ options
@pytest.mark.parametrize("method", NATIVE)
def test_scipy_option_names_accepted(method):
    values = {"gtol": 1e-6, "maxiter": 500, "disp": False, "return_all": True, "max_time": 60,
              "xtol": 1e-12, "eps": 1e-8, "c1": 1e-4, "c2": 0.9, "workers": None,
              "initial_trust_radius": 0.5, "max_trust_radius": 100.0, "eta": 0.1,
              "inexact": False, "subproblem_maxiter": 30, "preconditioner": None}
    opts = {name: values[name] for name in ACCEPTED_OPTIONS[method]}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = minimize(rosenbrock(), [-1.2, 1.0], method=method, options=opts)
    assert res.success
    assert len(res.allvecs) == res.nit + 1
    assert np.linalg.norm(res.jac) < 1e-6


@pytest.mark.parametrize("method", NATIVE)
def test_unknown_option_warns(method):
    with pytest.warns(OptimizeWarning, match="Unknown solver options: bogus"):
        res = minimize(rosenbrock(), [-1.2, 1.0], method=method.upper(), options={"bogus": 1})
    assert res.success


@pytest.mark.parametrize("method", NATIVE)
def test_tol_sets_gtol(method):
    res = minimize(rosenbrock(), [-1.2, 1.0], method=method, tol=1e-11)
    assert res.success and np.linalg.norm(res.jac) < 1e-11


@pytest.mark.parametrize("method", NATIVE)
def test_disp_prints_table(method, capsys):
    minimize(rosenbrock(), [-1.2, 1.0], method=method, options={"disp": True})
    out = capsys.readouterr().out
    header = out.splitlines()[0].split()
    assert header[:3] == ["iter", "f", "|g|"] and header[-2:] == ["cg", "time(s)"]
    assert "Optimization terminated successfully." in out


def test_bad_trust_options():
    with pytest.raises(ValueError, match="eta"):
        minimize(rosenbrock(), [-1.2, 1.0], method="trust-ncg", options={"eta": 0.5})
    with pytest.raises(ValueError, match="initial_trust_radius"):
        minimize(rosenbrock(), [-1.2, 1.0], method="trust-krylov",
                 options={"initial_trust_radius": 10.0, "max_trust_radius": 1.0})


# ------------------------------------------------------- stopping rules
@pytest.mark.parametrize("method", NATIVE)
def test_callback_stop_iteration(method):
    seen = []

    def callback(intermediate_result):
        seen.append(intermediate_result.fun)
        assert intermediate_result.x.shape == (2,)
        if len(seen) == 3:
            raise StopIteration

    res = minimize(rosenbrock(), [-1.2, 1.0], method=method, callback=callback)
    assert res.status == 99 and not res.success
    assert res.message == "`callback` raised `StopIteration`."
    assert res.nit == 3
    assert res.fun == seen[-1] == pytest.approx(rosen(res.x))


@pytest.mark.parametrize("method", NATIVE)
def test_old_style_callback_gets_shaped_x(method):
    xs = []
    minimize(rosenbrock(), [-1.2, 1.0], method=method, callback=lambda xk: xs.append(xk))
    assert xs and all(x.shape == (2,) for x in xs)
    assert len({x.tobytes() for x in xs}) > 1  # copies, not one array mutated


@pytest.mark.parametrize("method", NATIVE)
def test_maxiter_and_max_time(method):
    res = minimize(rosenbrock(), rosen_start(20), method=method, options={"maxiter": 4})
    assert res.status == 1 and res.nit == 4 and not res.success
    assert res.fun < rosen(rosen_start(20))
    res = minimize(rosenbrock(), rosen_start(20), method=method, options={"max_time": 0.0})
    # no Hessian or product past the deadline: the run stops at x0
    assert res.status == 4 and res.nit == 0 and "max_time" in res.message
    assert res.fun <= rosen(rosen_start(20))


@pytest.mark.parametrize("method", NATIVE)
def test_non_finite_trial_points_recovered(method):
    obj = log_barrier()
    res = minimize(obj, np.full(2, 6.0), method=method,
                   options={"initial_trust_radius": 8.0} if method != "newton-cg" else None)
    assert res.success, res.message
    assert_allclose(res.x, 1.0, atol=1e-5)
    assert res.fun == pytest.approx(2.0)


# ------------------------------------------------------------ errors
@pytest.mark.parametrize("x0, match", [
    ([1.0, np.nan], "non-finite"), ([np.inf, 0.0], "non-finite"), ([], "empty"),
    (["a", "b"], "real numbers"), ([[1.0, 2.0], [3.0]], "rectangular"),
])
def test_bad_x0(x0, match):
    with pytest.raises(ValueError, match=match):
        minimize(rosenbrock(), x0)


def test_wrong_shaped_x0():
    # an objective of a 3-vector written with broadcasting returns an array for a (3, 3) x0
    obj = AnalyticObjective(lambda x: np.sum((x - 1.0) ** 2, axis=0), lambda x: 2 * (x - 1.0),
                            lambda x: (lambda v: 2.0 * v))
    with pytest.raises(ValueError, match="must return a scalar.*shape \\(3, 3\\)"):
        minimize(obj, np.zeros((3, 3)))
    obj = AnalyticObjective(lambda x: np.sum(x ** 2), lambda x: 2 * x[:2], lambda x: (lambda v: v))
    with pytest.raises(ValueError, match="gradient at x0 has shape \\(2,\\)"):
        minimize(obj, np.zeros(3), method="newton-cg")


def test_non_finite_start_value():
    # a result, not an error: the same rule for every method (tests/test_nonfinite_start.py)
    res = minimize(log_barrier(), [-1.0, 1.0])
    assert not res.success and res.status == 5 and "f(x0) = nan" in res.message
    assert_allclose(res.x, [-1.0, 1.0])


class Boom(Exception):
    pass


@pytest.mark.parametrize("method", NATIVE + ["BFGS"])
def test_objective_exception_propagates(method):
    inner = rosenbrock()
    calls = [0]

    def f(x):
        calls[0] += 1
        if calls[0] > 5:
            raise Boom("from the objective")
        return rosen(x)

    obj = AnalyticObjective(f, rosen_der, inner._op, inner._hess)
    with pytest.raises(Boom, match="from the objective"):
        minimize(obj, [-1.2, 1.0], method=method)


def test_unknown_method_and_args_with_objective():
    with pytest.raises(ValueError, match="Unknown solver"):
        minimize(rosenbrock(), [1.0, 2.0], method="newton-raphson")
    with pytest.raises(ValueError, match="args"):
        minimize(rosenbrock(), [1.0, 2.0], args=(1,))
    with pytest.raises(TypeError, match="callable"):
        minimize(42, [1.0])


def test_trust_exact_size_limit():
    n = MAX_DENSE_N + 1
    obj = quadratic(np.zeros((1, 1)), np.zeros(1))  # never evaluated
    with pytest.raises(ValueError, match=f"at most n = {MAX_DENSE_N}.*n = {n}"):
        minimize(AnalyticObjective(obj._f, obj._grad, obj._op), np.ones(n), method="trust-exact")


# ------------------------------------------------------------ scipy bridge
def test_delegates_bfgs_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = minimize(rosenbrock(), [-1.2, 1.0], method="BFGS")
        ref = so.minimize(rosen, [-1.2, 1.0], jac=rosen_der, method="BFGS")
    assert res.success
    assert_allclose(res.x, ref.x)
    assert res.nit == ref.nit


@pytest.mark.parametrize("method", ["Nelder-Mead", "CG", "dogleg", "trust-constr", "TNC",
                                    "scipy:trust-ncg", "scipy:trust-exact"])
def test_delegates_other_methods_without_warnings(method):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = minimize(rosenbrock(), [1.3, 0.7] if method == "dogleg" else [-1.2, 1.0],
                       method=method)
    assert res.fun < 1e-4


def test_delegates_lbfgsb_with_bounds_and_shape():
    bounds = [(-2.0, 0.5), (-2.0, 2.0)]
    res = minimize(rosenbrock(), [-1.2, 1.0], method="L-BFGS-B", bounds=bounds)
    ref = so.minimize(rosen, [-1.2, 1.0], jac=rosen_der, method="L-BFGS-B", bounds=bounds)
    assert res.success
    assert_allclose(res.x, ref.x, rtol=1e-6)
    assert res.x[0] == pytest.approx(0.5)
    # shaped x0 with a Bounds object shaped like it
    obj = rosenbrock()
    shaped = AnalyticObjective(lambda x: rosen(x.ravel()),
                               lambda x: rosen_der(x.ravel()).reshape(x.shape),
                               lambda x: obj._op(x.ravel()))
    res2 = minimize(shaped, np.array([[-1.2, 1.0]]), method="L-BFGS-B",
                    bounds=so.Bounds(np.array([[-2.0, -2.0]]), np.array([[0.5, 2.0]])))
    assert res2.x.shape == (1, 2)
    assert_allclose(res2.x.ravel(), res.x, rtol=1e-6)


def test_delegates_slsqp_with_constraint():
    # minimise rosen subject to x0 + x1 <= 1 (active at the solution)
    con = {"type": "ineq", "fun": lambda x: 1.0 - x[0] - x[1],
           "jac": lambda x: np.array([-1.0, -1.0])}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = minimize(rosenbrock(), [-1.2, 1.0], method="SLSQP", constraints=[con])
    ref = so.minimize(rosen, [-1.2, 1.0], jac=rosen_der, method="SLSQP", constraints=[con])
    assert res.success
    assert_allclose(res.x, ref.x, rtol=1e-6)
    assert res.x.sum() == pytest.approx(1.0, abs=1e-8)


def test_constraint_without_jac_uses_ad_hook(monkeypatch):
    used = []

    def fake_hook(constraint, args, sparse=False):
        used.append(constraint)

        def jac(x):
            return np.array([-1.0, -1.0])
        return jac, None
    monkeypatch.setattr(scipy_bridge, "constraint_derivatives", fake_hook)
    con = {"type": "ineq", "fun": lambda x: 1.0 - x[0] - x[1]}
    res = minimize(rosenbrock(), [-1.2, 1.0], method="SLSQP", constraints=con)
    assert used and used[0] is con["fun"]
    assert res.success and res.x.sum() == pytest.approx(1.0, abs=1e-8)


def test_native_methods_warn_on_bounds():
    with pytest.warns(RuntimeWarning, match="cannot handle bounds"):
        minimize(rosenbrock(), [-1.2, 1.0], method="trust-ncg", bounds=[(0, 1), (0, 1)])


# ------------------------------------------------------------ counters
def test_counters_and_result_fields():
    obj = rosenbrock()
    res = minimize(obj, [-1.2, 1.0], method="trust-krylov")
    for key in ("x", "fun", "jac", "nit", "nfev", "njev", "nhev", "status", "success", "message"):
        assert key in res
    assert (res.nfev, res.njev, res.nhev) == (obj.nfev, obj.njev, obj.nhev)
    assert res.nfev == res.nit + 1  # one value per trial point, none wasted


def test_dense_subproblem_step_is_never_worse_than_the_cauchy_step():
    # a step spoiled by rounding (here: one with a positive model value) is replaced by
    # the Cauchy step, the decrease a trust-region method needs to converge
    from newtonad.solvers.exact import DenseTRS, _no_worse_than_cauchy

    rng = np.random.default_rng(5)
    a = rng.standard_normal((6, 6))
    h = a @ a.T
    g = rng.standard_normal(6)
    radius = 0.5

    def model(p):
        return float(g @ p + 0.5 * p @ h @ p)

    spoiled = DenseTRS(radius * g / np.linalg.norm(g), 0.0, True, 25)  # uphill
    fixed = _no_worse_than_cauchy(h, g, radius, spoiled)
    assert model(fixed.p) < 0.0 and np.linalg.norm(fixed.p) <= radius * (1 + 1e-12)
    t = min(radius / np.linalg.norm(g), (g @ g) / (g @ h @ g))
    assert model(fixed.p) == pytest.approx(model(-t * g), rel=1e-12)
    exact = solve_dense_trs(h, g, radius)
    assert _no_worse_than_cauchy(h, g, radius, exact) is exact  # a good step is kept


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_hard_case_step_goes_along_the_null_direction_the_way_the_model_falls(sign):
    # H singular, g almost orthogonal to its null vector e0: the step reaches the boundary
    # along e0, with the sign that makes g . p smaller, whichever sign g's tiny part has
    from newtonad.solvers.exact import eigen_trs

    h = np.diag([0.0, 1.0, 2.0])
    g = np.array([sign * 1e-12, 1.0, 1.0])
    radius = 10.0
    sol = eigen_trs(h, g, radius)

    def model(p):
        return float(g @ p + 0.5 * p @ h @ p)

    flipped = sol.p * np.array([-1.0, 1.0, 1.0])
    assert sol.hits_boundary and np.linalg.norm(sol.p) == pytest.approx(radius)
    assert model(sol.p) <= model(flipped)
    assert np.sign(sol.p[0]) == -sign
