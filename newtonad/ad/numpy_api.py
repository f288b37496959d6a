"""NumPy semantics on top of the primitives.

Each function here takes what its NumPy namesake takes (Vars, arrays, Python numbers)
and writes it in primitives: ``np.mean`` is a sum and a division, ``np.dot`` and
``np.matmul`` are einsums, ``np.roll`` is a concatenation of two slices, indexing is
slicing plus a gather. Plain arrays in, plain NumPy out: with no Var among the
arguments, ``bind`` evaluates directly.

The tables ``UFUNCS`` and ``FUNCTIONS`` (this module's entries) are registered in
:mod:`.dispatch`, where Var's ``__array_ufunc__`` and ``__array_function__`` (NEP 13 /
NEP 18) and its operators find them, so ordinary ``np.*`` calls trace.
"""

from __future__ import annotations

import builtins
import math
import operator
import string
from typing import Any

import numpy as np

from . import dispatch
from .dispatch import implements_method
from .primitives import elementwise as ew
from .primitives import linalg as la
from .primitives import reductions as rd
from .primitives import sorting as srt
from .primitives import structural as st
from .primitives.core import shape_of
from .primitives.decompositions import svdvals as _svdvals
from .primitives.special import hypot as _scaled_hypot
from .var import Var, const_var

UFUNCS: dict[str, Any] = {}
FUNCTIONS: dict[Any, Any] = {}


def asvar_or_array(x: Any) -> Any:
    return x if isinstance(x, Var) else np.asarray(x)


def _ndim(x: Any) -> int:
    return len(shape_of(x))


def _is_var(x: Any) -> bool:
    return isinstance(x, Var)


def _normalize_axis(axis: int, ndim: int) -> int:
    if not -ndim <= axis < builtins.max(ndim, 1):
        raise np.exceptions.AxisError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim if ndim else 0


def _axes(axis: Any, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        return tuple(sorted(_normalize_axis(a, ndim) for a in axis))
    return (_normalize_axis(axis, ndim),)


# ---- lists of traced values ------------------------------------------------------------

@implements_method("fold_objects")
def fold_objects(value: np.ndarray) -> Var | None:
    """One traced array from an object array of Vars and numbers; ``None`` if it holds no Var.

    NumPy makes such arrays from lists of traced values (``np.array([a, b])``, ``np.r_``,
    ``np.append(x, [t, 8.0])``); this is where they become one program value again
    (``bind`` calls it, through :mod:`.dispatch`, on any object array it meets).
    """
    entries = list(value.flat)
    like = next((e for e in entries if isinstance(e, Var)), None)
    if like is None:
        return None
    bad = next((e for e in entries if not isinstance(e, (Var, bool, int, float, np.number))), None)
    if bad is not None or any(isinstance(e, Var) and e.shape != () for e in entries):
        raise TypeError(f"an array built from traced values holds {type(bad).__name__ if bad is not None else 'an array'}"
                        "; build it with np.stack or np.concatenate of arrays of one shape")
    parts = [st.reshape(e if isinstance(e, Var) else const_var(e, like), (1,)) for e in entries]
    flat = parts[0] if len(parts) == 1 else st.concatenate(parts, 0)
    return st.reshape(flat, tuple(value.shape))


# ---- elementwise ----------------------------------------------------------------------

def _float(x):
    if _is_var(x) and x.dtype.kind != "f":
        return ew.convert(x, dtype="float64")
    return x


add, subtract, multiply = ew.add, ew.sub, ew.mul
negative = ew.neg
maximum, minimum = ew.maximum_p, ew.minimum_p


def positive(x): return x
def true_divide(x, y): return ew.div(x, y)
def exp(x): return ew.exp_p(x)
def log(x): return ew.log_p(x)
def log1p(x): return ew.log1p_p(x)
def expm1(x): return ew.expm1_p(x)
def sqrt(x): return ew.sqrt_p(x)
def square(x): return ew.square_p(x)
def reciprocal(x): return ew.reciprocal_p(_float(x))
def sin(x): return ew.sin_p(x)
def cos(x): return ew.cos_p(x)
def tan(x): return ew.tan_p(x)
def arcsin(x): return ew.arcsin_p(x)
def arccos(x): return ew.arccos_p(x)
def arctan(x): return ew.arctan_p(x)
def sinh(x): return ew.sinh_p(x)
def cosh(x): return ew.cosh_p(x)
def tanh(x): return ew.tanh_p(x)
def absolute(x): return ew.abs_p(x)
def sign(x): return ew.sign_p(x)
def floor(x): return ew.floor_p(x)
def ceil(x): return ew.ceil_p(x)
def arctan2(y, x): return ew.arctan2_p(y, x)
def less(x, y): return ew.lt_p(x, y)
def less_equal(x, y): return ew.le_p(x, y)
def greater(x, y): return ew.gt_p(x, y)
def greater_equal(x, y): return ew.ge_p(x, y)
def equal(x, y): return ew.eq_p(x, y)
def not_equal(x, y): return ew.ne_p(x, y)
def logical_and(x, y): return ew.logical_and_p(x, y)
def logical_or(x, y): return ew.logical_or_p(x, y)
def logical_not(x): return ew.logical_not_p(x)
def log2(x): return ew.div(log(x), math.log(2.0))
def log10(x): return ew.div(log(x), math.log(10.0))
def exp2(x): return exp(ew.mul(x, math.log(2.0)))
def hypot(x, y):
    """``sqrt(x**2 + y**2)`` computed scaled, as NumPy does: no overflow at 1e200."""
    return _scaled_hypot(x, y)
def stop_gradient(x): return ew.stop_gradient(x)


def power(x, y):
    """``x ** y``; integer exponents become ``integer_pow`` (exact, defined for x ≤ 0)."""
    if not _is_var(y):
        y_arr = np.asarray(y)
        if y_arr.shape == () and float(y_arr) == int(y_arr) and abs(int(y_arr)) <= 64:
            n = int(y_arr)
            if n == 1:
                return _float(x)
            if n == 2:
                return square(_float(x))
            if n == 0 and _is_var(x):
                return ones_like(x)
            return ew.integer_pow(x, n=n)
        if y_arr.shape == () and float(y_arr) == 0.5:
            return sqrt(x)
    return ew.pow(x, y)


def logaddexp(x, y):
    m = stop_gradient(maximum(x, y))
    return ew.add(m, log(ew.add(exp(ew.sub(x, m)), exp(ew.sub(y, m)))))


def where(condition, x=None, y=None):
    if x is None or y is None:
        raise NotImplementedError("np.where(condition) with one argument returns indices whose "
                                  "number depends on values; it cannot be traced. Use "
                                  "np.where(condition, a, b).")
    if not _is_var(condition):
        condition = np.asarray(condition, dtype=bool)
    elif condition.dtype != np.bool_:
        condition = ew.ne_p(condition, 0)
    return ew.select(condition, x, y)


_UNSET = object()


def clip(a, a_min=_UNSET, a_max=_UNSET, out=None, *, min=_UNSET, max=_UNSET, **kwargs):
    """NumPy 2's ``clip``: bounds as ``a_min, a_max`` (both) or as ``min=`` / ``max=``."""
    _unsupported("clip", out=out, **kwargs)
    if a_min is _UNSET and a_max is _UNSET:
        a_min, a_max = (None if min is _UNSET else min), (None if max is _UNSET else max)
    elif a_min is _UNSET or a_max is _UNSET:
        missing = "a_min" if a_min is _UNSET else "a_max"
        raise TypeError(f"clip() missing 1 required positional argument: '{missing}'")
    elif min is not _UNSET or max is not _UNSET:
        raise ValueError("Passing `min` or `max` keyword argument when `a_min` and `a_max` are "
                         "provided is forbidden.")
    if a_min is not None:
        a = maximum(a, a_min)
    if a_max is not None:
        a = minimum(a, a_max)
    return a


def _no_kwargs(name: str, kwargs: dict, allowed: dict | None = None) -> None:
    allowed = allowed or {}
    bad = [k for k, v in kwargs.items() if k not in allowed and v is not None]
    if bad:
        raise NotImplementedError(f"newtonad's np.{name} does not support the argument(s) {bad}")


# ---- reductions -------------------------------------------------------------------------

def _reduce(prim_fn, x, axis, keepdims):
    axes = _axes(axis, _ndim(x))
    out = prim_fn(x, axes=axes) if axes else x
    if keepdims:
        out = st.reshape(out, rd.keepdims_shape(shape_of(x), axes))
    return out


def _unsupported(name: str, **params) -> None:
    """NotImplementedError naming each parameter given a value newtonad cannot honour."""
    bad = [k for k, v in params.items() if v is not None]
    if bad:
        fix = " (out= writes in place, which cannot be traced; use the returned value)" \
            if "out" in bad else ""
        raise NotImplementedError(f"newtonad's np.{name} does not support the argument(s) "
                                  f"{bad}{fix}")


def _cast(a, dtype):
    """``a`` converted to ``dtype`` first, as NumPy's reductions compute in ``dtype``."""
    return a if dtype is None else astype(a, dtype)


def _where_mask(a, where):
    """``where`` as a boolean mask that broadcasts to ``a``'s shape (None: no mask)."""
    if where is None or (not _is_var(where) and np.all(np.asarray(where, dtype=bool))
                         and np.ndim(where) == 0):
        return None
    if not _is_var(where):
        where = np.asarray(where, dtype=bool)
    elif where.dtype != np.bool_:
        raise TypeError(f"where= needs a boolean mask, got {where.dtype}")
    if np.broadcast_shapes(shape_of(where), shape_of(a)) != shape_of(a):
        raise ValueError(f"where= of shape {shape_of(where)} does not broadcast to the "
                         f"array's shape {shape_of(a)}")
    return where


def _fill_masked(a, mask, fill):
    return a if mask is None else ew.select(mask, a, fill)


def _count(a, axis, keepdims, mask):
    """How many entries each reduction sees: a constant, or a traced count under a traced mask."""
    shape = shape_of(a)
    if mask is None:
        axes = _axes(axis, len(shape))
        return float(np.prod([shape[i] for i in axes], dtype=np.int64))
    ones = ew.convert(st.broadcast_to(mask, shape), dtype="float64")
    return _reduce(rd.reduce_sum, ones, axis, keepdims)


def _reduced_size(a, axis) -> int:
    shape = shape_of(a)
    return int(np.prod([shape[i] for i in _axes(axis, len(shape))], dtype=np.int64))


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    _unsupported("sum", out=out)
    a = _cast(a, dtype)
    out_ = _reduce(rd.reduce_sum, _fill_masked(a, _where_mask(a, where), 0.0), axis, keepdims)
    return out_ if initial is None else ew.add(out_, initial)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    _unsupported("prod", out=out)
    a = _cast(a, dtype)
    out_ = _reduce(rd.reduce_prod, _fill_masked(a, _where_mask(a, where), 1.0), axis, keepdims)
    return out_ if initial is None else ew.mul(out_, initial)


def _extremum(name, prim_fn, pick, a, axis, out, keepdims, initial, where):
    _unsupported(name, out=out)
    mask = _where_mask(a, where)
    if initial is None and (mask is not None or _reduced_size(a, axis) == 0):
        op = "maximum" if name == "max" else "minimum"
        raise ValueError(f"np.{name}: zero-size reduction or where= mask: reduction operation "
                         f"'{op}' does not have an identity, so pass initial=")
    if initial is not None and _reduced_size(a, axis) == 0:
        return full_like(sum(a, axis, keepdims=keepdims), initial)
    out_ = _reduce(prim_fn, _fill_masked(a, mask, initial), axis, keepdims)
    return out_ if initial is None else pick(out_, initial)


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    return _extremum("max", rd.reduce_max, maximum, a, axis, out, keepdims, initial, where)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    return _extremum("min", rd.reduce_min, minimum, a, axis, out, keepdims, initial, where)


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    _unsupported("mean", out=out)
    a = _float(_cast(a, dtype))
    mask = _where_mask(a, where)
    return ew.div(sum(_fill_masked(a, mask, 0.0), axis, keepdims=keepdims),
                  _count(a, axis, keepdims, mask))


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
    _unsupported("var", out=out)
    if correction is not None:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    a = _float(_cast(a, dtype))
    mask = _where_mask(a, where)
    centre = globals()["mean"](a, axis, keepdims=True, where=where) if mean is None else mean
    squares = _fill_masked(square(ew.sub(a, centre)), mask, 0.0)
    count = _count(a, axis, keepdims, mask)
    dof = (builtins.max(count - ddof, 0) if isinstance(count, float)
           else maximum(ew.sub(count, ddof), 0.0))
    return ew.div(sum(squares, axis, keepdims=keepdims), dof)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
    v = var(a, axis, dtype, out, ddof, keepdims, where=where, mean=mean, correction=correction)
    if where is None and mean is None and _reduced_size(a, axis) == 1:
        # one entry per slice: the variance is identically 0 (or NaN for ddof >= 1), and so is
        # its square root, whose derivative is then 0 -- not 0 / 0 through sqrt
        return v
    return sqrt(v)


def logsumexp(a, axis=None, keepdims=False):
    """``log(sum(exp(a)))`` computed stably (as scipy.special.logsumexp)."""
    m = stop_gradient(max(a, axis, keepdims=True))
    s = log(sum(exp(ew.sub(a, m)), axis, keepdims=True))
    out = ew.add(s, m)
    if not keepdims:
        out = st.reshape(out, shape_of(sum(a, axis)))
    return out


def cumsum(a, axis=None, dtype=None, out=None):
    _unsupported("cumsum", out=out)
    a = _cast(a, dtype)
    if axis is None:
        a, axis = ravel(a), 0
    return rd.cumsum(a, axis=_normalize_axis(axis, _ndim(a)))


def cumprod(a, axis=None, dtype=None, out=None):
    """Running product; its derivative is exact where entries are zero (a linear scan)."""
    _unsupported("cumprod", out=out)
    a = _cast(a, dtype)
    if axis is None:
        a, axis = ravel(a), 0
    axis = _normalize_axis(axis, _ndim(a))
    if shape_of(a)[axis] == 0:
        return _float(a)
    return rd.cumprod(a, axis=axis)


def diff(a, n=1, axis=-1, prepend=None, append=None):
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n!r}")
    axis = _normalize_axis(axis, _ndim(a))
    ends = [_diff_end(v, a, axis) for v in (prepend, append)]
    if ends[0] is not None or ends[1] is not None:
        a = st.concatenate([v for v in (ends[0], a, ends[1]) if v is not None], axis)
    for _ in range(n):
        size = shape_of(a)[axis]
        a = ew.sub(_take_range(a, axis, 1, size), _take_range(a, axis, 0, size - 1))
    return a


