"""Plain NumPy code traces: values match NumPy, derivatives match differences."""

from __future__ import annotations

import numpy as np
import pytest

import newtonad as nad

from .helpers import check_hvp, check_jvp, check_vjp_vs_jvp

rng = np.random.default_rng(5)
A = rng.standard_normal((4, 3))
B = rng.standard_normal((2, 3, 4))
IDX = np.array([[0, 2], [3, 3]])


def x_of(*shape, low=None):
    if low is not None:
        return rng.uniform(low, low + 1.5, shape)
    return rng.standard_normal(shape)


# (id, f, x): f is ordinary NumPy code; it runs on arrays (reference) and traces.
CASES = [
    ("operators", lambda x: (2 * x - x / 3 + 1) ** 2 - (-x) + abs(x) + x ** 3 / (1 + x * x),
     x_of(5)),
    ("rpow", lambda x: 2.0 ** x + x ** 0.5, x_of(4, low=0.5)),
    ("ufuncs", lambda x: np.exp(np.sin(x)) + np.log1p(x ** 2) + np.tanh(x) * np.cosh(x / 3)
     + np.arctan(x) + np.expm1(x / 4) + np.sinh(x / 2) + np.cos(x) + np.square(x), x_of(6)),
    ("more_ufuncs", lambda x: np.log(x) + np.sqrt(x) + np.reciprocal(x) + np.log2(x) + np.log10(x)
     + np.exp2(x) + np.hypot(x, 1.0) + np.arctan2(x, 2.0) + np.logaddexp(x, 1.0)
     + np.tan(x / 4) + np.arcsin(x / 3) + np.arccos(x / 3), x_of(5, low=0.5)),
    ("minmax_clip_where", lambda x: np.maximum(x, 0.3) + np.minimum(x, -0.2) + np.clip(x, -1, 1)
     + np.where(x > 0, x ** 2, -x) + np.fmax(x, 0.1) + np.fabs(x) * np.sign(x), x_of(7)),
    ("sum_axes", lambda x: np.sum(x, axis=0) + x.sum(axis=1, keepdims=True).ravel()[:3].sum()
     + np.sum(x ** 2, axis=(0, 1)), x_of(4, 3)),
    ("mean_var_std", lambda x: np.mean(x, axis=1) + np.var(x, axis=1) + np.std(x, axis=1, ddof=1)
     + x.mean(), x_of(3, 5)),
    ("prod", lambda x: np.prod(x, axis=0) + x.prod(), x_of(3, 2, low=0.5)),
    ("max_min", lambda x: np.max(x, axis=1) + np.min(x, axis=0)[:4] + x.max() + np.amin(x),
     x_of(4, 5)),
    ("cumsum_diff", lambda x: np.cumsum(x ** 2) + np.pad(np.diff(x, n=2), (1, 1)), x_of(6)),
    ("cumsum_axis", lambda x: np.cumsum(x, axis=1) * x, x_of(3, 4)),
    ("logsumexp", lambda x: nad.numpy.logsumexp(x, axis=1), x_of(3, 4)),
    ("dot_matmul", lambda x: np.dot(A, x) + A @ x + (x @ A.T @ A)[0] + np.matmul(A, x), x_of(3)),
    ("matmul_2d", lambda x: (x.reshape(3, 2).T @ A.T) @ A, x_of(6)),
    ("matmul_batch", lambda x: np.matmul(x.reshape(2, 4, 3), B), x_of(24)),
    ("vdot_inner_outer",
     lambda x: np.vdot(x, x) + np.inner(x, x[::-1]) + np.outer(x, x).sum(axis=0), x_of(4)),
    ("einsum", lambda x: np.einsum("ij,jk,k->i", x.reshape(2, 3), A.T, x[:4]), x_of(6)),
    ("einsum_implicit", lambda x: np.einsum("ij,jk", x.reshape(2, 3), A.T), x_of(6)),
    ("tensordot", lambda x: np.tensordot(B, x.reshape(4, 2), axes=([2], [0])), x_of(8)),
    ("trace_diag", lambda x: np.trace(x.reshape(3, 3)) + np.diag(x[:3]) @ x[3:6]
     + np.diag(x.reshape(3, 3)), x_of(9)),
    ("norm", lambda x: np.linalg.norm(x) + np.linalg.norm(x, 1) + np.linalg.norm(x, np.inf)
     + np.linalg.norm(x.reshape(2, 3), axis=1).sum() + np.linalg.norm(x, 3), x_of(6)),
    ("transpose_family", lambda x: (x.reshape(2, 3, 4).T.sum(axis=0) @ np.ones(2))[:2]
     + np.swapaxes(x.reshape(2, 3, 4), 0, 2)[0, 0] + np.moveaxis(x.reshape(2, 3, 4), 0, -1)[0, 0]
     + np.transpose(x.reshape(2, 3, 4), (1, 0, 2))[1].sum(axis=0)[:2], x_of(24)),
    ("reshape_family", lambda x: np.expand_dims(x, 0).squeeze() + np.ravel(x.reshape(2, -1).T)
     + np.broadcast_to(x[:1], (6,)) + np.atleast_2d(x)[0] + x.flatten(), x_of(6)),
    ("concat_stack",
     lambda x: np.concatenate([x, x ** 2]) + np.stack([x, -x], axis=1).sum(axis=1).repeat(2)
     + np.hstack([x, x]) + np.vstack([x, x]).ravel(), x_of(3)),
    ("flip_roll_tile_repeat", lambda x: np.flip(x) * np.roll(x, 2) + np.tile(x[:2], 2)
     + np.repeat(x[:2], 2) + np.roll(x.reshape(2, 2), 1, axis=1).ravel(), x_of(4)),
    ("pad_modes", lambda x: np.pad(x, 2, constant_values=1.5) + np.pad(x, (1, 3), mode="edge")
     + np.pad(x, 2, mode="wrap") + np.pad(x, 2, mode="reflect") + np.pad(x, 2, mode="symmetric"),
     x_of(4)),
    ("basic_indexing", lambda x: x[1, ::2] + x[-1, 1:4] + x[..., 0].sum() + x[None, 0, :3][0]
     + x[::-1, -1][:3], x_of(3, 5)),
    ("integer_indexing", lambda x: x[IDX] + x[[1, 0]].sum() + x[np.array([3, -1])].sum(), x_of(5)),
    ("multi_array_indexing", lambda x: x[IDX, IDX[::-1] - 1] + x[:, [0, 2]][1:3].sum()
     + x[0, [1, 2]].sum() + x[[0, 1], 2].sum(), x_of(4, 4)),
    ("nonadjacent_indexing", lambda x: x[[0, 1], :, [1, 0]], x_of(2, 3, 2)),
    ("bool_const_mask", lambda x: x[np.array([True, False, True, True])] * 2, x_of(4)),
    ("take", lambda x: np.take(x, [2, 0, 2]) + np.take(x.reshape(2, 2), [1], axis=1).ravel()[0],
     x_of(4)),
    ("like_and_astype", lambda x: np.zeros_like(x) + np.ones_like(x) * x + np.full_like(x, 2.0)
     + (x > 0).astype(float) * x + x.astype(np.float64), x_of(4)),
    ("ufunc_reduce", lambda x: np.add.reduce(x) + np.maximum.reduce(x), x_of(4)),
]


