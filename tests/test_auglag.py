"""method="auglag": the augmented-Lagrangian method on problems with known solutions.

Every Hock–Schittkowski problem of newtonad.problems.constrained is solved to its published
optimum; multipliers follow scipy trust-constr's sign convention (checked against
trust-constr itself); the scalable problems' solutions known by construction are found;
bad input is refused with a message that names the fix.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.optimize import Bounds, LinearConstraint, NonlinearConstraint, minimize

from newtonad.problems import constrained
from newtonad.solvers.auglag import minimize_auglag

HS = [name for name in constrained.names() if name.startswith("hs")]


@pytest.mark.parametrize("name", HS)
def test_hock_schittkowski_problem_solved_to_its_published_optimum(name):
    p = constrained.get(name)
    res = minimize_auglag(p.fun, p.x0, constraints=p.constraints, bounds=p.bounds)
    assert res.success, res.message
    assert res.constr_violation <= 1e-8
    assert p.violation(res.x) <= 1e-8
    assert res.fun == pytest.approx(p.fstar, abs=1e-6 * (1 + abs(p.fstar)))
    # the multipliers close the Lagrangian's gradient, bounds' entry included
    assert np.abs(res.lagrangian_grad).max() <= 1e-6 * (1 + np.abs(res.grad).max())
    assert res.outer_iterations == len(res.inner_iterations)
    assert res.nit == sum(res.inner_iterations) and res.nhev > 0


@pytest.mark.parametrize("name", ["hs071", "hs043", "hs042"])
def test_multipliers_are_trust_constr_s(name):
    p = constrained.get(name)
    res = minimize_auglag(p.fun, p.x0, constraints=p.constraints, bounds=p.bounds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = minimize(p.fun, p.x0, method="trust-constr", constraints=p.constraints,
                       bounds=p.bounds, options={"gtol": 1e-10, "xtol": 1e-12})
    for ours, theirs in zip(res.v, ref.v):
        assert_allclose(ours, theirs, atol=2e-4)


def test_old_dict_form_gives_the_same_answer_as_nonlinear_constraint():
    p = constrained.get("hs071")
    as_dicts = [{"type": "ineq", "fun": lambda x: np.stack([x[0] * x[1] * x[2] * x[3] - 25.0])},
                {"type": "eq", "fun": lambda x, c: np.stack([np.sum(x ** 2) - c]),
                 "args": (40.0,)}]
    res = minimize_auglag(p.fun, p.x0, constraints=as_dicts, bounds=p.bounds)
    assert res.success
    assert_allclose(res.x, p.xstar, atol=1e-5)


def test_two_sided_rows_and_a_linear_constraint_with_a_sparse_matrix():
    # min (x - 3)^2 + (y - 3)^2 with 1 <= x + y <= 2 (a sparse row) and -1 <= x - y <= 1
    from scipy.sparse import csr_array

    def fun(z):
        return np.sum((z - 3.0) ** 2)

    sum_row = LinearConstraint(csr_array(np.array([[1.0, 1.0]])), 1.0, 2.0)
    diff = NonlinearConstraint(lambda z: np.stack([z[0] - z[1]]), -1.0, 1.0)
    res = minimize_auglag(fun, np.array([0.0, 0.0]), constraints=[sum_row, diff])
    assert res.success
    assert_allclose(res.x, [1.0, 1.0], atol=1e-6)
    # the upper side of the sum is active: grad f + J^T v = 0 gives v = 4 on that row
    assert_allclose(res.v[0], [4.0], atol=1e-5)
    assert_allclose(res.v[1], [0.0], atol=1e-6)


@pytest.mark.parametrize("name, n", [("chained-rosenbrock-trig-exp", 200),
                                     ("loaded-surface-volume", 256), ("cubic-control", 100)])
def test_scalable_problem_reaches_the_solution_known_by_construction(name, n):
    p = constrained.get(name, n)
    res = minimize_auglag(p.fun, p.x0, constraints=p.constraints, bounds=p.bounds)
    assert res.success, res.message
    assert_allclose(res.x, p.xstar, atol=1e-5)
    assert res.fun == pytest.approx(p.fstar, abs=1e-7 * (1 + abs(p.fstar)))


def test_bounds_stay_bounds_at_every_subproblem():
    # the bound x >= 2 is active at the solution and never violated on the way
    seen = []
    res = minimize_auglag(lambda z: np.sum(z ** 2), np.array([5.0, 5.0]),
                          constraints=[NonlinearConstraint(lambda z: np.stack([z[0] * z[1]]),
                                                           4.0, np.inf)],
                          bounds=Bounds([2.0, -10.0], [10.0, 10.0]),
                          callback=lambda intermediate_result: seen.append(
                              intermediate_result.x.copy()))
    assert res.success
    assert_allclose(res.x, [2.0, 2.0], atol=1e-6)
    assert all(x[0] >= 2.0 for x in seen) and len(seen) == res.outer_iterations


def test_callback_stop_iteration_ends_the_run_with_status_3():
    p = constrained.get("hs071")

    def stop(intermediate_result):
        raise StopIteration

    res = minimize_auglag(p.fun, p.x0, constraints=p.constraints, bounds=p.bounds,
                          callback=stop)
    assert res.status == 3 and not res.success and res.outer_iterations == 1


def test_infeasible_constraints_end_with_status_5_not_a_hang():
    # x = 0 and x = 1 at once
    res = minimize_auglag(lambda z: np.sum(z ** 2), np.array([0.5]),
                          constraints=[NonlinearConstraint(lambda z: z, 0.0, 0.0),
                                       NonlinearConstraint(lambda z: z, 1.0, 1.0)],
                          max_penalty=1e8)
    assert res.status == 5 and not res.success
    assert "infeasible" in res.message
    # the least violation of x = 0 and x = 1 at once is 1/2, at x = 1/2
    assert res.constr_violation == pytest.approx(0.5, abs=1e-3)


def test_untraceable_constraint_falls_back_with_one_kind_of_warning():
    import newtonad as nad

    def circle(z):
        return np.array([float(z[0]) ** 2 + float(z[1]) ** 2 - 1.0])

    with pytest.warns(nad.TraceFallbackWarning):
        res = minimize_auglag(lambda z: z[0] + z[1], np.array([1.0, 0.5]),
                              constraints=[NonlinearConstraint(circle, 0.0, 0.0)])
    assert res.success, res.message
    assert_allclose(res.x, [-np.sqrt(0.5)] * 2, atol=1e-5)


def test_large_constraint_jacobian_is_returned_sparse():
    from scipy.sparse import issparse

    p = constrained.get("cubic-control", 400)
    res = minimize_auglag(p.fun, p.x0, constraints=p.constraints)
    (J,) = res.jac
    assert issparse(J) and J.shape == (200, 400) and J.nnz <= 3 * 200


@pytest.mark.parametrize("bad, match", [
    ({"constraints": [NonlinearConstraint(lambda z: z, 1.0, 0.0)]}, "lb = 1.0 > ub = 0.0"),
    ({"constraints": [NonlinearConstraint(lambda z: z, np.nan, 0.0)]}, "NaN"),
    ({"constraints": [{"type": "less", "fun": lambda z: z}]}, "'eq' or 'ineq'"),
    ({"bounds": [(0.0, 1.0), (0.0, 1.0)]}, "2 \\(low, high\\) pairs for 1 variables"),
    ({"bounds": Bounds(1.0, 0.0)}, "lower bound 1.0 > upper bound 0.0"),
    ({"gtool": 1e-6}, "no option"),
])
def test_bad_input_is_refused_with_the_fix(bad, match):
    with pytest.raises((ValueError, TypeError), match=match):
        minimize_auglag(lambda z: np.sum(z ** 2), np.array([0.5]), **bad)


def test_minimize_method_auglag_runs_it_with_scipy_s_option_conventions():
    from scipy.optimize import OptimizeWarning

    import newtonad as nad

    p = constrained.get("hs071")
    res = nad.minimize(p.fun, p.x0, method="auglag", constraints=p.constraints,
                       bounds=p.bounds)
    assert res.success and res.fun == pytest.approx(p.fstar, rel=1e-7)
    with pytest.warns(OptimizeWarning, match="Unknown solver options: bogus"):
        nad.minimize(p.fun, p.x0, method="AugLag", constraints=p.constraints,
                     bounds=p.bounds, options={"maxiter": 1, "bogus": 1})
    with pytest.warns(RuntimeWarning, match="not used"):
        nad.minimize(p.fun, p.x0, method="auglag", jac=lambda x: x,
                     constraints=p.constraints, bounds=p.bounds, options={"maxiter": 1})


def test_method_table_lists_auglag_as_a_method_of_constraints_and_bounds():
    from newtonad.solvers.methods import METHODS, method_rows

    entry = METHODS["auglag"]
    assert entry.constraints and entry.bounds and entry.runner().__name__ == "run_constrained"
    assert any(row["method"] == "auglag" for row in method_rows())


def test_a_dense_row_is_preconditioned_as_a_low_rank_term_with_fewer_products():
    from newtonad.solvers.auglag import _as_rows, _Split, dense_rows

    p = constrained.get("loaded-surface-volume", 400)
    split = _Split([_as_rows(c, p.x0) for c in p.constraints])
    assert dense_rows(split, p.x0).tolist() == [0]  # the volume row
    banded = constrained.get("cubic-control", 400)
    assert dense_rows(_Split([_as_rows(c, banded.x0) for c in banded.constraints]),
                      banded.x0).size == 0
    low_rank = minimize_auglag(p.fun, p.x0, constraints=p.constraints)
    plain = minimize_auglag(p.fun, p.x0, constraints=p.constraints,
                            inner_options={"preconditioner": None})
    for res in (low_rank, plain):
        assert res.success, res.message
        assert_allclose(res.x, p.xstar, atol=1e-5)
    assert low_rank.nhev < plain.nhev / 2, (low_rank.nhev, plain.nhev)


def test_nonlinear_dense_rows_as_a_low_rank_term_give_the_unpreconditioned_answer():
    # a chain under a linear load inside a ball, its mean fixed: two dense traced rows, an
    # inequality with curvature (2 mu I) and an equality; convex, so one minimiser
    n = 120
    load = np.cos(np.arange(n))

    def fun(z):
        return 0.5 * np.sum((z[1:] - z[:-1]) ** 2) + load @ z

    constraints = [NonlinearConstraint(lambda z: np.stack([np.sum(z ** 2)]), -np.inf, 1.0),
                   {"type": "eq", "fun": lambda z: np.stack([np.mean(z) - 0.01])}]
    low_rank = minimize_auglag(fun, np.zeros(n), constraints=constraints)
    plain = minimize_auglag(fun, np.zeros(n), constraints=constraints,
                            inner_options={"preconditioner": None})
    assert low_rank.success and plain.success, (low_rank.message, plain.message)
    assert_allclose(low_rank.x, plain.x, atol=1e-6)
    assert float(np.sum(low_rank.x ** 2)) == pytest.approx(1.0, abs=1e-8)  # the ball is active
    assert low_rank.nhev < plain.nhev, (low_rank.nhev, plain.nhev)


def test_default_preconditioner_is_ichol_for_banded_rows_and_none_for_a_dense_row():
    from newtonad.solvers.auglag import _as_rows, _Split, default_preconditioner

    for name, n, expected in [("cubic-control", 400, "ichol"),
                              ("loaded-surface-volume", 400, None)]:
        p = constrained.get(name, n)
        split = _Split([_as_rows(c, p.x0) for c in p.constraints])
        assert default_preconditioner(split, p.x0) == expected