def _diff_end(value, a, axis):
    """``prepend=`` / ``append=`` of np.diff: a scalar becomes one slice along ``axis``."""
    if value is None:
        return None
    value = asvar_or_array(value)
    if _ndim(value) == 0:
        shape = shape_of(a)
        value = st.broadcast_to(value, shape[:axis] + (1,) + shape[axis + 1:])
    return value


def _take_range(a, axis: int, start: int, stop: int | None, step: int = 1):
    shape = shape_of(a)
    slices = [(0, n, 1) for n in shape[:axis]] + [(start, stop, step)]
    return st.slice_(a, slices)


# ---- linear algebra (everything is einsum) -------------------------------------------

_LETTERS = string.ascii_letters


def einsum(*operands, out=None, optimize=False, **kwargs):
    """``np.einsum``: explicit and implicit output, ``...`` (broadcast), repeated indices
    within an operand (traces, diagonals: ``'ii->'``, ``'ii->i'``, ``'ij,jj->i'``) and the
    interleaved ``einsum(a, [0, 1], b, [1, 2])`` form."""
    _no_kwargs("einsum", {"out": out, **kwargs})
    if not operands:
        raise ValueError("einsum: no input operands")
    if isinstance(operands[0], str):
        subscripts, operands = operands[0], operands[1:]
    else:
        subscripts, operands = _einsum_sublists(operands)
    operands = [asvar_or_array(x) for x in operands]
    terms, out = _einsum_parse(subscripts.replace(" ", ""), [shape_of(x) for x in operands])
    pairs = [_einsum_diagonals(t, x) for t, x in zip(terms, operands)]
    terms, operands = [t for t, _ in pairs], _einsum_broadcast(pairs)
    if len(operands) == 1:
        return _einsum_single(terms[0], out, operands[0])
    # Contract left to right, keeping the indices that are still needed later.
    acc, acc_terms = operands[0], terms[0]
    for i in range(1, len(operands)):
        later = out + "".join(terms[i + 1:])
        keep = "".join(dict.fromkeys(c for c in acc_terms + terms[i] if c in later))
        spec = f"{acc_terms},{terms[i]}->{out if i == len(operands) - 1 else keep}"
        acc, acc_terms = la.einsum(spec, acc, operands[i]), spec.split("->")[1]
    return acc


_SUBLIST_LETTERS = string.ascii_uppercase + string.ascii_lowercase  # NumPy's label order


def _einsum_sublists(args) -> tuple[str, list]:
    """The interleaved form ``(op, sublist, op, sublist, ..., [out_sublist])`` as a string."""
    def letters(sublist) -> str:
        return "".join("..." if s is Ellipsis else _SUBLIST_LETTERS[int(s)] for s in sublist)

    operands, terms = list(args[0::2]), [letters(s) for s in args[1::2]]
    out = None
    if len(args) % 2:  # a trailing output sublist
        out = letters(operands.pop())
    spec = ",".join(terms[:len(operands)])
    return (spec if out is None else f"{spec}->{out}"), operands


