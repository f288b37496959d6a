"""tron's subspace passes: the widened CG set (``subspace_step``) and its helpers.

From MINPACK-2's torsion start (every variable at its upper bound) the release rule
alone frees one grid layer per pass; the widening frees the band in about log2 of its
width. Checked: the graph neighbourhood against scipy's breadth-first distances, the
projected search's failure flag, and on torsion the solution's active set (against a
tight solve) with fewer factorisations than the one-layer-per-pass count.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse
from scipy.sparse.csgraph import shortest_path

import newtonad as nad
from newtonad import problems
from newtonad.solvers.bounds import neighbourhood
from newtonad.solvers.tron import _projected_search


def _random_graph(n: int, seed: int) -> sparse.csr_array:
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, n, 3 * n)
    cols = rng.integers(0, n, 3 * n)
    a = sparse.coo_array((np.ones(rows.size), (rows, cols)), shape=(n, n)).tocsr()
    return sparse.csr_array(a + a.T)


@pytest.mark.parametrize("hops", [0, 1, 2, 5])
def test_neighbourhood_is_the_breadth_first_ball(hops):
    a = _random_graph(300, 1)
    mask = np.zeros(300, dtype=bool)
    mask[[3, 77, 150]] = True
    dist = shortest_path(a, unweighted=True, indices=np.flatnonzero(mask)).min(axis=0)
    assert np.array_equal(neighbourhood(a, mask, hops), dist <= hops)


def test_projected_search_reports_a_failed_decrease():
    # q(s) = gq's + s's/2; x0 sits at its lower bound and d pushes it outwards (the first
    # breakpoint is 0), and along the others d climbs q: no trial decreases q
    w = np.zeros(3)
    gq = np.array([-1.0, 1.0, 1.0])
    d = np.array([-1.0, 1.0, 1.0])
    lb, ub = np.array([0.0, -np.inf, -np.inf]), np.full(3, np.inf)
    step, hstep, used, ok = _projected_search(w, gq, d, lb, ub, lambda v: v, max_trials=3)
    assert not ok and used == 3
    # a descent direction inside the box is accepted at once
    step, hstep, used, ok = _projected_search(w, gq, -0.5 * d, np.full(3, -1.0),
                                              np.full(3, 1.0), lambda v: v)
    assert ok and used == 1 and np.allclose(step, -0.5 * d)


def _active(x, lb, ub):
    return (x <= lb) | (x >= ub)


def test_torsion_widened_passes_find_the_active_set_with_few_factorisations():
    n = 10_000  # m = 100: the one-layer-per-pass rule took 32 factorisations here
    p = problems.get("torsion", n)
    obj = nad.Objective(p.fun, engine="numba")
    res = nad.minimize(obj, p.x0, method="tron", bounds=p.bounds,
                       options={"preconditioner": "ichol", "gtol": 1e-8})
    assert res.success
    tight = nad.minimize(obj, res.x, method="tron", bounds=p.bounds,
                         options={"preconditioner": "ichol", "gtol": 1e-13})
    assert np.array_equal(_active(res.x, p.bounds.lb, p.bounds.ub),
                          _active(tight.x, p.bounds.lb, p.bounds.ub))
    assert res.nfactor <= 20
