"""newton-cg's stopping rules beside scipy's: ``xtol`` alone is scipy's rule; without
it the run stops on the gradient, or where a step leaves ``f`` and ``x`` as they were
to rounding."""

import numpy as np
import pytest

import newtonad as nad


def _cosine(x):
    return np.cos(x[0])


@pytest.mark.parametrize("xtol", [0.0, 1e-12])
def test_xtol_given_stops_on_the_step_as_scipy_does(xtol):
    # from 0.1 the first direction meets negative curvature; the capped line search
    # keeps the step inside the first basin, and with xtol set there is no gradient
    # test, so the run ends at the minimum pi to rounding, with success
    res = nad.minimize(_cosine, [0.1], method="newton-cg", options={"xtol": xtol})
    assert res.status == 0 and res.success
    assert abs(res.x[0] - np.pi) < 1e-7


def test_default_gradient_test_without_xtol():
    res = nad.minimize(_cosine, [0.1], method="newton-cg")
    assert res.success
    assert abs(np.sin(res.x[0])) <= 1e-5  # |g| = |sin x| below the default gtol
    assert abs(res.x[0] - np.pi) < 1e-4


def test_negative_curvature_step_stays_within_scipy_s_step_bound():
    # scipy's newton-cg searches steps in [1e-8, 50] (line_search_wolfe1's bounds):
    # on cos from 0.1 the steepest-descent direction has length about 0.1, so the
    # first iterate lies within 5.1 of the start, in the basin of pi
    res = nad.minimize(_cosine, [0.1], method="newton-cg", options={"maxiter": 1})
    assert 0.1 < res.x[0] <= 0.1 + 50 * 0.1004


_W = 1e6 * np.arange(1.0, 51.0)


def _rank_one(x):
    # Hessian 2 w wᵀ, eigenvalue 8.6e16: at the minimum w @ x = 1 holds only to the
    # rounding of the sum (about eps |w|₁ |x|), so |g| = 2 |w @ x - 1| |w| is noise
    # of order 1 to 10, far above gtol, however the run goes on
    r = x @ _W - 1.0
    return 100.0 + r * r


@pytest.mark.parametrize("seed", range(5))
def test_stops_when_a_step_leaves_f_and_x_at_rounding(seed):
    x0 = np.random.default_rng(seed).standard_normal(_W.size)
    res = nad.minimize(_rank_one, x0, method="newton-cg", options={"maxiter": 200})
    # the first Newton step solves the quadratic to rounding, the second cannot move x
    # by more than its last digits: the end, with the precision-loss status
    assert res.nit <= 2, (res.nit, np.linalg.norm(res.jac))
    assert res.status == 2 and not res.success
    assert res.fun == 100.0
    assert np.linalg.norm(res.jac) > 1e-5


def _steep_bowl(x):
    return 1.0 + 1e8 * np.sum((x - 1.0) ** 2)


def test_flat_f_with_an_informative_gradient_goes_on():
    # f - f* = 3e-16 is below f's rounding, but the gradient (|g| = 3.5e-4) is exact
    # and the Newton step (1.7e-12) is a thousand times x's rounding: not a stall
    res = nad.minimize(_steep_bowl, np.full(3, 1.0 + 1e-12), method="newton-cg")
    assert res.success and res.status == 0
    assert np.linalg.norm(res.jac) < 1e-5
