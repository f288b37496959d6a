"""Tests of the bound-constrained problems against their published definitions.

Reference values come from the sources, never from this library's output:

* Hock & Schittkowski (Lecture Notes in Econ. and Math. Systems 187, 1981) list
  f(x0), x* and f* with each problem.
* The MINPACK-2 grid problems are compared with literal transcriptions of the
  published loops (deptfg, dpjbfg: 1-based, element by element, as printed) and
  COPS' minimal-surface-with-obstacle sums, at random points; with gradients in
  closed form where the formula gives one; and with properties every solution
  must have (symmetries of the data, the sign of the multipliers, the bounds).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.optimize import Bounds, minimize

import newtonad as nad
from newtonad import problems
from newtonad.problems import bounded_grids as grids

GRID = ("journal-bearing", "obstacle", "torsion")
HS = ("hs003", "hs004", "hs005", "hs025", "hs038", "hs045", "hs110")


# ---------------------------------------------------------------------------
# Registry and records
# ---------------------------------------------------------------------------

def test_bounded_names_are_listed_apart():
    bounded = problems.names(bounded=True)
    assert set(bounded) == set(GRID) | set(HS)
    assert not set(bounded) & set(problems.names())
    assert [p.name for p in problems.all_problems(bounded=True)] == bounded
    assert all(p.bounds is None for p in problems.all_problems())


@pytest.mark.parametrize("name", GRID + HS)
def test_bounds_record(name):
    p = problems.get(name)
    assert isinstance(p.bounds, Bounds)
    lb, ub = np.asarray(p.bounds.lb), np.asarray(p.bounds.ub)
    assert lb.shape == ub.shape == (p.n,) and lb.dtype == ub.dtype == np.float64
    assert not np.isnan(lb).any() and not np.isnan(ub).any() and np.all(lb <= ub)
    assert p.x0.shape == (p.n,) and np.isfinite(float(p.fun(p.x0)))
    inside = np.all((lb <= p.x0) & (p.x0 <= ub))
    assert inside == (name != "hs045")      # H&S print an infeasible x0 for #45
    assert "bounded" in repr(p)


def test_grid_sizes():
    with pytest.raises(ValueError, match=r"perfect square.*got n=10"):
        problems.get("torsion", 10)
    with pytest.raises(ValueError, match=r"n >= 4.*got n=1"):
        problems.get("obstacle", 1)
    with pytest.raises(ValueError, match="fixed size"):
        problems.get("hs038", 4)


@pytest.mark.parametrize("name", GRID)
def test_grid_problem_builds_at_a_million(name):
    p = problems.get(name, 1000 ** 2)
    assert p.x0.shape == (10 ** 6,) and p.bounds.lb.shape == (10 ** 6,)
    assert np.isfinite(float(p.fun(p.x0)))


# ---------------------------------------------------------------------------
# Hock-Schittkowski: published f(x0), f(x*) and the optimality conditions
# ---------------------------------------------------------------------------

# f(x0) as printed by Hock & Schittkowski (HS 45: 2 - 2^5/120 by hand).
HS_F_X0 = {"hs003": 1.00081, "hs004": 3.323568, "hs005": 1.0, "hs025": 32.835,
           "hs038": 19192.0, "hs045": 2.0 - 32.0 / 120.0, "hs110": -43.134337}
HS_F_STAR = {"hs003": 0.0, "hs004": 8.0 / 3.0, "hs005": -math.sqrt(3) / 2 - math.pi / 3,
             "hs025": 0.0, "hs038": 0.0, "hs045": 1.0, "hs110": -45.77846971}


@pytest.mark.parametrize("name", HS)
def test_hs_published_values(name):
    p = problems.get(name)
    assert float(p.fun(p.x0)) == pytest.approx(HS_F_X0[name], rel=1e-6)
    assert p.fstar == pytest.approx(HS_F_STAR[name], rel=1e-12, abs=1e-15)
    assert float(p.fun(p.xstar)) == pytest.approx(p.fstar, rel=1e-8, abs=1e-12)


@pytest.mark.parametrize("name", HS)
def test_hs_xstar_satisfies_kkt(name):
    """At x*, the gradient vanishes on free variables and points out of the box
    on active ones (non-negative multipliers)."""
    p = problems.get(name)
    g = np.asarray(nad.grad(p.fun)(p.xstar))
    lb, ub = p.bounds.lb, p.bounds.ub
    at_lb, at_ub = p.xstar <= lb, p.xstar >= ub
    free = ~(at_lb | at_ub)
    scale = max(1.0, np.abs(g).max())
    # HS 110's printed x_i = 9.35025655 is 1e-6 (relative) from the root of its
    # gradient, 9.3502658; the free gradient there is 6e-5
    assert np.all(np.abs(g[free]) <= 1e-4 * scale), g
    assert np.all(g[at_lb] >= 0.0) and np.all(g[at_ub] <= 0.0), g


# Problems where L-BFGS-B from the published x0 is known not to reach f*, and why.
LBFGSB_SKIPPED = {
    "hs025": "flat at x0 = (100, 12.5, 3): exp(-(u_i - 12.5)^3 / 100) < 4e-9, so the "
             "gradient is ~1e-8 and L-BFGS-B stops at once at f = 32.835",
}


@pytest.mark.parametrize("name", HS)
def test_lbfgsb_reaches_published_optimum(name):
    if name in LBFGSB_SKIPPED:
        pytest.skip(LBFGSB_SKIPPED[name])
    p = problems.get(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = minimize(nad.value_and_grad(p.fun), p.x0, jac=True, method="L-BFGS-B",
                       bounds=p.bounds, options={"ftol": 1e-14, "gtol": 1e-10,
                                                 "maxiter": 5000})
    assert res.fun == pytest.approx(p.fstar, rel=1e-6, abs=1e-8), res.message


# ---------------------------------------------------------------------------
# Grid problems: the published formulas, transcribed loop by loop
# ---------------------------------------------------------------------------

def _loop_deptfg(x, m, c=5.0):
    """MINPACK-2 deptfg's function value, its loops as printed (1-based k)."""
    nx = ny = m
    hx, hy = 1 / (nx + 1), 1 / (ny + 1)
    area, cdiv3 = 0.5 * hx * hy, c / 3
    X = [None] + list(x)
    fquad = flin = 0.0
    for j in range(0, ny + 1):
        for i in range(0, nx + 1):
            k = nx * (j - 1) + i
            v = X[k] if i >= 1 and j >= 1 else 0.0
            vr = X[k + 1] if i < nx and j > 0 else 0.0
            vt = X[k + nx] if i > 0 and j < ny else 0.0
            fquad += ((vr - v) / hx) ** 2 + ((vt - v) / hy) ** 2
            flin -= cdiv3 * (v + vr + vt)
    for j in range(1, ny + 2):
        for i in range(1, nx + 2):
            k = nx * (j - 1) + i
            vb = X[k - nx] if i <= nx and j > 1 else 0.0
            vl = X[k - 1] if i > 1 and j <= ny else 0.0
            v = X[k] if i <= nx and j <= ny else 0.0
            fquad += ((v - vl) / hx) ** 2 + ((v - vb) / hy) ** 2
            flin -= cdiv3 * (vb + vl + v)
    return area * (0.5 * fquad + flin)


