"""NumPy's ufuncs and other elementwise functions on traced arrays.

Most are one elementwise primitive (``np.sin`` is ``sin_p``); a few are short
compositions written stably (``logaddexp``, ``hypot``) or pick a cheaper primitive
(``power`` with an integer exponent is ``integer_pow``). ``where``, ``clip`` and
``select`` choose between arrays entry by entry; ``real``, ``imag``, ``conjugate`` and
``angle`` treat real arrays as complex numbers with imaginary part 0.
"""

from __future__ import annotations

import math

import numpy as np

from .dispatch import numpy_function
from .numpy_base import check_unsupported, is_var, to_float
from .numpy_shapes import ones_like, zeros_like
from .primitives import elementwise as ew
from .primitives.special import hypot as _scaled_hypot

# ---- ufuncs ------------------------------------------------------------------------------

# Functions, not the primitives themselves, so each has its own docstring.

@numpy_function(np.add)
def add(x, y):
    """Traced version of numpy.add."""
    return ew.add(x, y)


@numpy_function(np.subtract)
def subtract(x, y):
    """Traced version of numpy.subtract."""
    return ew.sub(x, y)


@numpy_function(np.multiply)
def multiply(x, y):
    """Traced version of numpy.multiply."""
    return ew.mul(x, y)


@numpy_function(np.maximum, np.fmax)
def maximum(x, y):
    """Traced version of numpy.maximum."""
    return ew.maximum_p(x, y)


@numpy_function(np.minimum, np.fmin)
def minimum(x, y):
    """Traced version of numpy.minimum."""
    return ew.minimum_p(x, y)


@numpy_function(np.negative)
def negative(x):
    """Traced version of numpy.negative."""
    return ew.neg(x)


@numpy_function(np.positive)
def positive(x):
    """Traced version of numpy.positive."""
    return x


@numpy_function(np.divide, ufunc="true_divide", name=("true_divide", "divide"))
def true_divide(x, y):
    """Traced version of numpy.true_divide."""
    return ew.div(x, y)


@numpy_function(np.exp)
def exp(x):
    """Traced version of numpy.exp."""
    return ew.exp_p(x)


@numpy_function(np.log)
def log(x):
    """Traced version of numpy.log."""
    return ew.log_p(x)


@numpy_function(np.log1p)
def log1p(x):
    """Traced version of numpy.log1p."""
    return ew.log1p_p(x)


@numpy_function(np.expm1)
def expm1(x):
    """Traced version of numpy.expm1."""
    return ew.expm1_p(x)


@numpy_function(np.sqrt)
def sqrt(x):
    """Traced version of numpy.sqrt."""
    return ew.sqrt_p(x)


@numpy_function(np.square)
def square(x):
    """Traced version of numpy.square."""
    return ew.square_p(x)


@numpy_function(np.reciprocal)
def reciprocal(x):
    """Traced version of numpy.reciprocal."""
    return ew.reciprocal_p(to_float(x))


@numpy_function(np.sin)
def sin(x):
    """Traced version of numpy.sin."""
    return ew.sin_p(x)


@numpy_function(np.cos)
def cos(x):
    """Traced version of numpy.cos."""
    return ew.cos_p(x)


@numpy_function(np.tan)
def tan(x):
    """Traced version of numpy.tan."""
    return ew.tan_p(x)


@numpy_function(np.arcsin)
def arcsin(x):
    """Traced version of numpy.arcsin."""
    return ew.arcsin_p(x)


@numpy_function(np.arccos)
def arccos(x):
    """Traced version of numpy.arccos."""
    return ew.arccos_p(x)


@numpy_function(np.arctan)
def arctan(x):
    """Traced version of numpy.arctan."""
    return ew.arctan_p(x)


@numpy_function(np.sinh)
def sinh(x):
    """Traced version of numpy.sinh."""
    return ew.sinh_p(x)


@numpy_function(np.cosh)
def cosh(x):
    """Traced version of numpy.cosh."""
    return ew.cosh_p(x)


@numpy_function(np.tanh)
def tanh(x):
    """Traced version of numpy.tanh."""
    return ew.tanh_p(x)


@numpy_function(np.absolute, np.fabs, name=("absolute", "abs"))
def absolute(x):
    """Traced version of numpy.absolute."""
    return ew.abs_p(x)


@numpy_function(np.sign)
def sign(x):
    """Traced version of numpy.sign."""
    return ew.sign_p(x)


@numpy_function(np.floor)
def floor(x):
    """Traced version of numpy.floor."""
    return ew.floor_p(x)


@numpy_function(np.ceil)
def ceil(x):
    """Traced version of numpy.ceil."""
    return ew.ceil_p(x)


@numpy_function(np.arctan2)
def arctan2(y, x):
    """Traced version of numpy.arctan2."""
    return ew.arctan2_p(y, x)


@numpy_function(np.less)
def less(x, y):
    """Traced version of numpy.less."""
    return ew.lt_p(x, y)


@numpy_function(np.less_equal)
def less_equal(x, y):
    """Traced version of numpy.less_equal."""
    return ew.le_p(x, y)


@numpy_function(np.greater)
def greater(x, y):
    """Traced version of numpy.greater."""
    return ew.gt_p(x, y)


@numpy_function(np.greater_equal)
def greater_equal(x, y):
    """Traced version of numpy.greater_equal."""
    return ew.ge_p(x, y)