def _einsum_parse(subscripts: str, shapes) -> tuple[list[str], str]:
    """Terms and output with ``...`` replaced by letters and implicit output made explicit."""
    lhs, arrow, out = subscripts.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"einsum {subscripts!r} names {len(terms)} operands, got {len(shapes)}")
    n_ell = []
    for i, (t, shape) in enumerate(zip(terms, shapes)):
        named = len(t.replace("...", ""))
        if ("..." in t and named > len(shape)) or ("..." not in t and named != len(shape)):
            raise ValueError(f"einsum {subscripts!r}: operand {i} has {len(shape)} dimensions "
                             f"but its subscripts {t!r} name {named}")
        n_ell.append(len(shape) - named if "..." in t else 0)
    for c in subscripts.replace("...", ""):
        if c not in ",->" and not c.isalpha():
            raise ValueError(f"einsum {subscripts!r}: invalid subscript {c!r}")
    free = [c for c in string.ascii_uppercase + string.ascii_lowercase if c not in subscripts]
    ell = "".join(free[:builtins.max(n_ell, default=0)])
    terms = [t.replace("...", ell[len(ell) - n:]) for t, n in zip(terms, n_ell)]
    if arrow:
        out = out.replace("...", ell)
    else:  # implicit mode: broadcast axes, then the indices used once, sorted
        counts = {c: "".join(terms).count(c) for c in "".join(terms) if c not in ell}
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1))
    missing = [c for c in out if c not in "".join(terms)]
    if missing or len(set(out)) != len(out):
        raise ValueError(f"einsum {subscripts!r}: output subscript(s) {missing or out!r} "
                         "are not found in the inputs or are repeated")
    return terms, out


def _einsum_diagonals(term: str, x) -> tuple[str, Any]:
    """Take the diagonal for each index repeated within one operand (``'ii'`` -> ``'i'``)."""
    while len(set(term)) != len(term):
        c = next(c for c in term if term.count(c) > 1)
        p, q = term.index(c), term.index(c, term.index(c) + 1)
        if shape_of(x)[p] != shape_of(x)[q]:
            raise ValueError(f"einsum: index {c!r} is repeated with sizes {shape_of(x)[p]} and "
                             f"{shape_of(x)[q]}")
        x = diagonal(x, 0, p, q)  # removes axes p, q; the diagonal comes last
        term = term[:p] + term[p + 1:q] + term[q + 1:] + c
    return term, x


def _einsum_broadcast(pairs) -> list:
    """Stretch size-1 axes to the size the same index has in another operand (broadcasting)."""
    sizes: dict[str, int] = {}
    for term, x in pairs:
        for c, n in zip(term, shape_of(x)):
            if n != 1:
                if sizes.setdefault(c, n) != n:
                    raise ValueError(f"einsum: index {c!r} has sizes {sizes[c]} and {n}")
    out = []
    for term, x in pairs:
        target = tuple(sizes.get(c, 1) for c in term)
        out.append(x if shape_of(x) == target else st.broadcast_to(x, target))
    return out


def _einsum_single(term: str, out: str, x):
    term, x = _einsum_diagonals(term, x)
    summed = tuple(i for i, c in enumerate(term) if c not in out)
    kept = "".join(c for c in term if c in out)
    x = rd.reduce_sum(x, axes=summed) if summed else x
    return st.transpose(x, tuple(kept.index(c) for c in out))


def dot(a, b, out=None):
    _no_kwargs("dot", {"out": out})
    na, nb = _ndim(a), _ndim(b)
    if na == 0 or nb == 0:
        return ew.mul(a, b)
    la_ = _LETTERS[:na]
    if nb == 1:
        return la.einsum(f"{la_},{la_[-1]}->{la_[:-1]}", a, b)
    lb = _LETTERS[na:na + nb - 2] + la_[-1] + _LETTERS[na + nb - 2]
    return la.einsum(f"{la_},{lb}->{la_[:-1] + lb[:-2] + lb[-1]}", a, b)


def matmul(a, b, out=None, **kwargs):
    _no_kwargs("matmul", {"out": out, **kwargs})
    na, nb = _ndim(a), _ndim(b)
    if na == 0 or nb == 0:
        raise ValueError("matmul: input operand does not have enough dimensions")
    if na == 1 and nb == 1:
        return la.einsum("i,i->", a, b)
    if na == 1:
        return la.einsum(f"j,{_batch(nb - 2)}jk->{_batch(nb - 2)}k", a, b)
    if nb == 1:
        return la.einsum(f"{_batch(na - 2)}ij,j->{_batch(na - 2)}i", a, b)
    batch = np.broadcast_shapes(shape_of(a)[:-2], shape_of(b)[:-2])
    a = st.broadcast_to(a, batch + shape_of(a)[-2:])
    b = st.broadcast_to(b, batch + shape_of(b)[-2:])
    p = _batch(len(batch))
    return la.einsum(f"{p}ij,{p}jk->{p}ik", a, b)


def _batch(n: int) -> str:
    return _LETTERS[26 - n:26] if n else ""  # upper letters of the lowercase range end


def vdot(a, b):
    return la.einsum("i,i->", ravel(a), ravel(b))


def inner(a, b):
    if _ndim(a) == 0 or _ndim(b) == 0:
        return ew.mul(a, b)
    na, nb = _ndim(a), _ndim(b)
    sa = _LETTERS[:na - 1] + "z"
    sb = _LETTERS[na - 1:na + nb - 2] + "z"
    return la.einsum(f"{sa},{sb}->{sa[:-1] + sb[:-1]}", a, b)


def outer(a, b, out=None):
    _no_kwargs("outer", {"out": out})
    return la.einsum("i,j->ij", ravel(a), ravel(b))


def tensordot(a, b, axes=2):
    na, nb = _ndim(a), _ndim(b)
    if isinstance(axes, int):
        axes_a, axes_b = list(range(na - axes, na)), list(range(axes))
    else:
        axes_a, axes_b = ([axes[0]] if isinstance(axes[0], int) else list(axes[0]),
                          [axes[1]] if isinstance(axes[1], int) else list(axes[1]))
    axes_a = [_normalize_axis(i, na) for i in axes_a]
    axes_b = [_normalize_axis(i, nb) for i in axes_b]
    sa = list(_LETTERS[:na])
    sb = list(_LETTERS[na:na + nb])
    for i, j in zip(axes_a, axes_b):
        sb[j] = sa[i]
    out = [c for i, c in enumerate(sa) if i not in axes_a] + [c for j, c in enumerate(sb) if j not in axes_b]
    return la.einsum(f"{''.join(sa)},{''.join(sb)}->{''.join(out)}", a, b)


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """``np.trace``: the sum of the ``offset`` diagonal over ``axis1``, ``axis2``."""
    _no_kwargs("trace", {"out": out})
    d = diagonal(a, offset, axis1, axis2)
    return sum(d if dtype is None else astype(d, dtype), axis=-1)


def diagonal(a, offset=0, axis1=0, axis2=1):
    """``np.diagonal``: axes ``axis1``, ``axis2`` removed, the diagonal appended last."""
    a = asvar_or_array(a)
    shape = shape_of(a)
    nd = len(shape)
    if nd < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    i, j = _normalize_axis(axis1, nd), _normalize_axis(axis2, nd)
    if i == j:
        raise ValueError("axis1 and axis2 cannot be the same")
    offset = int(offset)
    rest = [d for d in range(nd) if d not in (i, j)]
    n, m = shape[i], shape[j]
    rows = np.arange(builtins.max(0, -offset), builtins.max(0, builtins.min(n, m - offset)))
    flat = st.reshape(st.transpose(a, rest + [i, j]), tuple(shape[d] for d in rest) + (n * m,))
    return st.gather(flat, (rows * m + rows + offset).astype(np.int64), len(rest))


def diag(v, k=0):
    """``np.diag``: the ``k``-th diagonal of a matrix, or a matrix with ``v`` on it."""
    v = asvar_or_array(v)
    k = int(k)
    if _ndim(v) == 2:
        return diagonal(v, k)
    if _ndim(v) != 1:
        raise ValueError("Input must be 1- or 2-d.")
    n = shape_of(v)[0]
    size = n + builtins.abs(k)
    rows = np.arange(n) + builtins.max(0, -k)
    flat = st.scatter_add(v, (rows * size + rows + k).astype(np.int64), 0, (size * size,))
    return st.reshape(flat, (size, size))


