"""The NumPy surface: no keyword silently dropped, np.prod's derivatives at
zeros, NumPy's indexing rules, and the new functions (values against NumPy, derivatives
against central differences, second order where smooth)."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import newtonad as nad
import newtonad.api
from newtonad.ad import numpy_api as npa

from .helpers import assert_close, central_jvp, check_hvp, check_jvp, check_vjp_vs_jvp

rng = np.random.default_rng(11)
X = rng.standard_normal((3, 4))
MASK = rng.random((3, 4)) > 0.4
MASK[:, 0] = True  # every row and column keeps an entry
MASK[0, :] = True


@pytest.fixture(autouse=True)
def numpy_engine(request):
    """Most checks run on the NumPy evaluator (fast); tests marked ``numba`` use the default."""
    if "numba" in request.node.name:
        yield
        return
    with nad.settings.override(engine="numpy"):
        yield


def _flat(result):
    """One float vector from any result (tuples and lists of arrays, integer arrays)."""
    if isinstance(result, (tuple, list)):
        return np.concatenate([np.ravel(r) * 1.0 for r in result])
    return np.ravel(result) * 1.0


def traced_value(f, x):
    return nad.jvp(f, x, np.zeros(np.shape(x) + (1,)))[0]


# ---- 1. every keyword of every function: implemented exactly, or refused by name -------------

W4 = np.arange(1.0, 5.0)
KW_SUM = {"axis": [0, (0, 1), -1], "dtype": [np.float64, np.float32], "out": [np.empty(4)],
          "keepdims": [True], "initial": [2.5], "where": [MASK, MASK[0]]}
KW_MAX = {"axis": [0, -1], "out": [np.empty(4)], "keepdims": [True], "initial": [0.3],
          "where": [MASK]}
KW_MEAN = {"axis": [0, (0, 1)], "dtype": [np.float64], "out": [np.empty(4)], "keepdims": [True],
           "where": [MASK, MASK[1]]}
KW_VAR = {"axis": [1], "dtype": [np.float64], "out": [np.empty(3)], "ddof": [1],
          "keepdims": [True], "where": [MASK], "mean": [np.mean(X, keepdims=True)],
          "correction": [1]}
KW_SORT = {"axis": [0, None], "kind": ["stable", "mergesort"], "order": ["f"], "stable": [True]}
KW_QUANT = {"axis": [1, (0, 1)], "out": [np.empty(3)], "overwrite_input": [True],
            "method": ["linear", "nearest"], "keepdims": [True], "weights": [np.ones((3, 4))]}
KW_LIKE = {"dtype": [np.float64], "order": ["C"], "subok": [False], "shape": [(2, 5)],
           "device": ["cpu"]}
KW_JOIN = {"axis": [1, None], "out": [np.empty((3, 8))], "dtype": [np.float64],
           "casting": ["unsafe"]}

# numpy function -> (call with the array first and fixed positionals, names those
# positionals cover, keyword -> values to try)
KEYWORD_CASES = {
    np.sum: (lambda a, **k: np.sum(a, **k), ["a"], KW_SUM),
    np.nansum: (lambda a, **k: np.nansum(a, **k), ["a"], KW_SUM),
    np.prod: (lambda a, **k: np.prod(a, **k), ["a"], KW_SUM),
    np.max: (lambda a, **k: np.max(a, **k), ["a"], KW_MAX),
    np.min: (lambda a, **k: np.min(a, **k), ["a"], KW_MAX),
    np.amax: (lambda a, **k: np.amax(a, **k), ["a"], KW_MAX),
    np.amin: (lambda a, **k: np.amin(a, **k), ["a"], KW_MAX),
    np.mean: (lambda a, **k: np.mean(a, **k), ["a"], KW_MEAN),
    np.nanmean: (lambda a, **k: np.nanmean(a, **k), ["a"], KW_MEAN),
    np.var: (lambda a, **k: np.var(a, **k), ["a"], KW_VAR),
    np.std: (lambda a, **k: np.std(a, **k), ["a"], KW_VAR),
    np.cumsum: (lambda a, **k: np.cumsum(a, **k), ["a"],
                {"axis": [0, None], "dtype": [np.float64], "out": [np.empty(12)]}),
    np.cumprod: (lambda a, **k: np.cumprod(a, **k), ["a"],
                 {"axis": [1, None], "dtype": [np.float64], "out": [np.empty(12)]}),
    np.diff: (lambda a, **k: np.diff(a, **k), ["a"],
              {"n": [0, 2], "axis": [0], "prepend": [0.5, X[:, :1]], "append": [X[:, :2]]}),
    np.sort: (lambda a, **k: np.sort(a, **k), ["a"], KW_SORT),
    np.argsort: (lambda a, **k: np.argsort(a, **k), ["a"], KW_SORT),
    np.partition: (lambda a, **k: np.partition(a, 1, **k), ["a", "kth"],
                   {"axis": [0, None], "kind": ["introselect"], "order": ["f"]}),
    np.argpartition: (lambda a, **k: np.argpartition(a, (0, 2), **k), ["a", "kth"],
                      {"axis": [0, None], "kind": ["introselect"], "order": ["f"]}),
    np.argmax: (lambda a, **k: np.argmax(a, **k), ["a"],
                {"axis": [1, None], "out": [np.empty(3, dtype=np.intp)], "keepdims": [True]}),
    np.argmin: (lambda a, **k: np.argmin(a, **k), ["a"],
                {"axis": [0, None], "out": [np.empty(4, dtype=np.intp)], "keepdims": [True]}),
    np.median: (lambda a, **k: np.median(a, **k), ["a"],
                {"axis": [1, (0, 1)], "out": [np.empty(3)], "overwrite_input": [True],
                 "keepdims": [True]}),
    np.quantile: (lambda a, **k: np.quantile(a, [0.2, 0.5, 0.9], **k), ["a", "q"], KW_QUANT),
    np.percentile: (lambda a, **k: np.percentile(a, 37.5, **k), ["a", "q"], KW_QUANT),
    np.average: (lambda a, **k: np.average(a, **k), ["a"],
                 {"axis": [1], "weights": [np.abs(X) + 0.5], "returned": [True],
                  "keepdims": [True]}),
    np.split: (lambda a, **k: np.split(a, 2, **k), ["ary", "indices_or_sections"],
               {"axis": [1]}),
    np.array_split: (lambda a, **k: np.array_split(a, [1, -1], **k),
                     ["ary", "indices_or_sections"], {"axis": [1]}),
    np.append: (lambda a, **k: np.append(a, X[:1], **k), ["arr", "values"], {"axis": [0]}),
    np.rot90: (lambda a, **k: np.rot90(a, **k), ["m"], {"k": [2, 3, -1], "axes": [(1, 0)]}),
    np.linspace: (lambda a, **k: np.linspace(a[0, 0], a[1, 1], **k), ["start", "stop"],
                  {"num": [5, 1], "endpoint": [False], "retstep": [True],
                   "dtype": [np.float64, np.float32], "axis": [0], "device": ["cpu"]}),
    np.gradient: (lambda a, **k: np.gradient(a, 0.5, **k), ["f", "varargs"],
                  {"axis": [0, (1, 0)], "edge_order": [2]}),
    np.fft.fftshift: (lambda a, **k: np.fft.fftshift(a, **k), ["x"], {"axes": [0, (0, 1)]}),
    np.fft.ifftshift: (lambda a, **k: np.fft.ifftshift(a, **k), ["x"], {"axes": [1, (1, 0)]}),
    np.take_along_axis: (lambda a, **k: np.take_along_axis(a, np.argsort(X, axis=1), **k),
                         ["arr", "indices"], {"axis": [1]}),
    np.reshape: (lambda a, **k: np.reshape(a, (4, 3), **k), ["a", "shape"],
                 {"order": ["F"], "copy": [True]}),
    np.ravel: (lambda a, **k: np.ravel(a, **k), ["a"], {"order": ["F"]}),
    np.transpose: (lambda a, **k: np.transpose(a, **k), ["a"], {"axes": [(1, 0)]}),
    np.expand_dims: (lambda a, **k: np.expand_dims(a, **k), ["a"], {"axis": [0, (0, 3)]}),
    np.squeeze: (lambda a, **k: np.squeeze(a[:1], **k), ["a"], {"axis": [0]}),
    np.broadcast_to: (lambda a, **k: np.broadcast_to(a, (2, 3, 4), **k), ["array", "shape"],
                      {"subok": [True]}),
    np.concatenate: (lambda a, **k: np.concatenate([a, 2 * a], **k), ["arrays"], KW_JOIN),
    np.stack: (lambda a, **k: np.stack([a, 2 * a], **k), ["arrays"],
               {**KW_JOIN, "axis": [1, -1]}),
    np.hstack: (lambda a, **k: np.hstack([a, a], **k), ["tup"],
                {"dtype": [np.float64], "casting": ["unsafe"]}),
    np.vstack: (lambda a, **k: np.vstack([a, a], **k), ["tup"],
                {"dtype": [np.float64], "casting": ["unsafe"]}),
    np.flip: (lambda a, **k: np.flip(a, **k), ["m"], {"axis": [0, (0, 1)]}),
    np.roll: (lambda a, **k: np.roll(a, 2, **k), ["a", "shift"], {"axis": [1, (0, 1)]}),
    np.repeat: (lambda a, **k: np.repeat(a, 2, **k), ["a", "repeats"], {"axis": [0]}),
    np.take: (lambda a, **k: np.take(a, [0, 5, -1], **k), ["a", "indices"],
              {"axis": [1], "out": [np.empty(3)], "mode": ["wrap", "clip"]}),
    np.clip: (lambda a, **k: np.clip(a, **k), ["a"],
              {"a_min": [-0.5], "a_max": [0.5], "out": [np.empty((3, 4))], "min": [-0.2],
               "max": [0.1]}),
    np.zeros_like: (lambda a, **k: np.zeros_like(a, **k), ["a"], KW_LIKE),
    np.ones_like: (lambda a, **k: np.ones_like(a, **k), ["a"], KW_LIKE),
    np.full_like: (lambda a, **k: np.full_like(a, 2.5, **k), ["a", "fill_value"], KW_LIKE),
    np.copy: (lambda a, **k: np.copy(a, **k), ["a"], {"order": ["F"], "subok": [True]}),
    np.dot: (lambda a, **k: np.dot(a, W4, **k), ["a", "b"], {"out": [np.empty(3)]}),
    np.outer: (lambda a, **k: np.outer(a[0], W4, **k), ["a", "b"], {"out": [np.empty((4, 4))]}),
    np.tensordot: (lambda a, **k: np.tensordot(a, X, **k), ["a", "b"],
                   {"axes": [2, ([1], [1])]}),
    np.real: (lambda a, **k: np.real(a, **k), ["val"], {}),
    np.imag: (lambda a, **k: np.imag(a, **k) + a, ["val"], {}),
    np.angle: (lambda a, **k: np.angle(a, **k) * a, ["z"], {"deg": [True]}),
    np.rollaxis: (lambda a, **k: np.rollaxis(a, 1, **k), ["a", "axis"], {"start": [0, 2, -1]}),
    np.select: (lambda a, **k: np.select([a > 0.3, a < -0.5], [a, a ** 2], **k),
                ["condlist", "choicelist"], {"default": [1.5]}),
}
if hasattr(np, "trapezoid"):  # NumPy 2
    KEYWORD_CASES[np.trapezoid] = (lambda a, **k: np.trapezoid(a, **k), ["y"],
                                   {"x": [np.cumsum(np.abs(X[0])), np.cumsum(np.abs(X), axis=1)],
                                    "dx": [0.5], "axis": [0, -1]})

# keywords that must give NumPy's value (these were once accepted and ignored)
MUST_IMPLEMENT = {"where", "initial", "dtype", "keepdims", "axis", "ddof", "correction",
                  "mean", "prepend", "append", "shape", "weights", "returned", "num",
                  "endpoint", "retstep", "edge_order", "axes", "kind", "k", "mode", "n",
                  "a_min", "a_max", "min", "max", "deg", "start", "default"}
ALLOWED_REFUSALS = {(np.quantile, "weights"), (np.percentile, "weights"),
                    (np.linspace, "dtype")}


def test_keyword_table_covers_every_numpy_parameter():
    """A parameter NumPy has and the table does not would be a parameter nobody checked."""
    missing = []
    for fn, (_, positional, kws) in KEYWORD_CASES.items():
        for name, p in inspect.signature(fn).parameters.items():
            if p.kind in (p.VAR_KEYWORD,) or name in positional or name == "like":
                continue
            if name not in kws:
                missing.append(f"{fn.__name__}({name}=)")
    assert not missing, missing


def test_keyword_table_covers_the_functions_of_the_numpy_layer():
    others = {np.linalg.norm, np.einsum, np.diagonal, np.diag, np.trace,  # linear algebra
              np.shape, np.ndim, np.size, np.result_type, np.where, np.empty_like,
              np.matmul, np.vdot, np.inner, np.moveaxis, np.swapaxes, np.tile, np.pad,
              np.atleast_1d, np.atleast_2d, np.atleast_3d, np.flipud, np.fliplr, np.hsplit,
              np.vsplit, np.dsplit, np.column_stack}  # positional only, checked below
    others |= {getattr(np.fft, n) for n in FFT_COMPLEX} | {getattr(np, "concat", None),
                                                               getattr(np, "permute_dims", None)}
    unchecked = [getattr(f, "__name__", f) for f in npa.FUNCTIONS
                 if f not in KEYWORD_CASES and f not in others]
    assert not unchecked


def _keyword_cases():
    for fn, (call, _, kws) in KEYWORD_CASES.items():
        for name, values in kws.items():
            for i, value in enumerate(values):
                yield pytest.param(fn, call, name, value, id=f"{fn.__name__}-{name}-{i}")


@pytest.mark.parametrize("fn, call, name, value", list(_keyword_cases()))
def test_every_keyword_is_exact_or_refused_by_name(fn, call, name, value):
    kwargs = {name: value}
    if fn in (np.max, np.min, np.amax, np.amin) and name == "where":
        kwargs["initial"] = -5.0 if fn in (np.max, np.amax) else 5.0
    if fn in (np.var, np.std) and name == "mean":
        kwargs["axis"] = None
    if fn is np.average and name == "weights":
        kwargs["axis"] = 1
    x = X.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            expected, numpy_error = _flat(call(x, **kwargs)), None
        except Exception as e:  # NumPy refuses: so must we
            expected, numpy_error = None, e
    try:
        got = traced_value(lambda v: _flat(call(v, **kwargs)), x)
    except NotImplementedError as e:
        assert name in str(e), f"refusal does not name {name!r}: {e}"
        assert name not in MUST_IMPLEMENT or (fn, name) in ALLOWED_REFUSALS, \
            f"np.{fn.__name__}({name}=) must be implemented"
        return
    except Exception as e:
        assert numpy_error is not None, f"NumPy accepts {kwargs}, newtonad raised {e!r}"
        return
    assert numpy_error is None, f"NumPy raises {numpy_error!r} for {kwargs}; newtonad returned"
    if fn is np.empty_like:
        return
    tol = 1e-6 if name == "dtype" and value is np.float32 else 1e-12
    assert_close(got, expected, rtol=tol, atol=tol, what=f"{fn.__name__}({kwargs})")


def test_reductions_with_where_and_initial_differentiate():
    def f(x):
        return (np.sum(x ** 2, where=MASK, initial=1.0) + np.prod(x, axis=1, where=MASK).sum()
                + np.max(x, axis=0, where=MASK, initial=-3.0).sum()
                + np.mean(np.sin(x), axis=1, where=MASK).sum()
                + np.var(x, axis=1, where=MASK, ddof=1).sum())

    check_jvp(f, X)
    check_vjp_vs_jvp(f, X)
    check_hvp(f, X)


def test_ufunc_reduce_reduces_the_first_axis_by_default():
    f = lambda x: np.add.reduce(x ** 2) + np.maximum.reduce(x) + np.multiply.reduce(x, axis=1)[:1]
    assert_close(traced_value(f, X), f(X), 1e-13, 1e-13)


# ---- 2. np.prod at zeros: the product of the other entries, to second order -----------------

PROD_POINTS = [np.array([0.0, 2.0, -3.0, 0.5]),      # one zero
               np.array([0.0, 2.0, 0.0, 0.5]),       # two zeros
               np.array([0.0, 0.0, 0.0, 1.5]),       # three zeros
               np.array([1.5, -2.0, 0.7, 3.0])]      # none


def _prod_gradient_exact(x):
    return np.array([np.prod(np.delete(x, i)) for i in range(x.size)])


def _prod_hessian_exact(x):
    n = x.size
    return np.array([[0.0 if i == j else np.prod(np.delete(x, [i, j])) for j in range(n)]
                     for i in range(n)])


@pytest.mark.parametrize("x", PROD_POINTS, ids=["one-zero", "two-zeros", "three-zeros", "none"])
def test_prod_gradient_and_hessian_at_zeros(x):
    g = nad.grad(np.prod)(x)
    H = nad.hessian(np.prod)(x)
    assert np.all(np.isfinite(g)) and np.all(np.isfinite(H))
    assert_close(g, _prod_gradient_exact(x), 1e-14, 1e-14, "gradient")
    assert_close(H, _prod_hessian_exact(x), 1e-14, 1e-14, "Hessian")
    # and against differences of the function and of the gradient
    v = np.array([0.3, -1.1, 0.8, 0.5])
    assert_close(g @ v, central_jvp(np.prod, x, v), 1e-7, 1e-8)
    assert_close(H @ v, central_jvp(nad.grad(np.prod), x, v, eps=1e-5), 1e-7, 1e-8)


def test_prod_along_an_axis_with_zeros_to_second_order():
    x = np.array([[0.0, 2.0, -1.0], [0.0, 0.0, 3.0], [1.0, 2.0, 0.5]])
    f = lambda x: np.sum(np.sin(np.prod(x, axis=1, keepdims=True)) * np.arange(1.0, 4.0)[:, None])
    check_jvp(f, x)
    check_vjp_vs_jvp(f, x)
    check_hvp(f, x)


def test_prod_at_zeros_under_numba():
    x = PROD_POINTS[1]
    assert_close(nad.grad(np.prod)(x), _prod_gradient_exact(x), 1e-14, 1e-14)
    assert_close(nad.hessian(np.prod)(x), _prod_hessian_exact(x), 1e-14, 1e-14)


# ---- 3. indexing: NumPy's rules -------------------------------------------------------------

X3 = np.arange(24.0).reshape(2, 3, 4) + 0.5
INDEX_KEYS = [True, False, (True, 0), (True, slice(None), 0), (0, True), (Ellipsis, True),
              (True, True), (True, [0, 1]), (None, True, [1, 0]), np.True_, (np.array(True),),
              (-1,), (-1, -2, -3), ([0, -1],), (slice(None), [-1, 0, -3]), ([1, 0], [2, -1]),
              (np.array([True, False]),), (0, X3[0] > 3), (X3 > 5,),
              (slice(None), np.array([True, False, True])),
              (Ellipsis, np.array([True, False, True, True])),
              (None, [0, 1]), (0, None, [1, 2], slice(1, 3)), ((0, 1), 2), ([[0], [1]], [[0, 2]]),
              (slice(None), np.array([True, False, True]), 1), (np.array([], dtype=int),),
              slice(1, None), slice(None, None, -1), slice(5, 1), slice(-3, None, 2), slice(None)]


@pytest.mark.parametrize("key", INDEX_KEYS, ids=[str(i) for i in range(len(INDEX_KEYS))])
def test_indexing_matches_numpy(key):
    expected = X3[key]
    value, tangent = nad.jvp(lambda v: v[key], X3, X3 * 0.5)
    assert value.shape == expected.shape
    np.testing.assert_array_equal(value, expected)
    np.testing.assert_array_equal(tangent, 0.5 * expected)
    check_vjp_vs_jvp(lambda v: v[key], X3)


@pytest.mark.parametrize("key", [1.0, (0, 1.5), np.float64(1), (np.array([1.0]),),
                                 (np.array([True, False, True]),),
                                 (slice(None), np.array([True, True])), (0, 3)])
def test_bad_indices_raise_numpys_index_error(key):
    with pytest.raises(IndexError) as numpy_error:
        X3[key]
    with pytest.raises(IndexError) as ours:
        nad.grad(lambda v: np.sum(v[key]))(X3)
    if "out of bounds" not in str(numpy_error.value):
        assert str(ours.value) == str(numpy_error.value)


def test_traced_index_arrays_wrap_negative_indices():
    idx = np.array([-1, 0, -3, 2])
    f = lambda x: x[np.argsort(x) - 2] * x[idx]
    x = np.array([0.3, -1.2, 2.5, 0.7])
    assert_close(traced_value(f, x), f(x), 0, 0)


# ---- 4. new functions: values against NumPy, derivatives against differences ----------------

XN = rng.standard_normal((4, 5))
XZ = np.array([[1.5, 0.0, 2.0, -1.0, 0.5], [0.0, 0.0, 3.0, 0.5, -2.0]])
Q = [0.0, 0.1, 0.5, 0.77, 1.0]

# (id, f, x, smooth): f is NumPy code; checked by value, jvp, vjp and (if smooth) hvp
NEW_FUNCTION_CASES = [
    ("cumprod", lambda x: np.cumprod(x, axis=1), XN, True),
    ("cumprod_zeros", lambda x: np.cumprod(x), XZ, True),
    ("cumprod_method", lambda x: x.cumprod(axis=0), XZ, True),
    ("sort", lambda x: np.sort(x, axis=0) * np.arange(1.0, 6.0), XN, False),
    ("sort_flat", lambda x: np.sort(x ** 3, axis=None), XN, False),
    ("partition", lambda x: np.partition(x, 2, axis=1)[:, 2], XN, False),
    ("partition_kths", lambda x: np.partition(x.ravel(), (3, 10))[[3, 10]], XN, False),
    ("take_argsort", lambda x: np.take_along_axis(x, np.argsort(x, axis=1), axis=1) ** 2, XN,
     False),
    ("argmax_pick", lambda x: x.ravel()[np.argmax(x)] + x[np.argmin(x, axis=0), 0], XN, False),
    ("median_odd", lambda x: np.median(x, axis=1), XN, False),
    ("median_even", lambda x: np.median(x, axis=0, keepdims=True), XN, False),
    ("median_all", lambda x: np.median(x ** 2), XN, False),
    ("quantile", lambda x: np.quantile(x, Q, axis=1), XN, False),
    ("percentile", lambda x: np.percentile(x, [5.0, 62.5], axis=(0, 1)), XN, False),
    ("average", lambda x: np.average(x, axis=1, weights=np.arange(1.0, 6.0)), XN, True),
    ("average_traced_weights", lambda x: np.average(x[0], weights=np.exp(x[1]), returned=True)[0],
     XN, True),
    ("var_std_ddof", lambda x: np.var(x, axis=0, ddof=1) + np.std(x, axis=1, ddof=2)[:1], XN, True),
    ("nansum", lambda x: np.nansum(np.where(x > 1.0, np.nan, x) ** 2, axis=0), XN, True),
    ("nanmean", lambda x: np.nanmean(np.where(x < -1.0, np.nan, x) ** 2, axis=1), XN, True),
    ("split", lambda x: np.split(x, 5, axis=1)[3] * np.array_split(x, 3)[0][:1], XN, True),
    ("hvd_split", lambda x: np.hsplit(x, [2])[1][:2, :2] * np.vsplit(x, 2)[1][:, :2]
     + np.dsplit(x.reshape(2, 5, 2), [1])[0][:, :2, 0], XN, True),
    ("column_stack", lambda x: np.column_stack([x[0], x[1:3].T, 2.0 * x[3]]) ** 2, XN, True),
    ("append", lambda x: np.append(x[0], x[1:] ** 2) + np.append(x, x[:1], axis=0).sum(), XN,
     True),
    ("atleast", lambda x: np.atleast_3d(x[0, 0])[0] * np.atleast_3d(x[0])[0]
     + np.atleast_3d(x)[..., 0][0] + np.atleast_2d(x[1, 1]) * np.atleast_1d(x[2, 2]), XN, True),
    ("flips", lambda x: np.flipud(x) * np.fliplr(x) + np.rot90(x ** 2, 2) + np.rot90(x, -1).T
     + np.rot90(x.reshape(4, 5, 1), 1, axes=(0, 1)).reshape(5, 4).T, XN, True),
    ("linspace", lambda x: np.linspace(x[0, 0], x[1, 1] ** 2, 7) ** 2, XN, True),
    ("linspace_arrays", lambda x: np.linspace(x[0], x[1], 4, endpoint=False, axis=-1)
     * np.linspace(x[2], 2.0, 4, axis=1), XN, True),
    ("gradient", lambda x: np.gradient(x ** 2, 0.5, axis=1) + np.gradient(x, axis=0)
     + np.gradient(x ** 3, 0.25, edge_order=2)[1], XN, True),
    ("fftshift", lambda x: np.fft.fftshift(x) * np.fft.ifftshift(x ** 2, axes=1)
     + np.fft.fftshift(x, axes=(0,)), XN, True),
]


@pytest.mark.parametrize("name, f, x, smooth", NEW_FUNCTION_CASES,
                         ids=[c[0] for c in NEW_FUNCTION_CASES])
def test_new_function_values_and_derivatives(name, f, x, smooth):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = f(x)
    assert_close(traced_value(f, x), expected, 1e-13, 1e-13, "value")
    check_jvp(f, x)
    check_vjp_vs_jvp(f, x)
    w = np.random.default_rng(3).standard_normal(np.shape(expected))
    if smooth:
        check_hvp(lambda x: np.sum(w * f(x)), x)


def test_integer_results_match_numpy_and_have_no_tangent():
    x = np.array([[0.3, -1.0, 0.3, 2.0], [1.0, 1.0, -4.0, 0.0]])
    for f in (lambda v: np.argsort(v, axis=1), lambda v: np.argsort(v, axis=0, kind="stable"),
              lambda v: v.argsort(axis=None), lambda v: np.argmax(v, axis=1),
              lambda v: v.argmin(), lambda v: np.argpartition(v, 1, axis=1)):
        program = nad.trace(lambda v, f=f: f(v) * 1.0, x)
        value, tangent = nad.jvp(lambda v, f=f: f(v) * 1.0, x, np.ones(x.shape))
        np.testing.assert_array_equal(value, f(x))
        np.testing.assert_array_equal(tangent, 0.0)
        assert program.out_slots[0].dtype == "float64"


def test_quantile_and_median_match_numpy_where_values_tie_or_are_nan():
    x = np.array([[1.0, 2.0, 2.0, 2.0, 5.0], [3.0, 99.0, 1.0, 0.0, 2.0]])
    nan_at_99 = lambda v: np.where(v > 50.0, np.nan, v)
    for f in (lambda v: np.median(nan_at_99(v), axis=1),
              lambda v: np.quantile(nan_at_99(v), [0.3, 0.5], axis=1),
              lambda v: np.percentile(nan_at_99(v), 90.0, axis=1, keepdims=True),
              lambda v: np.median(v, axis=0)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            expected = f(x)
        got = traced_value(f, x)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
        assert_close(np.nan_to_num(got), np.nan_to_num(expected), 1e-15, 1e-15)


def test_percentile_refuses_other_methods_and_traced_q():
    with pytest.raises(NotImplementedError, match="method='linear'"):
        nad.grad(lambda v: np.percentile(v, 30.0, method="midpoint"))(XN)
    with pytest.raises(NotImplementedError, match="q must be known"):
        nad.grad(lambda v: np.quantile(v[1:], v[0, 0]))(XN)


def test_split_errors_match_numpy():
    for f in (lambda v: np.split(v, 3, axis=1), lambda v: np.vsplit(v[0], 2),
              lambda v: np.dsplit(v, 2), lambda v: np.rot90(v, axes=(0, 0))):
        with pytest.raises(ValueError) as numpy_error:
            f(XN)
        with pytest.raises(ValueError) as ours:
            traced_value(lambda v, f=f: f(v)[0], XN)
        assert str(ours.value) == str(numpy_error.value)


FFT_COMPLEX = ["fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn",
               "ifftn", "rfftn", "irfftn", "hfft", "ihfft"]


@pytest.mark.parametrize("name", FFT_COMPLEX)
def test_complex_fft_is_refused_clearly(name):
    with pytest.raises(NotImplementedError, match="complex values.*out of scope"):
        nad.grad(lambda v: np.sum(np.abs(getattr(np.fft, name)(v))))(XN)


@pytest.mark.parametrize("method, fix", [("sort", "np.sort"), ("partition", "np.partition"),
                                         ("nonzero", "np.where")])
def test_in_place_and_value_dependent_methods_name_the_fix(method, fix):
    with pytest.raises(TypeError, match=fix):
        nad.grad(lambda v: np.sum(getattr(v, method)()))(XN)


def test_var_methods_take_numpys_arguments():
    f = lambda x: (x.sum(1, None, None, True)[:, 0] + x.cumprod(1)[:, 1] + x.var(1, ddof=1)
                   + x.max(1, initial=0.5) + x.round(2)[:, 0] + x.std(axis=1, where=MASK[:, :4]))
    x = XN[:3, :4]
    assert_close(traced_value(f, x), f(x), 1e-14, 1e-14)


def test_new_functions_under_numba_fall_back_silently():
    """Sorting primitives are NumPy-evaluated by design: no fallback warning, right answers."""
    f = lambda x: np.sum(np.sort(x) * np.arange(5.0)) + np.median(x ** 2) + np.cumprod(x)[-1]
    x = XN[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = nad.grad(f)(x)
        hv = nad.hvp(f, x, np.ones(5))
    v = np.linspace(-1.0, 1.0, 5)
    assert_close(g @ v, central_jvp(f, x, v), 1e-7, 1e-8)
    assert_close(hv, central_jvp(nad.grad(f), x, np.ones(5), eps=1e-5), 1e-6, 1e-7)