def _loop_dpjbfg(x, m, ecc=0.1, b=10.0):
    """MINPACK-2 dpjbfg's function value, its loops as printed (1-based k)."""
    nx = ny = m
    hx, hy = 2 * math.pi / (nx + 1), 2 * b / (ny + 1)
    hxhy = hx * hy
    X = [None] + list(x)

    def p(xi):
        return (1 + ecc * math.cos(xi)) ** 3
    fquad = flin = 0.0
    for i in range(0, nx + 1):
        xi = i * hx
        trule = hxhy * (p(xi) + p(xi + hx) + p(xi)) / 6
        for j in range(0, ny + 1):
            k = nx * (j - 1) + i
            v = X[k] if i != 0 and j != 0 else 0.0
            vr = X[k + 1] if i != nx and j != 0 else 0.0
            vt = X[k + nx] if i != 0 and j != ny else 0.0
            fquad += trule * (((vr - v) / hx) ** 2 + ((vt - v) / hy) ** 2)
    for i in range(1, nx + 2):
        xi = i * hx
        trule = hxhy * (p(xi) + p(xi - hx) + p(xi)) / 6
        for j in range(1, ny + 2):
            k = nx * (j - 1) + i
            vb = X[k - nx] if i != nx + 1 and j != 1 else 0.0
            vl = X[k - 1] if i != 1 and j != ny + 1 else 0.0
            v = X[k] if i != nx + 1 and j != ny + 1 else 0.0
            fquad += trule * (((v - vl) / hx) ** 2 + ((v - vb) / hy) ** 2)
    for i in range(1, nx + 1):
        temp = math.sin(i * hx)
        for j in range(1, ny + 1):
            flin += temp * X[nx * (j - 1) + i]
    return 0.5 * fquad - ecc * hxhy * flin


