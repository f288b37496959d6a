"""Property-based check of the NumPy surface.

Hypothesis writes objectives the way people write them: reductions with random ``axis``
(negative, tuple, omitted), ``keepdims``, ``where=`` and ``initial=``; ``np.linalg.norm``
with every vector and matrix order; ``var`` / ``std`` with ``ddof``; binary operations
between broadcast-compatible shapes (constants and other views of the traced value);
negative, boolean and integer-array indices; a few more functions of the surface (cumsum,
sort, diff, logsumexp, median, quantile, average, ...) -- joined by smooth elementwise
functions and reduced to a scalar. For each drawn objective ``f`` and point ``x``:

- newtonad's traced value equals NumPy's ``f(x)`` on the plain array;
- the gradient matches central differences of ``f`` in random directions;
- a two-column Hessian-vector product frame matches central differences of the gradient;

on the NumPy evaluator for many examples and under numba for a few (each compiles).

Points come from a continuous distribution, so accidental ties and kinks (``abs`` at 0,
``max`` / ``sort`` ties, ``maximum``) have probability zero. Some non-smooth points are
*structural* (``std`` of a slice of equal values, ``svd`` of a rank-deficient matrix,
``abs`` of the exact zero that ``v - v[..., -1:]`` leaves): each step carries a guard,
evaluated on NumPy values, that rejects such a point. A point whose central differences
with steps eps and eps/4 disagree has a kink within the step and is rejected too: that
depends on NumPy's function alone, so it cannot hide a wrong derivative of newtonad's.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
import scipy.special as sps
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import newtonad as nad

from .helpers import assert_close, central_jvp

OMIT = object()  # a keyword left out of the call (NumPy's default applies)
LARGEST = 1e4  # intermediate values beyond this make differences too inaccurate to judge


# ---- objectives as short NumPy programs ------------------------------------------------------

class Step:
    """One line of an objective: ``text`` (Python assigning ``v``) and the function it runs.

    ``smooth_at(v)`` says, from the NumPy value ``v`` entering the step, whether the step
    is differentiable there (default: always)."""

    def __init__(self, text: str, fn: Callable[[Any], Any],
                 smooth_at: Callable[[np.ndarray], bool] | None = None):
        self.text, self.fn, self.smooth_at = text, fn, smooth_at

    def __repr__(self) -> str:
        return self.text


class Program:
    """An objective ``x -> scalar`` made of steps; its repr is the code a user would write."""

    def __init__(self, shape: tuple[int, ...], steps: list[Step]):
        self.shape, self.steps = shape, steps

    def __call__(self, x):
        v = x
        for step in self.steps:
            v = step.fn(v)
        return v

    def __repr__(self) -> str:
        body = "".join(f"\n    {s.text}" for s in self.steps)
        return f"def f(x):  # x.shape == {self.shape}\n    v = x{body}\n    return v"

    def judgeable_at(self, x: np.ndarray) -> bool:
        """Every step smooth at its input and every value finite and moderate (NumPy)."""
        v = x
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for step in self.steps:
                if step.smooth_at is not None and not step.smooth_at(v):
                    return False
                v = step.fn(v)
                if not np.all(np.isfinite(v)) or np.max(np.abs(v), initial=0.0) > LARGEST:
                    return False
        return True


def _literal(value: Any) -> str:
    """Python source for a keyword value or a constant."""
    if isinstance(value, np.ndarray):
        return f"np.array({value.tolist()!r})"
    if isinstance(value, float) and np.isinf(value):
        return "np.inf" if value > 0 else "-np.inf"
    return repr(value)


def _key_text(key: tuple) -> str:
    def one(k):
        if k is Ellipsis:
            return "..."
        if isinstance(k, slice):
            parts = ["" if p is None else str(p) for p in (k.start, k.stop, k.step)]
            return ":".join(parts if k.step is not None else parts[:2])
        return _literal(k)
    return ", ".join(one(k) for k in key)


def _call(name: str, kwargs: dict, *, method: bool = False, positional: tuple = (),
          home: str = "np", smooth_at=None) -> Step:
    """``v = np.name(v, *positional, **kwargs)`` (or the method form ``v.name(**kwargs)``)."""
    args = [_literal(p) for p in positional] + [f"{k}={_literal(a)}" for k, a in kwargs.items()]
    if method:
        text = f"v = v.{name}({', '.join(args)})"
        return Step(text, lambda v: getattr(v, name)(*positional, **kwargs), smooth_at)
    module = {"np": np, "np.linalg": np.linalg, "sps": sps}[home]
    text = f"v = {home}.{name}({', '.join(['v'] + args)})"
    # Looked up at call time: scipy.special's routed wrapper, NumPy's dispatch.
    return Step(text, lambda v: getattr(module, name)(v, *positional, **kwargs), smooth_at)


SMOOTH = [
    Step("v = v", lambda v: v),
    Step("v = np.sin(v)", np.sin),
    Step("v = np.cos(v)", np.cos),
    Step("v = np.tanh(v)", np.tanh),
    Step("v = np.arctan(v)", np.arctan),
    Step("v = np.log1p(v ** 2)", lambda v: np.log1p(v ** 2)),
    Step("v = np.sqrt(1.0 + v * v)", lambda v: np.sqrt(1.0 + v * v)),
    Step("v = np.exp(-v * v)", lambda v: np.exp(-v * v)),
    Step("v = v ** 2", lambda v: v ** 2),
    Step("v = np.expm1(v / 3)", lambda v: np.expm1(v / 3)),
    Step("v = 1.0 / (1.0 + v * v)", lambda v: 1.0 / (1.0 + v * v)),
    Step("v = np.sinh(v / 2)", lambda v: np.sinh(v / 2)),
    Step("v = v ** 3 / 3", lambda v: v ** 3 / 3),
]


# ---- keyword values --------------------------------------------------------------------------

@st.composite
def axes(draw, ndim: int, *, omit: bool = True, none: bool = True):
    """An axis keyword: omitted, None, an int (maybe negative) or a tuple in any order."""
    kinds = ["omit"] * omit + ["none"] * none + ["int", "int", "tuple", "tuple"] * (ndim > 0)
    kind = draw(st.sampled_from(kinds))
    if kind == "omit":
        return OMIT
    if kind == "none":
        return None
    if kind == "int":
        return draw(st.integers(-ndim, ndim - 1))
    chosen = draw(st.permutations(range(ndim)))[:draw(st.integers(1, ndim))]
    return tuple(a - ndim if draw(st.booleans()) else a for a in chosen)


def _rng(draw) -> np.random.Generator:
    """Generic data (constants, masks, indices) from a drawn seed: no value hypothesis
    would favour (0, all False) makes a case degenerate."""
    return np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))


@st.composite
def bool_arrays(draw, shape: tuple[int, ...]):
    """A constant boolean array with at least one True and, if it can, one False."""
    rng = _rng(draw)
    mask = np.asarray(rng.random(shape) < draw(st.sampled_from([0.3, 0.6, 0.85])))
    picks = rng.permutation(mask.size)
    mask.flat[picks[0]] = True
    if mask.size > 1:
        mask.flat[picks[1]] = False
    return mask


@st.composite
def masks(draw, shape: tuple[int, ...]):
    """A where= mask that broadcasts to ``shape``: a suffix of it, some axes 1."""
    ndim = len(shape)
    suffix = shape[ndim - draw(st.sampled_from([ndim] * 2 + list(range(ndim)))):]
    return draw(bool_arrays(tuple(n if draw(st.integers(0, 3)) else 1 for n in suffix)))


@st.composite
def constants(draw, shape: tuple[int, ...]):
    """A constant array with round entries (its repr is exact), none near 0."""
    rng = _rng(draw)
    magnitude = np.round(rng.uniform(0.3, 1.5, shape), 2)
    return np.where(rng.random(shape) < 0.5, -magnitude, magnitude)


@st.composite
def index_arrays(draw, n: int, shape: tuple[int, ...]):
    """An integer index array into an axis of length n; its first entry is negative."""
    idx = _rng(draw).integers(-n, n, shape)
    idx.flat[0] = draw(st.integers(-n, -1))
    return idx


# ---- step families: each draws one step valid for the current shape --------------------------

REDUCERS = ["sum", "prod", "mean", "max", "min"]
REDUCERS_WITHOUT_METHOD = ["amax", "amin", "nansum", "nanmean"]


@st.composite
def reductions(draw, shape):
    """sum / prod / mean / max / min (amax, amin, nansum, nanmean) with axis, keepdims,
    where= and initial=, as functions or methods."""
    name = draw(st.sampled_from(REDUCERS + REDUCERS_WITHOUT_METHOD))
    kwargs: dict[str, Any] = {}
    axis = draw(axes(len(shape)))
    if axis is not OMIT:
        kwargs["axis"] = axis
    if draw(st.booleans()):
        kwargs["keepdims"] = draw(st.booleans())
    if draw(st.booleans()):
        kwargs["where"] = draw(masks(shape))
    # max / min need initial= with where= (NumPy's rule); sum / prod / max / min take it.
    extremum = name in ("max", "min", "amax", "amin")
    if extremum and "where" in kwargs or "mean" not in name and draw(st.booleans()):
        kwargs["initial"] = draw(st.sampled_from([-0.75, 0.5, 1.25]))
    return _call(name, kwargs, method=name in REDUCERS and draw(st.booleans()))


@st.composite
def moments(draw, shape):
    """var / std with axis, keepdims, ddof and where=."""
    name = draw(st.sampled_from(["var", "std"]))
    kwargs: dict[str, Any] = {}
    axis = draw(axes(len(shape)))
    if axis is not OMIT:
        kwargs["axis"] = axis
    if draw(st.booleans()):
        kwargs["keepdims"] = draw(st.booleans())
    if draw(st.booleans()):  # correction= is the array-API spelling of ddof=
        kwargs[draw(st.sampled_from(["ddof", "ddof", "correction"]))] = draw(st.integers(0, 2))
    if draw(st.booleans()):
        kwargs["where"] = draw(masks(shape))
    # std = sqrt(var) has no derivative where a slice's values are all equal.
    smooth_at = ((lambda v: bool(np.all(np.var(v, **kwargs) > 1e-6))) if name == "std"
                 else None)
    method = "correction" not in kwargs and draw(st.booleans())  # ndarray.var has no correction
    return _call(name, kwargs, method=method, smooth_at=smooth_at)


VECTOR_ORDS = [None, 1, 2, 3, 0.5, -1, np.inf, -np.inf, 0]
MATRIX_ORDS = [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]


def _norm_smooth_at(ord, axis):
    """Where a norm is differentiable: no zero entry under |.|, no zero norm, and for the
    singular-value orders distinct non-zero singular values."""
    def smooth_at(v) -> bool:
        v = np.asarray(v)
        if ord in (None, 2, "fro") and not (ord == 2 and isinstance(axis, tuple)
                                            and len(axis) == 2):
            kw = {} if axis is OMIT else {"axis": axis}
            return bool(np.all(np.linalg.norm(v, **kw) > 1e-3))
        if ord in (2, -2, "nuc"):
            s = np.linalg.svd(np.moveaxis(v, axis, (-2, -1)), compute_uv=False)
            gaps = np.abs(np.diff(s, axis=-1))
            return bool(np.all(s > 1e-3) and np.all(gaps > 1e-3))
        return bool(np.all(np.abs(v) > 1e-3))
    return smooth_at


@st.composite
def norms(draw, shape):
    """np.linalg.norm: the flattened 2-norm, vector orders along one axis, matrix orders
    over two axes (negative, either order), keepdims."""
    ndim = len(shape)
    kind = draw(st.sampled_from(["flat"] + ["vector"] * (ndim >= 1) + ["matrix"] * (ndim >= 2)))
    kwargs: dict[str, Any] = {}
    axis: Any = OMIT
    if kind == "vector":
        kwargs["ord"] = draw(st.sampled_from(VECTOR_ORDS))
        if ndim > 1 or draw(st.booleans()):
            axis = draw(st.integers(-ndim, ndim - 1))
            axis = (axis,) if draw(st.booleans()) else axis
    elif kind == "matrix":
        kwargs["ord"] = draw(st.sampled_from(MATRIX_ORDS))
        if ndim > 2 or draw(st.booleans()):
            pair = draw(st.permutations(range(ndim)))[:2]
            axis = tuple(a - ndim if draw(st.booleans()) else a for a in pair)
    if axis is not OMIT:
        kwargs["axis"] = axis
    if draw(st.booleans()):
        kwargs["keepdims"] = draw(st.booleans())
    if kind == "matrix" and axis is OMIT:
        axis = (0, 1)  # a 2-D input's matrix axes
    smooth_at = _norm_smooth_at(kwargs.get("ord"), axis)
    return _call("norm", kwargs, home="np.linalg", smooth_at=smooth_at)


BINARY = [
    ("{a} + {b}", lambda a, b: a + b),
    ("{a} - {b}", lambda a, b: a - b),
    ("{a} * {b}", lambda a, b: a * b),
    ("{a} / (1.5 + {b} ** 2)", lambda a, b: a / (1.5 + b ** 2)),
    ("np.arctan2({a}, 2.0 + {b} ** 2)", lambda a, b: np.arctan2(a, 2.0 + b ** 2)),
    ("np.hypot({a}, 0.5 + {b} ** 2)", lambda a, b: np.hypot(a, 0.5 + b ** 2)),
    ("np.logaddexp({a}, {b})", np.logaddexp),
    ("(1.0 + {a} ** 2) ** np.tanh({b})", lambda a, b: (1.0 + a ** 2) ** np.tanh(b)),
    ("np.maximum({a}, {b})", np.maximum),
]


@st.composite
def broadcast_shapes(draw, shape):
    """A shape broadcasting with ``shape``: a suffix of it, some axes 1, maybe a new axis."""
    suffix = shape[len(shape) - draw(st.integers(0, len(shape))):]
    out = tuple(n if draw(st.booleans()) else 1 for n in suffix)
    if int(np.prod(shape)) <= 24 and draw(st.booleans()):
        out = (draw(st.integers(2, 3)),) + (1,) * (len(shape) - len(out)) + out
    return out


@st.composite
def binaries(draw, shape):
    """A binary operation between the current value and a broadcast-compatible partner:
    a constant, a keepdims mean, a size-1 slice, v[-1], v[..., None] against a constant on
    a new trailing axis, or two traced operands with size-1 axes in different places (an
    outer-product broadcast). Either operand order."""
    ndim = len(shape)
    template, op = draw(st.sampled_from(BINARY))
    kinds = ["constant", "new_axis"] + ["keepdims", "slice", "leading"] * (ndim >= 1)
    kinds += ["outer"] * (ndim >= 2)
    kind = draw(st.sampled_from(kinds))
    a_text, a_fn = "v", (lambda v: v)
    if kind == "constant":
        c = draw(constants(draw(broadcast_shapes(shape))))
        b_text, b_fn = _literal(c), (lambda v: c)
    elif kind == "new_axis":
        c = draw(constants((draw(st.integers(2, 3)),)))
        a_text, a_fn = "v[..., None]", (lambda v: v[..., None])
        b_text, b_fn = _literal(c), (lambda v: c)
    elif kind == "keepdims":
        axis = draw(axes(ndim, omit=False, none=False))
        b_text = f"np.mean(v, axis={axis!r}, keepdims=True)"
        b_fn = lambda v: np.mean(v, axis=axis, keepdims=True)  # noqa: E731
    elif kind == "slice":
        which = draw(st.lists(st.booleans(), min_size=ndim, max_size=ndim))
        key = tuple(slice(-1, None) if w else slice(None) for w in which)
        b_text, b_fn = f"v[{_key_text(key)}]", (lambda v: v[key])
    elif kind == "leading":
        b_text, b_fn = "v[-1]", (lambda v: v[-1])
    else:  # keepdims over some axes on one side, size-1 slices of the others on the other
        cut = draw(st.permutations(range(ndim)))[:draw(st.integers(1, ndim - 1))]
        mean_axis = tuple(a - ndim if draw(st.booleans()) else a for a in cut)
        key = tuple(slice(None) if a in cut else slice(-1, None) for a in range(ndim))
        a_text = f"np.mean(v, axis={mean_axis!r}, keepdims=True)"
        a_fn = lambda v: np.mean(v, axis=mean_axis, keepdims=True)  # noqa: E731
        b_text, b_fn = f"v[{_key_text(key)}]", (lambda v: v[key])
    if draw(st.booleans()):
        a_text, a_fn, b_text, b_fn = b_text, b_fn, a_text, a_fn
    text = "v = " + template.format(a=a_text, b=b_text)
    return Step(text, lambda v: op(a_fn(v), b_fn(v)))


@st.composite
def indexings(draw, shape):
    """Indexing as NumPy reads it: negative ints, x[True], constant boolean masks, integer
    arrays with negative entries (repeats allowed), negative-step slices, and mixtures."""
    ndim = len(shape)
    kinds = ["true", "true_last"] + ["int", "last", "mask", "array", "reverse", "mask_last",
                                     "last_array", "none_array", "true_int"] * (ndim >= 1)
    kinds += ["array_axis1", "int_array", "two_arrays", "int_mask", "mask_array"] * (ndim >= 2)
    kind = draw(st.sampled_from(kinds))
    n0 = shape[0] if ndim else 0
    if kind == "true":
        key: tuple = (draw(st.sampled_from([True, np.True_])),)
    elif kind == "true_last":
        key = (Ellipsis, True)
    elif kind == "true_int":
        key = (True, draw(st.integers(-n0, -1)))
    elif kind == "last_array":
        key = (Ellipsis, draw(index_arrays(shape[-1], draw(st.sampled_from([(2,), (2, 2)])))))
    elif kind == "none_array":
        idx = draw(index_arrays(n0, (draw(st.integers(1, 3)),)))
        key = draw(st.sampled_from([(None, idx), (idx, None)]))
    elif kind == "mask_array":  # a mask on axis 0 beside a one-entry index array on axis 1
        key = (draw(bool_arrays((n0,))), draw(index_arrays(shape[1], (1,))))
    elif kind == "int":
        key = (draw(st.integers(-n0, -1)),)
    elif kind == "last":
        key = (Ellipsis, draw(st.integers(-shape[-1], -1)))
    elif kind == "mask":
        key = (draw(bool_arrays(shape[:draw(st.integers(1, ndim))])),)
    elif kind == "mask_last":
        key = (Ellipsis, draw(bool_arrays((shape[-1],))))
    elif kind == "array":
        key = (draw(index_arrays(n0, draw(st.sampled_from([(2,), (3,), (2, 2)])))),)
    elif kind == "reverse":
        start = draw(st.sampled_from([None] + list(range(-n0, 0))))
        key = (slice(start, None, draw(st.sampled_from([-1, -2]))),)
    elif kind == "array_axis1":
        key = (slice(None), draw(index_arrays(shape[1], (draw(st.integers(1, 3)),))))
    elif kind == "int_array":
        key = (draw(st.integers(-n0, -1)), draw(index_arrays(shape[1], (2,))))
    elif kind == "two_arrays":
        m = draw(st.integers(1, 3))
        first_shape, second_shape = draw(st.sampled_from([((m,), (m,)), ((m, 1), (2,)),
                                                          ((m,), (1,))]))
        key = (draw(index_arrays(n0, first_shape)), draw(index_arrays(shape[1], second_shape)))
    else:  # int_mask
        key = (draw(st.integers(-n0, -1)), draw(bool_arrays((shape[1],))))
    text = f"v = v[{_key_text(key)}]"
    return Step(text, lambda v: v[key if len(key) > 1 else key[0]])


@st.composite
def others(draw, shape):
    """More of the surface along an axis: cumsum, cumprod, sort, diff, flip, moveaxis,
    scipy.special.logsumexp, median, quantile, average with weights."""
    ndim = len(shape)
    name = draw(st.sampled_from(["cumsum", "cumprod", "sort", "diff", "flip", "moveaxis",
                                 "logsumexp", "median", "quantile", "average"]))
    axis = draw(st.integers(-ndim, ndim - 1))
    n = shape[axis]
    if name in ("cumsum", "cumprod", "sort", "flip"):
        # (ndarray.sort sorts in place: only the np.sort form returns the values)
        in_method_form = name in ("cumsum", "cumprod") and draw(st.booleans())
        return _call(name, {"axis": axis}, method=in_method_form)
    if name == "diff":
        assume(n >= 2)
        return _call(name, {"axis": axis, "n": draw(st.integers(1, min(2, n - 1)))})
    if name == "moveaxis":
        return _call(name, {}, positional=(axis, draw(st.integers(-ndim, ndim - 1))))
    kwargs: dict[str, Any] = {}
    if name == "average":
        kwargs["axis"] = axis
        kwargs["weights"] = _rng(draw).choice([0.25, 0.5, 1.0, 2.0], n)
        return _call(name, kwargs)
    many = draw(axes(ndim))
    if many is not OMIT:
        kwargs["axis"] = many
    if draw(st.booleans()):
        kwargs["keepdims"] = draw(st.booleans())
    if name == "logsumexp":
        return _call(name, kwargs, home="sps")
    if name == "quantile":
        q = draw(st.sampled_from([0.3, 0.5, 0.9]))
        return _call(name, kwargs, positional=(q,))
    return _call(name, kwargs)


FAMILIES = [reductions, moments, norms, binaries, indexings, others]
# Families whose step can run on a 0-d value.
SCALAR_FAMILIES = [reductions, moments, norms, binaries, indexings]


@st.composite
def finals(draw, shape):
    """A scalar from the last value: a weighted sum, a mean, a sum, or the value itself."""
    choices = ["weighted", "mean", "sum"] + ["itself"] * (shape == ())
    kind = draw(st.sampled_from(choices))
    if kind == "weighted":
        w = draw(constants(shape))
        return Step(f"v = np.sum(v * {_literal(w)})", lambda v: np.sum(v * w))
    if kind == "mean":
        return Step("v = np.mean(v)", np.mean)
    if kind == "sum":
        return Step("v = v.sum()", lambda v: v.sum())
    return Step("v = v", lambda v: v)


@st.composite
def objectives(draw):
    """(f, x): a drawn Program and a point from a continuous distribution."""
    ndim = draw(st.sampled_from([1, 2, 2, 3, 3]))
    shape = tuple(draw(st.lists(st.integers(2, 4), min_size=ndim, max_size=ndim)))
    probe = np.random.default_rng(0).standard_normal(shape)  # tracks the shape of v
    steps = [draw(st.sampled_from(SMOOTH))]
    for _ in range(draw(st.integers(1, 3))):
        families = FAMILIES if np.ndim(probe) else SCALAR_FAMILIES
        step = draw(st.one_of([family(np.shape(probe)) for family in families]))
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            probe = step.fn(probe)
        assume(0 < np.size(probe) <= 200)
        steps += [step, draw(st.sampled_from(SMOOTH))]
    steps.append(draw(finals(np.shape(probe))))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    x = np.random.default_rng(seed).standard_normal(shape)
    return Program(shape, steps), x


# ---- the properties ---------------------------------------------------------------------------

def stable_difference(fun, x: np.ndarray, v: np.ndarray, eps: float, agree: float):
    """Central difference of ``fun`` along ``v``, or None when steps eps and eps/4 disagree
    by more than ``agree`` (relative): a kink of NumPy's function lies within the step,
    where no derivative is defined to compare with."""
    coarse = central_jvp(fun, x, v, eps=eps)
    fine = central_jvp(fun, x, v, eps=eps / 4)
    scale = max(1.0, float(np.max(np.abs(coarse), initial=0.0)))
    return coarse if np.max(np.abs(coarse - fine), initial=0.0) <= agree * scale else None


def check_against_numpy(f: Program, x: np.ndarray, engine: str) -> None:
    """Value against NumPy, gradient and a two-column HVP frame against differences."""
    assume(f.judgeable_at(x))
    V = np.random.default_rng(x.size).standard_normal(x.shape + (2,))
    slopes = [stable_difference(f, x, V[..., j], 1e-6, 1e-6) for j in range(2)]
    assume(all(s is not None for s in slopes))
    value, g = nad.value_and_grad(f, engine=engine)(x)
    assert_close(value, f(x), rtol=1e-12, atol=1e-12, what="value")
    assert np.shape(g) == x.shape
    for j in range(2):
        assert_close(np.sum(g * V[..., j]), slopes[j], 1e-5, 1e-6, f"gradient along {j}")
    HV = nad.hvp(f, x, V, engine=engine)
    grad = nad.grad(f, engine=engine)
    curvatures = [stable_difference(grad, x, V[..., j], 1e-5, 1e-5) for j in range(2)]
    assume(all(c is not None for c in curvatures))
    for j in range(2):
        assert_close(HV[..., j], curvatures[j], 1e-4, 1e-5, f"hvp column {j}")


COMMON = dict(deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                     HealthCheck.data_too_large])


@settings(max_examples=800, **COMMON)
@given(objectives())
def test_numpy_surface_property(drawn):
    check_against_numpy(*drawn, engine="numpy")


@settings(max_examples=6, **COMMON)
@given(objectives())
def test_numpy_surface_property_numba(drawn):
    check_against_numpy(*drawn, engine="numba")
