"""Guarded traces: Python branches on traced values follow the path taken at each point.

Derivatives of piecewise objectives written with ``if`` / ``while`` / ``abs`` / ``max``
against central differences on both sides of every kink; the derivative at a boundary is
the branch taken's; the native methods solve them to their known optima with few traces.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import newtonad as nad
from newtonad import _programs as programs
from newtonad._programs import TRACES, Paths, PathsWarning

from .helpers import assert_close

NATIVE = ["newton-cg", "trust-ncg", "trust-krylov", "trust-exact"]
C = np.array([3.0, -8.0])
DELTA = 1.0


@pytest.fixture
def traces(monkeypatch):
    """A list that gets the function of each trace made (counted outside the function:
    a counter the function itself kept would be a captured value that changes)."""
    made = []
    real = programs.trace_function

    def counting(fun, *args, **kwargs):
        made.append(fun)
        return real(fun, *args, **kwargs)

    monkeypatch.setattr(programs, "trace_function", counting)
    return made


def huber(x):
    """Huber loss of x - C written with an if per entry, plus a ridge term: minimum at
    (2.5, -5): the first entry in the quadratic part, the second in the linear part."""
    total = 0.1 * np.sum(x ** 2)
    for i in range(2):
        r = x[i] - C[i]
        a = abs(r)
        if a <= DELTA:
            total = total + 0.5 * r ** 2
        else:
            total = total + DELTA * (a - 0.5 * DELTA)
    return total


HUBER_MIN = np.array([2.5, -5.0])


def clipped(x):
    """A quadratic with a clipped quadratic penalty on x0 + x1 > 0.5 (an if)."""
    s = x[0] + x[1] - 0.5
    penalty = 10.0 * s ** 2 if s > 0 else 0.0 * s
    return (x[0] - 2.0) ** 2 + (x[1] + 1.0) ** 2 + penalty


# stationary point of clipped (penalty active): x0 = x1 + 3, 42 x1 = -52
CLIPPED_MIN = np.array([3.0 - 52.0 / 42.0, -52.0 / 42.0])


def cubic_root(a):
    """y with y**3 + y = a, by Newton's iteration until the residual is tiny (a while).

    At least two steps are taken: an iteration that stops before its first step returns
    its start, which does not depend on a (its derivative is that path's: zero). A step
    from a converged y has the implicit first derivative 1 / (3 y**2 + 1) exactly, a
    second step the second derivative too.
    """
    y, steps = 1.0, 0
    while True:
        r = y ** 3 + y - a
        y = y - r / (3.0 * y ** 2 + 1.0)
        steps += 1
        if steps >= 2 and abs(r) <= 1e-13:
            return y


def implicit(x):
    """(y - 1)**2 + (x1 - y)**2 with y(x0) from a Newton iteration inside: minimum where
    y = 1, i.e. x = (2, 1)."""
    y = cubic_root(x[0])
    return (y - 1.0) ** 2 + (x[1] - y) ** 2 + 0.01 * (x[0] - 2.0) ** 2


IMPLICIT_MIN = np.array([2.0, 1.0])


def central_grad(f, x, eps=1e-6):
    g = np.empty_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


def central_hvp(f, x, v, eps=1e-5):
    g = nad.grad(f, engine="numpy")
    return (g(x + eps * v) - g(x - eps * v)) / (2 * eps)


# points on both sides of each kink (|x_i - C_i| = DELTA; x0 + x1 = 0.5) and inside
HUBER_POINTS = [np.array([C[0] + s * (DELTA + d), C[1] + t * (DELTA + e)])
                for s, t, d, e in [(1, 1, 1e-3, -1e-3), (1, -1, -1e-3, 1e-3),
                                   (-1, 1, 1e-3, 1e-3), (-1, -1, -1e-3, -1e-3),
                                   (1, 1, 0.5, -0.5)]]
CLIPPED_POINTS = [np.array([0.25 + d, 0.25]) for d in (1e-3, -1e-3, 0.7, -0.7)]
IMPLICIT_POINTS = [np.array([a, b]) for a, b in [(0.3, 0.2), (2.0, 1.5), (5.0, -1.0),
                                                  (-3.0, 0.4)]]


@pytest.mark.parametrize("f, points", [(huber, HUBER_POINTS), (clipped, CLIPPED_POINTS),
                                       (implicit, IMPLICIT_POINTS)],
                         ids=["huber", "clipped", "newton-while"])
def test_gradient_and_hvp_match_central_differences_on_both_sides(f, points):
    grad = nad.grad(f, engine="numpy")
    v = np.array([0.6, -0.8])
    for x in points:
        assert_close(grad(x), central_grad(f, x), 1e-7, 1e-7, f"grad at {x}")
        assert_close(nad.hvp(f, x, v, engine="numpy"), central_hvp(f, x, v), 1e-5, 1e-6,
                     f"hvp at {x}")
        value, _ = nad.value_and_grad(f, engine="numpy")(x)
        assert value == pytest.approx(float(f(x)), rel=1e-14)


def test_at_a_boundary_the_derivative_is_the_branch_taken():
    def kink(x):
        return 3.0 * x[0] if x[0] > 0 else -2.0 * x[0]   # at 0: the else branch

    def kink_max(x):
        return max(x[0], 0.5 * x[0])                      # at 0: the first argument

    grad = nad.grad(kink, engine="numpy")
    assert grad(np.array([0.0]))[0] == -2.0
    assert grad(np.array([1e-12]))[0] == 3.0
    assert grad(np.array([-1e-12]))[0] == -2.0
    assert nad.grad(kink_max, engine="numpy")(np.array([0.0]))[0] == 1.0
    assert nad.grad(kink_max, engine="numpy")(np.array([-1.0]))[0] == 0.5


def test_abs_max_min_and_conditional_expressions_of_traced_scalars():
    def f(x):
        a = abs(x[0] - 1.0)                  # Var.__abs__: traced, no branch
        b = max(x[1], x[2])                  # a comparison: one guard
        c = min(x[0] * x[1], 2.0)
        d = x[2] if x[0] > x[1] else x[1] ** 2
        return a + b * c + d

    grad = nad.grad(f, engine="numpy")
    rng = np.random.default_rng(7)
    for _ in range(6):
        x = rng.standard_normal(3) * 2
        assert_close(grad(x), central_grad(f, x), 1e-7, 1e-7, f"at {x}")


def test_a_loop_whose_count_depends_on_a_value():
    def f(x):
        total, k = 0.0 * x[0], 0
        while total < x[0] and k < 20:       # the count of terms depends on x0
            k += 1
            total = total + x[1] / k
        return total * x[0]

    grad = nad.grad(f, engine="numpy")
    for x in [np.array([1.0, 0.7]), np.array([2.5, 0.7]), np.array([0.3, 2.0])]:
        assert_close(grad(x), central_grad(f, x, 1e-7), 1e-6, 1e-6, f"at {x}")


@pytest.mark.parametrize("method", NATIVE)
@pytest.mark.parametrize("f, start, optimum", [
    (huber, np.array([0.0, 0.0]), HUBER_MIN),
    (clipped, np.array([3.0, 2.0]), CLIPPED_MIN),
    (implicit, np.array([0.5, 0.0]), IMPLICIT_MIN),
], ids=["huber", "clipped", "newton-while"])
def test_native_methods_solve_piecewise_objectives_with_few_traces(f, start, optimum, method,
                                                                  traces):
    with nad.settings.override(engine="numpy"):  # no compiles: paths are the point

        def g(x):  # a new function per case: its own traces
            return f(x)

        with warnings.catch_warnings():
            warnings.simplefilter("error", nad.TraceFallbackWarning)  # exact, no fallback
            res = nad.minimize(g, start, method=method, options={"gtol": 1e-10})
        assert res.success, res.message
        assert_close(res.x, optimum, 1e-6, 1e-6, method)
        assert_close(res.jac, central_grad(f, res.x), 1e-6, 1e-6, "gradient at the solution")
        # one trace per path met: huber and clipped have at most 4 and 2 paths, the while
        # loop's count changes a few times along the way
        assert len(traces) <= {huber: 4, clipped: 2, implicit: 6}[f], len(traces)
        made = len(traces)
        again = nad.minimize(g, start, method=method, options={"gtol": 1e-10})
        assert len(traces) == made  # the same paths again: all kept
        assert_close(again.x, res.x, 0, 0)


def test_objective_switches_between_kept_paths(traces):
    def g(x):
        return clipped(x)

    obj = nad.Objective(g, engine="numpy")
    inside, outside = np.array([1.0, 1.0]), np.array([-1.0, 0.0])
    v = np.array([1.0, 2.0])
    for _ in range(3):
        for x in (inside, outside):
            assert obj.fun(x) == pytest.approx(clipped(x), rel=1e-15)
            assert_close(obj.jac(x), central_grad(clipped, x), 1e-7, 1e-7)
            assert_close(obj.hessp(x, v), central_hvp(clipped, x, v), 1e-5, 1e-6)
            assert_close(obj.hess(x) @ v, central_hvp(clipped, x, v), 1e-5, 1e-6)
    # one per path (the first tried without values first); the checks' own traces of
    # clipped (central_hvp differences its AD gradient) are counted only when no earlier
    # test kept them
    assert traces.count(g) == 2
    (entry,) = TRACES[g].values()
    assert isinstance(entry, Paths) and len(entry.variants) == 2


def test_linearize_hessp_follows_the_path_at_its_point():
    obj = nad.Objective(clipped, engine="numpy")
    obj.fun(np.array([1.0, 1.0]))               # the penalty's path is current
    x = np.array([-1.0, 0.0])                    # the other path
    hv = obj.linearize_hessp(x)(np.eye(2))
    assert_close(hv, np.diag([2.0, 2.0]), 0, 1e-12)


def test_a_branch_inside_an_inner_derivative_is_a_branch_of_the_outer_trace():
    def outer(x):
        return nad.grad(clipped)(x) @ x          # traced inside outer: inlined

    for x in CLIPPED_POINTS:
        assert_close(nad.grad(outer, engine="numpy")(x), central_grad(outer, x), 1e-6, 1e-6)


def test_more_paths_than_kept_warn_once_and_stay_right():
    def signs(x):
        total = 0.0 * x[0]
        for i in range(5):
            total = total + (x[i] ** 2 if x[i] > 0 else -3.0 * x[i])
        return total

    grad = nad.grad(signs, engine="numpy")
    rng = np.random.default_rng(3)
    with pytest.warns(PathsWarning, match="more than 16 paths.*np.where") as record:
        for _ in range(40):
            x = rng.standard_normal(5)
            assert_close(grad(x), np.where(x > 0, 2 * x, -3.0), 0, 1e-15)
    assert len(record) == 1


def test_array_truth_value_is_ambiguous():
    with pytest.raises(ValueError, match="ambiguous.*np.any"):
        nad.grad(lambda x: np.sum(x) if x > 0 else 0.0, engine="numpy")(np.ones(3))


def test_hessian_sparsity_is_that_of_the_path_at_the_point():
    def coupled(x):
        if x[0] > 0:
            return x[0] * x[1] + x[2] ** 2   # couples x0 and x1
        return x[0] ** 2 + x[1] ** 2 + x[2] ** 2

    obj = nad.Objective(coupled, engine="numpy")
    obj.fun(np.array([1.0, 1.0, 1.0]))
    assert obj.hess_sparsity(np.array([-1.0, 1.0, 1.0])).toarray()[0, 1] == 0
    assert obj.hess_sparsity(np.array([1.0, 1.0, 1.0])).toarray()[0, 1]
    sparse = nad.Objective(coupled, engine="numpy", sparse=True)
    for x in (np.array([1.0, 2.0, 3.0]), np.array([-1.0, 2.0, 3.0])):
        dense = nad.hessian(coupled, engine="numpy")(x)
        assert_close(sparse.hess(x).toarray(), dense, 0, 0)
        assert_close(nad.hessian(coupled, sparse=True, engine="numpy")(x).toarray(), dense, 0, 0)