def _loop_cops_minsurf(x, m):
    """COPS 3.0 problem 17's objective: the two sums over the triangles of the
    full grid v[i, j], i, j = 0..m+1, with the boundary data of the model."""
    h = 1 / (m + 1)
    v = {}
    for i in range(m + 2):
        for j in range(m + 2):
            if j in (0, m + 1):
                v[i, j] = 1 - (2 * i * h - 1) ** 2
            elif i in (0, m + 1):
                v[i, j] = 0.0
            else:
                v[i, j] = x[m * (j - 1) + (i - 1)]
    total = 0.0
    for i in range(m + 1):
        for j in range(m + 1):
            total += math.sqrt(1 + ((v[i + 1, j] - v[i, j]) / h) ** 2
                               + ((v[i, j + 1] - v[i, j]) / h) ** 2)
    for i in range(1, m + 2):
        for j in range(1, m + 2):
            total += math.sqrt(1 + ((v[i - 1, j] - v[i, j]) / h) ** 2
                               + ((v[i, j - 1] - v[i, j]) / h) ** 2)
    return 0.5 * h * h * total


def _loop_cops_bearing(x, m, ecc=0.1, b=10.0):
    """COPS 3.0 problem 16's objective as its model sums it over the full grid
    v[i, j], i, j = 0..m+1 (zero on the boundary), with its triangle weights."""
    hx, hy = 2 * math.pi / (m + 1), 2 * b / (m + 1)
    wq = [(1 + ecc * math.cos(i * hx)) ** 3 for i in range(m + 2)]
    v = {(i, j): 0.0 for i in range(m + 2) for j in range(m + 2)}
    for i in range(1, m + 1):
        for j in range(1, m + 1):
            v[i, j] = x[m * (j - 1) + (i - 1)]
    lower = sum((wq[i] + 2 * wq[i + 1]) * (((v[i + 1, j] - v[i, j]) / hx) ** 2
                                           + ((v[i, j + 1] - v[i, j]) / hy) ** 2)
                for i in range(m + 1) for j in range(m + 1))
    upper = sum((2 * wq[i] + 2 * wq[i - 1]) * (((v[i - 1, j] - v[i, j]) / hx) ** 2
                                               + ((v[i, j - 1] - v[i, j]) / hy) ** 2)
                for i in range(1, m + 2) for j in range(1, m + 2))
    load = sum(ecc * math.sin(i * hx) * v[i, j] for i in range(m + 2) for j in range(m + 2))
    return 0.5 * (hx * hy / 6) * (lower + upper) - hx * hy * load


LOOPS = {"torsion": _loop_deptfg, "journal-bearing": _loop_dpjbfg,
         "obstacle": _loop_cops_minsurf}


@pytest.mark.parametrize("name", GRID)
def test_grid_objective_matches_published_loops(name):
    m = 5
    p = problems.get(name, m * m)
    x = np.random.default_rng(1992).uniform(-1.0, 1.0, p.n)
    assert float(p.fun(x)) == pytest.approx(LOOPS[name](list(x), m), rel=1e-12)


def test_journal_bearing_with_cops_weights_matches_the_cops_model():
    m = 5
    p = grids.journal_bearing(m * m, weights="cops")
    x = np.random.default_rng(2004).uniform(-1.0, 1.0, p.n)
    assert float(p.fun(x)) == pytest.approx(_loop_cops_bearing(list(x), m), rel=1e-12)
    minpack2 = problems.get("journal-bearing", m * m)
    assert abs(float(minpack2.fun(x)) - float(p.fun(x))) > 1e-3 * abs(float(p.fun(x)))
    with pytest.raises(ValueError, match="weights must be 'minpack2' or 'cops'"):
        grids.journal_bearing(m * m, weights="COPS 3.0")


# COPS 3.0's tables (Dolan, Moré & Munson, ANL/MCS-TM-273, 2004) on the 50 x 50
# interior grid, as printed: the optimal value and the digits it is given to.
COPS_50 = {"torsion": (-4.18087e-1, 1e-6), "obstacle": (2.51488, 1e-5),
           "journal-bearing": (-1.5482e-1, 1e-5)}


def _cops_problem(name, n):
    if name == "journal-bearing":
        return grids.journal_bearing(n, weights="cops")
    return problems.get(name, n)


@pytest.mark.parametrize("name", GRID)
def test_fstar_is_copss_published_value_at_its_size_only(name):
    value, _ = COPS_50[name]
    assert _cops_problem(name, 2500).fstar == value
    assert _cops_problem(name, 2401).fstar is None
    assert _cops_problem(name, 10_000).fstar is None
    assert problems.get("journal-bearing", 2500).fstar is None   # MINPACK-2's weights


