"""Sparse exact Newton: Objective(f, sparse=True) and sparse trust-exact."""

import numpy as np
import pytest
import scipy.sparse as sp

import newtonad as nad
from newtonad import problems
from newtonad.solvers import sparse_exact, sparse_factors
from newtonad.solvers.exact import MAX_DENSE_N, solve_dense_trs
from newtonad.solvers.minimize import minimize
from newtonad.solvers.sparse_exact import choose_ordering, solve_sparse_trs

ENGINE = "numpy"


def chained_rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


# ---- Objective(f, sparse=True) ---------------------------------------------------------

def test_sparse_hess_equals_dense_hess():
    x = np.linspace(-1.0, 1.5, 40)
    h = nad.Objective(chained_rosenbrock, sparse=True, engine=ENGINE).hess(x)
    assert isinstance(h, sp.csr_array)
    dense = nad.Objective(chained_rosenbrock, engine=ENGINE).hess(x)
    np.testing.assert_allclose(h.toarray(), dense, rtol=1e-13, atol=1e-12)
    assert h.nnz == 3 * 40 - 2  # exactly tridiagonal


def test_sparse_hess_is_one_frame_of_colours_and_pattern_is_cached():
    obj = nad.Objective(chained_rosenbrock, sparse=True, engine=ENGINE)
    x = np.linspace(-1.0, 1.5, 300)
    obj.hess(x)
    assert obj.nhev == 3  # one frame of 3 colours, not 300 identity columns
    calls = []
    from newtonad.ad import sparsity
    original = sparsity.hessian_pattern
    try:
        sparsity.hessian_pattern = lambda program: calls.append(1) or original(program)
        h2 = obj.hess(x + 0.25)
    finally:
        sparsity.hessian_pattern = original
    assert calls == []  # the pattern and colouring were made once, for the program
    dense = nad.Objective(chained_rosenbrock, engine=ENGINE).hess(x + 0.25)
    np.testing.assert_allclose(h2.toarray(), dense, rtol=1e-13, atol=1e-12)


def test_sparse_hess_with_args_and_hvp_agrees():
    def f(x, a):
        return np.sum(a * np.sin(x[1:] * x[:-1])) + np.sum(x ** 4)
    a = np.linspace(0.5, 2.0, 19)
    x = np.linspace(-0.7, 0.9, 20)
    obj = nad.Objective(f, args=(a,), sparse=True, engine=ENGINE)
    h = obj.hess(x)
    v = np.cos(np.arange(20.0))
    np.testing.assert_allclose(h @ v, obj.hessp(x, v), rtol=1e-12, atol=1e-12)
    # against central differences of the gradient
    eps = 1e-6
    fd = (obj.jac(x + eps * v) - obj.jac(x - eps * v)) / (2 * eps)
    np.testing.assert_allclose(h @ v, fd, rtol=1e-6, atol=1e-6)


def test_default_objective_hess_stays_dense():
    h = nad.Objective(chained_rosenbrock, engine=ENGINE).hess(np.ones(5))
    assert isinstance(h, np.ndarray) and h.shape == (5, 5)


def test_hess_sparsity_of_objective():
    pattern = nad.Objective(chained_rosenbrock, engine=ENGINE).hess_sparsity(np.ones(6))
    expected = np.abs(np.subtract.outer(np.arange(6), np.arange(6))) <= 1
    np.testing.assert_array_equal(pattern.toarray(), expected)


# ---- the sparse subproblem solver --------------------------------------------------------

def _random_sparse_symmetric(n, seed, shift):
    rng = np.random.default_rng(seed)
    a = sp.random_array((n, n), density=0.05, rng=rng)
    return sp.csr_array(a + a.T + shift * sp.eye_array(n)), rng.standard_normal(n)


@pytest.mark.parametrize("shift", [3.0, 0.0, -2.0])
@pytest.mark.parametrize("radius", [0.05, 1.0, 100.0])
def test_sparse_trs_matches_dense_trs(shift, radius):
    h, g = _random_sparse_symmetric(60, 1, shift)
    dense = solve_dense_trs(h.toarray(), g, radius)
    for ordering in ("NATURAL", "MMD_AT_PLUS_A", "BANDED", "AMD"):
        sol = solve_sparse_trs(h, g, radius, ordering=ordering)
        # both optimal to 1e-8: the same minimiser of the (generically unique) subproblem
        np.testing.assert_allclose(sol.p, dense.p, rtol=1e-6, atol=1e-6 * radius)
        assert np.linalg.norm(sol.p) <= radius * (1 + 1e-7)