def norm(x, ord=None, axis=None, keepdims=False):
    """``np.linalg.norm``: every vector and matrix order, axis tuples and keepdims, as NumPy.

    Matrix orders 2, -2 and 'nuc' go through the singular values; vector order 0 counts the
    non-zero entries (a value with a zero derivative).
    """
    x = _float(asvar_or_array(x))
    if not _is_var(x) and x.dtype.kind != "f":
        x = x.astype(np.float64)
    nd = _ndim(x)
    if axis is None:
        if ord is None or (isinstance(ord, str) and ord in ("f", "fro") and nd == 2) or \
                (not isinstance(ord, str) and ord == 2 and nd == 1):
            out = sqrt(sum(square(x)))
            return st.reshape(out, (1,) * nd) if keepdims else out
        axis = tuple(range(nd))
    elif not isinstance(axis, tuple):
        try:
            axis = (int(axis),)
        except TypeError as e:
            raise TypeError("'axis' must be None, an integer or a tuple of integers") from e
    if len(axis) == 1:
        return _vector_norm(x, ord, axis[0], keepdims)
    if len(axis) == 2:
        return _matrix_norm(x, ord, axis, keepdims)
    raise ValueError("Improper number of dimensions to norm.")


def _vector_norm(x, ord, axis: int, keepdims: bool):
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    if ord is None or ord == 2:
        return sqrt(sum(square(x), axis=axis, keepdims=keepdims))
    if ord == np.inf:
        return max(absolute(x), axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return min(absolute(x), axis=axis, keepdims=keepdims)
    if ord == 0:  # the number of non-zero entries
        return sum(ew.convert(ew.ne_p(x, 0.0), dtype="float64"), axis=axis, keepdims=keepdims)
    if ord == 1:
        return sum(absolute(x), axis=axis, keepdims=keepdims)
    return power(sum(power(absolute(x), ord), axis=axis, keepdims=keepdims), 1.0 / ord)


def _matrix_norm(x, ord, axis: tuple, keepdims: bool):
    nd = _ndim(x)
    row, col = (_normalize_axis(int(a), nd) for a in axis)
    if row == col:
        raise ValueError("Duplicate axes given.")
    by_string = isinstance(ord, str)
    if not by_string and ord in (2, -2) or ord == "nuc":
        s = _svdvals(moveaxis(x, (row, col), (-2, -1)))
        ret = sum(s, axis=-1) if ord == "nuc" else (max if ord == 2 else min)(s, axis=-1)
    elif not by_string and ord in (1, -1):  # largest / smallest column sum
        pick = max if ord == 1 else min
        ret = pick(sum(absolute(x), axis=row), axis=col - 1 if col > row else col)
    elif not by_string and ord in (np.inf, -np.inf):  # largest / smallest row sum
        pick = max if ord == np.inf else min
        ret = pick(sum(absolute(x), axis=col), axis=row - 1 if row > col else row)
    elif ord is None or ord in ("fro", "f"):
        ret = sqrt(sum(square(x), axis=(row, col)))
    else:
        raise ValueError("Invalid norm order for matrices.")
    if keepdims:
        ret = st.reshape(ret, tuple(1 if i in (row, col) else n for i, n in enumerate(shape_of(x))))
    return ret


# ---- shapes -------------------------------------------------------------------------------

def reshape(a, newshape=None, order="C", *, shape=None, copy=None):
    # copy= changes memory only; traced values are immutable, so any value is exact
    if order != "C":
        raise NotImplementedError("only order='C' reshapes are supported")
    newshape = shape if shape is not None else newshape
    if isinstance(newshape, (int, np.integer)):
        newshape = (int(newshape),)
    newshape = list(newshape)
    size = int(np.prod(shape_of(a), dtype=np.int64))
    if -1 in newshape:
        i = newshape.index(-1)
        rest = int(np.prod([n for j, n in enumerate(newshape) if j != i], dtype=np.int64))
        newshape[i] = size // rest if rest else 0
    return st.reshape(a, tuple(newshape))


def ravel(a, order="C"):
    return reshape(a, (-1,), order)


def transpose(a, axes=None):
    n = _ndim(a)
    axes = tuple(reversed(range(n))) if axes is None else tuple(_normalize_axis(i, n) for i in axes)
    return st.transpose(a, axes)


def swapaxes(a, axis1, axis2):
    n = _ndim(a)
    perm = list(range(n))
    i, j = _normalize_axis(axis1, n), _normalize_axis(axis2, n)
    perm[i], perm[j] = perm[j], perm[i]
    return st.transpose(a, perm)


def moveaxis(a, source, destination):
    n = _ndim(a)
    src = [_normalize_axis(s, n) for s in np.atleast_1d(source)]
    dst = [_normalize_axis(d, n) for d in np.atleast_1d(destination)]
    order = [i for i in range(n) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return st.transpose(a, order)


def expand_dims(a, axis):
    shape = list(shape_of(a))
    axes = sorted(_normalize_axis(i, len(shape) + len(np.atleast_1d(axis)))
                  for i in np.atleast_1d(axis))
    for i in axes:
        shape.insert(i, 1)
    return st.reshape(a, tuple(shape))


def squeeze(a, axis=None):
    shape = shape_of(a)
    axes = tuple(i for i, n in enumerate(shape) if n == 1) if axis is None else _axes(axis, len(shape))
    for i in axes:
        if shape[i] != 1:
            raise ValueError(f"cannot squeeze axis {i} of size {shape[i]}")
    return st.reshape(a, tuple(n for i, n in enumerate(shape) if i not in axes))


def broadcast_to(array, shape, subok=False):
    return st.broadcast_to(array, tuple(np.atleast_1d(shape).tolist()) if not isinstance(shape, tuple) else shape)


def _joined(arrays, dtype, casting):
    """The operands of a join, converted to ``dtype`` first as NumPy does."""
    if casting not in ("same_kind", "unsafe", "safe", None):
        raise NotImplementedError(f"casting={casting!r} is not supported (same_kind, safe and "
                                  "unsafe are)")
    return [_cast(asvar_or_array(a), dtype) for a in arrays]


def concatenate(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    _unsupported("concatenate", out=out)
    arrays = _joined(arrays, dtype, casting)
    if axis is None:
        arrays, axis = [ravel(a) for a in arrays], 0
    return st.concatenate(arrays, _normalize_axis(axis, _ndim(arrays[0])))


def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    _unsupported("stack", out=out)
    arrays = _joined(arrays, dtype, casting)
    axis = _normalize_axis(axis, _ndim(arrays[0]) + 1)
    return st.concatenate([expand_dims(a, axis) for a in arrays], axis)


def hstack(tup, *, dtype=None, casting="same_kind"):
    arrays = [atleast_1d(asvar_or_array(a)) for a in tup]
    return concatenate(arrays, 0 if _ndim(arrays[0]) == 1 else 1, dtype=dtype, casting=casting)


def vstack(tup, *, dtype=None, casting="same_kind"):
    return concatenate([atleast_2d(asvar_or_array(a)) for a in tup], 0, dtype=dtype,
                       casting=casting)


def flip(m, axis=None):
    n = _ndim(m)
    axes = _axes(axis, n)
    slices = [(n_ - 1, None, -1) if i in axes else (0, n_, 1) for i, n_ in enumerate(shape_of(m))]
    return st.slice_(m, slices)


def roll(a, shift, axis=None):
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), shape_of(a))
    if isinstance(axis, (tuple, list)):
        shifts = np.broadcast_to(shift, (len(axis),))
        for s, ax in zip(shifts, axis):
            a = roll(a, int(s), ax)
        return a
    axis = _normalize_axis(axis, _ndim(a))
    n = shape_of(a)[axis]
    s = int(shift) % n if n else 0
    if s == 0:
        return a
    return st.concatenate([_take_range(a, axis, n - s, n), _take_range(a, axis, 0, n - s)], axis)


def tile(A, reps):
    reps = tuple(np.atleast_1d(reps).tolist())
    shape = shape_of(A)
    d = builtins.max(len(shape), len(reps))
    shape = (1,) * (d - len(shape)) + shape
    reps = (1,) * (d - len(reps)) + reps
    x = st.reshape(A, tuple(v for n in shape for v in (1, n)))
    x = st.broadcast_to(x, tuple(v for r, n in zip(reps, shape) for v in (r, n)))
    return st.reshape(x, tuple(r * n for r, n in zip(reps, shape)))


def repeat(a, repeats, axis=None):
    if np.ndim(repeats) != 0:
        raise NotImplementedError("newtonad's np.repeat supports one repeat count for all elements")
    r = int(repeats)
    if axis is None:
        a, axis = ravel(a), 0
    shape = shape_of(a)
    axis = _normalize_axis(axis, len(shape))
    x = st.reshape(a, shape[:axis + 1] + (1,) + shape[axis + 1:])
    x = st.broadcast_to(x, shape[:axis + 1] + (r,) + shape[axis + 1:])
    return st.reshape(x, shape[:axis] + (shape[axis] * r,) + shape[axis + 1:])


def pad(array, pad_width, mode="constant", **kwargs):
    shape = shape_of(array)
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (len(shape), 2))
    if mode == "constant":
        value = kwargs.pop("constant_values", 0)
        _no_kwargs("pad", kwargs)
        if np.ndim(value) != 0:
            raise NotImplementedError("pad: per-axis constant_values are not supported")
        out_shape = tuple(int(n + lo + hi) for n, (lo, hi) in zip(shape, widths))
        slices = [(int(lo), int(lo + n), 1) for n, (lo, hi) in zip(shape, widths)]
        out = st.unslice(array, out_shape, slices)
        if value != 0:
            border = np.full(out_shape, float(value))
            border[tuple(slice(*s) for s in slices)] = 0.0
            out = ew.add(out, border)
        return out
    _no_kwargs("pad", kwargs)
    if mode not in ("edge", "wrap", "reflect", "symmetric"):
        raise NotImplementedError(f"pad mode {mode!r} is not supported (constant, edge, wrap, "
                                  "reflect, symmetric are)")
    for axis, (lo, hi) in enumerate(widths):
        # Padding the positions 0..n-1 with NumPy itself gives the source of every entry.
        index = np.pad(np.arange(shape_of(array)[axis]), (int(lo), int(hi)), mode=mode)
        array = st.gather(array, np.asarray(index, dtype=np.int64), axis)
    return array


