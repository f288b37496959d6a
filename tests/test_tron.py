"""method="tron": bound-constrained trust-region Newton (Lin & Moré 1999).

The objectives are hand-coded (``tests/builders.py``) or small Hock–Schittkowski
problems with published solutions, run on the NumPy engine (no kernels to compile).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.optimize as so
from numpy.testing import assert_allclose
from scipy.optimize import Bounds

import newtonad as nad
from newtonad.solvers import minimize
from newtonad.solvers.bounds import breakpoints, parse_bounds, projected_gradient
from newtonad.solvers.tron import energy_cg

from .builders import quadratic, rosen_start, rosenbrock


def _objective(f):
    return nad.Objective(f, engine="numpy")


def _projected_gradient_norm(x, g, lb, ub):
    """‖P[x - g] - x‖, written out here (not the solver's helper)."""
    return float(np.linalg.norm(np.clip(x - g, lb, ub) - x))


# Hock & Schittkowski, "Test examples for nonlinear programming codes" (1981): problems
# with bounds only, their published solutions and the variables at a bound there.
def hs3(x):
    return x[1] + 1e-5 * (x[1] - x[0]) ** 2


def hs4(x):
    return (x[0] + 1.0) ** 3 / 3.0 + x[1]


def hs5(x):
    return np.sin(x[0] + x[1]) + (x[0] - x[1]) ** 2 - 1.5 * x[0] + 2.5 * x[1] + 1.0


def hs45(x):
    return 2.0 - np.prod(x) / 120.0


HS = {
    "hs3": (hs3, [10.0, 1.0], [(None, None), (0.0, None)], [0.0, 0.0], 0.0, 1),
    "hs4": (hs4, [1.125, 0.125], [(1.0, None), (0.0, None)], [1.0, 0.0], 8.0 / 3.0, 2),
    "hs5": (hs5, [0.0, 0.0], [(-1.5, 4.0), (-3.0, 3.0)],
            [0.5 - math.pi / 3.0, -0.5 - math.pi / 3.0],
            -math.sqrt(3.0) / 2.0 - math.pi / 3.0, 0),
    "hs45": (hs45, [2.0] * 5, [(0.0, i) for i in range(1, 6)], [1.0, 2.0, 3.0, 4.0, 5.0],
             1.0, 5),
}


@pytest.mark.parametrize("name", sorted(HS))
def test_hock_schittkowski_optima(name):
    f, x0, bounds, xstar, fstar, nactive = HS[name]
    res = nad.minimize(_objective(f), np.array(x0), method="tron", bounds=bounds,
                       options={"gtol": 1e-9})
    assert res.success, res.message
    assert res.fun == pytest.approx(fstar, abs=1e-7)
    assert_allclose(res.x, xstar, atol=1e-4)
    assert res.nactive == nactive
    lb, ub = parse_bounds(bounds, len(x0))
    assert np.all(res.x >= lb) and np.all(res.x <= ub)
    assert _projected_gradient_norm(res.x, res.jac, lb, ub) < 1e-9
    for key in ("x", "fun", "jac", "nit", "nfev", "njev", "nhev", "status", "message"):
        assert key in res


def _bounded_quadratic(n=40, seed=0):
    """A strictly convex quadratic on [-1, 1]^n whose unconstrained minimiser lies outside
    the box in many coordinates; tridiagonal Hessian."""
    rng = np.random.default_rng(seed)
    off = np.full(n - 1, -1.0)
    a = np.diag(np.full(n, 4.0)) + np.diag(off, 1) + np.diag(off, -1)
    b = 3.0 * rng.standard_normal(n)
    return a, b, np.full(n, -1.0), np.full(n, 1.0)


def test_active_set_matches_an_independent_solve():
    a, b, lb, ub = _bounded_quadratic()
    res = minimize(quadratic(a, b), np.zeros(b.size), method="tron", bounds=Bounds(lb, ub),
                   options={"gtol": 1e-10})
    assert res.success
    # the KKT conditions, checked directly: g_i = 0 inside, g_i >= 0 at l, <= 0 at u
    g = a @ res.x + b
    inside = (res.x > lb) & (res.x < ub)
    assert np.all(np.abs(g[inside]) < 1e-8)
    assert np.all(g[res.x <= lb] >= -1e-8) and np.all(g[res.x >= ub] <= 1e-8)
    ref = so.minimize(lambda x: 0.5 * x @ a @ x + b @ x, np.zeros(b.size), jac=lambda x: a @ x + b,
                      method="L-BFGS-B", bounds=Bounds(lb, ub),
                      options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 10_000})
    assert_allclose(res.x, ref.x, atol=1e-6)
    active = ~inside
    assert res.nactive == int(active.sum()) > 0
    assert np.array_equal(active, (ref.x <= lb + 1e-9) | (ref.x >= ub - 1e-9))


