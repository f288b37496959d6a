"""auglag's subproblems start warm: the trust radius and the incomplete Cholesky factor of
one subproblem are carried into the next (newtonad.solvers.auglag, module docstring).

What is checked is what the warm start must not change — the solution, its KKT
conditions, the same bits on every run — and that it is really used: the next subproblem
starts with the radius the last one ended with, and fewer factors are made than tron
iterations are run.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.optimize import Bounds, NonlinearConstraint

from newtonad.problems import constrained
from newtonad.solvers import auglag
from newtonad.solvers.auglag import minimize_auglag
from newtonad.solvers.monitor import watch


def _solve(p, **options):
    return minimize_auglag(p.fun, p.x0, constraints=p.constraints, bounds=p.bounds, **options)


@pytest.mark.parametrize("name, n", [("cubic-control", 2000),
                                     ("chained-rosenbrock-trig-exp", 2000),
                                     ("loaded-surface-volume", 400)])
def test_warm_subproblems_reach_the_known_solution_with_a_kkt_point(name, n):
    p = constrained.get(name, n)
    res = _solve(p)
    assert res.success, res.message
    assert p.violation(res.x) <= 1e-8
    assert abs(res.fun - p.fstar) <= 1e-6 * (1 + abs(p.fstar))
    assert_allclose(res.x, p.xstar, atol=1e-4)
    # the Lagrangian's gradient with the reported multipliers vanishes
    assert np.max(np.abs(res.lagrangian_grad)) <= 1e-7


def test_the_same_bits_on_every_run():
    p = constrained.get("cubic-control", 2000)
    first, second = _solve(p), _solve(p)
    assert first.x.tobytes() == second.x.tobytes()
    assert first.inner_iterations == second.inner_iterations


def test_each_subproblem_starts_with_the_radius_the_last_one_ended_with():
    p = constrained.get("cubic-control", 2000)
    rows = []
    with watch(rows.append):
        res = _solve(p)
    starts = [i for i, row in enumerate(rows) if row.k == 0]
    assert len(starts) == res.outer_iterations >= 2
    grown = 0
    for start in starts[1:]:
        ended, began = rows[start - 1].step, rows[start].step
        if began == pytest.approx(ended, rel=1e-12):
            continue
        # the penalty grew by 10 in between: the radius (energy norm) by sqrt(10)
        assert began == pytest.approx(ended * math.sqrt(10.0), rel=1e-12)
        grown += 1
    assert grown < res.outer_iterations - 1  # most subproblems keep it as it is


def test_an_explicit_initial_radius_is_the_caller_s():
    p = constrained.get("cubic-control", 400)
    rows = []
    with watch(rows.append):
        res = _solve(p, inner_options={"initial_trust_radius": 0.5})
    assert res.success, res.message
    assert {row.step for row in rows if row.k == 0} == {0.5}


def test_fewer_factors_than_tron_iterations_and_the_same_solution(monkeypatch):
    made = []
    original = auglag._kept_factor_class

    def recording():
        cls = original()

        class Recorded(cls):
            def __init__(self):
                super().__init__()
                made.append(self)
        return Recorded

    monkeypatch.setattr(auglag, "_kept_factor_class", recording)
    p = constrained.get("cubic-control", 4000)
    kept = _solve(p)
    (factor,) = made
    assert kept.success, kept.message
    assert 1 <= factor.factorisations < kept.nit, (factor.factorisations, kept.nit)
    # a new factor at every iterate (the named "ichol" of tron): the same KKT point
    fresh = _solve(p, inner_options={"preconditioner": "ichol"})
    assert fresh.success, fresh.message
    assert_allclose(kept.x, fresh.x, atol=1e-6)


def test_bounds_and_an_inequality_with_a_kept_factor():
    # a chain under a linear load in the box [-0.45, 0.45], its squared norm at most n / 8
    # (a dense row: the low-rank preconditioner, kept too): at the solution the bounds
    # hold many variables and the inequality is active
    n = 600
    load = np.linspace(-3.0, 3.0, n)

    def fun(z):
        return 0.5 * np.sum((z[1:] - z[:-1]) ** 2) + load @ z

    ball = NonlinearConstraint(lambda z: np.stack([np.sum(z ** 2)]), -np.inf, n / 8)
    box = Bounds(np.full(n, -0.45), np.full(n, 0.45))
    kept = minimize_auglag(fun, np.zeros(n), constraints=ball, bounds=box)
    plain = minimize_auglag(fun, np.zeros(n), constraints=ball, bounds=box,
                            inner_options={"preconditioner": None})
    for res in (kept, plain):
        assert res.success, res.message
        assert res.constr_violation <= 1e-8
    assert_allclose(kept.x, plain.x, atol=1e-6)
    assert np.count_nonzero(np.abs(kept.x) == 0.45) > n / 4
    assert float(np.sum(kept.x ** 2)) == pytest.approx(n / 8, abs=1e-6)