def take(a, indices, axis=None, out=None, mode="raise"):
    _unsupported("take", out=out)
    if axis is None:
        a, axis = ravel(a), 0
    axis = _normalize_axis(axis, _ndim(a))
    n = shape_of(a)[axis]
    if mode in ("wrap", "clip") and n:
        if _is_var(indices):
            raise NotImplementedError(f"np.take(mode={mode!r}) with traced indices is not "
                                      "supported")
        indices = np.asarray(indices)
        indices = indices % n if mode == "wrap" else np.clip(indices, 0, n - 1)
    elif mode != "raise":
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    return st.gather(a, _normalize_index(indices, n), axis)


def zeros_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return full_like(a, 0.0, dtype, order, subok, shape, device=device)


def ones_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return full_like(a, 1.0, dtype, order, subok, shape, device=device)


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    # order= and subok= change memory layout and subclass only, not values
    if device not in (None, "cpu"):
        raise ValueError(f"Device not understood. Only \"cpu\" is allowed, but received: {device}")
    dtype = np.dtype(dtype or (a.dtype if _is_var(a) else np.asarray(a).dtype))
    c = Var(np.asarray(fill_value, dtype=dtype), const=True)
    shape = shape_of(a) if shape is None else tuple(np.atleast_1d(shape).tolist())
    return c if shape == () else st.broadcast_to(c, shape)


@implements_method("astype")
def astype(x, dtype, copy=True):
    dtype = np.dtype(dtype)
    if dtype.kind != "f" and _is_var(x) and x.dtype.kind == "f":
        raise TypeError(f"astype({dtype}) of a float array has no derivative; newtonad only "
                        "converts to float64 (use np.floor / np.round for rounding)")
    return ew.convert(x, dtype=dtype.name) if shape_of(x) is not None else x


def copy(a, order="K", subok=False):
    return a  # traced values are immutable: a copy is the value itself


def _contains_var(obj) -> bool:
    if isinstance(obj, Var):
        return True
    return isinstance(obj, (list, tuple)) and builtins.any(_contains_var(o) for o in obj)


def array(obj, dtype=None, *, ndmin=0, **kwargs):
    """``np.array`` that also accepts (nested) lists of traced values, by stacking them,
    and the object arrays NumPy's own ``np.array`` makes of them, by folding them."""
    if isinstance(obj, np.ndarray) and obj.dtype == object:
        folded = fold_objects(obj)
        obj = obj if folded is None else folded
    if isinstance(obj, Var) or _contains_var(obj):
        out = obj if isinstance(obj, Var) else stack([array(o) for o in obj])
        out = out if dtype is None else astype(out, dtype)
        return st.reshape(out, (1,) * (ndmin - _ndim(out)) + shape_of(out))
    return np.array(obj, dtype=dtype, ndmin=ndmin, **kwargs)


asarray = array


# ---- indexing -----------------------------------------------------------------------------

def _normalize_index(idx, n: int):
    """Integer index arrays: constants checked and made non-negative; traced ones wrapped."""
    if _is_var(idx):
        if idx.dtype.kind not in "iu":
            raise IndexError(_ARRAY_INDEX_MESSAGE)
        return ew.select(ew.lt_p(idx, 0), ew.add(idx, n), idx)
    idx = np.asarray(idx)
    if idx.dtype.kind not in "iu" and not (idx.size == 0 and idx.dtype.kind == "f"):
        raise IndexError(_ARRAY_INDEX_MESSAGE)
    idx = idx.astype(np.int64)
    if idx.size and (idx.max() >= n or idx.min() < -n):
        raise IndexError(f"index {idx.max() if idx.max() >= n else idx.min()} is out of bounds "
                         f"for axis of size {n}")
    return np.where(idx < 0, idx + n, idx).astype(np.int64)


_ARRAY_INDEX_MESSAGE = "arrays used as indices must be of integer (or boolean) type"
_INDEX_MESSAGE = ("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and "
                  "integer or boolean arrays are valid indices")


def _is_array_index(k) -> bool:
    return _is_var(k) or isinstance(k, (list, tuple, np.ndarray))


def _is_bool_index(k) -> bool:
    """A boolean scalar or a constant boolean array (NumPy: a mask, adding or taking axes)."""
    if isinstance(k, (bool, np.bool_)):
        return True
    return isinstance(k, (list, tuple, np.ndarray)) and np.asarray(k).dtype == np.bool_


def _check_index_types(key: tuple) -> None:
    for k in key:
        if (k is None or k is Ellipsis or isinstance(k, (slice, bool, np.bool_))
                or _is_array_index(k)):
            continue
        try:
            operator.index(k)
        except TypeError:
            raise IndexError(_INDEX_MESSAGE) from None


def _by_numpy(x, key: tuple):
    """A constant key NumPy resolves itself: the flat positions it picks, one gather."""
    positions = np.arange(_size(x), dtype=np.int64).reshape(shape_of(x))[key]
    return st.gather(ravel(x), positions, 0)


def _check_mask_shape(x, key: tuple, j: int) -> None:
    """NumPy's IndexError when a boolean mask does not match the axes it covers."""
    def consumed(k):
        if k is None or k is Ellipsis:
            return 0
        return np.ndim(k) if _is_bool_index(k) else 1

    shape = shape_of(x)
    start = (len(shape) - builtins.sum(consumed(k) for k in key[j:])
             if builtins.any(k is Ellipsis for k in key[:j])
             else builtins.sum(consumed(k) for k in key[:j]))
    mask_shape = np.shape(key[j])
    for d, m in enumerate(mask_shape):
        n = shape[start + d] if start + d < len(shape) else None
        if n != m:
            raise IndexError(f"boolean index did not match indexed array along axis "
                             f"{start + d}; size of axis is {n} but size of corresponding "
                             f"boolean axis is {m}")


