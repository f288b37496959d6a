"""Sparsity patterns as a program transform, colourings, recovery."""

import itertools

import numpy as np
import pytest
from scipy import sparse
from scipy.sparse import csgraph

import newtonad as nad
from newtonad import problems
from newtonad.sparse import column_colouring, row_colouring, star_colouring


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _small_problems():
    out = []
    for name in problems.names():
        p = problems.get(name)
        if p.n <= 200:
            out.append(p)
    return out


SMALL = _small_problems()
#: Hessians with entries that vanish by cancellation of values (2 A^T A with
#: A = I - (2/m) 1 1^T): zero at every point, but not structurally.
CANCELLING = {"linear-full-rank"}


def _random_points(p, count=2, seed=0):
    rng = np.random.default_rng(seed)
    x0 = np.asarray(p.x0, dtype=float)
    return [x0 + 0.3 * rng.standard_normal(x0.shape) for _ in range(count)]


def _assert_distance2_columns(pattern, colours):
    J = sparse.csr_array(pattern, dtype=bool)
    for row in range(J.shape[0]):
        cols = J.indices[J.indptr[row]:J.indptr[row + 1]]
        assert len(set(colours[cols].tolist())) == len(cols), "two columns of a row share a colour"


def _assert_star(pattern, colours):
    A = sparse.csr_array(pattern, dtype=bool).tolil()
    A.setdiag(False)
    A = sparse.csr_array(A)
    A.eliminate_zeros()
    rows, cols = A.nonzero()
    assert np.all(colours[rows] != colours[cols]), "adjacent vertices share a colour"
    k = int(colours.max()) + 1 if colours.size else 0
    for a, b in itertools.combinations(range(k), 2):
        keep = np.flatnonzero((colours == a) | (colours == b))
        sub = A[keep][:, keep]
        ncomp, labels = csgraph.connected_components(sub, directed=False)
        degrees = np.diff(sub.indptr)
        for c in range(ncomp):
            members = np.flatnonzero(labels == c)
            edges = degrees[members].sum() // 2
            assert edges == members.size - 1, "two-coloured cycle"
            assert members.size <= 2 or degrees[members].max() == members.size - 1, \
                "two-coloured subgraph is not a star"


@pytest.mark.parametrize("p", SMALL, ids=lambda p: p.name)
def test_hessian_pattern_contains_true_nonzeros_and_sparse_hessian_is_exact(p):
    pattern = nad.hessian_sparsity(p.fun)(p.x0)
    assert pattern.dtype == bool and pattern.shape == (p.n, p.n)
    colours = star_colouring(pattern)
    _assert_star(pattern, colours)
    seen = np.zeros((p.n, p.n), dtype=bool)
    for x in _random_points(p):
        H = nad.hessian(p.fun, engine="numpy")(x)
        missing = (np.abs(H) > 0) & ~pattern.toarray()
        assert not missing.any(), f"pattern misses {np.argwhere(missing)[:3]}"
        seen |= H != 0
        Hs = nad.hessian(p.fun, sparse=True, engine="numpy")(x)
        assert isinstance(Hs, sparse.csr_array) and Hs.dtype == np.float64
        np.testing.assert_allclose(Hs.toarray(), H, rtol=1e-10, atol=1e-10 * (1 + np.abs(H).max()))
    if p.name not in CANCELLING:  # tight: every structural non-zero is seen at some point
        np.testing.assert_array_equal(pattern.toarray(), seen)


def test_chained_rosenbrock_is_exactly_tridiagonal_with_three_colours():
    n = 200
    pattern = nad.hessian_sparsity(rosen)(np.zeros(n))
    expected = sparse.diags_array([np.ones(n - 1), np.ones(n), np.ones(n - 1)],
                                  offsets=[-1, 0, 1]).toarray().astype(bool)
    np.testing.assert_array_equal(pattern.toarray(), expected)
    colours = star_colouring(pattern)
    assert colours.max() + 1 == 3
    _assert_star(pattern, colours)
    x = np.random.default_rng(1).standard_normal(n)
    Hs = nad.hessian(rosen, sparse=True, engine="numpy")(x)
    np.testing.assert_allclose(Hs.toarray(), nad.hessian(rosen, engine="numpy")(x), rtol=1e-12)


def test_sum_reduction_gives_no_dense_row():
    # Separable: the Hessian is diagonal although every term goes through one sum.
    f = lambda x: np.sum(np.exp(x) * x) + np.sum(np.sin(x)) ** 1
    pattern = nad.hessian_sparsity(f)(np.ones(30))
    np.testing.assert_array_equal(pattern.toarray(), np.eye(30, dtype=bool))


MATRIX = np.arange(20.0).reshape(4, 5) - 7

