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

from .numpy_base import check_unsupported, is_var, to_float
from .numpy_shapes import ones_like, zeros_like
from .primitives import elementwise as ew
from .primitives.special import hypot as _scaled_hypot


# ---- ufuncs ------------------------------------------------------------------------------

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
def reciprocal(x): return ew.reciprocal_p(to_float(x))
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


def logaddexp(x, y):
    m = stop_gradient(maximum(x, y))
    return ew.add(m, log(ew.add(exp(ew.sub(x, m)), exp(ew.sub(y, m)))))


# ---- choosing entry by entry -------------------------------------------------------------

def where(condition, x=None, y=None):
    if x is None or y is None:
        raise NotImplementedError("np.where(condition) with one argument returns indices whose "
                                  "number depends on values; it cannot be traced. Use "
                                  "np.where(condition, a, b).")
    if not is_var(condition):
        condition = np.asarray(condition, dtype=bool)
    elif condition.dtype != np.bool_:
        condition = ew.ne_p(condition, 0)
    return ew.select(condition, x, y)


_UNSET = object()


def clip(a, a_min=_UNSET, a_max=_UNSET, out=None, *, min=_UNSET, max=_UNSET, **kwargs):
    """NumPy 2's ``clip``: bounds as ``a_min, a_max`` (both) or as ``min=`` / ``max=``."""
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


def select(condlist, choicelist, default=0):
    """``np.select``: the first choice whose condition holds, elementwise, else ``default``."""
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    out = default
    for condition, choice in reversed(list(zip(condlist, choicelist))):
        out = where(condition, choice, out)
    return out


# ---- real values seen as complex numbers -------------------------------------------------

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
    return where(less(z, 0.0), half_turn, ew.mul(to_float(z), 0.0))