@pytest.mark.parametrize("name", GRID)
def test_tron_reaches_copss_published_value(name):
    """Within one unit of the last printed digit (COPS' solvers stop at finite
    tolerances, so the last digit may be truncated rather than rounded)."""
    value, unit = COPS_50[name]
    p = _cops_problem(name, 2500)
    res = nad.minimize(p.fun, p.x0, method="tron", bounds=p.bounds,
                       options={"gtol": 1e-10})
    assert res.success, res.message
    assert abs(res.fun - value) <= unit


def test_grid_starts_and_bounds_follow_the_sources():
    m = 6
    h = 1 / (m + 1)
    node = np.arange(1, m + 1)
    dist = np.minimum.outer(np.minimum(node, m + 1 - node) * h,
                            np.minimum(node, m + 1 - node) * h)
    t = problems.get("torsion", m * m)
    assert np.allclose(t.bounds.ub, dist.reshape(-1)) and np.allclose(t.bounds.lb, -t.bounds.ub)
    assert np.array_equal(t.x0, t.bounds.ub)                      # MINPACK-2's 'XS'
    j = problems.get("journal-bearing", m * m)
    column = np.maximum(np.sin(node * 2 * math.pi / (m + 1)), 0.0)
    assert np.allclose(j.x0.reshape(m, m), column[None, :])
    assert np.all(j.bounds.lb == 0.0) and np.all(np.isinf(j.bounds.ub))
    o = problems.get("obstacle", m * m)
    on = (node >= math.floor(0.25 / h)) & (node <= math.ceil(0.75 / h))
    assert np.array_equal(o.bounds.lb.reshape(m, m), np.outer(on, on).astype(float))


def test_quadratic_problems_linear_terms():
    """At v = 0 the gradient is minus the linear term: c h^2 per node for the
    torsion (six triangles of area h^2/2, c/3 each), ecc hx hy sin(x1) per node
    for the bearing."""
    m = 7
    t = problems.get("torsion", m * m)
    g = np.asarray(nad.grad(t.fun)(np.zeros(t.n)))
    assert np.allclose(g, -5.0 / (m + 1) ** 2, rtol=1e-12)
    j = problems.get("journal-bearing", m * m)
    hx, hy = 2 * math.pi / (m + 1), 20.0 / (m + 1)
    g = np.asarray(nad.grad(j.fun)(np.zeros(j.n))).reshape(m, m)
    assert np.allclose(g, -0.1 * hx * hy * np.sin(np.arange(1, m + 1) * hx)[None, :],
                       rtol=1e-12, atol=1e-15)


def _central_gradient(f, x, step=1e-6):
    g = np.empty_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = step
        g[i] = (float(f(x + e)) - float(f(x - e))) / (2 * step)
    return g