@numpy_function(np.equal)
def equal(x, y):
    """Traced version of numpy.equal."""
    return ew.eq_p(x, y)


@numpy_function(np.not_equal)
def not_equal(x, y):
    """Traced version of numpy.not_equal."""
    return ew.ne_p(x, y)


@numpy_function(np.logical_and)
def logical_and(x, y):
    """Traced version of numpy.logical_and."""
    return ew.logical_and_p(x, y)


@numpy_function(np.logical_or)
def logical_or(x, y):
    """Traced version of numpy.logical_or."""
    return ew.logical_or_p(x, y)


@numpy_function(np.logical_not)
def logical_not(x):
    """Traced version of numpy.logical_not."""
    return ew.logical_not_p(x)


@numpy_function(np.log2)
def log2(x):
    """Traced version of numpy.log2."""
    return ew.div(log(x), math.log(2.0))


@numpy_function(np.log10)
def log10(x):
    """Traced version of numpy.log10."""
    return ew.div(log(x), math.log(10.0))


@numpy_function(np.exp2)
def exp2(x):
    """Traced version of numpy.exp2."""
    return exp(ew.mul(x, math.log(2.0)))


@numpy_function(np.hypot)
def hypot(x, y):
    """Traced version of numpy.hypot, computed scaled as NumPy does (no overflow at 1e200)."""
    return _scaled_hypot(x, y)


@numpy_function()
def stop_gradient(x):
    """The value of ``x``, with a zero derivative: differentiation treats it as a constant.

    Parameters
    ----------
    x : array_like or Var
        The value.

    Returns
    -------
    Var or ndarray
        ``x`` unchanged in value; no tangent or cotangent flows through it.

    Examples
    --------
    >>> import numpy as np, newtonad as nad, newtonad.numpy as nnp
    >>> f = lambda x: np.sum(x * nnp.stop_gradient(x))
    >>> nad.grad(f)(np.array([1.0, 2.0]))
    array([1., 2.])
    """
    return ew.stop_gradient(x)


@numpy_function(np.power)
def power(x, y):
    """Traced version of numpy.power.

    Integer exponents become ``integer_pow`` (exact, and defined for x <= 0).
    """
    if not is_var(y):
        y_arr = np.asarray(y)
        if y_arr.shape == () and float(y_arr) == int(y_arr) and abs(int(y_arr)) <= 64:
            n = int(y_arr)
            if n == 1:
                return to_float(x)
            if n == 2:
                return square(to_float(x))
            if n == 0 and is_var(x):
                return ones_like(x)
            return ew.integer_pow(x, n=n)
        if y_arr.shape == () and float(y_arr) == 0.5:
            return sqrt(x)
    return ew.pow(x, y)


@numpy_function(np.logaddexp)
def logaddexp(x, y):
    """Traced version of numpy.logaddexp."""
    m = stop_gradient(maximum(x, y))
    return ew.add(m, log(ew.add(exp(ew.sub(x, m)), exp(ew.sub(y, m)))))


# ---- choosing entry by entry -------------------------------------------------------------

@numpy_function(np.where)
def where(condition, x=None, y=None):
    """Traced version of numpy.where."""
    if x is None or y is None:
        raise NotImplementedError("np.where(condition) with one argument returns indices whose "
                                  "number depends on values; it cannot be traced. Use "
                                  "np.where(condition, a, b).")
    if not is_var(condition):
        condition = np.asarray(condition, dtype=bool)
    elif condition.dtype != np.bool_:
        condition = ew.ne_p(condition, 0)
    return ew.select(condition, x, y)


class _Unset:
    """The default of a parameter not given (``None`` means something for clip's bounds)."""

    def __repr__(self) -> str:  # what signatures show, in help() and the docs
        return "<not given>"


_UNSET = _Unset()


@numpy_function(np.clip, method="clip")
def clip(a, a_min=_UNSET, a_max=_UNSET, out=None, *, min=_UNSET, max=_UNSET, **kwargs):
    """Traced version of numpy.clip (NumPy 2's signature).

    The bounds come as ``a_min, a_max`` (both) or as ``min=`` / ``max=``; ``out`` is not
    supported.
    """
    check_unsupported("clip", out=out, **kwargs)
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


@numpy_function(np.select, name=())
def select(condlist, choicelist, default=0):
    """``np.select``: the first choice whose condition holds, elementwise, else ``default``."""
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    out = default
    for condition, choice in reversed(list(zip(condlist, choicelist))):
        out = where(condition, choice, out)
    return out


# ---- real values seen as complex numbers -------------------------------------------------

@numpy_function(np.real, name=())
def real(val):
    """``np.real`` of a real array: the array itself."""
    return val


@numpy_function(np.imag, name=())
def imag(val):
    """``np.imag`` of a real array: zeros (no dependence on ``val``)."""
    return zeros_like(val, dtype=np.float64)


@numpy_function(np.conjugate, name=())
def conjugate(x):
    """``np.conjugate`` of a real array: the array itself."""
    return x


@numpy_function(np.angle, name=())
def angle(z, deg=False):
    """``np.angle`` of a real array: 0 or pi (180), piecewise constant."""
    half_turn = 180.0 if deg else math.pi
    return where(less(z, 0.0), half_turn, ew.mul(to_float(z), 0.0))
