"""Special and elementwise functions beyond arithmetic: error and gamma functions,
Bessel functions, the logistic function, rounding, remainders and ``hypot``.

Each primitive's ``impl`` is SciPy's or NumPy's own function, so values are exactly
theirs. jvp rules are written with primitives (``digamma`` differentiates to
``polygamma(1, .)``, ``i0e`` to ``i1e`` and ``i0e``), so every rule can be
differentiated again. Primitives that numba cannot evaluate (its ``math`` module has
``erf``, ``erfc`` and ``lgamma``, not ``digamma``, ``erfinv`` or Bessel functions) are
``numpy_only``: a program using them runs on the NumPy reference evaluator.

Stable forms where the textbook formula fails: the derivative of ``log_ndtr`` is
``sqrt(2/pi) / erfcx(-x/sqrt(2))`` (the normal density over its cdf without forming
either, finite for x = -1e5), ``expit``'s is ``expit(x) expit(-x)`` (not
``y (1 - y)``, which is 0 for x > 37), ``arcsinh``'s is ``1 / hypot(x, 1)``.

SciPy is imported on first evaluation, never when newtonad is imported.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ..program import Slot
from .core import Primitive
from .elementwise import (
    add,
    add_any,
    broadcast_shape,
    div,
    eq,
    exp,
    float_shape,
    gt,
    log,
    log1p_p,
    mul,
    neg,
    reciprocal,
    scale,
    select,
    sign,
    sqrt,
    square,
    sub,
)

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI_OVER_TWO = math.sqrt(math.pi) / 2.0
_SQRT_TWO_OVER_PI = math.sqrt(2.0 / math.pi)
_SQRT_HALF = math.sqrt(0.5)


def _scipy(name: str) -> Callable:
    """``scipy.special.<name>``, imported when first called (scipy.special takes ~0.2 s)."""
    def call(*args: Any) -> Any:
        import scipy.special

        return getattr(scipy.special, name)(*args)

    call.__name__ = name
    return call


def _same_shape(x: Slot) -> Slot:
    return x


def _unary(name: str, impl: Callable, deriv: Callable | None, *, shape=float_shape,
           numpy_only: bool = False) -> Primitive:
    """An elementwise unary primitive with jvp ``t * deriv(x, out)`` (None: zero tangent)."""
    def jvp(frame, primals, tangents, out):
        if deriv is None:
            return None
        return scale(frame, tangents[0], deriv(primals[0], out))

    return Primitive(name, impl=impl, shape=shape, jvp=jvp, numpy_only=numpy_only)


def _where_zero(x: Any, at_zero: float, fn: Callable[[Any], Any]) -> Any:
    """``fn(x)`` with its limit ``at_zero`` where x == 0 (fn is evaluated at 1 there)."""
    zero = eq(x, 0.0)
    return select(zero, at_zero, fn(select(zero, 1.0, x)))


# ---- error function family ------------------------------------------------------------

erf_p = _unary("erf", _scipy("erf"), lambda x, y: mul(_TWO_OVER_SQRT_PI, exp(neg(square(x)))))
erfc_p = _unary("erfc", _scipy("erfc"),
                lambda x, y: mul(-_TWO_OVER_SQRT_PI, exp(neg(square(x)))))
erfinv_p = _unary("erfinv", _scipy("erfinv"),
                  lambda x, y: mul(_SQRT_PI_OVER_TWO, exp(square(y))), numpy_only=True)
_ERFCX_SERIES_ABOVE = 50.0


def _erfcx_deriv(x: Any, y: Any) -> Any:
    """d/dx erfcx(x) = 2 x erfcx(x) - 2/sqrt(pi).

    For large x the two terms cancel (the result is about -1/(sqrt(pi) x^2)): above 50
    the asymptotic series is used instead, its six terms exact to rounding there.
    """
    direct = sub(mul(mul(2.0, x), y), _TWO_OVER_SQRT_PI)
    large = gt(x, _ERFCX_SERIES_ABOVE)
    u = reciprocal(square(select(large, x, _ERFCX_SERIES_ABOVE)))  # 1 / x^2
    series = 0.0
    for c in (-10395.0 / 32.0, 945.0 / 16.0, -105.0 / 8.0, 15.0 / 4.0, -3.0 / 2.0, 1.0):
        series = add(c, mul(u, series))  # Horner in 1/x^2
    asymptotic = mul(mul(-1.0 / math.sqrt(math.pi), u), series)
    return select(large, asymptotic, direct)


erfcx_p = _unary("erfcx", _scipy("erfcx"), _erfcx_deriv, numpy_only=True)
def _log_ndtr_deriv(x: Any, y: Any) -> Any:
    """d/dx log ndtr(x) = pdf(x) / ndtr(x), the inverse Mills ratio.

    For x <= 0 it is ``sqrt(2/pi) / erfcx(-x / sqrt(2))`` (finite at x = -1e5, where pdf
    and ndtr underflow); for x > 0 the quotient itself (erfcx(-x/sqrt(2)) overflows at
    x = 40 and its derivative with it). Each branch sees only its own side's x.
    """
    right = gt(x, 0.0)
    xl, xr = select(right, 0.0, x), select(right, x, 0.0)
    left_side = div(_SQRT_TWO_OVER_PI, erfcx(mul(xl, -_SQRT_HALF)))
    pdf = mul(1.0 / math.sqrt(2.0 * math.pi), exp(mul(-0.5, square(xr))))
    right_side = div(pdf, mul(0.5, erfc(mul(xr, -_SQRT_HALF))))
    return select(right, right_side, left_side)


log_ndtr_p = _unary("log_ndtr", _scipy("log_ndtr"), _log_ndtr_deriv, numpy_only=True)


# ---- gamma function family --------------------------------------------------------------

gammaln_p = _unary("gammaln", _scipy("gammaln"), lambda x, y: digamma(x))
digamma_p = _unary("digamma", _scipy("digamma"), lambda x, y: polygamma(x, n=1),
                   numpy_only=True)


def _polygamma_jvp(frame, primals, tangents, out, *, n):
    return scale(frame, tangents[0], polygamma(primals[0], n=n + 1))


_polygamma = _scipy("polygamma")
polygamma_p = Primitive("polygamma", impl=lambda x, *, n: _polygamma(n, x),
                        shape=lambda x, *, n: float_shape(x), jvp=_polygamma_jvp,
                        numpy_only=True)


def _betaln_jvp(frame, primals, tangents, out):
    (a, b), (ta, tb) = primals, tangents
    psi_ab = digamma(add(a, b))
    return add_any(scale(frame, ta, sub(digamma(a), psi_ab)),
                   scale(frame, tb, sub(digamma(b), psi_ab)))


betaln_p = Primitive("betaln", impl=_scipy("betaln"), shape=float_shape, jvp=_betaln_jvp,
                     numpy_only=True)


# ---- Bessel functions (modified, orders 0 and 1; the "e" forms scaled by exp(-|x|)) -------

def _i1_over_x(i1_fn: Callable[[Any], Any], x: Any) -> Any:
    return _where_zero(x, 0.5, lambda s: div(i1_fn(s), s))  # i1(x)/x -> 1/2 at 0


i0_p = _unary("i0", _scipy("i0"), lambda x, y: i1(x), numpy_only=True)
i1_p = _unary("i1", _scipy("i1"), lambda x, y: sub(i0(x), _i1_over_x(i1, x)), numpy_only=True)
i0e_p = _unary("i0e", _scipy("i0e"), lambda x, y: sub(i1e(x), mul(sign(x), y)),
               numpy_only=True)
i1e_p = _unary("i1e", _scipy("i1e"),
               lambda x, y: sub(sub(i0e(x), _i1_over_x(i1e, x)), mul(sign(x), y)),
               numpy_only=True)


# ---- logistic function and entropy --------------------------------------------------------

logit_p = _unary("logit", _scipy("logit"), lambda x, y: reciprocal(mul(x, sub(1.0, x))))
expit_p = _unary("expit", _scipy("expit"), lambda x, y: mul(y, expit(neg(x))))
log_expit_p = _unary("log_expit", _scipy("log_expit"), lambda x, y: expit(neg(x)))
entr_p = _unary("entr", _scipy("entr"), lambda x, y: neg(add(log(x), 1.0)))


def _xlog_jvp(log_fn: Callable[[Any], Any], shift: float):
    def jvp(frame, primals, tangents, out):
        (x, y), (tx, ty) = primals, tangents
        dy = None if ty is None else scale(frame, ty, div(x, add(y, shift) if shift else y))
        return add_any(scale(frame, tx, log_fn(y)), dy)
    return jvp


xlogy_p = Primitive("xlogy", impl=_scipy("xlogy"), shape=float_shape, jvp=_xlog_jvp(log, 0.0))
xlog1py_p = Primitive("xlog1py", impl=_scipy("xlog1py"), shape=float_shape,
                      jvp=_xlog_jvp(log1p_p, 1.0))


# ---- NumPy elementwise functions -----------------------------------------------------------

def _hypot_jvp(frame, primals, tangents, out):
    (x, y), (tx, ty) = primals, tangents
    # d hypot = (x dx + y dy) / hypot, taken as 0 at the origin (a cone's subgradient).
    zero = eq(out, 0.0)
    safe = select(zero, 1.0, out)
    return add_any(scale(frame, tx, div(x, safe)), scale(frame, ty, div(y, safe)))


hypot_p = Primitive("hypot", impl=np.hypot, shape=float_shape, jvp=_hypot_jvp)

arcsinh_p = _unary("arcsinh", np.arcsinh, lambda x, y: reciprocal(hypot(x, 1.0)))
arccosh_p = _unary("arccosh", np.arccosh,
                   lambda x, y: reciprocal(mul(sqrt(sub(x, 1.0)), sqrt(add(x, 1.0)))))
arctanh_p = _unary("arctanh", np.arctanh,
                   lambda x, y: reciprocal(mul(sub(1.0, x), add(1.0, x))))
cbrt_p = _unary("cbrt", np.cbrt, lambda x, y: div(1.0 / 3.0, square(y)))
rint_p = _unary("rint", np.rint, None)
trunc_p = _unary("trunc", np.trunc, None, shape=_same_shape)

floor_divide_p = Primitive("floor_divide", impl=np.floor_divide, shape=broadcast_shape,
                           jvp=lambda frame, p, t, out: None)


def _remainder_jvp(frame, primals, tangents, out):
    # x mod y = x - q y with q = floor(x / y) piecewise constant: d = dx - q dy
    (x, y), (tx, ty) = primals, tangents
    return add_any(tx, None if ty is None else scale(frame, ty, neg(floor_divide(x, y))))


def _fmod_jvp(frame, primals, tangents, out):
    # fmod(x, y) = x - q y with q = trunc(x / y); q recovered exactly from the result
    (x, y), (tx, ty) = primals, tangents
    return add_any(tx, None if ty is None else scale(frame, ty, neg(rint(div(sub(x, out), y)))))


remainder_p = Primitive("remainder", impl=np.remainder, shape=broadcast_shape,
                        jvp=_remainder_jvp)
fmod_p = Primitive("fmod", impl=np.fmod, shape=broadcast_shape, jvp=_fmod_jvp)


# ---- ops: the functions rules and the NumPy / SciPy layers call --------------------------

def erf(x): return erf_p(x)
def erfc(x): return erfc_p(x)
# ---- distribution functions with a constant shape parameter ------------------------------

def _stdtr(x: Any, *, df: float) -> Any:
    import scipy.special

    return scipy.special.stdtr(df, x)


def _t_density(x: Any, df: float) -> Any:
    """Student's t density with ``df`` degrees of freedom, written in primitives."""
    log_norm = (math.lgamma((df + 1.0) / 2.0) - math.lgamma(df / 2.0)
                - 0.5 * math.log(df * math.pi))
    return exp(sub(log_norm, mul((df + 1.0) / 2.0, log1p_p(div(square(x), df)))))


