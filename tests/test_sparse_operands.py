"""scipy.sparse matrices inside traced objectives: ``A @ x``, ``A.dot(x)``, ``A.T @ y``,
``x @ A`` are one linear primitive with exact first and second derivatives, its
sparsity seen by the Hessian and Jacobian patterns, captured or passed in ``args``.

Every derivative is checked against central differences and against the same function
written with the dense matrix; transposes by the dot-product test."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse as sp

import newtonad as nad
from newtonad.ad.engine.numpy_eval import evaluate
from newtonad.ad.primitives.sparse_matmul import sparse_matmul
from newtonad.ad.program import Slot
from newtonad.ad.trace import trace_function
from newtonad.ad.transforms import transpose_program
from newtonad.ad.var import Var

from .helpers import assert_close, central_jvp, check_jvp

rng = np.random.default_rng(2024)


def grid_laplacian(k: int) -> sp.csr_array:
    """The graph Laplacian of a k x k grid (degree minus adjacency), CSR."""
    path = sp.diags_array([np.ones(k - 1), np.ones(k - 1)], offsets=[-1, 1], shape=(k, k))
    eye = sp.eye_array(k)
    adjacency = sp.kron(path, eye) + sp.kron(eye, path)
    degree = sp.diags_array(np.asarray(adjacency.sum(axis=1)).ravel())
    return sp.csr_array(degree - adjacency)


def stiffness(n: int, coeff: np.ndarray) -> sp.coo_array:
    """P1 finite elements on n intervals of [0, 1] with conductivity ``coeff`` per element,
    assembled element by element as COO (shared nodes give duplicate entries)."""
    h = 1.0 / n
    rows, cols, vals = [], [], []
    local = np.array([[1.0, -1.0], [-1.0, 1.0]]) / h
    for e in range(n):
        nodes = (e, e + 1)
        for a in range(2):
            for b in range(2):
                rows.append(nodes[a])
                cols.append(nodes[b])
                vals.append(coeff[e] * local[a, b])
    return sp.coo_array((vals, (rows, cols)), shape=(n + 1, n + 1))


L = grid_laplacian(4)  # 16 x 16
L_dense = L.toarray()
K = stiffness(12, rng.uniform(0.5, 2.0, 12))  # 13 x 13, duplicates summed on conversion
A_design = sp.random_array((20, 8), density=0.35, random_state=5, format="csr")
b_obs = rng.standard_normal(20)


def laplacian_energy(x):
    """A graph-regularised quartic: the quadratic x L x and a pointwise non-quadratic term."""
    return 0.5 * (x @ (L @ x)) + 0.25 * np.sum(x ** 4)


def laplacian_energy_dense(x):
    return 0.5 * (x @ (L_dense @ x)) + 0.25 * np.sum(x ** 4)


def _fd_grad(f, x, args=(), eps=1e-6):
    return np.array([central_jvp(f, x, e, args, eps) for e in np.eye(x.size)])


# ---- the graph Laplacian, captured: both engines -------------------------------------------

@pytest.mark.parametrize("engine", ["numpy", "numba"])
def test_laplacian_gradient_and_hvp_match_dense_and_differences(engine):
    x = rng.standard_normal(16)
    f, g = nad.value_and_grad(laplacian_energy, engine=engine)(x)
    f_d, g_d = nad.value_and_grad(laplacian_energy_dense, engine="numpy")(x)
    assert np.isclose(f, f_d, rtol=1e-13)
    assert_close(g, g_d, rtol=1e-12, atol=1e-12, what="gradient vs dense")
    assert_close(g, _fd_grad(laplacian_energy, x), rtol=1e-6, atol=1e-7, what="gradient vs fd")
    V = rng.standard_normal((16, 3))  # a frame: the CSR loop over trailing columns
    HV = nad.hvp(laplacian_energy, x, V, engine=engine)
    H = L_dense + np.diag(3 * x ** 2)
    assert_close(HV, H @ V, rtol=1e-12, atol=1e-12, what="hvp vs dense")
    gfun = nad.grad(laplacian_energy, engine=engine)
    fd = np.stack([(gfun(x + 1e-6 * v) - gfun(x - 1e-6 * v)) / 2e-6 for v in V.T], axis=1)
    assert_close(HV, fd, rtol=1e-5, atol=1e-6, what="hvp vs differences of the gradient")
    hv1 = nad.hvp(laplacian_energy, x, V[:, 0], engine=engine)  # one direction, no frame
    assert_close(hv1, H @ V[:, 0], rtol=1e-12, atol=1e-12, what="single hvp")


def test_hessian_pattern_is_the_laplacians_and_sparse_hessian_is_exact():
    x = rng.standard_normal(16)
    pattern = nad.hessian_sparsity(laplacian_energy)(x)
    H = L_dense + np.diag(3 * x ** 2)
    np.testing.assert_array_equal(pattern.toarray(), H != 0)
    np.testing.assert_array_equal(pattern.toarray(), L_dense != 0)  # grid: full diagonal
    Hs = nad.hessian(laplacian_energy, sparse=True)(x)
    assert sp.issparse(Hs)
    assert_close(Hs.toarray(), H, rtol=1e-12, atol=1e-12, what="sparse hessian")
    assert_close(nad.hessian(laplacian_energy)(x), H, rtol=1e-12, atol=1e-12, what="hessian")


def test_jacobian_pattern_of_products_is_the_matrix_pattern():
    x = rng.standard_normal(8)
    J = nad.jacobian_sparsity(lambda x: A_design @ x)(x)
    np.testing.assert_array_equal(J.toarray(), A_design.toarray() != 0)
    Jt = nad.jacobian_sparsity(lambda y: A_design.T @ y)(rng.standard_normal(20))
    np.testing.assert_array_equal(Jt.toarray(), A_design.toarray().T != 0)


# ---- finite-element stiffness energy: formats and classes ----------------------------------

FORMATS = ["csr", "csc", "coo"]


def fe_energy(u, K):
    """Energy of a nonlinear rod: 1/2 u K u - sum(load * u) + sum(cosh(u))."""
    return 0.5 * u @ K.dot(u) - np.sum(np.linspace(0, 1, u.size) * u) + np.sum(np.cosh(u))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("cls", ["array", "matrix"])
@pytest.mark.parametrize("where", ["args", "captured"])
def test_stiffness_energy_in_every_format_class_and_place(fmt, cls, where):
    Kf = K.asformat(fmt)
    if cls == "matrix":
        Kf = {"csr": sp.csr_matrix, "csc": sp.csc_matrix, "coo": sp.coo_matrix}[fmt](Kf)
    Kd = K.toarray()
    u = rng.uniform(-0.5, 0.5, 13)
    if where == "args":
        f, args = fe_energy, (Kf,)
    else:
        def f(u):
            return fe_energy(u, Kf)
        args = ()
    g = nad.grad(f)(u, *args)
    g_dense = Kd @ u - np.linspace(0, 1, 13) + np.sinh(u)
    assert_close(g, g_dense, rtol=1e-12, atol=1e-12, what="gradient vs dense")
    v = rng.standard_normal(13)
    assert_close(nad.hvp(f, u, v, args), Kd @ v + np.cosh(u) * v, rtol=1e-12, atol=1e-12,
                 what="hvp vs dense")


def test_stiffness_gradient_against_differences_and_hessian_pattern():
    u = rng.uniform(-0.5, 0.5, 13)
    assert_close(nad.grad(fe_energy)(u, K), _fd_grad(fe_energy, u, (K,)), rtol=1e-6, atol=1e-6,
                 what="gradient vs fd")
    tridiagonal = np.abs(np.subtract.outer(np.arange(13), np.arange(13))) <= 1
    np.testing.assert_array_equal(nad.hessian_sparsity(fe_energy)(u, K).toarray(), tridiagonal)


# ---- least squares with a design matrix -------------------------------------------------------

def residual_norm(x, A, b):
    r = A @ x - b
    return r @ r


def test_least_squares_gradient_hvp_and_minimum():
    x = rng.standard_normal(8)
    Ad = A_design.toarray()
    g = nad.grad(residual_norm)(x, A_design, b_obs)
    assert_close(g, 2 * Ad.T @ (Ad @ x - b_obs), rtol=1e-12, atol=1e-12, what="gradient")
    assert_close(g, _fd_grad(residual_norm, x, (A_design, b_obs)), rtol=1e-6, atol=1e-6,
                 what="gradient vs fd")
    v = rng.standard_normal(8)
    assert_close(nad.hvp(residual_norm, x, v, (A_design, b_obs)), 2 * Ad.T @ (Ad @ v),
                 rtol=1e-12, atol=1e-12, what="hvp")
    res = nad.minimize(residual_norm, np.zeros(8), args=(A_design, b_obs), method="trust-ncg",
                       options={"gtol": 1e-10})
    best = np.linalg.lstsq(Ad, b_obs, rcond=None)[0]
    assert res.success
    assert_close(res.x, best, rtol=1e-7, atol=1e-8, what="minimiser vs lstsq")
    ref = scipy.optimize.minimize(lambda x: residual_norm(x, Ad, b_obs), np.zeros(8)).fun
    assert res.fun <= ref + 1e-10


def test_jvp_and_vjp_pass_the_dot_product_test():
    """<J v, w> == <v, J^T w> for x -> A sin(x), x -> x A and a 2-D right-hand side."""
    Ad = A_design.toarray()
    cases = [(lambda x: A_design @ np.sin(x), 8),
             (lambda y: np.sin(y) @ A_design, 20),
             (lambda x: A_design @ np.reshape(x, (8, 2)), 16),
             (lambda y: np.reshape(y, (2, 20)) @ A_design, 40)]
    for f, n in cases:
        x = rng.standard_normal(n)
        v = rng.standard_normal(n)
        y, Jv = nad.jvp(f, x, v)
        w = rng.standard_normal(np.shape(y))
        _, JTw = nad.vjp(f, x, w)
        assert np.isclose(np.sum(Jv * w), np.sum(v * JTw), rtol=1e-12)
        assert_close(Jv, central_jvp(f, x, v), rtol=1e-6, atol=1e-7, what="jvp vs fd")
    x = rng.standard_normal(16)
    np.testing.assert_allclose(cases[2][0](x), Ad @ x.reshape(8, 2), rtol=1e-14)


# ---- staying current: entries and patterns ------------------------------------------------

def test_captured_matrix_changed_in_place_or_rebound_is_seen():
    M = sp.random_array((6, 6), density=0.5, random_state=3, format="csr")
    holder = {"A": M}

    def f(x):
        return x @ (holder["A"] @ x)

    x = rng.standard_normal(6)
    first = nad.trace(f, x)
    assert_close(nad.grad(f)(x), (M + M.T) @ x, what="first")
    M.data *= -2.0  # entries changed in place: the same program, new values
    assert_close(nad.grad(f)(x), (M + M.T) @ x, what="after an in-place change")
    assert nad.trace(f, x) == first
    other = sp.random_array((6, 6), density=0.5, random_state=4, format="csr")
    holder["A"] = other  # the same shape, another pattern: another program
    assert_close(nad.grad(f)(x), (other + other.T) @ x, what="after rebinding")
    assert nad.trace(f, x) != first


def test_args_sweep_reuses_the_program_and_a_new_pattern_does_not():
    from newtonad._static_args import bind_static

    def f(x, A):
        return x @ (A @ x)

    M = sp.random_array((6, 6), density=0.5, random_state=3, format="csr")
    x = rng.standard_normal(6)
    g = nad.grad(f)
    for scale in (1.0, 3.0, -0.5):  # one pattern, new entries each call
        Ms = M * scale
        assert_close(g(x, Ms), (Ms + Ms.T) @ x, what=f"scale {scale}")
    assert bind_static(f, (M * 2.0,))[0] is bind_static(f, (M,))[0]
    other = sp.random_array((6, 6), density=0.5, random_state=4, format="csr")
    assert_close(g(x, other), (other + other.T) @ x, what="another pattern")
    assert bind_static(f, (other,))[0] is not bind_static(f, (M,))[0]
    assert nad.trace(f, x, M) != nad.trace(f, x, other)


def test_same_nnz_other_pattern_in_args_is_not_reused():
    base = sp.csr_array(np.array([[1.0, 2.0, 0.0], [0.0, 3.0, 0.0], [0.0, 0.0, 4.0]]))
    moved = sp.csr_array(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0], [0.0, 0.0, 4.0]]))
    assert base.nnz == moved.nnz

    def f(x, A):
        return np.sum((A @ x) ** 2)

    x = np.array([0.3, -1.0, 2.0])
    g = nad.grad(f)
    for A in (base, moved, base):
        Ad = A.toarray()
        assert_close(g(x, A), 2 * Ad.T @ (Ad @ x), rtol=1e-13, atol=1e-13, what="gradient")


# ---- the primitive itself -----------------------------------------------------------------

def _csr_parts(A):
    """Pattern and entries as constants (plain arrays a closure holds would be lifted to
    program inputs)."""
    A = sp.csr_array(A)
    A.sum_duplicates()
    return (Var(A.indptr.astype(np.int64), const=True), Var(A.indices.astype(np.int64),
                                                             const=True),
            A.data, A.shape)


@pytest.mark.parametrize("adjoint", [False, True])
def test_primitive_transpose_passes_the_dot_product_test(adjoint):
    indptr, indices, data, shape = _csr_parts(A_design)
    data = Var(data, const=True)
    rows = shape[1] if adjoint else shape[0]
    cols = shape[0] if adjoint else shape[1]

    def fn(x):
        return sparse_matmul(indptr, indices, data, x, shape, adjoint)

    for tail in ((), (3,)):
        program = trace_function(fn, [Slot((cols,) + tail)]).program
        v = rng.standard_normal((cols,) + tail)
        (Lv,) = evaluate(program, v)
        assert Lv.shape == (rows,) + tail
        w = rng.standard_normal(Lv.shape)
        (ct,) = evaluate(transpose_program(program, [True]), w)
        assert np.isclose(np.sum(Lv * w), np.sum(v * ct), rtol=1e-12)


def test_primitive_derivative_in_the_entries_against_differences():
    indptr, indices, data, shape = _csr_parts(A_design)
    x = rng.standard_normal(8)
    y = rng.standard_normal(20)
    check_jvp(lambda d: sparse_matmul(indptr, indices, d, x, shape), data)
    check_jvp(lambda d: sparse_matmul(indptr, indices, d, y, shape, adjoint=True), data)


# ---- what cannot be traced says so --------------------------------------------------------

def test_complex_matrix_is_refused_and_integer_matrix_promotes():
    C = sp.csr_array(np.array([[1 + 2j, 0], [0, 1j]]))
    with pytest.raises(TypeError, match="complex"):
        nad.grad(lambda x: np.sum((C @ x) ** 2))(np.ones(2))
    with pytest.raises(TypeError, match="complex"):
        nad.grad(lambda x, A: np.sum((A @ x) ** 2))(np.ones(2), C)
    integers = sp.csr_array(np.array([[2, 0], [1, 3]], dtype=np.int64))
    x = np.array([0.5, -1.5])
    Ad = integers.toarray().astype(float)
    assert_close(nad.grad(lambda x: np.sum((integers @ x) ** 2))(x), 2 * Ad.T @ (Ad @ x),
                 what="integer matrix: NumPy's promotion to float64")


def test_unsupported_uses_raise_clear_errors():
    v1 = sp.coo_array(np.array([1.0, 0.0, 2.0]))  # a 1-D sparse array
    with pytest.raises(TypeError, match="2-D"):
        nad.grad(lambda x: v1 @ x)(np.ones(3))
    with pytest.raises(AttributeError, match="only its products trace"):
        nad.grad(lambda x, A: np.sum(A.toarray() @ x))(np.ones(13), K)
    with pytest.raises(ValueError, match="needs 8 rows"):
        nad.grad(lambda x: np.sum(A_design @ x))(np.ones(5))


def test_spmatrix_star_is_the_matrix_product_and_sparray_star_is_refused():
    M = sp.csr_matrix(A_design)
    Ad = A_design.toarray()
    x, y = rng.standard_normal(8), rng.standard_normal(20)
    assert_close(nad.grad(lambda x: np.sum((M * x) ** 2))(x), 2 * Ad.T @ (Ad @ x),
                 what="spmatrix * x")
    assert_close(nad.grad(lambda y: np.sum((y * M) ** 2))(y), 2 * Ad @ (y @ Ad),
                 what="y * spmatrix")
    with pytest.raises(TypeError, match="traces the products"):
        nad.grad(lambda x: np.sum((A_design * x) ** 2))(x)  # sparray: elementwise, sparse


def test_eager_vars_and_nested_gradients_through_a_sparse_product():
    Ad = A_design.toarray()
    y = rng.standard_normal(20)
    v = nad.Var(y)
    out = np.sum((v @ A_design) ** 2)
    out.backward()
    assert_close(v.grad, 2 * Ad @ (y @ Ad), what="eager backward")
    inner = nad.grad(lambda z: 0.5 * np.sum((A_design.T @ z) ** 2))  # A A^T z
    assert_close(nad.grad(lambda z: np.sum(inner(z)))(y), Ad @ (Ad.T @ np.ones(20)),
                 what="gradient of a gradient")


def test_stiffness_energy_solved_with_its_sparse_hessian():
    """trust-exact on the Objective's sparse Hessian (the pattern of K plus the diagonal)
    reaches the root of the hand-written gradient."""
    Kd = K.toarray()
    load = np.linspace(0, 1, 13)
    obj = nad.Objective(fe_energy, args=(K,), sparse=True)
    H = obj.hess(np.zeros(13))
    assert sp.issparse(H)
    assert_close(H.toarray(), Kd + np.eye(13), rtol=1e-12, atol=1e-12, what="sparse hessian")
    res = nad.minimize(fe_energy, np.zeros(13), args=(K,), method="trust-exact",
                       options={"gtol": 1e-10})
    root = scipy.optimize.root(lambda u: Kd @ u - load + np.sinh(u), np.zeros(13),
                               jac=lambda u: Kd + np.diag(np.cosh(u)), tol=1e-13).x
    assert res.success
    assert_close(res.x, root, rtol=1e-8, atol=1e-9, what="minimiser vs root of the gradient")
