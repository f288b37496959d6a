"""The native solvers against scipy's methods of the same name: same rules, same counts.

The trust-region driver uses scipy's ratio thresholds, radius factors, stopping
test and defaults (except ``max_trust_radius``), so where the subproblem
solutions agree the native methods take scipy's steps and report scipy's
``nit``; where they differ on purpose (skipped redundant rejections, tighter
subproblem solves, a larger radius cap) the native count is no larger.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.optimize as so
from numpy.testing import assert_allclose
from scipy.optimize import rosen, rosen_der, rosen_hess, rosen_hess_prod

from newtonad.solvers import minimize
from newtonad.solvers.exact import ExactSubproblem, HessianBounds, solve_dense_trs
from newtonad.solvers.gltr import GLTRSubproblem
from newtonad.solvers.newton_cg import truncated_cg
from newtonad.solvers.problem import FlatProblem
from newtonad.solvers.steihaug import SteihaugSubproblem
from newtonad.solvers.trust_region import MAX_TRUST_RADIUS, shrunk_radius

from .builders import AnalyticObjective, quadratic, rosen_start, rosenbrock

TRUST = ["trust-ncg", "trust-krylov", "trust-exact"]


def scipy_run(method, x0, **options):
    kw = {"hess": rosen_hess} if method == "trust-exact" else {"hessp": rosen_hess_prod}
    return so.minimize(rosen, x0, jac=rosen_der, method=method, options=options, **kw)


def model_of(cls, h, g, **opts):
    problem = FlatProblem(quadratic(h, g), g.shape)
    return cls(problem, np.zeros(g.size), 0.0, g.copy(), **opts)


def random_spd(rng, n, cond):
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    return (q * np.geomspace(1.0, cond, n)) @ q.T


# ------------------------------------------------------------ the radius rule
def test_shrunk_radius_quarters_a_boundary_step_once():
    assert shrunk_radius(8.0, 8.0) == 2.0


def test_shrunk_radius_skips_radii_that_repeat_an_interior_step():
    # an interior step of length 0.1 is the subproblem's answer for every radius
    # above 0.1: quarter 8 until it is below: 2, 0.5, 0.125, 0.03125
    assert shrunk_radius(8.0, 0.1) == 0.03125
    assert shrunk_radius(8.0, 0.0) == 2.0  # nothing to skip past


# ------------------------------------------------------- defaults like scipy's
@pytest.mark.parametrize("method", TRUST)
def test_default_gtol_is_scipys(method):
    res = minimize(rosenbrock(), [-1.2, 1.0], method=method)
    ref = scipy_run(method, np.array([-1.2, 1.0]))
    assert res.success
    assert np.linalg.norm(res.jac) < 1e-4
    assert res.nit == ref.nit
    assert_allclose(res.x, ref.x, rtol=1e-5)


@pytest.mark.parametrize("method", TRUST)
@pytest.mark.parametrize("n", [2, 100])
def test_same_or_fewer_iterations_than_scipy_with_same_options(method, n):
    x0 = rosen_start(n)
    for options in ({}, {"gtol": 1e-8}):
        ref = scipy_run(method, x0, **options)
        res = minimize(rosenbrock(), x0, method=method, options=options)
        assert res.success
        assert res.nit <= ref.nit, (options, res.nit, ref.nit)
        assert res.fun <= ref.fun + 1e-10


def test_trust_exact_takes_scipys_steps():
    # same Moré–Sorensen rules and tolerances (CGT 7.3): the same iterates
    x0 = rosen_start(100)
    ref = scipy_run("trust-exact", x0)
    res = minimize(rosenbrock(), x0, method="trust-exact")
    assert res.nit == ref.nit == 205
    assert_allclose(res.x, ref.x, rtol=1e-7)  # both in the local minimum f = 3.99


@pytest.mark.parametrize("method", TRUST)
def test_rejected_interior_steps_are_not_proposed_again(method):
    # a large first radius: scipy quarters it once per rejection and proposes
    # the same interior step again; the native driver skips those radii
    x0 = np.array([-1.2, 1.0])
    ref = scipy_run(method, x0, initial_trust_radius=100.0)
    res = minimize(rosenbrock(), x0, method=method, options={"initial_trust_radius": 100.0})
    assert res.success and res.nit <= ref.nit
    if method == "trust-exact":
        assert res.nit == ref.nit - 2  # two repeated proposals skipped, else identical
        assert_allclose(res.x, ref.x, rtol=1e-9)


def brown_badly_scaled():
    """Moré, Garbow & Hillstrom's problem 4: x* = (1e6, 2e-6), f* = 0, x0 = (1, 1)."""
    def f(x):
        return (x[0] - 1e6) ** 2 + (x[1] - 2e-6) ** 2 + (x[0] * x[1] - 2.0) ** 2

    def g(x):
        r = x[0] * x[1] - 2.0
        return np.array([2 * (x[0] - 1e6) + 2 * r * x[1], 2 * (x[1] - 2e-6) + 2 * r * x[0]])

    def hess(x):
        return np.array([[2 + 2 * x[1] ** 2, 4 * x[0] * x[1] - 4.0],
                         [4 * x[0] * x[1] - 4.0, 2 + 2 * x[0] ** 2]])

    def op(x):
        h = hess(x)
        return lambda v: h @ v
    return AnalyticObjective(f, g, op, hess)


@pytest.mark.parametrize("method", TRUST)
def test_radius_cap_does_not_stall_badly_scaled_problems(method):
    # scipy's cap of 1000 needs 1000 steps to travel 1e6; 200 n = 400 allowed
    assert MAX_TRUST_RADIUS >= 1e6
    res = minimize(brown_badly_scaled(), [1.0, 1.0], method=method)
    assert res.success and res.nit < 50
    assert_allclose(res.x, [1e6, 2e-6], rtol=1e-6)
    capped = minimize(brown_badly_scaled(), [1.0, 1.0], method=method,
                      options={"max_trust_radius": 1000.0})
    assert capped.status == 1 and capped.nit == 400