@implements_method("getitem")
def getitem(x, key):
    """NumPy indexing: basic slicing, None, Ellipsis, integer and boolean arrays."""
    if not isinstance(key, tuple):
        key = (key,)
    _check_index_types(key)
    for k in key:
        if _is_var(k) and k.dtype == np.bool_:
            raise IndexError("boolean mask indexing with a traced mask selects a value-dependent "
                             "number of elements and cannot be traced; use np.where(mask, x, 0)")
    traced = builtins.any(_is_var(k) for k in key)
    masks = builtins.any(_is_bool_index(k) for k in key)
    advanced = builtins.any(_is_array_index(k) for k in key)
    if not traced and (masks or (advanced and builtins.any(k is None for k in key))):
        return _by_numpy(x, key)
    if masks and builtins.any(isinstance(k, (bool, np.bool_)) for k in key):
        raise NotImplementedError("a boolean scalar index together with a traced index array "
                                  "is not supported; add the axis with np.expand_dims")
    # Constant boolean masks beside traced indices become integer indices (known count).
    expanded = []
    for j, k in enumerate(key):
        if _is_bool_index(k):
            _check_mask_shape(x, key, j)
            expanded.extend(np.nonzero(np.asarray(k)))
        else:
            expanded.append(k)
    key = tuple(expanded)
    n_real = builtins.sum(1 for k in key if k is not None and k is not Ellipsis)
    if builtins.sum(1 for k in key if k is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis")
    ndim = _ndim(x)
    if n_real > ndim:
        raise IndexError(f"too many indices: array is {ndim}-dimensional, but {n_real} were indexed")
    if Ellipsis in [k for k in key if not _is_array_index(k)]:
        i = next(i for i, k in enumerate(key) if k is Ellipsis and not _is_array_index(k))
        key = key[:i] + (slice(None),) * (ndim - n_real) + key[i + 1:]
    n_now = builtins.sum(1 for k in key if k is not None)
    key = key + (slice(None),) * (ndim - n_now)
    advanced = any(_is_array_index(k) for k in key)
    if advanced and any(k is None for k in key):
        raise NotImplementedError("mixing None (np.newaxis) with integer-array indexing is not "
                                  "supported; add the axis with np.expand_dims afterwards")
    shape = shape_of(x)
    slices, squeeze_axes, out_shape, adv = [], [], [], []
    axis = 0
    for k in key:
        if k is None:
            out_shape.append(1)
            continue
        n = shape[axis]
        if isinstance(k, slice):
            s = st.normalize_slice(k, n)
            slices.append(s)
            out_shape.append(len(range(n)[slice(*s)]))
        elif _is_array_index(k) or advanced:  # integers join the advanced indices
            adv.append((axis, k))
            slices.append((0, n, 1))
            out_shape.append(n)
        else:
            i = int(k)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
            i %= n
            slices.append((i, i + 1, 1))
            squeeze_axes.append(len(out_shape))
            out_shape.append(1)
        axis += 1
    x = st.slice_(x, slices)
    if adv:
        return _advanced(x, adv)
    out_shape_final = [n for i, n in enumerate(out_shape) if i not in squeeze_axes]
    return st.reshape(x, tuple(out_shape_final))


def _advanced(x, adv):
    """Gather for integer-array indices (NumPy's rules for where result axes go)."""
    shape = shape_of(x)
    axes = [a for a, _ in adv]
    idxs = [_normalize_index(k, shape[a]) for a, k in adv]
    contiguous = axes == list(range(axes[0], axes[0] + len(axes)))
    if not contiguous:  # NumPy puts the broadcast index axes first
        rest = [i for i in range(len(shape)) if i not in axes]
        x = st.transpose(x, axes + rest)
        shape = shape_of(x)
        axes = list(range(len(axes)))
    p = axes[0]
    if len(axes) == 1:
        return st.gather(x, idxs[0], p)
    # Several index arrays: merge their axes and use one flat (row-major) index.
    sizes = [shape[a] for a in axes]
    strides = [int(np.prod(sizes[i + 1:], dtype=np.int64)) for i in range(len(sizes))]
    flat = idxs[0] if strides[0] == 1 else ew.mul(idxs[0], strides[0])
    for idx, s in zip(idxs[1:], strides[1:]):
        flat = ew.add(flat, idx if s == 1 else ew.mul(idx, s))
    merged = st.reshape(x, shape[:p] + (int(np.prod(sizes)),) + shape[p + len(axes):])
    return st.gather(merged, flat, p)


# ---- sorting, order statistics --------------------------------------------------------------
# Positions come from primal values (integer primitives without tangents); gathering
# the values at those positions carries the derivative.

def take_along_axis(arr, indices, axis=-1):
    """NumPy's ``take_along_axis``: one flat gather, the other axes indexed by constants."""
    if axis is None:
        return take_along_axis(ravel(arr), indices, 0)
    shape, ishape = shape_of(arr), shape_of(indices)
    if len(ishape) != len(shape):
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    axis = _normalize_axis(axis, len(shape))
    out_shape = tuple(ishape[d] if d == axis else np.broadcast_shapes((shape[d],), (ishape[d],))[0]
                      for d in range(len(shape)))
    strides = [int(np.prod(shape[d + 1:], dtype=np.int64)) for d in range(len(shape))]
    flat_const = np.zeros(out_shape, dtype=np.int64)
    for d in range(len(shape)):
        if d != axis and shape[d] != 1:
            place = [1] * len(shape)
            place[d] = shape[d]
            flat_const = flat_const + np.arange(shape[d]).reshape(place) * strides[d]
    idx = _normalize_index(indices, shape[axis])
    flat = ew.add(ew.mul(idx, strides[axis]) if strides[axis] != 1 else idx, flat_const)
    return st.gather(ravel(arr), flat, 0)


def _sort_axis(a, axis):
    if axis is None:
        return ravel(a), 0
    return a, _normalize_axis(axis, _ndim(a))


def _sort_kind(kind, stable) -> str | None:
    if stable is not None and kind is not None:
        raise ValueError("`kind` and `stable` parameters can't both be specified.")
    return "stable" if stable else kind


def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    _unsupported("sort", order=order)
    a, axis = _sort_axis(asvar_or_array(a), axis)
    return take_along_axis(a, srt.argsort(a, axis=axis, kind="stable"), axis)


def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    _unsupported("argsort", order=order)
    a, axis = _sort_axis(asvar_or_array(a), axis)
    return srt.argsort(a, axis=axis, kind=_sort_kind(kind, stable))


def _kth(kth) -> tuple[int, ...]:
    if _is_var(kth):
        raise TypeError("kth must be known when tracing (a Python int or a sequence of ints)")
    return tuple(int(k) for k in np.atleast_1d(kth))


def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    _unsupported("argpartition", order=order)
    a, axis = _sort_axis(asvar_or_array(a), axis)
    return srt.argpartition(a, kth=_kth(kth), axis=axis)


def partition(a, kth, axis=-1, kind="introselect", order=None):
    """Values of ``np.partition``: NumPy's own ``argpartition`` order, gathered."""
    _unsupported("partition", order=order)
    a, axis = _sort_axis(asvar_or_array(a), axis)
    return take_along_axis(a, srt.argpartition(a, kth=_kth(kth), axis=axis), axis)


def _arg_extremum(prim_fn, a, axis, out, keepdims):
    _unsupported(prim_fn.__name__, out=out)
    a = asvar_or_array(a)
    shape = shape_of(a)
    if axis is None:
        out_ = prim_fn(ravel(a), axis=0)
        return st.reshape(out_, (1,) * len(shape)) if keepdims else out_
    axis = _normalize_axis(axis, len(shape))
    out_ = prim_fn(a, axis=axis)
    return st.reshape(out_, rd.keepdims_shape(shape, (axis,))) if keepdims else out_


def argmax(a, axis=None, out=None, *, keepdims=False):
    return _arg_extremum(srt.argmax, a, axis, out, keepdims)


def argmin(a, axis=None, out=None, *, keepdims=False):
    return _arg_extremum(srt.argmin, a, axis, out, keepdims)


def _axes_last(a, axis):
    """``a`` with the axes ``axis`` merged into one trailing axis, and the keepdims shape."""
    shape = shape_of(a)
    axes = _axes(axis, len(shape))
    rest = [i for i in range(len(shape)) if i not in axes]
    moved = st.transpose(a, rest + list(axes))
    merged = st.reshape(moved, tuple(shape[i] for i in rest) + (_reduced_size(a, axis),))
    return merged, rd.keepdims_shape(shape, axes)


def _nan_if_any_nan(result, sorted_last):
    """NumPy's order statistics are NaN for a slice holding a NaN (sorted last)."""
    if not _is_var(sorted_last) and not np.any(np.isnan(sorted_last)):
        return result
    return ew.select(ew.ne_p(sorted_last, sorted_last), np.nan, result)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    _unsupported("median", out=out)
    merged, kept = _axes_last(_float(asvar_or_array(a)), axis)
    n = shape_of(merged)[-1]
    if n == 0:
        raise ValueError("np.median of an empty slice is NaN in NumPy (with a warning); "
                         "newtonad refuses it")
    s = sort(merged, axis=-1)
    mid = _take_last(s, [n // 2] if n % 2 else [n // 2 - 1, n // 2])
    result = ew.div(_sum_last(mid), float(shape_of(mid)[-1]))
    result = _nan_if_any_nan(result, _take_last(s, [n - 1])[..., 0])
    return st.reshape(result, kept) if keepdims else result


def _take_last(a, positions):
    return st.gather(a, np.asarray(positions, dtype=np.int64), _ndim(a) - 1)


def _sum_last(a):
    return rd.reduce_sum(a, axes=(_ndim(a) - 1,))


_QUANTILE_METHODS = ("linear",)


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None, interpolation=None):
    """NumPy's default (``method='linear'``) quantiles, the same interpolation formula."""
    _unsupported("quantile", out=out, weights=weights, interpolation=interpolation)
    if method not in _QUANTILE_METHODS:
        raise NotImplementedError(f"np.quantile method={method!r} is not supported; newtonad "
                                  "implements method='linear' (NumPy's default)")
    if _is_var(q):
        raise NotImplementedError("np.quantile with traced q is not supported; q must be known")
    q = np.asarray(q, dtype=float)
    if not (np.all(q >= 0) and np.all(q <= 1)):
        raise ValueError("Quantiles must be in the range [0, 1]")
    merged, kept = _axes_last(_float(asvar_or_array(a)), axis)
    n = shape_of(merged)[-1]
    virtual = (n - 1) * q
    before = np.floor(virtual)
    above = virtual >= n - 1
    before = np.where(above, n - 1, before).astype(np.int64)
    after = np.where(above, n - 1, before + 1).astype(np.int64)
    gamma = virtual - np.where(above, -1, before)  # as NumPy's (it cancels when before == after)
    s = sort(merged, axis=-1)
    lo, hi = st.gather(s, before, _ndim(s) - 1), st.gather(s, after, _ndim(s) - 1)
    rest = _ndim(s) - 1
    perm = tuple(range(rest, rest + q.ndim)) + tuple(range(rest))
    lo, hi = st.transpose(lo, perm), st.transpose(hi, perm)
    t = gamma.reshape(q.shape + (1,) * rest)
    diff_ = ew.sub(hi, lo)
    result = ew.select(t >= 0.5, ew.sub(hi, ew.mul(diff_, 1 - t)), ew.add(lo, ew.mul(diff_, t)))
    result = _nan_if_any_nan(result, _take_last(s, [n - 1])[..., 0])
    return st.reshape(result, q.shape + kept) if keepdims else result


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None, interpolation=None):
    if _is_var(q):
        raise NotImplementedError("np.percentile with traced q is not supported; q must be known")
    q = np.true_divide(q, 100)
    if not (np.all(q >= 0) and np.all(q <= 1)):
        raise ValueError("Percentiles must be in the range [0, 100]")
    return quantile(a, q, axis, out, overwrite_input, method, keepdims, weights=weights,
                    interpolation=interpolation)


def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    a = _float(asvar_or_array(a))
    if weights is None:
        avg = mean(a, axis, keepdims=keepdims)
        scale_ = float(_reduced_size(a, axis))
    else:
        w = asvar_or_array(weights)
        if shape_of(w) != shape_of(a):
            w = _weights_along(w, a, axis)
        scale_ = sum(w, axis, keepdims=keepdims)
        if not _is_var(scale_) and np.any(scale_ == 0.0):
            raise ZeroDivisionError("Weights sum to zero, can't be normalized")
        avg = ew.div(sum(ew.mul(a, w), axis, keepdims=keepdims), scale_)
    if returned:
        return avg, st.broadcast_to(asvar_or_array(scale_), shape_of(avg))
    return avg


def _weights_along(w, a, axis):
    """1-D weights laid along ``axis`` of ``a`` (NumPy's rule when the shapes differ)."""
    if axis is None:
        raise TypeError("Axis must be specified when shapes of a and weights differ.")
    if isinstance(axis, (tuple, list)):
        raise NotImplementedError("np.average with a tuple axis needs weights of a's shape")
    if _ndim(w) != 1:
        raise TypeError("1D weights expected when shapes of a and weights differ.")
    axis = _normalize_axis(axis, _ndim(a))
    if shape_of(w)[0] != shape_of(a)[axis]:
        raise ValueError("Length of weights not compatible with specified axis.")
    place = [1] * _ndim(a)
    place[axis] = shape_of(w)[0]
    return st.broadcast_to(st.reshape(w, tuple(place)), shape_of(a))


# ---- NaN-skipping reductions (a value-dependent mask, computed elementwise) -----------------

def _not_nan(a):
    return ew.eq_p(a, a)


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    a = asvar_or_array(a)
    if np.dtype(a.dtype).kind == "f":
        a = ew.select(_not_nan(a), a, 0.0)
    return sum(a, axis, dtype, out, keepdims, initial, where)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    a = asvar_or_array(a)
    keep = _not_nan(a)
    if where is not None:
        keep = ew.logical_and_p(keep, where if _is_var(where) else np.asarray(where, dtype=bool))
    return mean(a, axis, dtype, out, keepdims, where=keep)


# ---- splitting and joining -----------------------------------------------------------------

def array_split(ary, indices_or_sections, axis=0):
    ary = asvar_or_array(ary)
    axis = _normalize_axis(axis, _ndim(ary))
    n = shape_of(ary)[axis]
    if np.ndim(indices_or_sections) == 0:
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.")
        each, extra = divmod(n, sections)
        sizes = [0] + extra * [each + 1] + (sections - extra) * [each]
        points = np.cumsum(sizes).tolist()
    else:
        points = [0] + list(indices_or_sections) + [n]
    lead = (slice(None),) * axis
    return [getitem(ary, lead + (slice(int(lo), int(hi)),)) for lo, hi in zip(points, points[1:])]


def split(ary, indices_or_sections, axis=0):
    if np.ndim(indices_or_sections) == 0:
        n = shape_of(ary)[_normalize_axis(axis, _ndim(ary))]
        if n % int(indices_or_sections):
            raise ValueError("array split does not result in an equal division")
    return array_split(ary, indices_or_sections, axis)


def hsplit(ary, indices_or_sections):
    if _ndim(ary) == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(ary, indices_or_sections, 1 if _ndim(ary) > 1 else 0)


def vsplit(ary, indices_or_sections):
    if _ndim(ary) < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(ary, indices_or_sections, 0)


def dsplit(ary, indices_or_sections):
    if _ndim(ary) < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(ary, indices_or_sections, 2)


def column_stack(tup):
    arrays = [array(a) for a in tup]
    arrays = [st.reshape(a, (_size(a), 1)) if _ndim(a) < 2 else a for a in arrays]
    return concatenate(arrays, 1)


def _size(a) -> int:
    return int(np.prod(shape_of(a), dtype=np.int64))


def append(arr, values, axis=None):
    arr, values = array(arr), array(values)
    if axis is None:
        arr = ravel(arr) if _ndim(arr) != 1 else arr
        values, axis = ravel(values), _ndim(arr) - 1
    return concatenate((arr, values), axis=axis)


def _one_or_tuple(results):
    return results[0] if len(results) == 1 else tuple(results)


def atleast_1d(*arys):
    return _one_or_tuple([reshape(a, (1,)) if _ndim(a) == 0 else asvar_or_array(a) for a in arys])


def atleast_2d(*arys):
    out = []
    for a in arys:
        a = asvar_or_array(a)
        out.append(st.reshape(a, (1,) * (2 - _ndim(a)) + shape_of(a)) if _ndim(a) < 2 else a)
    return _one_or_tuple(out)


def atleast_3d(*arys):
    out = []
    for a in arys:
        a = asvar_or_array(a)
        shape = shape_of(a)
        new = {0: (1, 1, 1), 1: (1,) + shape + (1,), 2: shape + (1,)}.get(len(shape), shape)
        out.append(st.reshape(a, new))
    return _one_or_tuple(out)


def flipud(m):
    if _ndim(m) < 1:
        raise ValueError("Input must be >= 1-d.")
    return flip(m, 0)


def fliplr(m):
    if _ndim(m) < 2:
        raise ValueError("Input must be >= 2-d.")
    return flip(m, 1)


def rot90(m, k=1, axes=(0, 1)):
    axes = tuple(axes)
    ndim = _ndim(m)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == ndim:
        raise ValueError("Axes must be different.")
    if not all(-ndim <= ax < ndim for ax in axes):
        raise ValueError(f"Axes={axes} out of range for array of ndim={ndim}.")
    k %= 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, axes[0]), axes[1])
    perm = list(range(ndim))
    perm[axes[0]], perm[axes[1]] = perm[axes[1]], perm[axes[0]]
    if k == 1:
        return st.transpose(flip(m, axes[1]), perm)
    return flip(st.transpose(m, perm), axes[1])