def test_sparse_trs_hard_case():
    # H = diag(-1, 1, 2, ...), g orthogonal to the first eigenvector: the hard case
    n = 30
    h = sp.csr_array(sp.diags_array(np.r_[-1.0, np.linspace(1, 3, n - 1)]))
    g = np.r_[0.0, np.full(n - 1, 0.01)]
    sol = solve_sparse_trs(h, g, 2.0)
    ref = solve_dense_trs(h.toarray(), g, 2.0)
    assert sol.hits_boundary
    model = lambda p: g @ p + 0.5 * p @ (h @ p)  # noqa: E731
    assert model(sol.p) <= model(ref.p) + 1e-7
    assert abs(np.linalg.norm(sol.p) - 2.0) <= 1e-6


def test_ordering_is_banded_for_narrow_bands_and_fill_reducing_for_arrow(monkeypatch):
    n = 50
    tri = sp.csr_array(sp.diags_array([np.ones(n - 1), np.full(n, 4.0), np.ones(n - 1)],
                                      offsets=[-1, 0, 1]))
    assert choose_ordering(tri) == "BANDED"
    assert choose_ordering(sp.csr_array(sp.eye_array(n))) == "BANDED"  # bandwidth 0
    # a wide band with little in it: SuperLU, not a band of 11 diagonals
    wide = sp.csr_array(sp.diags_array([np.ones(n - 10), np.full(n, 4.0), np.ones(n - 10)],
                                       offsets=[-10, 0, 10]))
    assert choose_ordering(wide) in ("NATURAL", "AMD")
    arrow = sp.lil_array((n, n))
    arrow[0, :] = 1.0
    arrow[:, 0] = 1.0
    arrow.setdiag(float(n))
    # a small envelope is factorised in the natural order (the dense path's iterates)
    assert choose_ordering(sp.csr_array(arrow)) == "NATURAL"
    monkeypatch.setattr(sparse_factors, "NATURAL_ENTRIES", 0)
    assert choose_ordering(sp.csr_array(arrow)) == "AMD"  # natural fills in


# ---- trust-exact: sparse path against dense path -----------------------------------------

CASES = [("chained-rosenbrock", 50), ("broyden-tridiagonal", 40), ("minimal-surface", 64),
         ("broyden-banded", 100), ("dixmaanb", 90), ("dixmaanf", 90), ("dixmaank", 90)]


@pytest.mark.parametrize("name,n", CASES + [(name, None) for name in problems.names()])
def test_sparse_path_takes_the_dense_path_iterates(name, n):
    """Every problem at its default size, and larger sparse ones: the same iterates."""
    prob = problems.get(name, n=n)
    runs = {}
    for sparse in (False, True):
        obj = nad.Objective(prob.fun, sparse=sparse, engine=ENGINE)
        xs: list = []
        res = minimize(obj, prob.x0, method="trust-exact",
                       callback=lambda x, xs=xs: xs.append(np.copy(x)))
        runs[sparse] = (res, xs)
    (dres, dxs), (sres, sxs) = runs[False], runs[True]
    assert sres.nit == dres.nit
    assert sres.success == dres.success
    assert abs(sres.fun - dres.fun) <= 1e-10 * max(1.0, abs(dres.fun))
    np.testing.assert_allclose(np.array(sxs), np.array(dxs), rtol=1e-8, atol=1e-8)
    pattern = nad.Objective(prob.fun, engine=ENGINE).hess_sparsity(prob.x0)
    sparse_enough = pattern.nnz <= sparse_exact.MAX_DENSITY * prob.x0.size ** 2
    assert sp.issparse(sres.hess) == sparse_enough and not sp.issparse(dres.hess)