@pytest.mark.parametrize("name", GRID)
def test_grid_derivatives(name):
    """newtonad's gradient against differences; its sparse Hessian (colouring)
    against the dense one; both quadratics' Hessians constant and positive
    definite, the minimal surface's positive definite (strict convexity)."""
    m = 6
    p = problems.get(name, m * m)
    rng = np.random.default_rng(6)
    x = p.x0 + 0.1 * rng.standard_normal(p.n)
    value, g = nad.value_and_grad(p.fun)(x)
    assert value == pytest.approx(float(p.fun(x)), rel=1e-13)
    assert np.allclose(g, _central_gradient(p.fun, x), rtol=1e-6, atol=1e-9)
    sparse = nad.hessian(p.fun, sparse=True)(x).toarray()
    dense = np.asarray(nad.hessian(p.fun)(x))
    assert np.allclose(sparse, dense, rtol=1e-12, atol=1e-14)
    assert np.allclose(dense, dense.T) and np.linalg.eigvalsh(dense).min() > 0.0
    # five-point stencil (quadratics) or seven-point (minimal surface: the diagonal)
    assert (np.count_nonzero(sparse, axis=1).max()) == (5 if name != "obstacle" else 7)
    if name != "obstacle":
        other = np.asarray(nad.hessian(p.fun)(rng.standard_normal(p.n)))
        assert np.allclose(other, dense, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", GRID)
def test_grid_directional_derivative_at_a_million(name):
    """Traced at n = 1e6: g . d against a central difference of f along d."""
    p = problems.get(name, 1000 ** 2)
    d = np.random.default_rng(3).standard_normal(p.n)
    x = p.x0 + 1e-3 * d
    _, g = nad.value_and_grad(p.fun)(x)
    step = 1e-6     # f''' along d is large at this resolution: a small step
    diff = (float(p.fun(x + step * d)) - float(p.fun(x - step * d))) / (2 * step)
    assert float(np.dot(g, d)) == pytest.approx(diff, rel=1e-5)


# ---------------------------------------------------------------------------
# Grid problems: properties of the solutions
# ---------------------------------------------------------------------------

def _solve(p):
    res = minimize(nad.value_and_grad(p.fun), p.x0, jac=True, method="L-BFGS-B",
                   bounds=p.bounds, options={"ftol": 1e-15, "gtol": 1e-11,
                                             "maxiter": 20000})
    return res.x.reshape(math.isqrt(p.n), -1), res


def test_torsion_solution_symmetries_and_plastic_region():
    """The data are invariant under the square's symmetries, and the problem is
    strictly convex, so the minimiser is too; with c > 0 it is non-negative and
    the plastic region (v = dist) is not empty."""
    p = problems.get("torsion", 20 * 20)
    v, _ = _solve(p)
    for image in (v.T, v[::-1, :], v[:, ::-1]):
        assert np.allclose(image, v, atol=1e-6)
    ub = p.bounds.ub.reshape(v.shape)
    assert v.min() > -1e-12
    assert np.count_nonzero(v >= ub - 1e-9) > 0
    assert np.count_nonzero(v < ub - 1e-3) > 0          # and not all plastic


def test_journal_bearing_cavitation_region():
    """v = 0 wherever the load ecc sin(x1) pulls down over a whole column band
    (x1 in (pi, 2 pi)): the bound is active there; the data are symmetric in x2."""
    m = 24
    p = problems.get("journal-bearing", m * m)
    v, _ = _solve(p)
    assert np.allclose(v, v[::-1, :], atol=1e-6)
    x1 = np.arange(1, m + 1) * 2 * math.pi / (m + 1)
    assert np.all(v[:, (x1 > 1.4 * math.pi) & (x1 < 1.95 * math.pi)] <= 1e-9)
    assert np.all(v[1:-1, (x1 > 0.3 * math.pi) & (x1 < 0.7 * math.pi)] > 1e-3)


def test_obstacle_solution_touches_the_obstacle():
    """The surface lies on the obstacle somewhere (the area with the obstacle
    removed is below its height there), is invariant under the half turn about
    the centre like its data and the triangulation (a half turn swaps lower and
    upper triangles), and has a smaller area than the start."""
    p = problems.get("obstacle", 20 * 20)
    v, res = _solve(p)
    lb = p.bounds.lb.reshape(v.shape)
    assert np.all(v >= lb)
    assert np.count_nonzero((lb == 1.0) & (v <= 1.0 + 1e-9)) > 0
    assert np.allclose(v, v[::-1, ::-1], atol=1e-6)
    assert 1.0 < res.fun < float(p.fun(p.x0))


@pytest.mark.parametrize("name", GRID + ("minimal-surface", "chained-rosenbrock"))
def test_benchmark_casadi_forms_match(name):
    """benchmarks/bounds_report.py writes each objective again in CasADi symbols for
    IPOPT; both forms give the same value at x0 and at a random point."""
    pytest.importorskip("casadi")
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from benchmarks.bounds_report import check_casadi

    assert check_casadi(name) <= 1e-13


def test_obstacle_minimiser_steepens_at_the_corners_as_the_grid_is_refined():
    """Why obstacle's Newton iterations grow with n (the problem's notes): the minimiser's
    slope is unbounded at the obstacle's corners and bounded elsewhere, so each finer
    grid resolves a steeper, more nonlinear surface there."""
    steepest, typical = [], []
    for m in (30, 60):
        p = problems.get("obstacle", n=m * m)
        res = nad.minimize(p.fun, p.x0, method="tron", bounds=p.bounds,
                           options=dict(gtol=1e-9))
        assert res.success
        slopes = np.abs(np.diff(res.x.reshape(m, m), axis=1)) * (m + 1)
        j, i = np.unravel_index(np.argmax(slopes), slopes.shape)
        corner = np.array([(j + 1), (i + 1.5)]) / (m + 1)   # node row, midpoint column
        assert min(np.abs(corner - 0.25).max(), np.abs(corner - 0.75).max()) < 2.0 / (m + 1)
        steepest.append(slopes.max())
        typical.append(np.percentile(slopes, 99))
    assert steepest[1] > 1.25 * steepest[0]      # about sqrt(2) per halving of h
    assert typical[1] < 1.1 * typical[0]         # bounded away from the corners
