"""The hand-coded objectives of ``tests/builders.py`` keep the objective protocol.

The solver tests run on :class:`~tests.builders.AnalyticObjective` so that they do not
depend on the AD core; these tests check that what the solvers see there is what they
would see from ``newtonad.Objective`` on the same function (values, gradients, Hessian
products on vectors, frames and linearised maps, dense Hessians), and that the
hand-written Hessian operator is right: against SciPy's Rosenbrock Hessian and against
central differences of the gradient.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize

import newtonad as nad

from .builders import AnalyticObjective, quadratic, rosen_start, rosenbrock
from .helpers import assert_close, central_jvp

N = 7


def chained_rosenbrock(x):
    """scipy.optimize.rosen written in plain NumPy, for newtonad to trace."""
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


@pytest.fixture
def point():
    return rosen_start(N) + 0.1 * np.random.default_rng(11).standard_normal(N)


def test_rosen_start_is_the_standard_start():
    assert_close(rosen_start(5), [-1.2, 1.0, -1.2, 1.0, -1.2], 0, 0)


def test_rosenbrock_agrees_with_newtonad_objective(point):
    hand, ad = rosenbrock(), nad.Objective(chained_rosenbrock, engine="numpy")
    assert_close(hand.fun(point), ad.fun(point), 1e-14, 0)
    assert_close(hand.jac(point), ad.jac(point), 1e-13, 1e-12)
    f, g = hand.value_and_grad(point)
    assert_close(f, ad.fun(point), 1e-14, 0)
    assert_close(g, ad.jac(point), 1e-13, 1e-12)
    V = np.random.default_rng(12).standard_normal((N, 3))
    assert_close(hand.hessp(point, V[:, 0]), ad.hessp(point, V[:, 0]), 1e-13, 1e-10)
    assert_close(hand.hessp(point, V), ad.hessp(point, V), 1e-13, 1e-10)
    assert_close(hand.linearize_hessp(point)(V), ad.linearize_hessp(point)(V), 1e-13, 1e-10)
    assert_close(hand.hess(point), ad.hess(point), 1e-13, 1e-10)


def test_rosenbrock_operator_is_scipys_hessian(point):
    """The tridiagonal operator, on vectors and on frames, against scipy.optimize.rosen_hess;
    the dense Hessian built from it (no explicit ``hess``) too."""
    H = scipy.optimize.rosen_hess(point)
    V = np.random.default_rng(13).standard_normal((N, 4))
    hand = rosenbrock()
    assert_close(hand.hessp(point, V[:, 1]), H @ V[:, 1], 1e-14, 1e-11)
    assert_close(hand.hessp(point, V), H @ V, 1e-14, 1e-11)
    from_operator = AnalyticObjective(hand._f, hand._grad, hand._op)  # hess from identity frames
    assert_close(from_operator.hess(point), H, 1e-14, 1e-11)


def test_quadratic_derivatives_match_differences():
    rng = np.random.default_rng(14)
    B = rng.standard_normal((5, 5))
    A, b = B + B.T, rng.standard_normal(5)
    obj = quadratic(A, b)
    x, v = rng.standard_normal(5), rng.standard_normal(5)
    assert_close(obj.jac(x) @ v, central_jvp(obj.fun, x, v), 1e-7, 1e-7)
    assert_close(obj.hessp(x, v), central_jvp(obj.jac, x, v), 1e-7, 1e-7)
    assert_close(obj.hess(x), A, 0, 0)
    assert_close(nad.Objective(lambda x: 0.5 * x @ A @ x + b @ x, engine="numpy").hess(x), A,
                 1e-14, 1e-13)


def test_counters_count_every_call(point):
    """The solver tests compare these counters with their results' nfev / njev / nhev."""
    obj = rosenbrock()
    obj.fun(point), obj.jac(point), obj.value_and_grad(point)
    op = obj.linearize_hessp(point)
    op(point), op(point), obj.hessp(point, point), obj.hess(point)
    assert (obj.nfev, obj.njev, obj.nhev) == (2, 2, 4)
