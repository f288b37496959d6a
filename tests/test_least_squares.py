"""nad.least_squares: scipy.optimize.least_squares with exact Jacobians."""

import importlib

import numpy as np
import pytest
from scipy import optimize, sparse

import newtonad as nad
from newtonad import problems

# MGH problems written as residual vectors, solved from their standard start
MGH_RESIDUAL_PROBLEMS = ["bard", "box-3d", "gaussian", "jennrich-sampson",
                         "kowalik-osborne", "osborne-1"]


def broyden_tridiagonal(x):
    """MGH #30 residuals: (3 - 2 x_i) x_i - x_{i-1} - 2 x_{i+1} + 1, x_0 = x_{n+1} = 0."""
    before = np.concatenate([np.zeros(1), x[:-1]])
    after = np.concatenate([x[1:], np.zeros(1)])
    return (3.0 - 2.0 * x) * x - before - 2.0 * after + 1.0


def chained_residuals(x):
    """Chained Rosenbrock residuals: 10 (x_{i+1} - x_i^2) and 1 - x_i."""
    return np.concatenate([10.0 * (x[1:] - x[:-1] ** 2), 1.0 - x[:-1]])


def test_every_residual_problem_sums_to_its_objective():
    found = [p for p in problems.all_problems() if p.residuals is not None]
    assert {p.name for p in found} >= set(MGH_RESIDUAL_PROBLEMS)
    rng = np.random.default_rng(0)
    for p in found:
        for x in (p.x0, p.x0 + 0.01 * rng.standard_normal(p.n)):
            r = np.asarray(p.residuals(x))
            assert r.ndim == 1 and r.size >= p.n, p.name
            np.testing.assert_allclose(np.sum(r ** 2), p.fun(x), rtol=1e-12, err_msg=p.name)


def test_problems_without_a_residual_vector_say_none():
    assert problems.get("rosenbrock").residuals is None


@pytest.mark.parametrize("name", MGH_RESIDUAL_PROBLEMS)
def test_mgh_same_solution_as_scipy_2point(name):
    p = problems.get(name)
    ours = nad.least_squares(p.residuals, p.x0, engine="numpy")
    ref = optimize.least_squares(p.residuals, p.x0, jac="2-point")
    assert ours.success and ours.jac_mode == "dense"
    np.testing.assert_allclose(2 * ours.cost, 2 * ref.cost, rtol=1e-5, atol=1e-12)
    np.testing.assert_allclose(ours.x, ref.x, rtol=1e-4, atol=1e-6)
    # the returned Jacobian is the exact one at the solution
    np.testing.assert_allclose(ours.jac, nad.jacobian(p.residuals, engine="numpy")(ours.x),
                               rtol=1e-12, atol=1e-14)


def test_mgh_fstar_reached_by_lm_and_dogbox():
    p = problems.get("bard")
    for method in ("lm", "dogbox"):
        res = nad.least_squares(p.residuals, p.x0, method=method, engine="numpy")
        np.testing.assert_allclose(2 * res.cost, p.fstar, rtol=1e-5)


def test_sparse_problem_n1000_same_solution_as_scipy_2point():
    n = 1000
    x0 = -np.ones(n)
    ours = nad.least_squares(broyden_tridiagonal, x0, engine="numpy")
    assert ours.jac_mode == "sparse" and sparse.issparse(ours.jac)
    assert ours.jac_sparsity.shape == (n, n) and ours.jac_sparsity.nnz == 3 * n - 2
    # dense finite differences; lsmr spares the test an SVD of a 1000 x 1000 matrix per step
    ref = optimize.least_squares(broyden_tridiagonal, x0, jac="2-point", tr_solver="lsmr")
    assert ours.success and ref.success
    np.testing.assert_allclose(ours.x, ref.x, rtol=1e-7, atol=1e-9)
    assert np.max(np.abs(broyden_tridiagonal(ours.x))) < 1e-8


def test_sparse_chained_residuals_match_scipy_2point_with_pattern():
    n = 1000
    x0 = np.full(n, 0.5)
    ours = nad.least_squares(chained_residuals, x0, engine="numpy")
    assert ours.jac_mode == "sparse"
    ref = optimize.least_squares(chained_residuals, x0, jac="2-point",
                                 jac_sparsity=ours.jac_sparsity)
    np.testing.assert_allclose(ours.x, ref.x, atol=1e-7)
    np.testing.assert_allclose(ours.x, np.ones(n), atol=1e-7)
    # the recovered Jacobian equals the dense one
    dense = nad.jacobian(chained_residuals, engine="numpy")(ours.x)
    np.testing.assert_allclose(ours.jac.toarray(), dense, rtol=1e-14, atol=0)


def test_sparse_path_under_numba_engine():
    res = nad.least_squares(broyden_tridiagonal, -np.ones(200), engine="numba")
    assert res.jac_mode == "sparse" and res.success
    assert np.max(np.abs(broyden_tridiagonal(res.x))) < 1e-8