# ---- grids and differences -------------------------------------------------------------------

def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
    """``np.linspace`` with traced end points: ``start + i * step``, ``stop`` placed last."""
    if device not in (None, "cpu"):
        raise ValueError(f"Device not understood. Only \"cpu\" is allowed, but received: {device}")
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    if dtype is not None and np.dtype(dtype) != np.float64:
        raise NotImplementedError("newtonad's np.linspace computes in float64 only (dtype=)")
    div_ = (num - 1) if endpoint else num
    start, stop = _float(asvar_or_array(start)), _float(asvar_or_array(stop))
    delta = ew.sub(stop, start)
    y = np.arange(0, num, dtype=float).reshape((-1,) + (1,) * _ndim(delta))
    if div_ > 0:
        step = ew.div(delta, float(div_))
        y = ew.mul(y, step)
    else:
        step = np.nan
        y = ew.mul(y, delta)
    y = ew.add(y, start)
    if endpoint and num > 1:
        last = st.broadcast_to(stop, (1,) + shape_of(y)[1:])
        y = st.concatenate([getitem(y, slice(0, num - 1)), last], 0)
    if axis != 0:
        y = moveaxis(y, 0, axis)
    return (y, step) if retstep else y


def gradient(f, *varargs, axis=None, edge_order=1):
    """``np.gradient`` with scalar spacings (uniform grids); one array per axis."""
    f = _float(asvar_or_array(f))
    ndim = _ndim(f)
    axes = tuple(range(ndim)) if axis is None else tuple(
        _normalize_axis(a, ndim) for a in np.atleast_1d(axis))
    if len(set(axes)) != len(axes):
        raise ValueError("repeated axis")
    if not varargs:
        spacings = [1.0] * len(axes)
    elif len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        spacings = list(varargs) * len(axes)
    elif len(varargs) == len(axes):
        spacings = list(varargs)
    else:
        raise TypeError("invalid number of arguments")
    if builtins.any(np.ndim(h) != 0 for h in spacings):
        raise NotImplementedError("np.gradient with coordinate arrays as spacing is not "
                                  "supported; pass scalar spacings (a uniform grid)")
    if edge_order > 2:
        raise ValueError("'edge_order' greater than 2 not supported")
    return _one_or_tuple([_gradient_along(f, ax, h, edge_order) for ax, h in zip(axes, spacings)])


