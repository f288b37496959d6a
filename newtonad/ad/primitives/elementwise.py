"""Elementwise primitives: arithmetic, transcendental functions, comparisons, select.

Binary primitives broadcast like NumPy. In jvp rules a primal ``x`` of shape ``s``
meets a tangent frame of shape ``s + (k,)``; ``lift(frame, x)`` reshapes it to
``s + (1,)`` so that NumPy broadcasting lines the frame columns up (see
``structural.lift``).

Recompute weights (``weight=``, see :mod:`newtonad.ad.remat`), in bytes of a load
stream per element, as measured in a fused numba loop: 1 for cheap arithmetic,
comparisons and selects, 8 for division and square root, 128 for transcendental
functions; the special functions elsewhere are not recomputed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..program import Slot
from ..var import Var
from .core import Algebra, Frame, Primitive, is_undef
from .structural import lift, unbroadcast

# ---- shape rules --------------------------------------------------------------------

def broadcast_shape(*avals: Slot, dtype: str | None = None) -> Slot:
    shape = np.broadcast_shapes(*(a.shape for a in avals))
    if dtype is None:
        dtype = np.result_type(*(np.dtype(a.dtype) for a in avals)).name
    return Slot(tuple(shape), dtype)


def float_shape(*avals: Slot) -> Slot:
    """Shape rule of transcendental functions: ints are promoted to float64."""
    out = broadcast_shape(*avals)
    return out if np.dtype(out.dtype).kind == "f" else Slot(out.shape, "float64")


def bool_shape(*avals: Slot) -> Slot:
    return broadcast_shape(*avals, dtype="bool")


# ---- helpers used by the rules ------------------------------------------------------

def add_any(a: Any, b: Any) -> Any:
    """Add two tangents, either of which may be a symbolic zero (``None``)."""
    if a is None:
        return b
    if b is None:
        return a
    return add(a, b)


def scale(frame: Frame, t: Any, factor: Any) -> Any:
    """A tangent frame times a primal factor; ``None`` stays ``None``."""
    return None if t is None else mul(t, lift(frame, factor))


def _linear_binary_transpose(ct: Any, x: Any, y: Any, *, sign: float) -> list[Any]:
    out = []
    for arg, s in ((x, 1.0), (y, sign)):
        if is_undef(arg):
            c = ct if s == 1.0 else neg(ct)
            out.append(unbroadcast(c, arg.shape))
        else:
            raise ValueError("add/sub in a linear program with a non-linear operand "
                             "is affine, not linear")
    return out


# ---- unary primitives ---------------------------------------------------------------

def _unary(name: str, fn, deriv=None, *, shape=float_shape, weight: int = 1) -> Primitive:
    """An elementwise unary primitive whose jvp is ``t * deriv(x, out)``.

    ``deriv=None`` marks a piecewise-constant function (zero tangent).
    """
    def jvp(frame, primals, tangents, out):
        if deriv is None:
            return None
        return scale(frame, tangents[0], deriv(primals[0], out))

    return Primitive(name, impl=lambda x: fn(x), shape=shape, jvp=jvp, weight=weight)


def _same_shape(x: Slot) -> Slot:
    return x


neg_p = Primitive("neg", impl=np.negative, shape=_same_shape,
                  jvp=lambda frame, p, t, out: neg(t[0]),
                  transpose=lambda ct, x: [neg(ct)], weight=1,
                  algebra=Algebra(involution=True,
                                  scaling=lambda unknown, args: (0, -1.0)))

exp_p = _unary("exp", np.exp, lambda x, y: y, weight=128)
log_p = _unary("log", np.log, lambda x, y: reciprocal(x), weight=128)
log1p_p = _unary("log1p", np.log1p, lambda x, y: reciprocal(add(x, 1.0)), weight=128)
expm1_p = _unary("expm1", np.expm1, lambda x, y: add(y, 1.0), weight=128)
sqrt_p = _unary("sqrt", np.sqrt, lambda x, y: div(0.5, y), weight=8)
sin_p = _unary("sin", np.sin, lambda x, y: cos(x), weight=128)
cos_p = _unary("cos", np.cos, lambda x, y: neg(sin(x)), weight=128)
tan_p = _unary("tan", np.tan, lambda x, y: add(1.0, square(y)), weight=128)
arcsin_p = _unary("arcsin", np.arcsin, lambda x, y: reciprocal(sqrt(sub(1.0, square(x)))),
                  weight=128)
arccos_p = _unary("arccos", np.arccos,
                  lambda x, y: neg(reciprocal(sqrt(sub(1.0, square(x))))), weight=128)
arctan_p = _unary("arctan", np.arctan, lambda x, y: reciprocal(add(1.0, square(x))),
                  weight=128)
sinh_p = _unary("sinh", np.sinh, lambda x, y: cosh(x), weight=128)
cosh_p = _unary("cosh", np.cosh, lambda x, y: sinh(x), weight=128)
tanh_p = _unary("tanh", np.tanh, lambda x, y: sub(1.0, square(y)), weight=128)
square_p = _unary("square", np.square, lambda x, y: mul(2.0, x), shape=_same_shape)
reciprocal_p = _unary("reciprocal", lambda x: np.reciprocal(np.asarray(x, dtype=float)),
                      lambda x, y: neg(square(y)), weight=8)
abs_p = _unary("abs", np.abs, lambda x, y: sign(x), shape=_same_shape)
sign_p = _unary("sign", np.sign, shape=_same_shape)
floor_p = _unary("floor", np.floor, shape=_same_shape)
ceil_p = _unary("ceil", np.ceil, shape=_same_shape)
stop_gradient_p = Primitive("stop_gradient", impl=lambda x: x, shape=_same_shape,
                            jvp=lambda frame, p, t, out: None, weight=0,
                            sparsity=lambda in_avals, out_aval, consts: [None])
logical_not_p = _unary("logical_not", np.logical_not, shape=bool_shape)


def _integer_pow_jvp(frame, primals, tangents, out, *, n):
    (x,), (t,) = primals, tangents
    if n == 0:
        return None
    if n == 1:
        return t
    return scale(frame, t, mul(float(n), x if n == 2 else integer_pow(x, n=n - 1)))


integer_pow_p = Primitive(
    "integer_pow", impl=lambda x, *, n: np.power(np.asarray(x, dtype=float), n),
    shape=lambda x, *, n: float_shape(x), jvp=_integer_pow_jvp, weight=1)


# ---- binary primitives --------------------------------------------------------------

add_p = Primitive("add", impl=np.add, shape=broadcast_shape,
                  jvp=lambda frame, p, t, out: add_any(t[0], t[1]),
                  transpose=lambda ct, x, y: _linear_binary_transpose(ct, x, y, sign=1.0),
                  linear_in=(0, 1), weight=1,
                  algebra=Algebra(left_identity=0.0, right_identity=0.0, scalar_operands=True))
sub_p = Primitive("sub", impl=np.subtract, shape=broadcast_shape,
                  jvp=lambda frame, p, t, out: add_any(t[0], None if t[1] is None else neg(t[1])),
                  transpose=lambda ct, x, y: _linear_binary_transpose(ct, x, y, sign=-1.0),
                  linear_in=(0, 1), weight=1,
                  algebra=Algebra(right_identity=0.0, scalar_operands=True))


def _mul_transpose(ct, x, y):
    # Bilinear: exactly one operand may be linear (autodidax's check).
    if is_undef(x) == is_undef(y):
        raise ValueError("mul in a linear program needs exactly one linear operand")
    if is_undef(x):
        return [unbroadcast(mul(ct, y), x.shape), None]
    return [None, unbroadcast(mul(x, ct), y.shape)]


def _mul_scaling(unknown, args):
    """``u * k`` or ``k * u`` with ``u`` unknown and ``k`` known: a scaling of ``u`` by ``k``."""
    if unknown[0] != unknown[1]:
        return (0, args[1]) if unknown[0] else (1, args[0])
    return None


def _mul_sparsity(in_avals, out_aval, consts):
    """Elementwise, except that an output entry times a constant zero depends on nothing
    (a term switched off by a zero coefficient, as in the Dixon-Maany problems)."""
    zero = np.zeros(out_aval.shape, dtype=bool)
    for value in consts:
        if value is not None:
            zero |= np.broadcast_to(np.asarray(value) == 0, out_aval.shape)
    live = np.flatnonzero(~zero.ravel())
    maps = []
    for aval in in_avals:
        if np.dtype(aval.dtype).kind not in "fc":
            maps.append(None)
            continue
        source = np.broadcast_to(np.arange(aval.size).reshape(aval.shape), out_aval.shape)
        maps.append((live, source.ravel()[live]))
    return maps


mul_p = Primitive("mul", impl=np.multiply, shape=broadcast_shape,
                  jvp=lambda frame, p, t, out: add_any(scale(frame, t[0], p[1]),
                                                       scale(frame, t[1], p[0])),
                  transpose=_mul_transpose, linear_in=(0, 1), weight=1,
                  algebra=Algebra(left_identity=1.0, right_identity=1.0, scalar_operands=True,
                                  scaling=_mul_scaling),
                  sparsity=_mul_sparsity)


def _div_jvp(frame, primals, tangents, out):
    (_, y), (tx, ty) = primals, tangents
    dx = None if tx is None else div(tx, lift(frame, y))
    dy = None if ty is None else neg(scale(frame, ty, div(out, y)))
    return add_any(dx, dy)


def _div_transpose(ct, x, y):
    if not is_undef(x) or is_undef(y):
        raise ValueError("div in a linear program must be linear in its numerator only")
    return [unbroadcast(div(ct, y), x.shape), None]


def _true_divide(x, y):
    return np.true_divide(x, y)


def _div_scaling(unknown, args):
    """``u / k`` with ``u`` unknown and ``k`` known: a scaling of ``u`` by ``1 / k``."""
    return (0, div(1.0, args[1])) if unknown[0] and not unknown[1] else None


div_p = Primitive("div", impl=_true_divide, shape=float_shape, jvp=_div_jvp,
                  transpose=_div_transpose, weight=8,
                  algebra=Algebra(right_identity=1.0, scalar_operands=True, scaling=_div_scaling))


def _pow_jvp(frame, primals, tangents, out):
    (x, y), (tx, ty) = primals, tangents
    dx = None if tx is None else scale(frame, tx, mul(y, pow(x, sub(y, 1.0))))
    dy = None
    if ty is not None:
        # d/dy x**y = log(x) x**y, taken as 0 where x == 0 (the limit along y > 0).
        zero = eq(x, 0.0)
        safe_log = select(zero, 0.0, log(select(zero, 1.0, x)))
        dy = scale(frame, ty, mul(safe_log, out))
    return add_any(dx, dy)


pow_p = Primitive("pow", impl=lambda x, y: np.power(np.asarray(x, dtype=float), y),
                  shape=float_shape, jvp=_pow_jvp, weight=128,
                  algebra=Algebra(scalar_operands=True))


def _minmax_jvp(frame, primals, tangents, out, *, wins):
    (x, y), (tx, ty) = primals, tangents
    # Weight of x: 1 where it wins, 1/2 on ties (as JAX does), 0 elsewhere.
    w = add(convert(wins(x, y), dtype="float64"), mul(0.5, convert(eq(x, y), dtype="float64")))
    return add_any(scale(frame, tx, w), scale(frame, ty, sub(1.0, w)))


maximum_p = Primitive("maximum", impl=np.maximum, shape=broadcast_shape,
                      jvp=lambda frame, p, t, out: _minmax_jvp(frame, p, t, out, wins=gt),
                      weight=1, algebra=Algebra(scalar_operands=True))
minimum_p = Primitive("minimum", impl=np.minimum, shape=broadcast_shape,
                      jvp=lambda frame, p, t, out: _minmax_jvp(frame, p, t, out, wins=lt),
                      weight=1, algebra=Algebra(scalar_operands=True))


def _arctan2_jvp(frame, primals, tangents, out):
    (y, x), (ty, tx) = primals, tangents
    r2 = add(square(x), square(y))
    return add_any(scale(frame, ty, div(x, r2)), scale(frame, tx, neg(div(y, r2))))


arctan2_p = Primitive("arctan2", impl=np.arctan2, shape=float_shape, jvp=_arctan2_jvp,
                      weight=128, algebra=Algebra(scalar_operands=True))


def _comparison(name: str, fn) -> Primitive:
    return Primitive(name, impl=fn, shape=bool_shape, jvp=lambda frame, p, t, out: None,
                     weight=1)


lt_p = _comparison("lt", np.less)
le_p = _comparison("le", np.less_equal)
gt_p = _comparison("gt", np.greater)
ge_p = _comparison("ge", np.greater_equal)
eq_p = _comparison("eq", np.equal)
ne_p = _comparison("ne", np.not_equal)
logical_and_p = _comparison("logical_and", np.logical_and)
logical_or_p = _comparison("logical_or", np.logical_or)


# ---- select and convert ---------------------------------------------------------------

def _select_shape(c: Slot, a: Slot, b: Slot) -> Slot:
    if c.dtype != "bool":
        raise TypeError(f"select needs a boolean condition, got {c.dtype}")
    out = broadcast_shape(a, b)
    return Slot(tuple(np.broadcast_shapes(c.shape, out.shape)), out.dtype)


def _select_jvp(frame, primals, tangents, out):
    c = primals[0]
    _, ta, tb = tangents
    if ta is None and tb is None:
        return None
    return select(lift(frame, c), 0.0 if ta is None else ta, 0.0 if tb is None else tb)


def _select_transpose(ct, c, a, b):
    if is_undef(c):
        raise ValueError("select is not linear in its condition")
    cts = [None]
    for branch, keep in ((a, True), (b, False)):
        if is_undef(branch):
            picked = select(c, ct, 0.0) if keep else select(c, 0.0, ct)
            cts.append(unbroadcast(picked, branch.shape))
        else:
            if not _is_zero_const(branch):
                raise ValueError("select in a linear program with a non-zero known branch "
                                 "is affine, not linear")
            cts.append(None)
    return cts


def _is_zero_const(x: Any) -> bool:
    value = x.value if isinstance(x, Var) and x.const else x
    return value is not None and not isinstance(value, Var) and np.all(np.asarray(value) == 0)


select_p = Primitive("select", impl=np.where, shape=_select_shape, jvp=_select_jvp,
                     transpose=_select_transpose, linear_in=(1, 2), weight=1)


def _convert_impl(x, *, dtype):
    return np.asarray(x).astype(dtype)


def _convert_jvp(frame, primals, tangents, out, *, dtype):
    t = tangents[0]
    if t is None or np.dtype(dtype).kind != "f":
        return None
    return convert(t, dtype=dtype)


def _convert_transpose(ct, x, *, dtype):
    return [convert(ct, dtype=x.aval.dtype)]


convert_p = Primitive("convert", impl=_convert_impl,
                      shape=lambda x, *, dtype: Slot(x.shape, dtype),
                      jvp=_convert_jvp, transpose=_convert_transpose, weight=1,
                      algebra=Algebra(noop_same_dtype=True))


# ---- ops: the functions rules and the numpy layer call --------------------------------

def neg(x): return neg_p(x)
def exp(x): return exp_p(x)
def log(x): return log_p(x)
def sin(x): return sin_p(x)
def cos(x): return cos_p(x)
def sinh(x): return sinh_p(x)
def cosh(x): return cosh_p(x)
def sqrt(x): return sqrt_p(x)
def square(x): return square_p(x)
def reciprocal(x): return reciprocal_p(x)
def sign(x): return sign_p(x)
def add(x, y): return add_p(x, y)
def sub(x, y): return sub_p(x, y)
def mul(x, y): return mul_p(x, y)
def div(x, y): return div_p(x, y)
def pow(x, y): return pow_p(x, y)
def integer_pow(x, *, n): return integer_pow_p(x, n=n)
def eq(x, y): return eq_p(x, y)
def lt(x, y): return lt_p(x, y)
def gt(x, y): return gt_p(x, y)
def select(c, a, b): return select_p(c, a, b)
def convert(x, *, dtype): return convert_p(x, dtype=dtype)
def stop_gradient(x): return stop_gradient_p(x)