def test_dense_path_under_numba_engine():
    p = problems.get("box-3d")
    res = nad.least_squares(p.residuals, p.x0)
    assert res.jac_mode == "dense"
    assert 2 * res.cost < 1e-12


def test_exact_tr_solver_and_lm_keep_the_dense_jacobian():
    x0 = -np.ones(150)
    for kw in (dict(tr_solver="exact"), dict(method="lm")):
        res = nad.least_squares(broyden_tridiagonal, x0, engine="numpy", **kw)
        assert res.jac_mode == "dense" and isinstance(res.jac, np.ndarray)
        assert np.max(np.abs(broyden_tridiagonal(res.x))) < 1e-8


def test_matrix_free_operator_for_lsmr_on_a_dense_pattern(monkeypatch):
    module = importlib.import_module("newtonad.least_squares")
    monkeypatch.setattr(module, "SMALL_ENTRIES", 10)
    rng = np.random.default_rng(1)
    A = rng.standard_normal((30, 8))
    b = rng.standard_normal(30)

    def residuals(x):
        return A @ x + 0.1 * x[0] ** 2 - b

    res = nad.least_squares(residuals, np.zeros(8), tr_solver="lsmr", engine="numpy")
    assert res.jac_mode == "operator"
    ref = optimize.least_squares(residuals, np.zeros(8), jac="2-point")
    np.testing.assert_allclose(res.x, ref.x, rtol=1e-5, atol=1e-6)
    # the operator's products are J v and J^T w of the exact Jacobian
    J = nad.jacobian(residuals, engine="numpy")(res.x)
    v, w = rng.standard_normal(8), rng.standard_normal(30)
    np.testing.assert_allclose(res.jac.matvec(v), J @ v, rtol=1e-12)
    np.testing.assert_allclose(res.jac.rmatvec(w), J.T @ w, rtol=1e-12)
    np.testing.assert_allclose(res.jac.matmat(np.eye(8)), J, rtol=1e-12)


def test_keywords_pass_through():
    p = problems.get("jennrich-sampson")
    kw = dict(bounds=([0.26, 0.0], [1.0, 1.0]), loss="soft_l1", f_scale=2.0,
              x_scale=np.array([1.0, 2.0]), ftol=1e-10, xtol=1e-10)
    ours = nad.least_squares(p.residuals, p.x0, engine="numpy", **kw)
    ref = optimize.least_squares(p.residuals, p.x0, jac="2-point", **kw)
    assert ours.x[0] >= 0.26 and ours.active_mask[0] == -1
    np.testing.assert_allclose(ours.x, ref.x, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(ours.cost, ref.cost, rtol=1e-6)
    short = nad.least_squares(p.residuals, p.x0, max_nfev=2, engine="numpy")
    assert short.nfev <= 2 and short.status == 0


def test_args_and_kwargs_reach_the_residuals():
    t = np.linspace(0.0, 1.0, 20)
    y = 2.0 * np.exp(-1.5 * t)

    def model(x, t, y, scale=1.0):
        return scale * (x[0] * np.exp(-x[1] * t) - y)

    res = nad.least_squares(model, np.array([1.0, 1.0]), args=(t, y),
                            kwargs={"scale": 3.0}, engine="numpy")
    np.testing.assert_allclose(res.x, [2.0, 1.5], rtol=1e-8)
    np.testing.assert_allclose(res.fun, model(res.x, t, y, scale=3.0))


def test_users_jac_wins():
    p = problems.get("box-3d")
    calls = []

    def user_jac(x):
        calls.append(x.copy())
        return nad.jacobian(p.residuals, engine="numpy")(x)

    res = nad.least_squares(p.residuals, p.x0, jac=user_jac, engine="numpy")
    assert calls and res.jac_mode == "user" and res.jac_sparsity is None
    fd = nad.least_squares(p.residuals, p.x0, jac="3-point")
    ref = optimize.least_squares(p.residuals, p.x0, jac="3-point")
    assert fd.jac_mode == "user" and fd.nfev == ref.nfev
    np.testing.assert_array_equal(fd.x, ref.x)


def test_the_package_attribute_is_the_function():
    import newtonad.least_squares  # noqa: F401  (re-importing the module changes nothing)
    assert callable(nad.least_squares) and nad.least_squares.__name__ == "least_squares"


def test_bad_input_is_named():
    p = problems.get("box-3d")
    with pytest.raises(TypeError, match="fun must be callable"):
        nad.least_squares(None, p.x0)
    with pytest.raises(ValueError, match="jac must be a callable"):
        nad.least_squares(p.residuals, p.x0, jac="4-point")
    with pytest.raises(ValueError, match="at most 1 dimension"):
        nad.least_squares(p.residuals, np.ones((3, 1)))
    with pytest.raises(ValueError, match="x0 must be real"):
        nad.least_squares(p.residuals, p.x0 + 0j)
    with pytest.raises(ValueError, match="method"):
        nad.least_squares(p.residuals, p.x0, method="newton", engine="numpy")
    with pytest.raises(ValueError, match="bounds"):
        nad.least_squares(p.residuals, p.x0, bounds=(p.x0 + 1, np.inf), engine="numpy")