@pytest.mark.parametrize("preconditioner", [None, "ichol"])
def test_torsion_active_set_is_the_one_of_a_1e_12_solve(preconditioner):
    # issue's clause: at the target tolerance (1e-6 x the initial projected gradient) the
    # active set is exactly the one of a solve to 1e-12 x, whose KKT signs are checked
    from newtonad import problems

    p = problems.get("torsion", 1600)
    lb, ub = p.bounds.lb, p.bounds.ub
    x0 = np.clip(p.x0, lb, ub)
    obj = _objective(p.fun)
    pg0 = _projected_gradient_norm(x0, obj.jac(x0), lb, ub)
    runs = [nad.minimize(_objective(p.fun), x0, method="tron", bounds=p.bounds,
                         options={"gtol": rel * pg0, "preconditioner": preconditioner})
            for rel in (1e-6, 1e-12)]
    target, reference = runs
    assert reference.success and _projected_gradient_norm(
        reference.x, obj.jac(reference.x), lb, ub) <= 1e-12 * pg0
    g = obj.jac(reference.x)
    at_lower, at_upper = reference.x <= lb, reference.x >= ub
    assert np.all(g[at_lower] >= 0.0) and np.all(g[at_upper] <= 0.0)
    active = [(r.x <= lb) | (r.x >= ub) for r in runs]
    assert 0 < active[1].sum() < p.n
    assert np.array_equal(active[0], active[1])


def test_preconditioned_tron_finds_the_same_point():
    n = 30
    a, b, lb, ub = _bounded_quadratic(n, seed=3)
    def f(x):
        return 0.5 * (4.0 * np.sum(x * x) - 2.0 * np.sum(x[1:] * x[:-1])) + np.dot(b, x)
    plain = nad.minimize(_objective(f), np.zeros(n), method="tron", bounds=Bounds(lb, ub),
                         options={"gtol": 1e-10})
    for kind in ("diagonal", "ichol"):
        res = nad.minimize(_objective(f), np.zeros(n), method="tron", bounds=Bounds(lb, ub),
                           options={"gtol": 1e-10, "preconditioner": kind})
        assert res.success
        assert_allclose(res.x, plain.x, atol=1e-8)
        assert res.nactive == plain.nactive


@pytest.mark.parametrize("bounds, match", [
    ([(1.0, 0.0), (0.0, 1.0)], "An upper bound is less than the corresponding lower bound"),
    ([(0.0, 1.0)] * 3, "The number of bounds is not compatible with the length of `x0`"),
    ([(np.nan, 1.0), (0.0, 1.0)], "nan"),
    (Bounds([0.0, 0.0], [1.0, np.nan]), "nan"),
    (Bounds([0.0, 0.0, 0.0], [1.0, 1.0, 1.0]), "number of bounds"),
    (3.0, "sequence of"),
])
def test_bad_bounds_raise(bounds, match):
    with pytest.raises(ValueError, match=match):
        minimize(rosenbrock(), np.zeros(2), method="tron", bounds=bounds)