# ------------------------------------------------------- subproblem accuracy
@pytest.mark.parametrize("radius", [0.05, 1e3])
def test_gltr_forcing_terms(radius):
    # interior: residual <= min(1/2, ‖g‖) ‖g‖ (trlib tol_rel_i = -2); boundary:
    # ‖(H + λI)p + g‖ <= max(1e-6, min(1/2, sqrt(‖g‖))) ‖g‖ (trlib's tol_rel_b = -3)
    rng = np.random.default_rng(4)
    n = 60
    h = random_spd(rng, n, 1e4)
    for scale in (1e-3, 0.3, 50.0):
        g = rng.standard_normal(n)
        g *= scale / np.linalg.norm(g)
        gn = np.linalg.norm(g)
        m = model_of(GLTRSubproblem, h, g)
        p, hits = m.solve(radius)
        if hits:
            lam = -(p @ (h @ p + g)) / (p @ p)
            tol = max(1e-6, min(0.5, math.sqrt(gn))) * gn
            assert np.linalg.norm(h @ p + lam * p + g) <= tol * (1 + 1e-8)
        else:
            assert np.linalg.norm(h @ p + g) <= min(0.5, gn) * gn * (1 + 1e-8)


def test_steihaug_quadratic_forcing():
    rng = np.random.default_rng(6)
    h = random_spd(rng, 50, 1e3)
    for scale in (1e-3, 0.2, 30.0):
        g = rng.standard_normal(50)
        g *= scale / np.linalg.norm(g)
        gn = np.linalg.norm(g)
        p, hits = model_of(SteihaugSubproblem, h, g).solve(1e8)
        assert not hits
        assert np.linalg.norm(h @ p + g) <= min(0.5, gn) * gn


def test_exact_subproblem_uses_cgt_tolerances_and_warm_starts():
    rng = np.random.default_rng(8)
    b = rng.standard_normal((40, 40))
    h, g = (b + b.T) / 2, rng.standard_normal(40)
    m = model_of(ExactSubproblem, h, g)
    p, hits = m.solve(1.0)
    assert hits and abs(np.linalg.norm(p) - 1.0) <= 0.1
    lam_lo = m._lam_lo
    assert lam_lo > 0.0
    p2, hits2 = m.solve(0.25)  # a rejected step: the bound carries over
    assert hits2 and abs(np.linalg.norm(p2) - 0.25) <= 0.025
    assert m._lam_lo >= lam_lo
    # the standalone solver is tight by default
    tight = solve_dense_trs(h, g, 1.0, bounds=HessianBounds.of(h))
    assert np.linalg.norm(tight.p) == pytest.approx(1.0, rel=1e-7)


def test_newton_cg_forcing_is_quadratic():
    rng = np.random.default_rng(2)
    h = random_spd(rng, 30, 1e3)
    g = rng.standard_normal(30) * 1e-2
    gn = np.linalg.norm(g)
    eta = min(0.5, gn)
    step = truncated_cg(lambda v: h @ v, g, gn, eta, 200)
    assert np.abs(h @ step.p + g).sum() <= eta * np.abs(g).sum()


# -------------------------------------------- problems of the demo set (AD objective)
@pytest.mark.parametrize("name, method", [
    ("rosenbrock", "trust-ncg"), ("rosenbrock", "trust-krylov"), ("wood", "trust-exact"),
    ("helical-valley", "trust-krylov"), ("beale", "trust-ncg"),
    ("powell-singular", "trust-exact"), ("penalty-1", "trust-ncg"),
])
def test_demo_problems_no_more_iterations_than_scipy(name, method):
    from newtonad import Objective, problems

    p = problems.get(name)
    obj = Objective(p.fun, engine="numpy")
    kw = {"hess": obj.hess} if method == "trust-exact" else {"hessp": obj.hessp}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = so.minimize(obj.fun, p.x0.copy(), jac=obj.jac, method=method, **kw)
    res = minimize(Objective(p.fun, engine="numpy"), p.x0.copy(), method=method)
    assert res.success
    assert res.nit <= ref.nit
    assert res.fun <= p.fstar + 1e-5 * max(1.0, abs(p.fstar))


# ------------------------------------------------------------ line search
@pytest.mark.parametrize("f_prev", [None, 30.0, 24.5])
@pytest.mark.parametrize("direction", ["newton", "gradient"])
def test_wolfe_first_step_shortcut_matches_dcsrch(f_prev, direction):
    # the shortcut accepts dcsrch's first trial step exactly when dcsrch would
    from scipy.optimize._linesearch import scalar_search_wolfe1

    from newtonad.solvers.line_search import wolfe

    x = np.array([-1.2, 1.0])
    g = rosen_der(x)
    p = -np.linalg.solve(rosen_hess(x), g) if direction == "newton" else -g * 1e-3
    f0, slope = rosen(x), float(g @ p)
    ours = wolfe(rosen, rosen_der, x, p, f0, slope, f_prev)
    ref = scalar_search_wolfe1(lambda s: rosen(x + s * p),
                               lambda s: float(rosen_der(x + s * p) @ p),
                               f0, f_prev, slope, amax=1e10, amin=1e-100, xtol=1e-14)
    assert ours is not None and ref[0] is not None
    assert ours[0] == ref[0] and ours[2] == pytest.approx(ref[1], rel=1e-15)
    assert_allclose(ours[1], x + ours[0] * p, rtol=1e-15)
