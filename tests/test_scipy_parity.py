"""Native trust-region methods beside scipy's methods of the same name.

On MGH's rank-deficient linear problems (#33, #34) the Hessian is rank one with
an eigenvalue near 1e14 at n = 200, so the gradient at the minimum is rounding
noise far above ``gtol`` and no method can meet the gradient test. scipy's
trust-region driver stops when the model predicts no decrease; the native driver
must stop there too (or when its accepted steps are below f's rounding and leave
the gradient as it was) instead of running to ``maxiter``. Both sides are fed
the same ``nad.Objective``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.optimize import minimize as scipy_minimize

import newtonad as nad
from newtonad import problems

N = 200
MAXITER = 300


@pytest.fixture(scope="module", params=["linear-rank-1", "linear-rank-1-zero"])
def rank_one(request):
    p = problems.get(request.param, N)
    return p, nad.Objective(p.fun)


def _scipy(obj, p, method):
    derivative = {"hess": obj.hess} if method == "trust-exact" else {"hessp": obj.hessp}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return scipy_minimize(obj.fun, p.x0, jac=obj.jac, method=method,
                              options={"maxiter": MAXITER}, **derivative)


@pytest.mark.parametrize("method", ["trust-ncg", "trust-krylov", "trust-exact"])
def test_singular_hessian_stops_within_twice_scipys_iterations(rank_one, method):
    p, obj = rank_one
    theirs = _scipy(obj, p, method)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ours = nad.minimize(obj, p.x0, method=method, options={"maxiter": MAXITER})
    # the noise floor: neither side meets gtol, and scipy stops on its rho test
    assert theirs.status == 2 and np.linalg.norm(theirs.jac) > 1e-5
    assert ours.nit <= 2 * max(theirs.nit, 1), (ours.nit, theirs.nit, ours.message)
    assert ours.status == 2 and not ours.success
    assert ours.message == "Desired error not necessarily achieved due to precision loss."
    # at the minimum value all the same: MGH's f* = m (m - 1) / (2 (2m + 1)) for
    # #33 and (m^2 + 3m - 6) / (2 (2m - 3)) for #34, with m = 2n residuals
    m = 2 * N
    fstar = (m * (m - 1) / (2 * (2 * m + 1)) if p.name == "linear-rank-1"
             else (m * m + 3 * m - 6) / (2 * (2 * m - 3)))
    assert ours.fun == pytest.approx(fstar, rel=1e-12)
    assert theirs.fun == pytest.approx(fstar, rel=1e-12)


def _newton_cg_both(obj, x0):
    """scipy's newton-cg and the native one from ``x0``, fed by the same Objective."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = scipy_minimize(obj.fun, x0, jac=obj.jac, hessp=obj.hessp,
                                method="newton-cg", options={"maxiter": MAXITER})
        ours = nad.minimize(obj, x0, method="newton-cg", options={"maxiter": MAXITER})
    return theirs, ours


def test_newton_cg_stops_at_the_noise_floor(rank_one):
    """newton-cg: scipy's default stops on the step (sum |dx| <= n 1e-5), which the
    noise floor passes at once; the native method stops on the gradient, and, when
    its line search keeps accepting steps that lower f by no more than f's rounding
    and leave |g| as it was, on that (status 2) instead of running to maxiter."""
    p, obj = rank_one
    theirs, ours = _newton_cg_both(obj, p.x0)
    assert ours.nit <= 2 * max(theirs.nit, 1), (ours.nit, theirs.nit, ours.message)
    assert ours.status == 2 and ours.fun == pytest.approx(theirs.fun, rel=1e-12)


@pytest.mark.parametrize("name", ["linear-rank-1", "linear-rank-1-zero"])
def test_newton_cg_noise_floor_at_n_1000(name):
    """At n = 1000 the gradient at the minimum is noise of size eps |H| |x| (hundreds to
    thousands) that still falls by any factor from one step to the next, so a test on
    the gradient alone stops late (5 iterations against scipy's 2); the native method
    stops on the first step that leaves both f and x where they were to rounding."""
    n = 1000
    p = problems.get(name, n)
    obj = nad.Objective(p.fun)
    theirs, ours = _newton_cg_both(obj, p.x0)
    assert ours.nit <= 2 * max(theirs.nit, 1), (ours.nit, theirs.nit, ours.message)
    assert ours.status == 2 and not ours.success
    m = 2 * n
    fstar = (m * (m - 1) / (2 * (2 * m + 1)) if name == "linear-rank-1"
             else (m * m + 3 * m - 6) / (2 * (2 * m - 3)))
    assert ours.fun == pytest.approx(fstar, rel=1e-14)
    # scipy's success is its step test at the noise floor, not a stationary point
    assert theirs.success and np.linalg.norm(theirs.jac) > 1e-5


# ---- trust-krylov on ill-conditioned problems: the Lanczos basis kept orthogonal ----------

@pytest.mark.parametrize("engine", ["numba", "numpy"])
def test_trust_krylov_within_twice_scipys_iterations_on_an_ill_conditioned_problem(engine):
    """Without reorthogonalisation the Lanczos basis at its 2 n cap had lost orthogonality
    and the step missed the Newton step: 3 iterations against scipy's 1 on the discrete
    boundary value problem at n = 100."""
    p = problems.get("discrete-boundary-value", 100)
    obj = nad.Objective(p.fun, engine=engine)
    theirs = _scipy(obj, p, "trust-krylov")
    ours = nad.minimize(obj, p.x0, method="trust-krylov", options={"maxiter": MAXITER})
    assert theirs.success and ours.success, ours.message
    assert ours.nit <= 2 * max(theirs.nit, 1), (ours.nit, theirs.nit)


def test_a_small_lanczos_basis_stays_orthogonal():
    """On a quadratic with condition 1e8 (n = 60) the Lanczos vectors stay orthonormal to
    1e-10, so the process ends within n steps (exact arithmetic's bound; one that has
    lost orthogonality runs on to its 2 n cap), and the step solves H p = -g to the
    interior tolerance."""
    from newtonad.solvers.gltr import GLTRSubproblem
    from newtonad.solvers.problem import FlatProblem

    n = 60
    rng = np.random.default_rng(4)
    q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    h = q @ np.diag(np.geomspace(1e-4, 1e4, n)) @ q.T
    obj = nad.Objective(lambda x: 0.5 * x @ h @ x - np.sum(x))
    x = np.zeros(n)
    model = GLTRSubproblem(FlatProblem(obj, (n,)), x, obj.fun(x), obj.jac(x), inexact=False)
    p, hits = model.solve(1e12)
    assert not hits and model._k <= n
    basis = np.asarray(model._basis[:model._k])
    np.testing.assert_allclose(basis @ basis.T, np.eye(model._k), atol=1e-10)
    g = obj.jac(x)
    assert np.linalg.norm(h @ p + g) <= 1e-6 * np.linalg.norm(g)