JAC_CASES = {
    "shifted-product": (lambda x: x[1:] * x[:-1], (12,)),
    "cumsum": (lambda x: np.cumsum(x) * x, (7,)),
    "matvec": (lambda x: MATRIX @ x, (5,)),
    "grid": (lambda x: (x[1:, :] - x[:-1, :]) ** 2 + np.sin(x[:-1, :]), (4, 5)),
    "take": (lambda x: np.take(x, [2, 0, 2, 3]) ** 2, (4,)),
    "dense-row": (lambda x: np.concatenate([x ** 2, np.sum(x, keepdims=True)]), (6,)),
    "cumprod": (lambda x: np.cumprod(x[::-1]) + x, (5,)),
    "sorted": (lambda x: np.sort(x) * x, (5,)),
    "einsum": (lambda x: np.einsum("ij,jk->ik", x, x), (3, 3)),
}


@pytest.mark.parametrize("name", sorted(JAC_CASES))
def test_jacobian_pattern_and_sparse_jacobian(name):
    f, shape = JAC_CASES[name]
    x = np.random.default_rng(2).standard_normal(shape)
    J = nad.jacobian(f, engine="numpy")(x)
    J = J.reshape(-1, x.size)
    pattern = nad.jacobian_sparsity(f)(x)
    assert pattern.shape == J.shape
    assert not ((J != 0) & ~pattern.toarray()).any()
    _assert_distance2_columns(pattern, column_colouring(pattern))
    _assert_distance2_columns(pattern.T, row_colouring(pattern))
    Js = nad.jacobian(f, sparse=True, engine="numpy")(x)
    np.testing.assert_allclose(Js.toarray(), J, rtol=1e-12, atol=1e-12)


def test_dense_row_prefers_row_colouring():
    # A dense row forces n column colours but only 2 row colours.
    f, shape = JAC_CASES["dense-row"]
    pattern = nad.jacobian_sparsity(f)(np.ones(shape))
    assert column_colouring(pattern).max() + 1 == 6
    assert row_colouring(pattern).max() + 1 == 2


def test_pattern_of_grid_jacobian_is_tight():
    f, shape = JAC_CASES["grid"]
    pattern = nad.jacobian_sparsity(f)(np.ones(shape)).toarray()
    assert pattern.sum() == 2 * 3 * 5  # each residual on its two grid points


def test_sparse_hessian_under_numba_engine():
    x = np.linspace(-1.0, 1.0, 9)
    Hs = nad.hessian(rosen, sparse=True)(x)
    np.testing.assert_allclose(Hs.toarray(), nad.hessian(rosen)(x), rtol=1e-12)


def test_sparse_on_wrong_outputs_says_so():
    with pytest.raises(ValueError, match="one scalar output"):
        nad.hessian(lambda x: x ** 2, sparse=True)(np.ones(3))
    with pytest.raises(ValueError, match="one scalar output"):
        nad.hessian_sparsity(lambda x: x ** 2)(np.ones(3))


def test_repeated_indices_in_the_gradient_scatter_add_stay_sparse():
    # The gradient scatters with repeated indices: its pattern stays diagonal-block.
    idx = np.array([0, 1, 1, 2, 4, 4, 4])
    f = lambda x: np.sum(x[idx] ** 3) + np.sum(x[3:] * x[:-3])
    x = np.random.default_rng(3).standard_normal(6)
    pattern = nad.hessian_sparsity(f)(x).toarray()
    H = nad.hessian(f, engine="numpy")(x)
    np.testing.assert_array_equal(pattern, H != 0)
    np.testing.assert_allclose(nad.hessian(f, sparse=True, engine="numpy")(x).toarray(), H,
                               rtol=1e-12)


def test_zero_coefficient_switches_a_term_off():
    def f(x):
        # A constant of the program (an array f closes over is an input instead, free to
        # change between calls, so its zeros cannot be relied on).
        coefficient = np.array([1.0, 0.0, 0.0, 2.0])
        # The zero is seen where it multiplies; (c * x[1:]) * x[:-1] is not yet tight.
        return np.sum(coefficient * (x[1:] * x[:-1])) + np.sum(x ** 4)

    pattern = nad.hessian_sparsity(f)(np.ones(5)).toarray()
    expected = np.eye(5, dtype=bool)
    expected[[0, 1, 3, 4], [1, 0, 4, 3]] = True
    np.testing.assert_array_equal(pattern, expected)


def test_pattern_is_cached_and_callers_cannot_spoil_it():
    n = 7
    first = nad.hessian_sparsity(rosen)(np.zeros(n))
    first.data[:] = False
    again = nad.hessian_sparsity(rosen)(np.zeros(n))
    assert again.toarray().sum() == 3 * n - 2