def _stdtr_jvp(frame, primals, tangents, out, *, df):
    return scale(frame, tangents[0], _t_density(primals[0], df))


#: The cdf of Student's t (SciPy's ``stdtr``) in x, for a constant ``df``; its derivative
#: is the density, so it differentiates to any order.
stdtr_p = Primitive("stdtr", impl=_stdtr, shape=lambda x, *, df: float_shape(x),
                    jvp=_stdtr_jvp, numpy_only=True)


def erfinv(x): return erfinv_p(x)
def erfcx(x): return erfcx_p(x)
def log_ndtr(x): return log_ndtr_p(x)
def gammaln(x): return gammaln_p(x)
def digamma(x): return digamma_p(x)
def polygamma(x, *, n): return polygamma_p(x, n=int(n))
def betaln(a, b): return betaln_p(a, b)
def i0(x): return i0_p(x)
def i1(x): return i1_p(x)
def i0e(x): return i0e_p(x)
def i1e(x): return i1e_p(x)
def logit(x): return logit_p(x)
def expit(x): return expit_p(x)
def log_expit(x): return log_expit_p(x)
def entr(x): return entr_p(x)
def xlogy(x, y): return xlogy_p(x, y)
def xlog1py(x, y): return xlog1py_p(x, y)
def hypot(x, y): return hypot_p(x, y)
def arcsinh(x): return arcsinh_p(x)
def arccosh(x): return arccosh_p(x)
def arctanh(x): return arctanh_p(x)
def cbrt(x): return cbrt_p(x)
def rint(x): return rint_p(x)
def trunc(x): return trunc_p(x)
def floor_divide(x, y): return floor_divide_p(x, y)
def remainder(x, y): return remainder_p(x, y)
def fmod(x, y): return fmod_p(x, y)
def stdtr(x, *, df): return stdtr_p(x, df=float(df))
