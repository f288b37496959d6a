"""Linear algebra on traced arrays: np.linalg, scipy.linalg, norm, einsum, matrix helpers.

Values against NumPy / SciPy; derivatives against central differences, first order in
frames (several directions at once) and in single tangents (gradients), second order
through forward-over-reverse; transposes of the linear primitives by the dot-product test.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import scipy.linalg

import newtonad as nad
import newtonad.api
from newtonad.ad.engine.numpy_eval import evaluate
from newtonad.ad.primitives import Primitive
from newtonad.ad.primitives import decompositions as dec
from newtonad.ad.program import Slot
from newtonad.ad.trace import trace_function
from newtonad.ad.transforms import transpose_program

from .helpers import assert_close, central_jvp, check_hvp, check_jvp, check_vjp_vs_jvp

rng = np.random.default_rng(20261201)


@pytest.fixture(autouse=True)
def numpy_engine():
    """The NumPy evaluator (fast to start); a few tests below run the default engine."""
    with nad.settings.override(engine="numpy"):
        yield


# ---- points ----------------------------------------------------------------------------------

def normal(*shape):
    return rng.standard_normal(shape)


def well_conditioned(n, batch=()):
    return 0.4 * normal(*batch, n, n) + 2.0 * np.eye(n)


def spd(n, batch=()):
    m = normal(*batch, n, n)
    return m @ np.swapaxes(m, -1, -2) / n + np.eye(n)


def separated_spd(n, batch=()):
    """Symmetric with eigenvalues 1, 2, ..., n (well separated: eigenvectors differentiable)."""
    q = np.linalg.qr(normal(*batch, n, n))[0]
    return (q * np.arange(1.0, n + 1)[..., None, :]) @ np.swapaxes(q, -1, -2)


def distinct_singular(m, n, batch=()):
    k = min(m, n)
    u = np.linalg.qr(normal(*batch, m, k))[0]
    v = np.linalg.qr(normal(*batch, n, k))[0]
    return (u * np.linspace(3.0, 1.0, k)) @ np.swapaxes(v, -1, -2)


def triangular(n, lower, batch=()):
    """A well-conditioned matrix whose unread triangle holds large junk (must not matter)."""
    t = 0.3 * normal(*batch, n, n) + 2.0 * np.eye(n)
    junk = 5.0 * normal(*batch, n, n)
    keep = np.tri(n, dtype=bool) if lower else ~np.tri(n, k=-1, dtype=bool)
    return np.where(keep, t, junk)


def by_column(v):
    """Each column times its first entry: unchanged by the sign LAPACK picks for a column."""
    return v * v[..., :1, :]


def by_row(vh):
    return vh * vh[..., :, :1]


def traced_value(f, x):
    return nad.jvp(f, x, np.zeros(np.shape(x) + (1,)))[0]


def eager_value(f, x):
    """f on an eager Var: values computed as the graph is recorded (any x, no derivative)."""
    return np.asarray(f(nad.Var(x)).value)


def check_all(f, x, second=True):
    """jvp frames and vjp against differences; HVP of a scalar of f against differences
    of the (single-tangent) gradient."""
    check_jvp(f, x)
    check_vjp_vs_jvp(f, x)
    if second:
        w = np.random.default_rng(5).standard_normal(np.shape(f(x)))
        check_hvp(lambda x: np.sum(w * np.sin(f(x))), x)


# ---- every primitive: one or more jvp cases --------------------------------------------------

B3 = normal(3, 2)
B_BATCH = normal(2, 3, 2, 2)
A_FIXED = well_conditioned(3, (2,))
L_FIXED = triangular(3, True)


def _tri_case(lower, trans, unit):
    a = triangular(3, lower, batch=(2,))
    return (lambda x: dec.triangular_solve(x, B_BATCH, lower=lower, trans=trans,
                                           unit_diagonal=unit), a)


# name -> list of (function of one array, point)
PRIMITIVE_CASES: dict[str, list] = {
    "solve": [(lambda x: dec.solve(x, B3), well_conditioned(3)),
              (lambda x: dec.solve(x, B_BATCH), well_conditioned(3, (2,))),
              (lambda x: dec.solve(A_FIXED, x), normal(2, 3, 2, 2))],
    "triangular_solve": [_tri_case(lo, tr, un) for lo in (True, False) for tr in (True, False)
                         for un in (True, False)]
    + [(lambda x: dec.triangular_solve(L_FIXED, x, lower=True), normal(3, 4))],
    "cholesky": [(dec.cholesky, spd(4)), (dec.cholesky, spd(3, (2,)))],
    "eigh": [(lambda x: dec.eigh(x, "L")[..., :1, :], separated_spd(4)),
             (lambda x: by_column(dec.eigh(x, "L")[..., 1:, :]), separated_spd(4)),
             (lambda x: by_column(dec.eigh(x, "U")[..., 1:, :]), separated_spd(3, (2,)))],
    "svd": [(lambda x: by_column(dec.svd(x)[..., :5, :]), distinct_singular(5, 3)),
            (lambda x: dec.svd(x)[..., 5, :], distinct_singular(5, 3)),
            (lambda x: by_column(dec.svd(x)[..., 6:, :]), distinct_singular(5, 3)),
            (lambda x: by_column(dec.svd(x)[..., :3, :]), distinct_singular(3, 5)),
            (lambda x: by_column(dec.svd(x)[..., 4:, :]), distinct_singular(3, 5)),
            (lambda x: by_column(dec.svd(x)[..., :4, :]), distinct_singular(4, 4, (2,)))],
    "svdvals": [(dec.svdvals, distinct_singular(4, 3)),
                (dec.svdvals, distinct_singular(2, 3, (2,)))],
    "qr": [(dec.qr, normal(5, 3)), (dec.qr, well_conditioned(3, (2,)))],
    "pinv": [(dec.pinv, distinct_singular(5, 3)), (dec.pinv, distinct_singular(3, 4, (2,))),
             (lambda x: dec.pinv(x, rcond=1e-10), distinct_singular(4, 4))],
    "logabsdet": [(dec.logabsdet, well_conditioned(3)),
                  (dec.logabsdet, -well_conditioned(3, (2,)))],
    "det_sign": [(dec.det_sign, well_conditioned(3, (2,)))],
}


def _decomposition_primitives() -> dict[str, Primitive]:
    return {p.name: p for p in vars(dec).values() if isinstance(p, Primitive)}


def test_every_decomposition_primitive_has_jvp_and_transpose_cases():
    prims = _decomposition_primitives()
    assert len(prims) == 10
    assert not set(prims) - set(PRIMITIVE_CASES), "primitives without a jvp case"
    linear = {name for name, p in prims.items() if p.transpose is not None}
    assert linear == {"solve", "triangular_solve"} == set(TRANSPOSE_CASES)
    assert all(p.numpy_only for p in prims.values())


def _cases():
    return [pytest.param(f, x, id=f"{name}-{i}")
            for name, cases in PRIMITIVE_CASES.items() for i, (f, x) in enumerate(cases)]


@pytest.mark.parametrize("f, x", _cases())
def test_primitive_derivatives(f, x):
    check_all(f, x)


def test_det_sign_value_and_zero_derivative():
    a = well_conditioned(3, (4,))
    a[1] *= -1.0
    assert_close(traced_value(dec.det_sign, a), np.sign(np.linalg.det(a)))
    _, t = nad.jvp(dec.det_sign, a, normal(4, 3, 3, 2))
    assert np.all(t == 0.0)


# ---- transposes of the solves: <L v, w> == <v, L^T w> ------------------------------------------

TRANSPOSE_CASES: dict[str, list] = {
    "solve": [(dec.solve, well_conditioned(3, (2,)), normal(2, 3, 4, 2))],
    "triangular_solve": [
        (lambda a, b, lo=lo, tr=tr, un=un: dec.triangular_solve(a, b, lower=lo, trans=tr,
                                                                 unit_diagonal=un),
         triangular(3, lo, (2,)), normal(2, 3, 2))
        for lo in (True, False) for tr in (True, False) for un in (True, False)],
}


@pytest.mark.parametrize("fn, a, b", [pytest.param(*c, id=f"{n}-{i}") for n, cs in
                                      TRANSPOSE_CASES.items() for i, c in enumerate(cs)])
def test_transpose_dot_product(fn, a, b):
    program = trace_function(fn, [Slot(a.shape), Slot(b.shape)]).program
    (lv,) = evaluate(program, a, b)
    w = normal(*lv.shape)
    (ct,) = evaluate(transpose_program(program, [False, True]), a, w)
    assert np.isclose(np.sum(lv * w), np.sum(b * ct), rtol=1e-12, atol=1e-12)


def test_solve_refuses_to_transpose_in_the_matrix():
    program = trace_function(dec.solve, [Slot((3, 3)), Slot((3,))]).program
    with pytest.raises(ValueError, match="linear in its right-hand side only"):
        transpose_program(program, [True, False])


# ---- np.linalg: values and derivatives through the NumPy functions -------------------------------

A3 = well_conditioned(3)
A_BATCH = well_conditioned(3, (2,))

NUMPY_CASES = {
    "solve vector": (lambda x: np.linalg.solve(x, B3[:, 0]), A3),
    "solve batch, vector b": (lambda x: np.linalg.solve(x, B3[:, 0]), A_BATCH),
    "solve broadcast b": (lambda x: np.linalg.solve(A_BATCH, x), normal(1, 3, 2)),
    "inv": (np.linalg.inv, A3),
    "inv batch": (np.linalg.inv, A_BATCH),
    "det": (np.linalg.det, A3),
    "det batch negative": (np.linalg.det, -A_BATCH),
    "slogdet": (lambda x: np.linalg.slogdet(x).logabsdet, A_BATCH),
    "cholesky": (np.linalg.cholesky, spd(4)),
    "cholesky upper": (lambda x: np.linalg.cholesky(x, upper=True), spd(3, (2,))),
    "eigh values": (lambda x: np.linalg.eigh(x).eigenvalues, separated_spd(4)),
    "eigh vectors": (lambda x: by_column(np.linalg.eigh(x)[1]), separated_spd(4)),
    "eigh UPLO=U": (lambda x: by_column(np.linalg.eigh(x, UPLO="U")[1]), separated_spd(3)),
    "eigvalsh": (np.linalg.eigvalsh, separated_spd(3, (2,))),
    "svd U": (lambda x: by_column(np.linalg.svd(x, full_matrices=False)[0]),
              distinct_singular(5, 3)),
    "svd S": (lambda x: np.linalg.svd(x, full_matrices=False).S, distinct_singular(3, 5)),
    "svd Vh": (lambda x: by_row(np.linalg.svd(x, full_matrices=False)[2]), distinct_singular(3, 5)),
    "svd square full": (lambda x: by_row(np.linalg.svd(x)[2]), distinct_singular(3, 3, (2,))),
    "svd values": (lambda x: np.linalg.svd(x, compute_uv=False), distinct_singular(4, 2)),
    "svdvals": (np.linalg.svdvals, distinct_singular(2, 4)),
    "qr Q": (lambda x: np.linalg.qr(x).Q, normal(5, 3)),
    "qr R": (lambda x: np.linalg.qr(x)[1], normal(2, 4, 4)),
    "qr mode r": (lambda x: np.linalg.qr(x, mode="r"), normal(4, 3)),
    "pinv tall": (np.linalg.pinv, distinct_singular(5, 3)),
    "pinv wide batch": (np.linalg.pinv, distinct_singular(3, 4, (2,))),
    "pinv rcond": (lambda x: np.linalg.pinv(x, rcond=1e-8), distinct_singular(3, 3)),
    "pinv rtol": (lambda x: np.linalg.pinv(x, rtol=1e-8), distinct_singular(3, 2)),
    "matrix_power 3": (lambda x: np.linalg.matrix_power(x, 3), A3),
    "matrix_power 6 batch": (lambda x: np.linalg.matrix_power(x, 6), 0.5 * A_BATCH),
    "matrix_power -2": (lambda x: np.linalg.matrix_power(x, -2), A3),
    "multi_dot": (lambda x: np.linalg.multi_dot([x[0], x[1], x[2].T, x[0]]), normal(3, 3, 3)),
    "multi_dot vectors": (lambda x: np.linalg.multi_dot([x[0, 0], x[1], x[2], x[0, :, 1]]),
                          normal(3, 3, 3)),
}


@pytest.mark.parametrize("f, x", [pytest.param(*c, id=n) for n, c in NUMPY_CASES.items()])
def test_numpy_linalg_values_and_derivatives(f, x):
    assert_close(traced_value(f, x), f(x), 1e-10, 1e-10, "value")
    check_all(f, x)


def test_result_types_are_numpys():
    a = spd(3)
    sl = traced_value(lambda x: np.stack(np.linalg.slogdet(x)), a)
    assert_close(sl, np.stack(np.linalg.slogdet(a)))

    def fields(x):
        w = np.linalg.eigh(x)
        s = np.linalg.slogdet(x)
        u = np.linalg.svd(x)
        q = np.linalg.qr(x)
        return (w.eigenvalues.sum() + w.eigenvectors.sum() * 0 + s.sign + s.logabsdet
                + u.S.sum() + q.R.sum() * 0 + u.Vh.sum() * 0 + u.U.sum() * 0 + q.Q.sum() * 0)

    assert_close(traced_value(fields, a), fields(a))


def test_matrix_power_zero_and_one():
    a = A_BATCH
    assert_close(traced_value(lambda x: np.linalg.matrix_power(x, 0) + 0 * x, a),
                 np.linalg.matrix_power(a, 0))
    assert_close(traced_value(lambda x: np.linalg.matrix_power(x, 1), a), a)


def test_multi_dot_picks_the_cheap_order():
    """A @ B @ v costs two matrix-vector products, not a matrix-matrix one."""
    a, b, v = normal(30, 30), normal(30, 30), normal(30)
    program = nad.trace(lambda x: np.linalg.multi_dot([a, b, x]), v)
    einsums = [s for s in program.steps if s.primitive.name == "einsum"]
    assert all(np.prod(program.slots[s.output].shape) == 30 for s in einsums)


def test_eager_backward_through_solve():
    a = nad.Var(A3)
    y = nad.numpy.sum(np.linalg.solve(a, B3[:, 0]) ** 2)
    y.backward()
    f = lambda m: np.sum(np.linalg.solve(m.reshape(3, 3), B3[:, 0]) ** 2)  # noqa: E731
    fd = np.array([central_jvp(f, A3.ravel(), e) for e in np.eye(9)]).reshape(3, 3)
    assert_close(a.grad, fd, 1e-6, 1e-7)


@pytest.mark.parametrize("call, parameter", [
    (lambda x: np.linalg.svd(x, hermitian=True), "hermitian"),
    (lambda x: np.linalg.svd(x[:, :2]), "full_matrices"),
    (lambda x: np.linalg.qr(x, mode="raw"), "mode"),
    (lambda x: np.linalg.qr(x[:, :2], mode="complete"), "mode='complete'"),
    (lambda x: np.linalg.multi_dot([x, x], out=np.zeros((3, 3))), "out"),
    (lambda x: np.linalg.pinv(x, rcond=np.ones(1)), "rcond"),
    (lambda x: np.einsum("ij->", x, out=np.zeros(())), "out"),
    (lambda x: np.trace(x, out=np.zeros(())), "out"),
])
def test_unsupported_parameters_are_named(call, parameter):
    with pytest.raises(NotImplementedError, match=parameter):
        traced_value(call, A3)


def test_qr_of_a_wide_matrix_has_values_but_no_derivative():
    x = normal(2, 4)
    assert_close(eager_value(lambda x: np.linalg.qr(x)[1], x), np.linalg.qr(x)[1])
    with pytest.raises(NotImplementedError, match="m >= n"):
        nad.grad(lambda x: np.sum(np.linalg.qr(x)[1]))(x)


def test_bad_shapes_raise_numpys_errors():
    with pytest.raises(np.linalg.LinAlgError):
        traced_value(np.linalg.inv, normal(3, 2))
    with pytest.raises(np.linalg.LinAlgError):
        traced_value(np.linalg.det, normal(3))
    with pytest.raises(ValueError):
        traced_value(lambda x: np.linalg.solve(x, np.ones(4)), A3)
    with pytest.raises(ValueError, match="UPLO"):
        traced_value(lambda x: np.linalg.eigh(x, UPLO="X")[0], A3)


# ---- norm: every order, axes, keepdims --------------------------------------------------------

MATRIX_ORDS = [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]
VECTOR_ORDS = [None, 1, 2, np.inf, -np.inf, 3, 0.5, -1.5]


@pytest.mark.parametrize("ord", MATRIX_ORDS, ids=str)
@pytest.mark.parametrize("axis, keepdims, shape", [
    (None, False, (4, 3)), ((0, 1), False, (3, 4)), ((1, 0), True, (4, 3)),
    ((2, 0), False, (3, 2, 4)), ((-1, -2), True, (2, 3, 4))], ids=str)
def test_matrix_norms(ord, axis, keepdims, shape):
    x = normal(*shape)
    f = lambda x: np.linalg.norm(x, ord, axis, keepdims)  # noqa: E731
    assert_close(traced_value(f, x), f(x), 1e-12, 1e-12, "value")
    check_jvp(f, x)  # 1 / inf norms are piecewise linear: first order at a generic point
    if ord in (None, "fro", "nuc", 2, -2):
        check_hvp(lambda x: np.sum(f(x) ** 2), x)


@pytest.mark.parametrize("ord", VECTOR_ORDS, ids=str)
@pytest.mark.parametrize("axis, keepdims", [(None, False), (0, True), (-1, False), ((1,), True)],
                         ids=str)
def test_vector_norms(ord, axis, keepdims):
    x = normal(3, 4) if axis is not None else normal(5)
    f = lambda x: np.linalg.norm(x, ord, axis, keepdims)  # noqa: E731
    assert_close(traced_value(f, x), f(x), 1e-12, 1e-12, "value")
    check_jvp(f, x)
    if ord not in (np.inf, -np.inf, 1):
        check_hvp(lambda x: np.sum(f(x) ** 2), x)


def test_norm_zero_counts_nonzeros_with_zero_derivative():
    x = np.array([[0.0, 1.5, -2.0], [0.0, 0.0, 3.0]])
    for axis in (None, 0, 1):
        def f(x, axis=axis):
            return np.linalg.norm(x if axis is not None else x.ravel(), 0, axis)

        assert_close(traced_value(f, x), f(x))
        assert np.all(nad.jacobian(f)(x) == 0.0)


def test_norm_flattened_and_keepdims_defaults():
    x = normal(2, 3, 4)
    for kw in ({}, {"keepdims": True}):
        assert_close(traced_value(lambda x, kw=kw: np.linalg.norm(x, **kw), x),
                     np.linalg.norm(x, **kw))
    check_hvp(lambda x: np.linalg.norm(x), x)


@pytest.mark.parametrize("call, error, match", [
    (lambda x: np.linalg.norm(x[0], "fro"), ValueError, "Invalid norm order 'fro' for vectors"),
    (lambda x: np.linalg.norm(x[0], "nuc", axis=0), ValueError, "for vectors"),
    (lambda x: np.linalg.norm(x, 3), ValueError, "Invalid norm order for matrices"),
    (lambda x: np.linalg.norm(x, 2, axis=(0, 0)), ValueError, "Duplicate axes"),
    (lambda x: np.linalg.norm(x[None], 2), ValueError, "Improper number of dimensions"),
])
def test_norm_errors_match_numpy(call, error, match):
    x = normal(3, 3)
    with pytest.raises(error, match=match):
        call(x)  # NumPy's own message ...
    with pytest.raises(error, match=match):
        traced_value(call, x)  # ... and newtonad's


def test_array_api_norms():
    x = normal(2, 3, 4)
    for f in (lambda x: np.linalg.matrix_norm(x, ord="nuc"),
              lambda x: np.linalg.matrix_norm(x, ord=1, keepdims=True),
              lambda x: np.linalg.vector_norm(x),
              lambda x: np.linalg.vector_norm(x, ord=3, axis=(0, 2), keepdims=True),
              lambda x: np.linalg.vector_norm(x, axis=1)):
        assert_close(traced_value(f, x), f(x), 1e-12, 1e-12)
        check_jvp(f, x)


# ---- einsum: ellipsis, repeated indices, implicit output, sublists -------------------------------

EINSUM_CASES = [
    ("ii->", [(4, 4)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(3, 3)]),
    ("ij,jj->i", [(3, 4), (4, 4)]),
    ("iij->j", [(3, 3, 2)]),
    ("bii->bi", [(2, 3, 3)]),
    ("iji->j", [(3, 2, 3)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 2)]),
    ("...ij,...jk", [(1, 3, 4), (2, 4, 2)]),
    ("i...->...", [(3, 2, 4)]),
    ("...i,...i->...", [(2, 3), (3,)]),
    ("i...i", [(3, 2, 3)]),
    ("ij,ij", [(3, 4), (3, 4)]),
    ("ji", [(3, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
]


@pytest.mark.parametrize("spec, shapes", EINSUM_CASES, ids=[c[0] for c in EINSUM_CASES])
def test_einsum(spec, shapes):
    ops = [normal(*s) for s in shapes]
    sizes = np.cumsum([0] + [o.size for o in ops])
    x = np.concatenate([o.ravel() for o in ops])

    def f(x):
        return np.einsum(spec, *[x[a:b].reshape(s) for a, b, s in zip(sizes, sizes[1:], shapes)])

    assert_close(traced_value(f, x), f(x), 1e-12, 1e-12)
    check_all(f, x)


def test_einsum_sublist_form_and_errors():
    a, b = normal(3, 4), normal(4, 2)
    f = lambda x: np.einsum(x, [0, 1], b, [1, 2], [0, 2])  # noqa: E731
    assert_close(traced_value(f, a), a @ b)
    g = lambda x: np.einsum(x, [Ellipsis, 1], b, [1, 2])  # noqa: E731
    assert_close(traced_value(g, a), np.einsum(a, [Ellipsis, 1], b, [1, 2]))
    with pytest.raises(ValueError):
        traced_value(lambda x: np.einsum("ij->k", x), a)
    with pytest.raises(ValueError):
        traced_value(lambda x: np.einsum("ijk->", x), a)


# ---- diagonal, trace, diag, kron, triu, tril, cross ---------------------------------------------

@pytest.mark.parametrize("offset, axis1, axis2", [(0, 0, 1), (1, 0, 1), (-2, 0, 1), (1, 2, 0),
                                                  (0, -1, 1), (-1, 1, 2), (5, 0, 1)])
def test_diagonal_and_trace_any_axes(offset, axis1, axis2):
    x = normal(3, 4, 5)
    for f in (lambda x: np.diagonal(x, offset, axis1, axis2),
              lambda x: x.diagonal(offset, axis1, axis2),
              lambda x: np.trace(x, offset, axis1, axis2),
              lambda x: x.trace(offset, axis1, axis2)):
        assert_close(traced_value(f, x), f(x))
        check_jvp(f, x)
        check_vjp_vs_jvp(f, x)


def test_linalg_diagonal_and_trace():
    x = normal(2, 3, 3)
    for f in (lambda x: np.linalg.diagonal(x, offset=1), lambda x: np.linalg.trace(x)):
        assert_close(traced_value(f, x), f(x))


@pytest.mark.parametrize("k", [0, 1, -2])
def test_diag_builds_and_reads(k):
    v, m = normal(3), normal(4, 4)
    for f, x in ((lambda v: np.diag(v, k), v), (lambda m: np.diag(m, k), m)):
        assert_close(traced_value(f, x), f(x))
        check_jvp(f, x)
        check_vjp_vs_jvp(f, x)


@pytest.mark.parametrize("sa, sb", [((2, 3), (3, 2)), ((3,), (2, 2)), ((2, 1, 2), (3, 2)),
                                     ((), (2,))])
def test_kron(sa, sb):
    b = normal(*sb)
    f = lambda a: np.kron(a, b)  # noqa: E731
    g = lambda a: np.kron(b, a)  # noqa: E731
    a = normal(*sa)
    for h in (f, g):
        assert_close(traced_value(h, a), h(a))
        check_jvp(h, a)
        check_vjp_vs_jvp(h, a)


@pytest.mark.parametrize("k", [0, 1, -1, 3])
@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (2, 3, 4), (4,)], ids=str)
def test_triu_tril(k, shape):
    x = normal(*shape)
    x[..., 0] = np.inf  # NumPy's where, not a product with a mask: 0 where masked, never nan
    for f in (lambda x: np.triu(x, k), lambda x: np.tril(x, k)):
        assert_close(np.nan_to_num(eager_value(f, x), posinf=7.0), np.nan_to_num(f(x), posinf=7.0))
    x = normal(*shape)
    for f in (lambda x: np.triu(x, k), lambda x: np.tril(x, k)):
        check_jvp(f, x)
        check_vjp_vs_jvp(f, x)


@pytest.mark.filterwarnings("ignore:Arrays of 2-dimensional vectors:DeprecationWarning")
@pytest.mark.parametrize("sa, sb, kw", [((3,), (3,), {}), ((4, 3), (3,), {}),
                                         ((3, 4), (4, 3), {"axisa": 0}),
                                         ((2, 3), (2, 3), {"axisc": 0}),
                                         ((3, 2), (3, 2), {"axis": 0}),
                                         ((2,), (3,), {}), ((4, 3), (4, 2), {})], ids=str)
def test_cross(sa, sb, kw):
    b = normal(*sb)
    swapped = {{"axisa": "axisb", "axisb": "axisa"}.get(k, k): v for k, v in kw.items()}
    f = lambda a: np.cross(a, b, **kw)  # noqa: E731
    g = lambda a: np.cross(b, a, **swapped)  # noqa: E731
    a = normal(*sa)
    for h in (f, g):
        with np.errstate(all="ignore"):
            assert_close(traced_value(h, a), h(a))
        check_all(h, a)


@pytest.mark.filterwarnings("ignore:Arrays of 2-dimensional vectors:DeprecationWarning")
def test_cross_of_two_dimensional_vectors():
    a, b = normal(4, 2), normal(4, 2)
    with pytest.warns(DeprecationWarning, match="2-dimensional vectors"):
        traced_value(lambda x: np.cross(x, b), a)
    expected = a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]
    assert_close(traced_value(lambda x: np.cross(x, b), a), expected)
    check_jvp(lambda x: np.cross(x, b), a)


# ---- scipy.linalg --------------------------------------------------------------------------------

@pytest.mark.parametrize("trans", [0, 1, 2, "N", "T", "C"])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("unit_diagonal", [True, False])
def test_solve_triangular_plain_scipy_call(trans, lower, unit_diagonal):
    a, b = triangular(4, lower), normal(4, 2)
    kw = dict(trans=trans, lower=lower, unit_diagonal=unit_diagonal)
    f = lambda x: scipy.linalg.solve_triangular(x[:, :4], x[:, 4:], **kw)  # noqa: E731
    x = np.concatenate([a, b], axis=1)
    assert_close(traced_value(f, x), f(x), 1e-12, 1e-12)
    check_all(f, x, second=(trans == 1))


def test_solve_triangular_shapes_as_scipy():
    a = triangular(3, True, batch=(2,))
    for b in (normal(3), normal(2, 3, 4), normal(1, 3, 1)):
        f = lambda x, b=b: scipy.linalg.solve_triangular(x, b, lower=True)  # noqa: E731
        assert_close(traced_value(f, a), f(a), 1e-12, 1e-12)
    b = normal(2, 3, 4)
    f = lambda x: scipy.linalg.solve_triangular(x[0], b, trans=1)  # noqa: E731
    assert_close(traced_value(f, a), f(a), 1e-12, 1e-12)
    with pytest.raises(ValueError, match="trans"):
        traced_value(lambda x: scipy.linalg.solve_triangular(x[0], np.ones(3), trans=3), a)


@pytest.mark.parametrize("lower", [True, False])
def test_scipy_cholesky_cho_factor_cho_solve(lower):
    s, b = spd(4), normal(4, 2)
    chol = lambda x: scipy.linalg.cholesky(x, lower=lower)  # noqa: E731
    factor = lambda x: scipy.linalg.cho_factor(x, lower=lower)[0]  # noqa: E731
    solve = lambda x: scipy.linalg.cho_solve(  # noqa: E731
        scipy.linalg.cho_factor(x, lower=lower), b)
    factor_s = (scipy.linalg.cholesky(s, lower=lower), lower)
    solve_b = lambda y: scipy.linalg.cho_solve(factor_s, y)  # noqa: E731
    for f, x in ((chol, s), (factor, s), (solve, s), (solve_b, b)):
        assert_close(traced_value(f, x), f(x), 1e-12, 1e-12)
        check_all(f, x)
    assert traced_value(lambda x: scipy.linalg.cho_factor(x, lower=lower)[1] + 0 * x[0, 0], s) \
        == float(lower)


def test_scipy_cholesky_default_is_upper():
    s = spd(3)
    assert_close(traced_value(scipy.linalg.cholesky, s), np.linalg.cholesky(s).T, 1e-12, 1e-12)


def test_scipy_linalg_is_not_imported_by_newtonad_and_registers_when_imported():
    code = ("import sys, newtonad\n"
            "assert 'scipy.linalg' not in sys.modules\n"
            "import numpy as np, scipy.linalg\n"
            "from newtonad.ad import numpy_linalg\n"
            "f = scipy.linalg.solve_triangular\n"
            "assert f.__newtonad_impl__ is numpy_linalg.solve_triangular\n"
            "g = newtonad.grad(lambda x: np.sum(scipy.linalg.solve_triangular(x, np.ones(2))),"
            " engine='numpy')\n"
            "print(g(np.array([[2.0, 5.0], [1.0, 4.0]])))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    # d/dA sum(A^{-1} 1) of the upper triangle [[2, 5], [0, 4]]: -(A^{-T} 1)(A^{-1} 1)^T, lower 0
    u = np.array([[2.0, 5.0], [0.0, 4.0]])
    x = np.linalg.solve(u, np.ones(2))
    expected = np.triu(-np.outer(np.linalg.solve(u.T, np.ones(2)), x))
    got = np.array(out.stdout.replace("[", " ").replace("]", " ").split(), dtype=float)
    assert_close(got.reshape(2, 2), expected, 1e-12, 1e-12)


# ---- Gaussian-process negative log likelihood, to second order -----------------------------------

T = np.linspace(0.0, 3.0, 7)
D2 = (T[:, None] - T[None, :]) ** 2
Y = np.sin(T) + 0.1 * np.random.default_rng(4).standard_normal(7)
THETA = np.array([0.9, 1.3, 0.4])


def kernel(x):
    return np.exp(-D2 / x[0] ** 2) * x[1] ** 2 + x[2] ** 2 * np.eye(len(T))


def nll_solve(x):
    k = kernel(x)
    return 0.5 * Y @ np.linalg.solve(k, Y) + 0.5 * np.linalg.slogdet(k)[1]


def nll_cholesky(x):
    chol = np.linalg.cholesky(kernel(x))
    alpha = scipy.linalg.solve_triangular(chol, Y, lower=True)
    return 0.5 * alpha @ alpha + np.sum(np.log(np.diagonal(chol)))


def nll_cho_solve(x):
    k = kernel(x)
    c = scipy.linalg.cho_factor(k)
    return 0.5 * Y @ scipy.linalg.cho_solve(c, Y) + 0.5 * np.log(np.linalg.det(k))


def nll_inverse(x):
    k = kernel(x)
    return 0.5 * Y @ np.linalg.inv(k) @ Y + 0.5 * np.log(np.linalg.det(k))


@pytest.mark.parametrize("nll", [nll_solve, nll_cholesky, nll_cho_solve, nll_inverse])
def test_gaussian_process_nll_to_second_order(nll):
    value, grad = nad.value_and_grad(nll)(THETA)
    assert np.isclose(value, nll(THETA), rtol=1e-12)
    fd = np.array([central_jvp(nll, THETA, e) for e in np.eye(3)])
    assert_close(grad, fd, 1e-6, 1e-8, "gradient")
    check_hvp(nll, THETA, k=3)
    hess = nad.hessian(nll)(THETA)
    assert_close(hess, hess.T, 1e-10, 1e-10, "symmetric Hessian")


def test_gaussian_process_routes_agree_and_minimize():
    assert_close(nad.grad(nll_solve)(THETA), nad.grad(nll_cholesky)(THETA), 1e-9, 1e-10)
    res = nad.minimize(nll_cholesky, THETA, method="trust-exact")
    assert res.success
    assert np.linalg.norm(nad.grad(nll_solve)(res.x)) < 1e-5


def test_default_engine_runs_decompositions():
    """The numba engine evaluates the NumPy-only primitives with NumPy: same numbers."""
    with nad.settings.override(engine="numba"):
        v = normal(3, 2)
        hv = nad.hvp(nll_cholesky, THETA, v)
        assert_close(hv, nad.hvp(nll_cholesky, THETA, v, engine="numpy"), 1e-10, 1e-12)
        assert_close(nad.grad(nll_solve)(THETA), nad.grad(nll_solve, engine="numpy")(THETA),
                     1e-12, 1e-12)


def test_explicit_namespace_newtonad_numpy_linalg():
    import newtonad.numpy as nnp

    a = spd(3)

    def f(x):
        return (nnp.linalg.slogdet(x)[1] + nnp.sum(nnp.linalg.inv(x)) + nnp.linalg.norm(x, "nuc")
                + nnp.sum(nnp.kron(nnp.triu(x), nnp.tril(x))) + nnp.sum(nnp.cross(x, x[::-1])))

    expected = (np.linalg.slogdet(a)[1] + np.sum(np.linalg.inv(a)) + np.linalg.norm(a, "nuc")
                + np.sum(np.kron(np.triu(a), np.tril(a))) + np.sum(np.cross(a, a[::-1])))
    assert np.isclose(traced_value(f, a), expected, rtol=1e-12)
    assert np.isclose(f(a), expected, rtol=1e-12)  # plain arrays in, NumPy out
    check_hvp(f, a)


def test_plain_arrays_in_plain_numpy_out():
    import newtonad.numpy as nnp

    a, s, t = well_conditioned(3, (2,)), separated_spd(3), distinct_singular(4, 3)
    pairs = [
        (nnp.linalg.solve(a, B3), np.linalg.solve(a, B3)), (nnp.linalg.inv(a), np.linalg.inv(a)),
        (nnp.linalg.det(a), np.linalg.det(a)), (nnp.linalg.cholesky(s), np.linalg.cholesky(s)),
        (nnp.linalg.eigh(s)[0], np.linalg.eigh(s)[0]), (nnp.linalg.svd(t, False)[1],
                                                          np.linalg.svd(t, False)[1]),
        (nnp.linalg.qr(t)[1], np.linalg.qr(t)[1]), (nnp.linalg.pinv(t), np.linalg.pinv(t)),
        (nnp.linalg.matrix_power(a, 0), np.linalg.matrix_power(a, 0)),
        (nnp.linalg.matrix_power(a, -3), np.linalg.matrix_power(a, -3)),
        (nnp.linalg.norm(t, 2), np.linalg.norm(t, 2)), (nnp.einsum("ii->i", s), np.diag(s)),
        (nnp.diag(B3[:, 0], 1), np.diag(B3[:, 0], 1)),
        (nnp.trace(a, 0, 1, 2), np.trace(a, 0, 1, 2)),
    ]
    for ours, numpys in pairs:
        assert isinstance(ours, (np.ndarray, np.floating, float)), type(ours)
        assert_close(ours, numpys, 1e-12, 1e-12)


@pytest.mark.parametrize("values", [lambda x: np.linalg.eigvalsh(x), lambda x: np.linalg.eigh(x)[0],
                                    lambda x: np.linalg.svd(x)[1]])
def test_values_alone_differentiate_at_repeated_eigenvalues(values):
    """At the identity every eigenvalue is repeated: the eigenvectors have no derivative, but
    sum(w²) = |S|² (S the symmetric matrix read from the lower triangle) does, and the
    eigenvector part must not turn the zero cotangent it receives into NaN."""
    g = nad.grad(lambda x: np.sum(values(x) ** 2))(np.eye(3))
    assert np.all(np.isfinite(g))
    assert_close(g, 2.0 * np.eye(3), 1e-12, 1e-12)  # d|A|²/dA = 2A for svd too
