"""Recovery plans made once (target: a sparse Hessian costs one HVP frame plus one
gather): exact values, results that own their arrays, and no per-call plan work."""

import numpy as np
import pytest
from scipy import sparse

import newtonad as nad
import newtonad.sparse.hessian as sparse_hessian
import newtonad.sparse.recovery as recovery
from newtonad.sparse import (
    Recovery,
    column_colouring,
    column_plan,
    row_colouring,
    row_plan,
    seed_matrix,
    star_colouring,
    star_plan,
)

ENGINE = "numpy"


def chained_rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _random_symmetric(n, seed):
    rng = np.random.default_rng(seed)
    A = sparse.random_array((n, n), density=0.1, rng=rng).toarray()
    return A + A.T + np.diag(rng.standard_normal(n))


@pytest.mark.parametrize("seed", range(3))
def test_recovery_is_exact_for_star_column_and_row_plans(seed):
    H = _random_symmetric(35, seed)
    colours = star_colouring(H != 0)
    got = Recovery(H != 0, star_plan(H != 0, colours))(H @ seed_matrix(colours))
    assert isinstance(got, sparse.csr_array) and got.has_canonical_format
    np.testing.assert_array_equal(got.toarray(), H)
    J = sparse.random_array((25, 35), density=0.1, rng=np.random.default_rng(seed)).toarray()
    columns, rows = column_colouring(J != 0), row_colouring(J != 0)
    by_columns = Recovery(J != 0, column_plan(J != 0, columns))(J @ seed_matrix(columns))
    by_rows = Recovery(J != 0, row_plan(J != 0, rows))(J.T @ seed_matrix(rows))
    np.testing.assert_array_equal(by_columns.toarray(), J)
    np.testing.assert_array_equal(by_rows.toarray(), J)
    # scipy's own check of the structure the result claims
    by_rows.check_format(full_check=True)


def test_a_large_recovery_on_threads_is_the_same_gather():
    """From PARALLEL_GATHER_FROM stored entries the gather runs on numba's threads: the
    values are the frame's entries the plan names, bit for bit, as np.take reads them."""
    n = recovery.PARALLEL_GATHER_FROM // 3 + 5000
    rng = np.random.default_rng(3)
    off = rng.standard_normal(n - 1)
    H = sparse.diags_array([off, rng.standard_normal(n) + 4.0, off], offsets=[-1, 0, 1],
                           format="csr")
    colours = star_colouring(H != 0)
    recover = Recovery(H != 0, star_plan(H != 0, colours))
    assert H.nnz >= recovery.PARALLEL_GATHER_FROM and recover._threaded_plan is not None
    frame = H @ seed_matrix(colours)
    got = recover(frame)
    np.testing.assert_array_equal(got.data, np.take(frame.reshape(-1), recover.plan))
    assert (got != H).nnz == 0
    got.check_format(full_check=True)
    # and its index arrays are its own copies there too
    np.testing.assert_array_equal(got.indices, recover.indices)
    np.testing.assert_array_equal(got.indptr, recover.indptr)
    assert not np.shares_memory(got.indices, recover.indices)
    assert not np.shares_memory(got.indptr, recover.indptr)
    got.data[:] = 0.0
    got.eliminate_zeros()  # rewrites indices and indptr in place
    assert (recover(frame) != H).nnz == 0


def test_each_result_owns_its_arrays():
    H = _random_symmetric(20, 7)
    colours = star_colouring(H != 0)
    recover = Recovery(H != 0, star_plan(H != 0, colours))
    frame = H @ seed_matrix(colours)
    first = recover(frame)
    first.data[:] = 0.0
    first.eliminate_zeros()  # rewrites indices and indptr in place
    np.testing.assert_array_equal(recover(frame).toarray(), H)
    assert not np.shares_memory(recover(frame).indices, recover(frame).indices)


def test_a_frame_of_the_wrong_size_is_refused():
    H = _random_symmetric(12, 3)
    colours = star_colouring(H != 0)
    recover = Recovery(H != 0, star_plan(H != 0, colours))
    with pytest.raises(ValueError, match="compressed frame has"):
        recover(np.ones((12, 1)))
    with pytest.raises(ValueError, match="stored entries"):
        Recovery(H != 0, np.zeros(3, dtype=np.int64))


def test_hessian_sparse_is_exact_and_its_plan_is_made_once(monkeypatch):
    x = np.linspace(-1.0, 1.5, 30)
    hess = nad.hessian(chained_rosenbrock, sparse=True, engine=ENGINE)
    dense = nad.hessian(chained_rosenbrock, engine=ENGINE)
    np.testing.assert_allclose(hess(x).toarray(), dense(x), rtol=1e-13, atol=1e-12)

    def no_new_plan(*args):
        raise AssertionError("the recovery plan was made again")

    monkeypatch.setattr(recovery, "star_plan", no_new_plan)
    monkeypatch.setattr(sparse_hessian, "star_plan", no_new_plan)
    np.testing.assert_allclose(hess(x + 0.5).toarray(), dense(x + 0.5), rtol=1e-13,
                               atol=1e-12)


def test_objective_sparse_hess_uses_the_plan_made_once(monkeypatch):
    obj = nad.Objective(chained_rosenbrock, sparse=True, engine=ENGINE)
    x = np.linspace(-1.0, 1.5, 30)
    obj.sparse_hess(x)  # pattern, colouring and plan made here

    def no_new_plan(*args):
        raise AssertionError("the recovery plan was made again")

    monkeypatch.setattr(recovery, "star_plan", no_new_plan)
    monkeypatch.setattr(sparse_hessian, "star_plan", no_new_plan)
    nhev = obj.nhev
    h = obj.sparse_hess(x - 0.3)
    assert obj.nhev - nhev == 3  # one frame of 3 colours
    dense = nad.Objective(chained_rosenbrock, engine=ENGINE).hess(x - 0.3)
    np.testing.assert_allclose(h.toarray(), dense, rtol=1e-13, atol=1e-12)
    # the same matrix as nad.hessian(f, sparse=True), entry for entry
    np.testing.assert_array_equal(
        h.toarray(), nad.hessian(chained_rosenbrock, sparse=True, engine=ENGINE)(x - 0.3)
        .toarray())


def test_sparse_hessian_under_numba_engine_matches_hvp_columns():
    x = np.random.default_rng(2).standard_normal(50)
    h = nad.hessian(chained_rosenbrock, sparse=True)(x)
    V = np.random.default_rng(3).standard_normal((50, 2))
    np.testing.assert_allclose(h @ V, nad.hvp(chained_rosenbrock, x, V), rtol=1e-12,
                               atol=1e-10)
    obj = nad.Objective(chained_rosenbrock, sparse=True)
    np.testing.assert_array_equal(obj.sparse_hess(x).toarray(), h.toarray())
