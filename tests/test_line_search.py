"""newtonad's own Moré–Thuente line search (newtonad/solvers/line_search.py).

Pinned behaviour: the returned step satisfies the strong Wolfe conditions, and on
functions whose search can be followed by hand the steps and the number of
evaluations are known. scipy's private MINPACK port serves as an independent
reference for the steps on many random searches.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.optimize import rosen, rosen_der, rosen_hess

from newtonad.solvers.line_search import MoreThuente, first_step, wolfe, wolfe_scalar


class Counted:
    """φ and φ' along a line, counting calls."""

    def __init__(self, f, g, x, p):
        self.f, self.g, self.x, self.p = f, g, x, p
        self.values = self.slopes = 0

    def phi(self, s):
        self.values += 1
        return float(self.f(self.x + s * self.p))

    def derphi(self, s):
        self.slopes += 1
        return float(self.g(self.x + s * self.p) @ self.p)


def strong_wolfe(line, alpha, f0, slope, c1, c2):
    return (line.f(line.x + alpha * line.p) <= f0 + c1 * alpha * slope
            and abs(float(line.g(line.x + alpha * line.p) @ line.p)) <= c2 * abs(slope))


def test_the_line_search_imports_nothing_private_and_has_no_import_fallback():
    import newtonad.solvers.line_search as module

    source = Path(module.__file__).read_text(encoding="utf-8")
    assert "scipy.optimize._" not in source and "except ImportError" not in source


def test_quadratic_first_step_accepted_after_one_evaluation():
    # Newton direction on a quadratic: alpha = 1 is the exact minimiser and satisfies
    # both conditions, so the search evaluates phi and phi' once each
    line = Counted(lambda x: (x[0] - 3.0) ** 2, lambda x: np.array([2.0 * (x[0] - 3.0)]),
                   np.array([0.0]), np.array([3.0]))
    alpha, f = wolfe_scalar(line.phi, line.derphi, 9.0, -18.0)
    assert (alpha, f) == (1.0, 0.0)
    assert line.values == line.slopes == 1


def test_quadratic_cubic_step_is_exact_on_second_evaluation():
    # phi(a) = (a - 3)^2: with c2 = 0.1 the first step a = 1 fails the curvature test
    # (|phi'(1)| = 4 > 0.6); the cubic through (0, 9, -6) and (1, 4, -4) is the
    # quadratic itself, so the second trial is its minimiser a = 3, found exactly
    line = Counted(lambda x: (x[0] - 3.0) ** 2, lambda x: np.array([2.0 * (x[0] - 3.0)]),
                   np.array([0.0]), np.array([1.0]))
    alpha, f = wolfe_scalar(line.phi, line.derphi, 9.0, -6.0, c2=0.1)
    assert (alpha, f) == (3.0, 0.0)
    assert line.values == line.slopes == 2


def test_too_long_first_step_is_cut_back_into_the_bracket():
    # phi(a) = (a - 0.25)^2 from a = 1: phi(1) = 0.5625 > phi(0) = 0.0625, so case 1
    # (a higher value) brackets the minimiser, whose cubic/quadratic step is exact
    line = Counted(lambda x: (x[0] - 0.25) ** 2, lambda x: np.array([2.0 * (x[0] - 0.25)]),
                   np.array([0.0]), np.array([1.0]))
    alpha, f = wolfe_scalar(line.phi, line.derphi, 0.0625, -0.5)
    assert alpha == pytest.approx(0.25, rel=1e-12) and f == pytest.approx(0.0, abs=1e-24)
    assert line.values == 2