@pytest.mark.parametrize("seed", range(4))
def test_colourings_and_recovery_on_random_patterns(seed):
    from newtonad.sparse import recover_columns, recover_rows, recover_star, seed_matrix

    rng = np.random.default_rng(seed)
    n, m = 40, 30
    A = sparse.random_array((n, n), density=0.08, rng=rng).toarray()
    H = A + A.T + np.diag(rng.standard_normal(n))
    colours = star_colouring(H != 0)
    _assert_star(H != 0, colours)
    S = seed_matrix(colours)
    np.testing.assert_array_equal(recover_star(H != 0, colours, H @ S).toarray(), H)
    J = sparse.random_array((m, n), density=0.1, rng=rng).toarray()
    columns, rows = column_colouring(J != 0), row_colouring(J != 0)
    _assert_distance2_columns(J != 0, columns)
    _assert_distance2_columns((J != 0).T, rows)
    np.testing.assert_array_equal(
        recover_columns(J != 0, columns, J @ seed_matrix(columns)).toarray(), J)
    np.testing.assert_array_equal(
        recover_rows(J != 0, rows, J.T @ seed_matrix(rows)).toarray(), J)


def test_zero_hessian_and_constant_jacobian_patterns_are_empty():
    x = np.ones(4)
    H = nad.hessian(lambda x: np.sum(3.0 * x), sparse=True, engine="numpy")(x)
    assert H.shape == (4, 4) and H.nnz == 0
    J = nad.jacobian(lambda x: np.ones(3) + 0.0 * np.sum(x ** 0), sparse=True,
                     engine="numpy")(x)
    assert J.shape == (3, 4) and J.toarray().tolist() == np.zeros((3, 4)).tolist()


def test_stacked_solves_are_dense_within_each_matrix_only():
    def f(x):
        A = x.reshape(3, 2, 2) + 4.0 * np.eye(2)
        return np.linalg.solve(A, np.ones((3, 2, 1))).ravel() * np.linalg.det(A).repeat(2)

    x = np.random.default_rng(5).standard_normal(12)
    pattern = nad.jacobian_sparsity(f)(x).toarray()
    expected = np.kron(np.eye(3, dtype=bool), np.ones((2, 4), dtype=bool))
    np.testing.assert_array_equal(pattern, expected)
    J = nad.jacobian(f, engine="numpy")(x)
    np.testing.assert_allclose(nad.jacobian(f, sparse=True, engine="numpy")(x).toarray(), J,
                               rtol=1e-12, atol=1e-14)


def test_every_primitive_has_a_sparsity_rule():
    from newtonad.ad.primitives.core import REGISTRY
    from newtonad.ad.sparsity import rule_for

    for primitive in REGISTRY.values():
        assert callable(rule_for(primitive)), primitive.name


@pytest.mark.parametrize("ordering", ["largest-first", "smallest-last"])
def test_both_orderings_give_valid_colourings(ordering):
    from newtonad.sparse.colouring import _adjacency, ordering_of

    p = problems.get("minimal-surface")
    pattern = nad.hessian_sparsity(p.fun)(p.x0)
    order = ordering_of(_adjacency(pattern), ordering)
    assert sorted(order.tolist()) == list(range(p.n))
    _assert_star(pattern, star_colouring(pattern, ordering))
    _assert_distance2_columns(pattern, column_colouring(pattern, ordering))
    band = sparse.diags_array([np.ones(49), np.ones(50), np.ones(49)], offsets=[-1, 0, 1])
    assert star_colouring(band, ordering).max() + 1 == 3


def test_smallest_last_removes_a_least_degree_vertex_each_time():
    from newtonad.sparse.colouring import _adjacency, ordering_of

    rng = np.random.default_rng(7)
    A = sparse.random_array((30, 30), density=0.15, rng=rng)
    graph = _adjacency((A + A.T) != 0)
    order = ordering_of(graph, "smallest-last")
    dense = graph.toarray()
    alive = np.ones(30, dtype=bool)
    for v in order[::-1]:  # removal order
        degrees = dense[alive][:, alive].sum(axis=1)
        assert dense[v, alive].sum() == degrees.min()
        alive[v] = False


def test_unknown_ordering_is_refused():
    with pytest.raises(ValueError, match="unknown ordering"):
        star_colouring(np.eye(3, dtype=bool), "random")


def test_sparse_jacobian_of_non_array_output_says_so():
    with pytest.raises(TypeError, match="need one array"):
        nad.jacobian(lambda x: (x, x ** 2), sparse=True)(np.ones(3))
    with pytest.raises(TypeError, match="must return an array"):
        nad.jacobian_sparsity(lambda x: "text")(np.ones(3))


def test_sparse_jacobian_under_numba_engine_both_frames():
    x = np.linspace(0.5, 1.5, 8)
    for name in ("shifted-product", "dense-row"):  # column frame, then row frame
        f, _ = JAC_CASES[name]
        J = nad.jacobian(f)(x).reshape(-1, x.size)
        np.testing.assert_allclose(nad.jacobian(f, sparse=True)(x).toarray(), J, rtol=1e-12)