def test_bad_bounds_messages_are_scipys():
    for bounds in ([(1.0, 0.0), (0.0, 1.0)], [(0.0, 1.0)] * 3):
        with pytest.raises(ValueError) as ours:
            minimize(rosenbrock(), np.zeros(2), method="tron", bounds=bounds)
        with pytest.raises(ValueError) as theirs:
            so.minimize(so.rosen, np.zeros(2), method="L-BFGS-B", bounds=bounds)
        assert str(theirs.value) in str(ours.value)


def test_x0_outside_is_projected_as_l_bfgs_b_does():
    lb, ub = np.array([-0.5, 2.0]), np.array([0.5, 3.0])
    res = minimize(rosenbrock(), np.array([-1.2, 1.0]), method="tron", bounds=Bounds(lb, ub),
                   options={"return_all": True})
    assert_allclose(res.allvecs[0], [-0.5, 2.0])
    assert res.success
    ref = so.minimize(so.rosen, np.array([-1.2, 1.0]), jac=so.rosen_der, method="L-BFGS-B",
                      bounds=Bounds(lb, ub), options={"gtol": 1e-12, "ftol": 1e-15})
    assert_allclose(res.x, ref.x, atol=1e-5)


def test_callback_sees_feasible_iterates_and_can_stop():
    lb, ub = np.zeros(4), np.full(4, 0.6)
    seen = []

    def callback(intermediate_result):
        seen.append(intermediate_result.x.copy())
        if len(seen) == 3:
            raise StopIteration

    res = minimize(rosenbrock(), rosen_start(4), method="tron", bounds=Bounds(lb, ub),
                   callback=callback)
    assert res.status == 99 and res.nit == 3 and len(seen) == 3
    assert all(np.all(x >= lb) and np.all(x <= ub) for x in seen)


def test_unbounded_is_a_trust_region_newton_method():
    # a convex quadratic: truncated-Newton steps (CG to a relative residual of at most
    # 0.1), each cutting the gradient by that factor once the radius allows it
    rng = np.random.default_rng(1)
    q = rng.standard_normal((6, 6))
    a = q @ q.T + 6.0 * np.eye(6)
    b = rng.standard_normal(6)
    res = minimize(quadratic(a, b), np.zeros(6), method="tron",
                   options={"initial_trust_radius": 1e3, "gtol": 1e-10})
    assert res.success and res.nit <= 5
    assert_allclose(res.x, np.linalg.solve(a, -b), rtol=1e-8)
    # Rosenbrock from the standard start, with and without infinite bounds: the same run
    free = minimize(rosenbrock(), rosen_start(2), method="tron", options={"gtol": 1e-8})
    inf = minimize(rosenbrock(), rosen_start(2), method="tron", options={"gtol": 1e-8},
                   bounds=Bounds(-np.inf, np.inf))
    assert free.success and free.nactive == 0
    assert_allclose(free.x, np.ones(2), atol=1e-6)
    assert free.nit == inf.nit and np.array_equal(free.x, inf.x)


def test_method_none_with_bounds_stays_scipys_choice():
    from newtonad.solvers.minimize import choose_method

    assert choose_method(None, [(0, 1)], ()) == "L-BFGS-B"
    assert choose_method("tron", [(0, 1)], ()) == "tron"


