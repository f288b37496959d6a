"""The preconditioners of the Newton-CG-type methods: diagonal and incomplete Cholesky."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import sparse

import newtonad as nad
from newtonad.solvers import minimize
from newtonad.solvers.ichol import fill_reducing_order, incomplete_cholesky
from newtonad.solvers.preconditioners import (
    DiagonalPreconditioner,
    LowRankUpdate,
    SparsePlusLowRank,
    make_preconditioner,
    precondition_products,
    restrict,
    restrict_order,
)
from newtonad.solvers.tron import energy_cg

from .builders import quadratic


def _random_spd(n=25, seed=0):
    rng = np.random.default_rng(seed)
    a = sparse.random(n, n, density=0.15, random_state=seed).toarray()
    a = a + a.T
    return sparse.csr_array(a + np.diag(np.abs(a).sum(axis=1) + 1.0 + rng.random(n)))


def _dense_m(pre, n):
    """M⁻¹ column by column from ``solve``, and M from C (through ``right``/``left``)."""
    eye = np.eye(n)
    m_inv = np.column_stack([pre.solve(e) for e in eye])
    c_inv = np.column_stack([pre.left(e) for e in eye])          # C⁻¹
    c_inv_t = np.column_stack([pre.right(e) for e in eye])       # C⁻ᵀ
    return m_inv, c_inv, c_inv_t


def test_ichol_with_full_fill_is_cholesky():
    a = _random_spd()
    ic = incomplete_cholesky(a, fill=a.shape[0])
    assert ic.shift == 0.0
    assert_allclose(ic.factor().toarray(), np.linalg.cholesky(a.toarray()), atol=1e-12)
    # an arrowhead with the dense row first: every later column fills in completely
    n = 120
    arrow = np.diag(np.full(n, float(n)))
    arrow[0, 1:] = arrow[1:, 0] = 1.0
    ic = incomplete_cholesky(sparse.csr_array(arrow), fill=n)
    assert_allclose(ic.factor().toarray(), np.linalg.cholesky(arrow), atol=1e-12)
    limited = incomplete_cholesky(sparse.csr_array(arrow), fill=3).factor()
    # columns after the first have no entries of their own below the diagonal: 3 fill
    assert np.diff(limited.indptr)[0] == n and np.all(np.diff(limited.indptr)[1:] <= 4)
    assert np.linalg.eigvalsh((limited @ limited.T).toarray()).min() > 0


def test_ichol_without_fill_is_exact_on_a_tridiagonal_matrix():
    # a tridiagonal SPD matrix has a bidiagonal Cholesky factor: nothing to drop
    n = 40
    a = sparse.diags_array([np.full(n - 1, -1.0), np.linspace(2.5, 4.0, n),
                            np.full(n - 1, -1.0)], offsets=[-1, 0, 1], format="csr")
    ic = incomplete_cholesky(a, fill=0)
    c = ic.factor().toarray()
    assert_allclose(c @ c.T, a.toarray(), atol=1e-12)
    # and on a 2-D Laplacian it keeps only A's own pattern below the diagonal
    t = sparse.diags_array([-1.0, 2.0, -1.0], offsets=[-1, 0, 1], shape=(6, 6))
    lap = sparse.csr_array(sparse.kron(t, sparse.eye(6)) + sparse.kron(sparse.eye(6), t))
    pattern = sparse.tril(lap).toarray() != 0
    factor = incomplete_cholesky(lap, fill=0).factor().toarray() != 0
    assert np.all(pattern[factor])


@pytest.mark.parametrize("kind", ["diagonal", "ichol"])
def test_preconditioners_are_spd_and_consistent(kind):
    n = 25
    a = _random_spd(n).toarray()
    a -= 4.0 * np.eye(n)  # indefinite: ichol must shift, the diagonal take |H_ii|
    assert np.linalg.eigvalsh(a).min() < 0
    pre = make_preconditioner(kind, sparse.csr_array(a))
    m_inv, c_inv, c_inv_t = _dense_m(pre, n)
    assert_allclose(m_inv, m_inv.T, atol=1e-10)
    assert np.linalg.eigvalsh(m_inv).min() > 0
    assert_allclose(c_inv_t, c_inv.T, atol=1e-12)         # right is left's transpose
    assert_allclose(m_inv, c_inv_t @ c_inv, atol=1e-10)   # M⁻¹ = C⁻ᵀ C⁻¹
    if kind == "ichol":
        assert pre.shift > 0.0


def test_ordered_ichol_factorises_the_matrix_in_the_callers_order():
    a = _random_spd(30, seed=3)
    order = np.random.default_rng(1).permutation(30)
    ic = incomplete_cholesky(a, fill=30, order=order)
    c = ic.factor().toarray()
    assert_allclose(c @ c.T, a.toarray(), atol=1e-12)  # exact with full fill
    # in its own rows C is lower triangular: it is Cholesky of the permuted matrix
    assert_allclose(np.triu(c[order], 1), 0.0)
    limited = incomplete_cholesky(a, fill=1, order=order)
    m_inv, c_inv, c_inv_t = _dense_m(limited, 30)
    c = limited.factor().toarray()
    assert_allclose(c_inv, np.linalg.inv(c), atol=1e-10)
    assert_allclose(c_inv_t, np.linalg.inv(c.T), atol=1e-10)
    assert_allclose(m_inv, np.linalg.inv(c @ c.T), atol=1e-10)


def test_ichol_reads_unsorted_rows_and_duplicate_entries():
    a = _random_spd(30, seed=4)
    rng = np.random.default_rng(5)
    data, indices = a.data.copy(), a.indices.copy()
    for r in range(30):  # each row's entries shuffled
        span = slice(a.indptr[r], a.indptr[r + 1])
        p = rng.permutation(a.indptr[r + 1] - a.indptr[r])
        data[span], indices[span] = data[span][p], indices[span][p]
    shuffled = sparse.csr_array((data, indices, a.indptr.copy()), shape=a.shape)
    # and every entry split into two halves: a non-canonical matrix with the same sum
    halves = sparse.csr_array((np.repeat(data / 2.0, 2), np.repeat(indices, 2),
                               2 * a.indptr), shape=a.shape)
    assert not shuffled.has_sorted_indices and not halves.has_canonical_format
    expected = incomplete_cholesky(a, fill=2).factor().toarray()
    for m in (shuffled, halves):
        assert_allclose(incomplete_cholesky(m, fill=2).factor().toarray(), expected,
                        atol=1e-13)


def _split_chain(n=400, rho=1e4):
    """The Hessian of a penalised chain whose two halves are coupled entrywise (the
    states and controls of a discretised control problem): ``x_i`` with ``x_{i+n/2}``."""
    half = n // 2
    i = np.arange(half - 1)
    rows = np.concatenate([i, i + 1, i, np.arange(half)])
    cols = np.concatenate([i + 1, i, i + half, np.arange(half) + half])
    j = sparse.csr_array((np.ones(rows.size), (rows, cols)), shape=(half, n))
    return sparse.csr_array(rho * (j.T @ j) + sparse.eye_array(n))


def test_the_ordering_restores_the_coupling_the_limited_factor_drops():
    h = _split_chain()
    order = fill_reducing_order(h)
    assert order is not None and np.array_equal(np.sort(order), np.arange(h.shape[0]))
    b = np.random.default_rng(0).standard_normal(h.shape[0])

    def iterations(pre):
        op = precondition_products(pre, lambda v: h @ v)
        rhs = pre.left(b)
        return energy_cg(op, rhs, 1e20, 1e-8 * np.linalg.norm(rhs), 10_000).iterations

    natural = iterations(make_preconditioner("ichol", h, order=None))
    chosen = iterations(make_preconditioner("ichol", h))
    assert 5 * chosen < natural
    # a tridiagonal matrix is already as narrow as its rows: kept in its own order
    t = sparse.diags_array([-1.0, 3.0, -1.0], offsets=[-1, 0, 1], shape=(50, 50),
                           format="csr")
    assert fill_reducing_order(t) is None


def test_restricted_order_is_the_induced_permutation():
    h = _split_chain(40)
    order = fill_reducing_order(h)
    free = np.random.default_rng(2).random(40) < 0.6
    sub = restrict_order(order, free)
    index = np.flatnonzero(free)
    assert np.array_equal(index[sub], order[free[order]])  # the same variables, same order
    pre = make_preconditioner("ichol", restrict(h, free), sub)
    c = pre.factor().toarray()
    assert np.linalg.eigvalsh(c @ c.T).min() > 0
    assert restrict_order(None, free) is None
    # the submatrix's factor read from the whole matrix is the factor of the submatrix
    for o in (sub, None):
        whole = incomplete_cholesky(h, fill=2, order=o, subset=index)
        alone = incomplete_cholesky(restrict(h, free), fill=2, order=o)
        assert_allclose(whole.factor().toarray(), alone.factor().toarray(), atol=1e-13)
        v = np.arange(index.size, dtype=float)
        assert_allclose(whole.solve(v), alone.solve(v), atol=1e-12)
    for kind in ("diagonal", "ichol"):
        via = make_preconditioner(kind, h, None, subset=index)
        formed = make_preconditioner(kind, restrict(h, free), None)
        assert_allclose(via.solve(v), formed.solve(v), atol=1e-12)


def test_diagonal_preconditioner_replaces_zero_entries():
    pre = DiagonalPreconditioner(np.array([4.0, 0.0, -9.0, np.nan]))
    assert_allclose(pre.d, [4.0, 9.0, 9.0, 9.0])
    assert_allclose(pre.left(np.array([2.0, 3.0, 3.0, 3.0])), [1.0, 1.0, 1.0, 1.0])


def _grid_quadratic(m=24):
    """An anisotropic, badly scaled 2-D diffusion energy on an m-by-m grid: CG without
    a preconditioner needs many iterations."""
    w = np.logspace(0, 3, m)
    c = np.random.default_rng(0).standard_normal((m, m))

    def f(x):
        u = x.reshape(m, m)
        dx = u[1:, :] - u[:-1, :]
        dy = u[:, 1:] - u[:, :-1]
        return (0.5 * np.sum(w[1:, None] * dx * dx) + 0.5 * np.sum(w[None, 1:] * dy * dy)
                + 0.5 * np.sum(u * u) - np.sum(c * u))
    return f


def test_preconditioning_cuts_cg_iterations():
    m = 24
    obj = nad.Objective(_grid_quadratic(m), engine="numpy")
    x0 = np.zeros(m * m)
    h = obj.sparse_hess(x0)
    g = obj.jac(x0)

    def op(v):
        return h @ v

    plain = energy_cg(op, g, 1e10, 1e-8 * np.linalg.norm(g), 10_000)
    counts = {}
    for kind in ("diagonal", "ichol"):
        pre = make_preconditioner(kind, h)
        b = pre.left(g)
        run = energy_cg(precondition_products(pre, op), b, 1e10,
                          1e-8 * np.linalg.norm(b), 10_000)
        assert_allclose(pre.right(run.d), plain.d, rtol=1e-5, atol=1e-8)
        counts[kind] = run.iterations
    assert counts["diagonal"] < plain.iterations
    assert 3 * counts["ichol"] < plain.iterations
    # and through minimize: the same minimiser with fewer products
    results = {kind: nad.minimize(nad.Objective(_grid_quadratic(m), engine="numpy"), x0,
                                  method=meth, options={"preconditioner": kind, "gtol": 1e-8})
               for meth in ("newton-cg",) for kind in (None, "ichol")}
    assert_allclose(results["ichol"].x, results[None].x, atol=1e-6)
    assert results["ichol"].ncg * 3 < results[None].ncg


@pytest.mark.parametrize("method", ["newton-cg", "trust-ncg", "trust-krylov", "tron"])
def test_preconditioned_methods_solve_a_nonconvex_problem(method):
    def f(x):  # chained Rosenbrock: an indefinite Hessian away from the minimum
        return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    x0 = np.tile([-1.2, 1.0], 4)
    for kind in ("diagonal", "ichol"):
        res = nad.minimize(nad.Objective(f, engine="numpy"), x0, method=method,
                           options={"preconditioner": kind, "gtol": 1e-8})
        assert res.success, (kind, res.message)
        assert np.linalg.norm(res.jac) < 1e-6
        assert res.fun < 4.0  # the global minimum 0 or the local one near 3.98


def test_bad_preconditioner_options():
    with pytest.raises(ValueError, match="'preconditioner' must be one of"):
        minimize(quadratic(np.eye(2), np.ones(2)), np.zeros(2), method="newton-cg",
                 options={"preconditioner": "jacobi"})
    with pytest.raises(ValueError, match="sparse matrix, which a newtonad Objective gives"):
        minimize(quadratic(np.eye(2), np.ones(2)), np.zeros(2), method="trust-ncg",
                 options={"preconditioner": "ichol"})


def test_dense_hessians_are_refused():
    def f(x):  # every variable coupled with every other: a dense Hessian
        return np.sum(x) ** 2 + np.sum(x ** 2)

    with pytest.raises(ValueError, match="too dense"):
        nad.minimize(nad.Objective(f, engine="numpy"), np.ones(1100), method="newton-cg",
                     options={"preconditioner": "diagonal"})


def test_low_rank_update_of_an_exact_factor_is_the_exact_inverse_of_s_plus_u_ut():
    n, rng = 25, np.random.default_rng(3)
    s = _random_spd(n)
    u = rng.standard_normal((n, 3)) * [1.0, 30.0, 1e3]  # a large penalty's column too
    exact = incomplete_cholesky(s, fill=n)  # no entry dropped: C C^T = S
    pre = LowRankUpdate(exact, u)
    h = s.toarray() + u @ u.T
    r = rng.standard_normal(n)
    z = pre.solve(r)
    assert np.linalg.norm(h @ z - r) <= 1e-10 * np.linalg.norm(r) * np.linalg.cond(h) ** 0.5
    # C^-1 H C^-T = I: the factor's two halves belong to M = S + U U^T
    m_inv, c_inv, c_inv_t = _dense_m(pre, n)
    assert_allclose(c_inv_t, c_inv.T, atol=1e-12)
    assert_allclose(c_inv @ h @ c_inv_t, np.eye(n), atol=1e-9)
    # and for an inexact base M0, M = M0 + U U^T exactly (a dot-product check)
    diagonal = DiagonalPreconditioner(s.diagonal())
    m0_plus = np.diag(s.diagonal()) + u @ u.T
    z = LowRankUpdate(diagonal, u).solve(r)
    assert float(r @ z) == pytest.approx(float(r @ np.linalg.solve(m0_plus, r)), rel=1e-10)


def test_sparse_plus_low_rank_preconditions_the_free_rows():
    n, rng = 20, np.random.default_rng(4)
    s, u = _random_spd(n), rng.standard_normal((n, 2))
    kind = SparsePlusLowRank(lambda x: (s, u), "diagonal")
    h = kind.sparse_hessian(n, np.zeros(n))
    free = np.flatnonzero(rng.random(n) < 0.6)
    pre = make_preconditioner(kind, h, None, subset=free)
    m = np.diag(s.diagonal()[free]) + u[free] @ u[free].T
    r = rng.standard_normal(free.size)
    assert_allclose(pre.solve(r), np.linalg.solve(m, r), rtol=1e-10)
    with pytest.raises(ValueError, match="last sparse_hessian"):
        make_preconditioner(kind, s.copy())


def test_a_dense_hessian_as_sparse_plus_low_rank_takes_one_newton_step():
    # H = 2 I + 2 1 1^T: refused as a sparse Hessian (test_dense_hessians_are_refused),
    # exact as S + U U^T, so preconditioned CG needs one product per Newton step
    n = 1100

    def f(x):
        return np.sum(x) ** 2 + np.sum(x ** 2) - np.sum(x * np.arange(n) / n)

    parts = (lambda x: (sparse.diags_array(np.full(n, 2.0)).tocsr(),
                        np.full((n, 1), np.sqrt(2.0))))
    res = nad.minimize(nad.Objective(f, engine="numpy"), np.ones(n), method="newton-cg",
                       options={"preconditioner": SparsePlusLowRank(parts, "diagonal"),
                                "gtol": 1e-9})
    assert res.success, res.message
    assert res.nit == 1 and res.nhev <= 2