def test_plain_function_large_n_takes_sparse_path(monkeypatch):
    # above trust-exact's dense limit: refused before, now solved on the sparse Hessian
    n = MAX_DENSE_N + 2
    x0 = np.tile([-1.2, 1.0], n // 2)
    res = minimize(nad.Objective(chained_rosenbrock, engine=ENGINE), x0,
                   method="trust-exact", options={"maxiter": 3})
    assert res.nit == 3 and sp.issparse(res.hess)
    assert res.fun < chained_rosenbrock(x0)


def test_dense_pattern_falls_back_with_note(capsys):
    def dense_f(x):
        return np.sum(x ** 2) + np.sum(x) ** 4
    obj = nad.Objective(dense_f, sparse=True, engine=ENGINE)
    res = minimize(obj, np.linspace(-1, 1, 12), method="trust-exact", options={"disp": True})
    out = capsys.readouterr().out
    assert "using the dense path" in out and "100%" in out
    assert res.success and not sp.issparse(res.hess)


def test_sparse_path_under_numba_engine():
    prob = problems.get("chained-rosenbrock", n=20)
    obj = nad.Objective(prob.fun, sparse=True)
    dense = minimize(nad.Objective(prob.fun), prob.x0, method="trust-exact")
    res = minimize(obj, prob.x0, method="trust-exact")
    assert res.nit == dense.nit and abs(res.fun - dense.fun) <= 1e-10 * abs(dense.fun)


def test_a_dense_pattern_is_given_up_early_not_propagated():
    """A pattern budget stops propagation at the first slot that exceeds it."""
    from newtonad.ad.sparsity import PatternTooDense, hessian_pattern

    program = nad.trace(lambda x: np.sum(x) ** 2, np.ones(400))
    with pytest.raises(PatternTooDense):
        hessian_pattern(program, 1000)
    assert hessian_pattern(program).nnz == 400 * 400  # without a budget: the whole pattern


def test_dense_problem_above_the_dense_limit_is_refused_not_hung():
    """trust-exact above n = 5000 with a dense Hessian: the pattern is given up early and
    the dense limit's message comes at once (it used to propagate a 5001^2 pattern)."""
    with pytest.raises(ValueError, match="not sparse enough"):
        nad.minimize(lambda x: np.sum(x) ** 2 + np.sum(x ** 4), np.full(5001, 0.1),
                     method="trust-exact")


# ---- the banded factorisation (narrow bands: LAPACK dpbtrf instead of SuperLU) ------------

def _banded(n, offsets_values, diag):
    diags = [np.full(n - abs(o), v) for o, v in offsets_values]
    diags += [np.full(n - abs(o), v) for o, v in offsets_values]
    offsets = [o for o, _ in offsets_values] + [-o for o, _ in offsets_values]
    return sp.csr_array(sp.diags_array(diags + [diag], offsets=offsets + [0]))


@pytest.mark.parametrize("shift", [4.0, 0.5, -1.0])
@pytest.mark.parametrize("radius", [0.1, 1.0, 50.0])
def test_banded_trs_takes_the_dense_path_steps(shift, radius):
    """Same Cholesky factor as the dense path (natural order): same λ iterations."""
    from newtonad.solvers.exact import ExactSubproblem

    n = 40
    h = _banded(n, [(1, -1.0), (2, 0.3)], shift + np.cos(np.arange(n)))
    assert choose_ordering(h) == "BANDED"
    g = np.sin(np.arange(n) + 1.0)
    tol = {"k_easy": ExactSubproblem.k_easy, "k_hard": ExactSubproblem.k_hard}
    dense = solve_dense_trs(h.toarray(), g, radius, **tol)
    sol = solve_sparse_trs(h, g, radius, ordering="BANDED", **tol)
    assert sol.iterations == dense.iterations and sol.hits_boundary == dense.hits_boundary
    np.testing.assert_allclose(sol.p, dense.p, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(sol.lam, dense.lam, rtol=1e-9, atol=1e-12)


def test_banded_near_null_and_indefinite_bound_are_the_dense_paths():
    from scipy.linalg import cholesky

    from newtonad.solvers.exact import _indefinite_bound, _near_null_vector
    from newtonad.solvers.sparse_factors import factoriser

    n = 30
    h = _banded(n, [(1, 1.0), (2, -0.4)], np.linspace(0.2, 3.0, n))
    factorise = factoriser(h, "BANDED")
    lam = 4.0  # positive definite (diagonally dominant): the near-null estimate
    fac = factorise(lam)
    assert fac.definite
    a = h.toarray() + lam * np.eye(n)
    sigma, z = _near_null_vector(cholesky(a))
    sigma2, zs = fac.near_null()
    np.testing.assert_allclose(sigma2, sigma ** 2, rtol=1e-10)
    np.testing.assert_allclose(zs, z, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(fac.curvature(z), z @ a @ z, rtol=1e-12)
    # indefinite: the bound from the leading minor where Cholesky stops
    shifted = h - 3.0 * sp.eye_array(n, format="csr")
    fac = factoriser(shifted, "BANDED")(0.0)
    assert not fac.definite
    from scipy.linalg import lapack
    u, info = lapack.dpotrf(shifted.toarray(), lower=0, clean=1)
    assert fac.first_bad == info - 1
    np.testing.assert_allclose(fac.indefinite_bound(),
                               _indefinite_bound(shifted.toarray(), u, info), rtol=1e-10)
    assert fac.indefinite_bound() > 0


def test_bandwidth_of_random_patterns():
    from newtonad.solvers.sparse_factors import bandwidth

    rng = np.random.default_rng(4)
    for _ in range(20):
        a = sp.random_array((25, 25), density=rng.uniform(0.0, 0.2), rng=rng, format="csr")
        c = a.tocoo()
        assert bandwidth(a) == int(np.abs(c.row.astype(int) - c.col).max(initial=0))


# ---- bad input: a dense pattern ------------------------------------------------------------

def test_a_pattern_just_over_the_limit_falls_back_with_its_density(capsys):
    def banded_f(x):  # pentadiagonal Hessian: (5 * 12 - 6) / 144 = 38% non-zeros
        return np.sum((x[2:] - x[:-2]) ** 2 * x[1:-1] ** 2) + np.sum(x ** 4)
    obj = nad.Objective(banded_f, sparse=True, engine=ENGINE)
    res = minimize(obj, np.linspace(-1, 1, 12), method="trust-exact", options={"disp": True})
    out = capsys.readouterr().out
    assert "38% non-zeros (more than 20%): using the dense path" in out
    assert not sp.issparse(res.hess)


def test_a_dense_pattern_above_the_dense_limit_says_so_in_disp(capsys):
    with pytest.raises(ValueError, match="not sparse enough"):
        nad.minimize(lambda x: np.sum(x) ** 2 + np.sum(x ** 4), np.full(5001, 0.1),
                     method="trust-exact", options={"disp": True})
    assert "more than 20% non-zeros: using the dense path" in capsys.readouterr().out


def test_the_envelope_bounds_the_natural_cholesky_factor():
    from newtonad.solvers.sparse_factors import _envelope

    rng = np.random.default_rng(8)
    for _ in range(10):
        n = 30
        a = sp.random_array((n, n), density=0.06, rng=rng)
        h = sp.csr_array(a + a.T + n * sp.eye_array(n))
        lower = np.linalg.cholesky(h.toarray())
        assert np.count_nonzero(np.abs(lower) > 0) <= _envelope(h)
    tri = _banded(n, [(1, 1.0)], np.full(n, 4.0))
    assert _envelope(tri) == 2 * n - 1  # exact for a band


def test_near_null_leaves_the_superlu_factor_alone():
    from newtonad.solvers.sparse_factors import factoriser

    h, _ = _random_sparse_symmetric(40, 2, 8.0)
    fac = factoriser(h, "MMD_AT_PLUS_A")(0.5)
    assert fac.definite
    before = fac.lu.U.toarray()
    first = fac.near_null()
    np.testing.assert_array_equal(fac.lu.U.toarray(), before)
    second = fac.near_null()
    np.testing.assert_array_equal(first[1], second[1])
    # ‖R z‖ = σ with R = D^(-1/2) U in the factorised order
    u = fac.lu.U.toarray()
    r = u / np.sqrt(np.diag(u))[:, None]
    z = np.empty_like(first[1])
    z[fac.lu.perm_c] = first[1]  # back to the factorised order
    np.testing.assert_allclose(np.linalg.norm(r @ z) ** 2, first[0], rtol=1e-8)


def test_a_broadcast_of_a_dense_row_is_counted_before_it_is_selected():
    """A copy map that reads one row many times (a broadcast of a reduction) multiplies
    the non-zeros: the budget counts them before the rows are selected (at n = 65536 the
    selection itself asked for 2**32 indices and raised MemoryError)."""
    from newtonad.ad.sparsity import PatternTooDense, hessian_pattern

    n = 65536
    program = nad.trace(lambda x: np.sum(x) ** 2 + np.sum(x ** 4), np.ones(n))
    with pytest.raises(PatternTooDense):
        hessian_pattern(program, 10 * n)


@pytest.mark.parametrize("lam", [0.0, 0.7, 3.0, 9.0])
def test_ldl_factor_against_the_dense_spectrum(lam):
    """QDLDL's factor of H + λI: definite iff the smallest eigenvalue is positive; else a
    Rayleigh quotient (so at least the smallest eigenvalue, at most 0) gives the bound;
    solves and the near-null estimate hold, through refactorisations at other λ."""
    from newtonad.solvers.sparse_factors import factoriser

    h, _ = _random_sparse_symmetric(50, 3, -1.0)
    factorise = factoriser(h, "AMD")
    factorise(1.0)  # the solver is refactorised below, not rebuilt
    fac = factorise(lam)
    a = h.toarray() + lam * np.eye(50)
    smallest = np.linalg.eigvalsh(a)[0]
    assert fac.definite == (smallest > 0)
    if not fac.definite:
        rayleigh = -fac.indefinite_bound()
        assert smallest - 1e-9 <= rayleigh <= 1e-12
        return
    b = np.random.default_rng(1).standard_normal(50)
    np.testing.assert_allclose(a @ fac.solve(b), b, atol=1e-9)
    sigma2, z = fac.near_null()
    assert abs(np.linalg.norm(z) - 1.0) < 1e-12
    np.testing.assert_allclose(z @ a @ z, sigma2, rtol=1e-8)
    assert sigma2 >= smallest * (1 - 1e-9)