def test_energy_cg_and_breakpoints():
    a = np.diag([1.0, 10.0, 100.0])
    b = np.array([1.0, 1.0, 1.0])
    inside = energy_cg(lambda v: a @ v, b, 10.0, 1e-12, 10)
    assert not inside.on_boundary
    assert_allclose(inside.d, -np.linalg.solve(a, b), rtol=1e-10)
    edge = energy_cg(lambda v: a @ v, b, 0.1, 1e-12, 10)
    assert edge.on_boundary and np.sqrt(edge.d @ a @ edge.d) == pytest.approx(0.1)
    negative = energy_cg(lambda v: -a @ v, b, 2.0, 1e-12, 10)
    assert negative.on_boundary and np.linalg.norm(negative.d) == pytest.approx(2.0)
    x, lb, ub = np.zeros(3), np.array([-1.0, -np.inf, -2.0]), np.array([1.0, 0.5, np.inf])
    first, last = breakpoints(x, np.array([2.0, 1.0, -1.0]), lb, ub)
    assert (first, last) == (0.5, 2.0)
    assert breakpoints(x, np.array([0.0, 0.0, 1.0]), lb, ub) == (math.inf, math.inf)
    pg = projected_gradient(np.array([-1.0, 0.5, 0.0]), np.array([2.0, -3.0, 4.0]), lb, ub)
    assert_allclose(pg, [0.0, 0.0, 4.0])


def test_energy_cg_shortens_the_newton_step_in_the_energy_norm():
    a = np.diag([1.0, 10.0, 100.0])
    b = np.array([1.0, 1.0, 1.0])
    newton = -np.linalg.solve(a, b)
    energy = math.sqrt(newton @ a @ newton)
    inside = energy_cg(lambda v: a @ v, b, 2.0 * energy, 1e-12, 10)
    assert not inside.on_boundary
    assert_allclose(inside.d, newton, rtol=1e-10)
    # a radius below the Newton step's energy norm: the Newton direction, on the boundary
    # (Steihaug's CG leaves along its first, gradient-like directions instead)
    short = energy_cg(lambda v: a @ v, b, 0.1 * energy, 1e-12, 10)
    assert short.on_boundary
    assert_allclose(short.d, 0.1 * newton, rtol=1e-10)
    assert math.sqrt(short.d @ a @ short.d) == pytest.approx(0.1 * energy)
    negative = energy_cg(lambda v: -a @ v, b, 2.0, 1e-12, 10)
    assert negative.on_boundary and np.linalg.norm(negative.d) == pytest.approx(2.0)


@pytest.mark.parametrize("name, most", [("obstacle", None), ("minimal-surface", 40)])
def test_newton_iterations_do_not_grow_with_the_grid(name, most):
    # Lin & Moré's observation: the iterations on a grid problem essentially independent
    # of n; here n = 100² and 200² with the default (incomplete Cholesky) preconditioner.
    # With the Euclidean radius update and Steihaug's CG in the factor's norm, obstacle
    # took 11 and 43 iterations, minimal-surface (no bounds) 75 and 146.
    from newtonad import problems

    counts = []
    for n in (10_000, 40_000):
        p = problems.get(name, n)
        obj = _objective(p.fun)
        lb, ub = parse_bounds(p.bounds, n)
        x0 = np.clip(p.x0, lb, ub)
        pg0 = _projected_gradient_norm(x0, obj.jac(x0), lb, ub)
        res = minimize(obj, p.x0, method="tron", bounds=p.bounds,
                       options={"gtol": 1e-6 * pg0})
        assert res.success
        assert _projected_gradient_norm(res.x, obj.jac(res.x), lb, ub) < 1e-6 * pg0
        counts.append(res.nit)
    assert counts[1] <= 2 * counts[0], counts
    if most is not None:
        assert max(counts) <= most, counts


def test_disp_table_and_max_time(capsys):
    lb, ub = np.zeros(4), np.full(4, 0.6)
    res = minimize(rosenbrock(), rosen_start(4), method="tron", bounds=Bounds(lb, ub),
                   options={"disp": True})
    out = capsys.readouterr().out
    assert res.success and "radius" in out.splitlines()[0]
    assert f"Iterations: {res.nit}" in out
    stopped = minimize(rosenbrock(), rosen_start(4), method="tron", bounds=Bounds(lb, ub),
                       options={"max_time": 0.0})
    assert stopped.status == 4 and stopped.nit == 0 and not stopped.success