def _gradient_along(f, axis, h, edge_order):
    n = shape_of(f)[axis]
    if n < edge_order + 1:
        raise ValueError("Shape of array too small to calculate a numerical gradient, at "
                         "least (edge_order + 1) elements are required.")

    def part(lo, hi):
        return _take_range(f, axis, lo, hi)

    inner_ = ew.div(ew.sub(part(2, n), part(0, n - 2)), ew.mul(2.0, h))
    if edge_order == 1:
        first = ew.div(ew.sub(part(1, 2), part(0, 1)), h)
        last = ew.div(ew.sub(part(n - 1, n), part(n - 2, n - 1)), h)
    else:
        first = ew.add(ew.add(ew.mul(ew.div(-1.5, h), part(0, 1)), ew.mul(ew.div(2.0, h), part(1, 2))),
                       ew.mul(ew.div(-0.5, h), part(2, 3)))
        last = ew.add(ew.add(ew.mul(ew.div(0.5, h), part(n - 3, n - 2)),
                             ew.mul(ew.div(-2.0, h), part(n - 2, n - 1))),
                      ew.mul(ew.div(1.5, h), part(n - 1, n)))
    return st.concatenate([first, inner_, last], axis)


# ---- np.fft: the real permutations; complex transforms are out of scope -------------------

def _shift_amounts(x, axes, sign):
    shape = shape_of(x)
    if axes is None:
        axes = tuple(range(len(shape)))
    if isinstance(axes, (int, np.integer)):
        return sign * (shape[axes] // 2), axes
    return [sign * (shape[ax] // 2) for ax in axes], tuple(axes)


def fftshift(x, axes=None):
    shift, axes = _shift_amounts(asvar_or_array(x), axes, 1)
    return roll(x, shift, axes)


def ifftshift(x, axes=None):
    shift, axes = _shift_amounts(asvar_or_array(x), axes, -1)
    return roll(x, shift, axes)


def _complex_out_of_scope(name):
    def refuse(*args, **kwargs):
        raise NotImplementedError(f"numpy.fft.{name} has complex values, which are out of scope "
                                  "in newtonad (real float64 derivatives only); fftshift and "
                                  "ifftshift are supported")
    refuse.__name__ = name
    return refuse


_FFT_COMPLEX = ["fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn",
                "ifftn", "rfftn", "irfftn", "hfft", "ihfft"]


# ---- real values seen as complex numbers, and a few rearrangements ---------------------------

def real(val):
    """``np.real`` of a real array: the array itself."""
    return val


def imag(val):
    """``np.imag`` of a real array: zeros (no dependence on ``val``)."""
    return zeros_like(val, dtype=np.float64)


def conjugate(x):
    """``np.conjugate`` of a real array: the array itself."""
    return x


def angle(z, deg=False):
    """``np.angle`` of a real array: 0 or pi (180), piecewise constant."""
    half_turn = 180.0 if deg else math.pi
    return where(less(z, 0.0), half_turn, ew.mul(_float(z), 0.0))


def rollaxis(a, axis, start=0):
    """``np.rollaxis``: ``axis`` moved to before ``start`` (NumPy's legacy rule)."""
    n = _ndim(a)
    axis = _normalize_axis(axis, n)
    if not -n <= start <= n:
        raise np.exceptions.AxisError(f"start arg requires {-n} <= start < {n + 1} but {start} "
                                      "was passed in")
    start = start + n if start < 0 else start
    if axis < start:
        start -= 1
    return moveaxis(a, axis, start) if axis != start else a


def select(condlist, choicelist, default=0):
    """``np.select``: the first choice whose condition holds, elementwise, else ``default``."""
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    out = default
    for condition, choice in reversed(list(zip(condlist, choicelist))):
        out = where(condition, choice, out)
    return out


# ---- dispatch tables ----------------------------------------------------------------------

for _name in ["add", "subtract", "multiply", "negative", "positive", "true_divide", "power",
              "exp", "log", "log1p", "expm1", "sqrt", "square", "reciprocal", "sin", "cos",
              "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "absolute", "sign",
              "floor", "ceil", "arctan2", "less", "less_equal", "greater", "greater_equal",
              "equal", "not_equal", "logical_and", "logical_or", "logical_not", "maximum",
              "minimum", "log2", "log10", "exp2", "hypot", "logaddexp"]:
    UFUNCS[_name] = globals()[_name]
UFUNCS["divide"] = true_divide
UFUNCS["matmul"] = matmul  # a gufunc in NumPy 2
UFUNCS["fabs"] = absolute
UFUNCS["fmax"] = maximum
UFUNCS["fmin"] = minimum
UFUNCS["conjugate"] = conjugate

# ufunc.reduce on a Var (np.add.reduce, np.maximum.reduce, …)
UFUNC_REDUCE = {"add": sum, "multiply": prod, "maximum": max, "minimum": min}
dispatch.UFUNC_REDUCE.update(UFUNC_REDUCE)

_np_functions = {
    np.sum: sum, np.prod: prod, np.max: max, np.amax: max, np.min: min, np.amin: min,
    np.mean: mean, np.var: var, np.std: std, np.cumsum: cumsum, np.diff: diff,
    np.dot: dot, np.matmul: matmul, np.vdot: vdot, np.inner: inner, np.outer: outer,
    np.einsum: einsum, np.tensordot: tensordot, np.trace: trace, np.diagonal: diagonal,
    np.diag: diag, np.linalg.norm: norm,
    np.reshape: reshape, np.ravel: ravel, np.transpose: transpose, np.swapaxes: swapaxes,
    np.moveaxis: moveaxis, np.expand_dims: expand_dims, np.squeeze: squeeze,
    np.broadcast_to: broadcast_to, np.atleast_1d: atleast_1d, np.atleast_2d: atleast_2d,
    np.concatenate: concatenate, np.stack: stack, np.hstack: hstack, np.vstack: vstack,
    np.flip: flip, np.roll: roll, np.tile: tile, np.repeat: repeat, np.pad: pad,
    np.take: take, np.where: where, np.clip: clip, np.zeros_like: zeros_like,
    np.ones_like: ones_like, np.full_like: full_like, np.empty_like: zeros_like,
    np.copy: copy, np.shape: shape_of, np.ndim: _ndim, np.size: lambda a, axis=None: (
        int(np.prod(shape_of(a))) if axis is None else shape_of(a)[axis]),
    np.result_type: lambda *args: np.result_type(*[a.dtype if _is_var(a) else a for a in args]),
}
if hasattr(np, "concat"):
    _np_functions[np.concat] = concatenate
if hasattr(np, "permute_dims"):
    _np_functions[np.permute_dims] = transpose
FUNCTIONS.update(_np_functions)

# The NumPy surface of issue 11 (sorting, order statistics, splitting, grids, fft shifts).
FUNCTIONS.update({
    np.cumprod: cumprod, np.sort: sort, np.argsort: argsort, np.partition: partition,
    np.argpartition: argpartition, np.argmax: argmax, np.argmin: argmin,
    np.take_along_axis: take_along_axis, np.median: median, np.quantile: quantile,
    np.percentile: percentile, np.average: average, np.nansum: nansum, np.nanmean: nanmean,
    np.split: split, np.array_split: array_split, np.hsplit: hsplit, np.vsplit: vsplit,
    np.dsplit: dsplit, np.column_stack: column_stack, np.append: append,
    np.atleast_3d: atleast_3d, np.flipud: flipud, np.fliplr: fliplr, np.rot90: rot90,
    np.linspace: linspace, np.gradient: gradient, np.fft.fftshift: fftshift,
    np.fft.ifftshift: ifftshift, np.real: real, np.imag: imag, np.angle: angle,
    np.rollaxis: rollaxis, np.select: select,
    **{getattr(np.fft, name): _complex_out_of_scope(name) for name in _FFT_COMPLEX},
})
dispatch.UFUNCS.update(UFUNCS)
dispatch.FUNCTIONS.update(FUNCTIONS)