@pytest.mark.parametrize("c2", [0.9, 0.5, 0.1])
@pytest.mark.parametrize("start", [[-1.2, 1.0], [2.0, 2.0], [0.5, -0.3, 1.7, 0.9]])
@pytest.mark.parametrize("direction", ["gradient", "newton"])
def test_step_satisfies_strong_wolfe_on_rosenbrock(c2, start, direction):
    x = np.array(start)
    g = rosen_der(x)
    p = -np.linalg.solve(rosen_hess(x), g) if direction == "newton" else -g / np.linalg.norm(g)
    slope = float(g @ p)
    if slope >= 0:  # the Newton step is not a descent direction here
        p, slope = -g, -float(g @ g)
    line = Counted(rosen, rosen_der, x, p)
    alpha, f = wolfe_scalar(line.phi, line.derphi, rosen(x), slope, c2=c2)
    assert alpha is not None and alpha > 0
    assert strong_wolfe(line, alpha, rosen(x), slope, 1e-4, c2)
    assert f == rosen(x + alpha * p)
    assert 1 <= line.values == line.slopes <= 30


def test_wolfe_on_vectors_returns_point_value_and_gradient():
    x = np.array([-1.2, 1.0])
    g = rosen_der(x)
    p = -g * 1e-3
    alpha, x_new, f_new, g_new = wolfe(rosen, rosen_der, x, p, rosen(x), float(g @ p), None)
    assert_allclose(x_new, x + alpha * p, rtol=1e-15)
    assert f_new == rosen(x_new)
    assert_allclose(g_new, rosen_der(x_new), rtol=1e-15)


def test_wolfe_fails_on_nonfinite_values_instead_of_guessing():
    x, p = np.array([1.0]), np.array([-1.0])
    fun = lambda z: math.inf if z[0] < 0.5 else float((z[0] - 0.4) ** 2)  # noqa: E731
    jac = lambda z: np.array([2.0 * (z[0] - 0.4)])  # noqa: E731
    assert wolfe(fun, jac, x, p, fun(x), float(jac(x) @ p), None) is None


def test_first_step_rule():
    assert first_step(10.0, -4.0, None) == 1.0
    assert first_step(10.0, -100.0, 11.0) == pytest.approx(0.0202)  # 2.02 * (-1) / -100
    assert first_step(10.0, -1.0, 9.0) == 1.0  # f rose: negative ratio, start at 1
    assert wolfe_scalar(lambda a: 0.0, lambda a: -1.0, 10.0, -1.0, f_prev=10.0) == (None, 10.0)


def test_bad_constants_and_directions_raise():
    with pytest.raises(ValueError, match="0 < c1 < c2 < 1"):
        MoreThuente(c1=0.5, c2=0.1)
    with pytest.raises(ValueError, match="not a descent direction"):
        MoreThuente().start(1.0, 0.5, 1.0)


def test_same_steps_and_evaluations_as_minpack_reference():
    # an independent implementation of the same algorithm (scipy's port of MINPACK-2's
    # dcsrch, private, used here only as a reference): identical steps and call counts
    try:
        from scipy.optimize._linesearch import scalar_search_wolfe1
    except ImportError:  # pragma: no cover
        pytest.skip("scipy's private MINPACK line search is gone; the other tests pin ours")
    rng = np.random.default_rng(7)
    compared = 0
    for trial in range(400):
        n = int(rng.integers(2, 6))
        x = 1.5 * rng.standard_normal(n)
        g = rosen_der(x)
        p = -g * 10.0 ** rng.uniform(-6, 1)
        slope = float(g @ p)
        f0 = rosen(x)
        f_prev = None if trial % 3 == 0 else f0 + abs(slope) * rng.uniform(0.01, 10)
        c2 = (0.9, 0.1, 0.5)[trial % 3]
        ours, ref = Counted(rosen, rosen_der, x, p), Counted(rosen, rosen_der, x, p)
        a, _ = wolfe_scalar(ours.phi, ours.derphi, f0, slope, f_prev, c2=c2)
        # scipy's own bounds (amax=50, amin=1e-8), which are also ours
        b, _, _ = scalar_search_wolfe1(ref.phi, ref.derphi, f0, f_prev, slope, c2=c2)
        assert a == b and ours.values == ref.values, trial
        compared += ours.values > 1
    assert compared > 100  # most searches went past the first trial step


def test_docstring_examples_run():
    import doctest

    import newtonad.solvers.line_search as module

    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