@pytest.mark.parametrize("f, x", [pytest.param(f, x, id=name) for name, f, x in CASES])
def test_traced_value_matches_numpy(f, x):
    # the primal output of the traced program (captured arrays such as A are its inputs)
    traced, _ = nad.jvp(f, x, np.zeros_like(x), engine="numpy")
    np.testing.assert_allclose(traced, f(x), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("f, x", [pytest.param(f, x, id=name) for name, f, x in CASES])
def test_derivatives_match_differences(f, x):
    check_jvp(f, x)
    check_vjp_vs_jvp(f, x)


@pytest.mark.parametrize("f, x", [pytest.param(f, x, id=name) for name, f, x in CASES[:12]])
def test_hessian_products_of_numpy_code(f, x):
    w = np.random.default_rng(1).standard_normal(np.shape(f(x)))
    check_hvp(lambda x: np.sum(w * f(x)), x)


def test_newtonad_numpy_namespace_matches_numpy_on_arrays():
    x = x_of(3, 4)
    assert np.allclose(nad.numpy.sum(nad.numpy.sin(x), axis=1), np.sin(x).sum(axis=1))
    assert np.allclose(nad.numpy.logsumexp(x, axis=0), np.log(np.exp(x).sum(axis=0)))


def test_traced_integer_index_data():
    """Integer index arrays passed as data: a gather whose indices are a program input."""
    f = lambda x, idx: np.sum(x[idx] ** 2)
    x, idx = x_of(5), np.array([4, 0, 0, 2])
    g = nad.grad(f)(x, idx)
    expected = np.zeros(5)
    np.add.at(expected, idx, 2 * x[idx])
    np.testing.assert_allclose(g, expected)
    g2 = nad.grad(f)(x, np.array([1, 1, 1, 1]))
    np.testing.assert_allclose(g2, [0, 8 * x[1], 0, 0, 0])


def test_array_of_traced_scalars_via_newtonad_numpy():
    def residuals(x):
        return nad.numpy.array([10.0 * (x[1] - x[0] ** 2), 1.0 - x[0], [x[0], x[1]][0] * 0.0])

    f = lambda x: np.sum(residuals(x) ** 2)
    x = np.array([-1.2, 1.0])
    assert_allclose_grad = nad.grad(f)(x)
    expected = np.array([-400 * x[0] * (x[1] - x[0] ** 2) - 2 * (1 - x[0]),
                         200 * (x[1] - x[0] ** 2)])
    np.testing.assert_allclose(assert_allclose_grad, expected, rtol=1e-13)
    # NumPy's own np.array of traced entries builds the same array (an object array of
    # Vars, folded into one traced array by the first primitive it meets)
    plain = nad.grad(lambda x: np.sum(np.array([10.0 * (x[1] - x[0] ** 2), 1.0 - x[0]]) ** 2))
    np.testing.assert_allclose(plain(x), expected, rtol=1e-13)
