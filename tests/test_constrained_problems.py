"""The constrained test problems: definitions checked against scipy's solvers and AD.

A transcription error in a Hock–Schittkowski problem shows as a published optimum that
scipy's SLSQP does not reach from the published start, or a published minimiser that is
infeasible; the scalable problems' solutions known by construction are checked the same way
at small sizes.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.optimize import LinearConstraint, approx_fprime, minimize

import newtonad as nad
from newtonad.problems import constrained
from newtonad.problems.minpack2 import surface_area

HS = [name for name in constrained.names() if name.startswith("hs")]
SCALABLE = {"chained-rosenbrock-trig-exp": 20, "cubic-control": 40,
            "loaded-surface-volume": 64}


def test_the_collection_has_fifteen_hock_schittkowski_problems_of_every_kind():
    problems = [constrained.get(name) for name in HS]
    assert len(problems) >= 15
    assert any(p.equalities and not p.inequalities for p in problems)
    assert any(p.inequalities and not p.equalities for p in problems)
    assert any(p.inequalities and p.equalities for p in problems)
    assert any(p.bounds is not None for p in problems)


@pytest.mark.parametrize("name", HS)
def test_published_minimiser_is_feasible_and_has_the_published_value(name):
    p = constrained.get(name)
    # the published digits (7 or so) bound how feasible the printed point can be
    assert p.violation(p.xstar) <= 2e-6
    assert float(p.fun(p.xstar)) == pytest.approx(p.fstar, abs=1e-6 * (1 + abs(p.fstar)))


@pytest.mark.parametrize("name", HS)
def test_slsqp_reaches_the_published_optimum_from_the_published_start(name):
    p = constrained.get(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = minimize(p.fun, p.x0, method="SLSQP", constraints=p.constraints,
                       bounds=p.bounds, options={"maxiter": 1000})
    assert p.violation(res.x) <= 1e-5  # SLSQP's default ftol is 1e-6
    assert res.fun == pytest.approx(p.fstar, abs=1e-5 * (1 + abs(p.fstar)))


@pytest.mark.parametrize("name", HS + list(SCALABLE))
def test_objective_and_constraints_trace_with_exact_derivatives(name):
    p = constrained.get(name, SCALABLE.get(name))
    x = p.x0 + 0.1 * np.linspace(0.3, 0.9, p.n)  # off any symmetric point
    g = nad.grad(p.fun, engine="numpy")(x)
    assert_allclose(g, approx_fprime(x, p.fun, 1e-7), rtol=1e-4, atol=1e-5)
    for c in p.constraints:
        if isinstance(c, LinearConstraint):
            continue
        J = nad.jacobian(c.fun, engine="numpy")(x)
        fd = np.array([approx_fprime(x, lambda z, i=i, c=c: c.fun(z)[i], 1e-7)
                       for i in range(np.size(c.fun(x)))])
        assert_allclose(J.reshape(fd.shape), fd, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", list(SCALABLE))
def test_scalable_solution_known_by_construction_is_the_one_slsqp_finds(name):
    p = constrained.get(name, SCALABLE[name])
    assert p.violation(p.xstar) <= 1e-12
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = minimize(p.fun, p.x0, method="SLSQP", constraints=p.constraints,
                       options={"maxiter": 2000, "ftol": 1e-13})
    assert res.fun == pytest.approx(p.fstar, abs=1e-8 * (1 + abs(p.fstar)))
    assert_allclose(res.x, p.xstar, atol=1e-3)


def test_surface_gradient_written_by_hand_is_the_area_s_gradient():
    # the load of loaded-surface-volume comes from this hand-written gradient
    rng = np.random.default_rng(3)
    u = rng.standard_normal((6, 6))
    h = 0.2
    g = constrained._surface_area_gradient(u, h)
    fd = approx_fprime(u.ravel(), lambda v: surface_area(v.reshape(6, 6), h),
                       1e-7)
    assert_allclose(g.ravel(), fd, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", ["chained-rosenbrock-trig-exp", "cubic-control"])
def test_scalable_constraint_jacobians_are_banded_at_a_hundred_thousand_variables(name):
    p = constrained.get(name, 100_000)
    (c,) = p.constraints
    pattern = nad.jacobian_sparsity(c.fun)(p.x0)
    assert pattern.shape == (np.size(c.lb), p.n)
    assert pattern.sum(axis=1).max() <= 3
    assert np.isfinite(p.fun(p.x0)) and p.violation(p.xstar) <= 1e-12


def test_newtonad_minimize_with_the_problem_s_constraints_reaches_hs071():
    p = constrained.get("hs071")
    res = nad.minimize(p.fun, p.x0, method="SLSQP", constraints=p.constraints,
                       bounds=p.bounds, options={"ftol": 1e-12})
    assert res.fun == pytest.approx(p.fstar, rel=1e-7)
    assert_allclose(res.x, p.xstar, atol=1e-5)


def test_lookup_errors_name_the_fix():
    with pytest.raises(KeyError, match="known: .*hs071"):
        constrained.get("hs999")
    with pytest.raises(ValueError, match="fixed size"):
        constrained.get("hs071", n=10)
    with pytest.raises(ValueError, match="perfect square"):
        constrained.get("loaded-surface-volume", n=10)
