"""newton-cg's stopping rules beside scipy's: ``xtol`` alone is scipy's rule."""

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
