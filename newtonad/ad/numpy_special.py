"""Special functions on traced arrays: ``scipy.special``, ``scipy.stats`` and the
elementwise NumPy functions that are compositions of primitives.

Registered where they are defined, with :func:`~newtonad.ad.dispatch.numpy_function`:

* NumPy's elementwise functions (``np.arcsinh``, ``np.cbrt``, ``np.round``, ...) in the
  dispatch tables of :mod:`.dispatch`, in :mod:`newtonad.numpy` and, for ``round``, as
  Var's method;
* SciPy's ufuncs (``scipy.special.erf(x)``, ``expit``, ``gammaln``, ...) by name in
  :data:`~newtonad.ad.dispatch.UFUNCS`: they reach it with no routing, because NumPy hands
  any ufunc call on a Var to Var. :data:`UFUNCS` lists every ufunc name this module
  registers;
* :data:`SCIPY_FUNCTIONS` (dotted public name -> impl) holds SciPy's Python-level
  functions (``scipy.special.logsumexp``, ``scipy.stats.norm.logpdf``, ...). They call
  ``np.asarray`` on their input and never reach a NumPy protocol, so
  :mod:`newtonad.ad.scipy_dispatch` wraps them on SciPy's modules. Names, not objects:
  importing SciPy here would cost ``import newtonad`` 0.2-0.5 s.

Every function takes what its SciPy / NumPy namesake takes. A parameter SciPy accepts
and newtonad does not raises NotImplementedError naming it; none is dropped silently.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Callable

import numpy as np

from . import dispatch
from . import numpy_api as npa
from .dispatch import numpy_function
from .numpy_base import normalize_axes
from .primitives import elementwise as ew
from .primitives import special as sp
from .primitives import structural as st
from .primitives.core import shape_of
from .var import Var

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _is_var(x: Any) -> bool:
    return isinstance(x, Var)


def _float(x: Any) -> Any:
    """Ints and bools as float64 (a Var stays traced, anything else becomes an array)."""
    if isinstance(x, (list, tuple)):
        x = npa.array(x)  # traced entries are stacked
    if _is_var(x):
        return ew.convert(x, dtype="float64") if x.dtype.kind != "f" else x
    return np.asarray(x, dtype=np.float64)


def _isfinite(x: Any) -> Any:
    return ew.lt_p(ew.abs_p(x), np.inf)  # NaN compares False


def _unsupported(function: str, **params: Any) -> None:
    """Reject parameters newtonad does not implement (given a non-default value)."""
    for name, (value, default) in params.items():
        if value is default or (default is not None and isinstance(value, (bool, int, float))
                                and value == default):
            continue
        raise NotImplementedError(f"newtonad's {function} does not support {name}="
                                      f"{value!r}; leave it at its default ({default!r})")


# ---- scipy.special: ufuncs -----------------------------------------------------------------

@numpy_function(ufunc="ndtr", name=())
def ndtr(x):
    """The standard normal cdf, ``erfc(-x / sqrt(2)) / 2`` (as SciPy evaluates it)."""
    return ew.mul(0.5, sp.erfc(ew.mul(x, -math.sqrt(0.5))))


# ---- scipy.special: functions with axes ------------------------------------------------------

def _reduced(out: Any, a_shape: tuple[int, ...], axis: Any, keepdims: bool) -> Any:
    """``out`` computed with keepdims=True, reshaped as NumPy's reduction would return it."""
    if keepdims:
        return out
    axes = set(normalize_axes(axis, len(a_shape)))
    return ew_reshape(out, tuple(n for i, n in enumerate(a_shape) if i not in axes))


def ew_reshape(x: Any, shape: tuple[int, ...]) -> Any:
    return st.reshape(x, shape) if shape_of(x) != shape else x


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """``log(sum(b * exp(a)))`` over ``axis``, as :func:`scipy.special.logsumexp`.

    The largest entry (among those with ``b != 0``) is subtracted before ``exp`` and
    added back; it enters as a constant, the derivative is exact (softmax weights).
    With ``return_sign=True`` returns ``(log|s|, sign(s))``; without it a negative sum
    gives NaN, as in SciPy.
    """
    a = _float(a)
    shape = shape_of(a)
    if b is not None:
        shape = tuple(np.broadcast_shapes(shape, shape_of(b)))
        a, b = npa.broadcast_to(a, shape), npa.broadcast_to(_float(b), shape)
        nonzero = ew.ne_p(b, 0.0)
        peak = npa.where(nonzero, a, -np.inf)  # SciPy ignores entries with b == 0
    else:
        peak = a
    m = npa.stop_gradient(npa.max(peak, axis, keepdims=True))
    m = npa.where(_isfinite(m), m, 0.0)
    shifted = ew.sub(a, m)
    if b is not None:  # entries with b == 0 contribute exp(-inf) = 0, even where a = inf
        e = ew.mul(npa.exp(npa.where(nonzero, shifted, -np.inf)), b)
    else:
        e = npa.exp(shifted)
    s = npa.sum(e, axis, keepdims=True)
    if return_sign:
        sign = ew.sign(s)
        out = ew.add(npa.log(ew.abs_p(s)), m)
        return _reduced(out, shape, axis, keepdims), _reduced(sign, shape, axis, keepdims)
    return _reduced(ew.add(npa.log(s), m), shape, axis, keepdims)


def log_softmax(x, axis=None):
    """``x - logsumexp(x, axis, keepdims=True)``, as :func:`scipy.special.log_softmax`."""
    x = _float(x)
    m = npa.stop_gradient(npa.max(x, axis, keepdims=True))
    shifted = ew.sub(x, npa.where(_isfinite(m), m, 0.0))
    return ew.sub(shifted, npa.log(npa.sum(npa.exp(shifted), axis, keepdims=True)))


def softmax(x, axis=None):
    """``exp(x) / sum(exp(x), axis)``, shifted by the maximum, as :func:`scipy.special.softmax`."""
    x = _float(x)
    m = npa.stop_gradient(npa.max(x, axis, keepdims=True))
    e = npa.exp(ew.sub(x, npa.where(_isfinite(m), m, 0.0)))
    return ew.div(e, npa.sum(e, axis, keepdims=True))


def polygamma(n, x):
    """``scipy.special.polygamma(n, x)`` for a constant integer order ``n >= 0``."""
    if _is_var(n) or np.ndim(n) != 0 or int(n) != n or n < 0:
        raise NotImplementedError("newtonad's polygamma needs a constant integer order n >= 0 "
                                  f"(one for all elements), got {n!r}")
    return sp.digamma(x) if int(n) == 0 else sp.polygamma(x, n=int(n))


# ---- scipy.stats ---------------------------------------------------------------------------

def _standardize(x, loc, scale):
    return ew.div(ew.sub(x, loc), scale)


def norm_logpdf(x, loc=0.0, scale=1.0):
    """``scipy.stats.norm.logpdf``; ``loc`` and ``scale`` may be traced."""
    z = _standardize(x, loc, scale)
    return ew.sub(ew.sub(ew.mul(-0.5, npa.square(z)), _LOG_SQRT_2PI), npa.log(scale))


def norm_pdf(x, loc=0.0, scale=1.0):
    """``scipy.stats.norm.pdf``."""
    return npa.exp(norm_logpdf(x, loc, scale))


def norm_cdf(x, loc=0.0, scale=1.0):
    """``scipy.stats.norm.cdf``."""
    return ndtr(_standardize(x, loc, scale))


def norm_logcdf(x, loc=0.0, scale=1.0):
    """``scipy.stats.norm.logcdf``: ``log_ndtr``, accurate far in the left tail."""
    return sp.log_ndtr(_standardize(x, loc, scale))


def norm_sf(x, loc=0.0, scale=1.0):
    """``scipy.stats.norm.sf``."""
    return ndtr(ew.neg(_standardize(x, loc, scale)))


def norm_logsf(x, loc=0.0, scale=1.0):
    """``scipy.stats.norm.logsf``."""
    return sp.log_ndtr(ew.neg(_standardize(x, loc, scale)))


def t_logpdf(x, df, loc=0.0, scale=1.0):
    """``scipy.stats.t.logpdf``; ``df``, ``loc`` and ``scale`` may be traced."""
    z = _standardize(x, loc, scale)
    half_df = ew.mul(0.5, _float(df))
    norm_const = ew.sub(sp.gammaln(ew.add(half_df, 0.5)), sp.gammaln(half_df))
    norm_const = ew.sub(norm_const, ew.mul(0.5, npa.log(ew.mul(math.pi, df))))
    tail = ew.mul(ew.add(half_df, 0.5), npa.log1p(ew.div(npa.square(z), df)))
    return ew.sub(ew.sub(norm_const, tail), npa.log(scale))


def t_pdf(x, df, loc=0.0, scale=1.0):
    """``scipy.stats.t.pdf``."""
    return npa.exp(t_logpdf(x, df, loc, scale))


def t_cdf(x, df, loc=0.0, scale=1.0):
    """``scipy.stats.t.cdf``; ``x``, ``loc`` and ``scale`` may be traced, ``df`` is constant."""
    return sp.stdtr(_standardize(x, loc, scale), df=_constant("t.cdf", "df", df))


def t_logcdf(x, df, loc=0.0, scale=1.0):
    """``scipy.stats.t.logcdf``."""
    return npa.log(t_cdf(x, df, loc, scale))


def t_sf(x, df, loc=0.0, scale=1.0):
    """``scipy.stats.t.sf``: the cdf at ``-z``, by symmetry."""
    return sp.stdtr(ew.neg(_standardize(x, loc, scale)), df=_constant("t.sf", "df", df))


def _constant(function: str, name: str, value: Any) -> float:
    if _is_var(value):
        raise NotImplementedError(f"newtonad's {function} differentiates in x, loc and scale; "
                                  f"its {name} must be a constant, not a traced value")
    if np.ndim(value) != 0:
        raise NotImplementedError(f"newtonad's {function} needs one {name} for all entries")
    return float(value)


def gamma_logpdf(x, a, loc=0.0, scale=1.0):
    """``scipy.stats.gamma.logpdf``; every argument may be traced."""
    z = _standardize(x, loc, scale)
    return ew.sub(ew.sub(ew.sub(sp.xlogy(ew.sub(a, 1.0), z), z), sp.gammaln(_float(a))),
                  npa.log(scale))


def beta_logpdf(x, a, b, loc=0.0, scale=1.0):
    """``scipy.stats.beta.logpdf``; every argument may be traced."""
    z = _standardize(x, loc, scale)
    body = ew.add(sp.xlogy(ew.sub(a, 1.0), z), sp.xlog1py(ew.sub(b, 1.0), ew.neg(z)))
    return ew.sub(ew.sub(body, sp.betaln(_float(a), _float(b))), npa.log(scale))


def chi2_logpdf(x, df, loc=0.0, scale=1.0):
    """``scipy.stats.chi2.logpdf``: a gamma density with shape df/2 and scale 2."""
    half_df = ew.mul(0.5, _float(df))
    return gamma_logpdf(x, half_df, loc, ew.mul(2.0, scale))


def poisson_logpmf(k, mu, loc=0.0):
    """``scipy.stats.poisson.logpmf``; ``mu`` may be traced (``k`` is data)."""
    k = ew.sub(_float(k), loc)
    return ew.sub(ew.sub(sp.xlogy(k, mu), sp.gammaln(ew.add(k, 1.0))), mu)


def _exp_of(logpdf: Callable) -> Callable:
    def pdf(*args, **kwargs):
        return npa.exp(logpdf(*args, **kwargs))
    pdf.__name__ = logpdf.__name__.replace("log", "", 1)
    pdf.__doc__ = f"``exp`` of :func:`{logpdf.__name__}`."
    return pdf


def multivariate_normal_entropy(mean=None, cov=1, allow_singular=False):
    """``scipy.stats.multivariate_normal.entropy``: ``(d log(2 pi e) + log det cov) / 2``."""
    _unsupported("multivariate_normal.entropy", allow_singular=(allow_singular, False))
    cov = npa.array(cov)  # a list or object array of traced entries becomes one array
    dim = _mvn_dim(mean, cov)
    if _is_var(cov) and len(shape_of(cov)) == 2:
        _, logdet = np.linalg.slogdet(cov)
    elif _is_var(cov):
        logdet = npa.sum(npa.log(npa.broadcast_to(cov, (dim,))))
    else:
        cov = np.asarray(cov, dtype=np.float64)
        logdet = (np.linalg.slogdet(cov)[1] if cov.ndim == 2
                  else float(np.sum(np.log(np.broadcast_to(cov, (dim,))))))
    return ew.mul(0.5, ew.add(logdet, dim * math.log(2.0 * math.pi * math.e)))


def multivariate_normal_logpdf(x, mean=None, cov=1, allow_singular=False):
    """``scipy.stats.multivariate_normal.logpdf``.

    ``x`` has shape ``(..., d)`` (a 1-D ``x`` is one point, or ``d`` points when the
    dimension is 1, as in SciPy); size-1 axes of the result are squeezed as SciPy does.
    ``mean`` and a 2-D ``cov`` may be traced (a traced ``cov`` goes through
    ``np.linalg.slogdet`` and ``np.linalg.solve``); a constant ``cov`` may also be a
    scalar or the 1-D diagonal.
    """
    _unsupported("multivariate_normal.logpdf", allow_singular=(allow_singular, False))
    cov = npa.array(cov)  # a list or object array of traced entries becomes one array
    dim = _mvn_dim(mean, cov)
    x = _float(x)
    if len(shape_of(x)) == 0:
        x = ew_reshape(x, (1,))
    if len(shape_of(x)) == 1:
        x = ew_reshape(x, (shape_of(x)[0], 1) if dim == 1 else (1, shape_of(x)[0]))
    if shape_of(x)[-1] != dim:
        raise ValueError(f"multivariate_normal.logpdf: x has {shape_of(x)[-1]} entries per "
                         f"point, the distribution has dimension {dim}")
    dev = x if mean is None else ew.sub(x, _float(mean))
    points = npa.reshape(dev, (-1, dim))
    if _is_var(cov):
        if len(shape_of(cov)) != 2:
            raise NotImplementedError("newtonad's multivariate_normal.logpdf needs a traced cov "
                                      "as a full (d, d) matrix")
        _, logdet = np.linalg.slogdet(cov)
        maha = npa.sum(ew.mul(npa.transpose(points), np.linalg.solve(cov, npa.transpose(points))),
                       axis=0)
    else:
        cov = np.asarray(cov, dtype=np.float64)
        cov = np.diag(np.broadcast_to(cov, (dim,))) if cov.ndim < 2 else cov
        chol = np.linalg.cholesky(cov)  # raises LinAlgError when cov is not positive definite
        logdet = 2.0 * float(np.sum(np.log(np.diag(chol))))
        whitened = npa.matmul(points, np.linalg.inv(chol).T)
        maha = npa.sum(npa.square(whitened), axis=1)
    out = ew.mul(-0.5, ew.add(ew.add(maha, logdet), dim * math.log(2.0 * math.pi)))
    out = npa.reshape(out, shape_of(dev)[:-1])
    return npa.squeeze(out)


def _mvn_dim(mean, cov) -> int:
    if mean is not None and len(shape_of(mean)) > 0:
        return shape_of(mean)[-1]
    if len(shape_of(cov)) > 0:
        return shape_of(cov)[0]
    return 1


def multivariate_normal_pdf(x, mean=None, cov=1, allow_singular=False):
    """``scipy.stats.multivariate_normal.pdf``."""
    return npa.exp(multivariate_normal_logpdf(x, mean, cov, allow_singular))


# ---- NumPy elementwise functions -------------------------------------------------------------

@numpy_function(np.deg2rad, np.radians, name=("deg2rad", "radians"))
def deg2rad(x):
    """Traced version of numpy.deg2rad."""
    return ew.mul(_float(x), math.pi / 180.0)


@numpy_function(np.rad2deg, np.degrees, name=("rad2deg", "degrees"))
def rad2deg(x):
    """Traced version of numpy.rad2deg."""
    return ew.mul(_float(x), 180.0 / math.pi)


@numpy_function(np.arcsinh)
def arcsinh(x):
    """Traced version of numpy.arcsinh."""
    return sp.arcsinh(x)


@numpy_function(np.arccosh)
def arccosh(x):
    """Traced version of numpy.arccosh."""
    return sp.arccosh(x)


@numpy_function(np.arctanh)
def arctanh(x):
    """Traced version of numpy.arctanh."""
    return sp.arctanh(x)


@numpy_function(np.cbrt)
def cbrt(x):
    """Traced version of numpy.cbrt."""
    return sp.cbrt(x)


@numpy_function(np.rint)
def rint(x):
    """Traced version of numpy.rint."""
    return sp.rint(x)


@numpy_function(np.trunc)
def trunc(x):
    """Traced version of numpy.trunc."""
    return sp.trunc(x)


@numpy_function(np.floor_divide)
def floor_divide(x, y):
    """Traced version of numpy.floor_divide."""
    return sp.floor_divide(x, y)


@numpy_function(np.remainder, name=("remainder", "mod"))
def remainder(x, y):
    """Traced version of numpy.remainder."""
    return sp.remainder(x, y)


@numpy_function(np.fmod)
def fmod(x, y):
    """Traced version of numpy.fmod."""
    return sp.fmod(x, y)


@numpy_function(np.logaddexp2)
def logaddexp2(x, y):
    """Traced version of numpy.logaddexp2.

    ``log2(2**x + 2**y)`` with the larger argument factored out (as a constant).
    """
    m = npa.stop_gradient(npa.maximum(x, y))
    m = npa.where(_isfinite(m), m, 0.0)
    return ew.add(m, npa.log2(ew.add(npa.exp2(ew.sub(x, m)), npa.exp2(ew.sub(y, m)))))


@numpy_function(np.divmod, name="divmod")
def divmod_(x, y):
    """``np.divmod``: ``(x // y, x % y)``."""
    return sp.floor_divide(x, y), sp.remainder(x, y)


@numpy_function(np.round, np.around, method="round", name=("around", "round"))
def around(a, decimals=0, out=None):
    """``np.round`` / ``np.around``: NumPy's scaling by ``10**decimals``, then ``rint``.

    Piecewise constant: its derivative is zero.
    """
    _unsupported("np.round", out=(out, None))
    if not isinstance(decimals, numbers.Integral):
        raise TypeError(f"np.round: decimals must be an integer, got {decimals!r}")
    if _is_var(a) and a.dtype.kind != "f":
        if decimals >= 0:
            return a
        raise NotImplementedError("newtonad's np.round of an integer array needs decimals >= 0")
    if decimals == 0:
        return sp.rint(a)
    factor = 10.0 ** abs(decimals)
    if decimals > 0:
        return ew.div(sp.rint(ew.mul(a, factor)), factor)
    return ew.mul(sp.rint(ew.div(a, factor)), factor)


@numpy_function(np.fix)
def fix(x, out=None):
    """``np.fix``: round towards zero."""
    _unsupported("np.fix", out=(out, None))
    return sp.trunc(x)


_SINC_SERIES_BELOW = 1e-2  # |x| below this: Taylor series, exact to rounding, smooth at 0


@numpy_function(np.sinc)
def sinc(x):
    """``np.sinc``: ``sin(pi x) / (pi x)``, 1 at 0.

    Near 0 a Taylor series replaces the quotient, so first and second derivatives at
    and near 0 are right (a select of 1 at 0 would give a zero second derivative).
    """
    x = _float(x)
    small = ew.lt_p(ew.abs_p(x), _SINC_SERIES_BELOW)
    px = ew.mul(x, math.pi)
    safe = npa.where(small, 1.0, px)
    quotient = ew.div(npa.sin(safe), safe)
    z = npa.square(px)
    series = 1.0
    for k in (9, 7, 5, 3):  # 1 - z/3! + z^2/5! - z^3/7! + z^4/9!, by Horner's rule
        series = ew.sub(1.0, ew.mul(ew.div(z, float((k - 1) * k)), series))
    return npa.where(small, series, quotient)


@numpy_function(np.nan_to_num)
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """``np.nan_to_num``: NaN, +inf and -inf replaced (their derivative is zero)."""
    if copy is False:
        raise NotImplementedError("newtonad's np.nan_to_num cannot change x in place "
                                  "(copy=False); use the returned array (copy=True)")
    if _is_var(x) and x.dtype.kind != "f":
        return x
    big = np.finfo(np.float64).max
    posinf = big if posinf is None else posinf
    neginf = -big if neginf is None else neginf
    out = npa.where(ew.ne_p(x, x), nan, x)
    out = npa.where(ew.eq_p(x, np.inf), posinf, out)
    return npa.where(ew.eq_p(x, -np.inf), neginf, out)


# ---- SciPy's ufuncs, written in the primitives of primitives.special -------------------------

_SCIPY_UFUNCS: dict[str, Any] = {
    "erf": sp.erf, "erfc": sp.erfc, "erfinv": sp.erfinv, "erfcx": sp.erfcx,
    "log_ndtr": sp.log_ndtr, "gammaln": sp.gammaln, "psi": sp.digamma, "betaln": sp.betaln,
    "xlogy": sp.xlogy, "xlog1py": sp.xlog1py, "entr": sp.entr, "expit": sp.expit,
    "logit": sp.logit, "log_expit": sp.log_expit, "i0": sp.i0, "i1": sp.i1,
    "i0e": sp.i0e, "i1e": sp.i1e,
}
for _name, _fn in _SCIPY_UFUNCS.items():  # primitives of primitives.special, by ufunc name
    numpy_function(ufunc=_name, name=())(_fn)

#: every ufunc name registered by this module (SciPy's and NumPy's) -> its implementation
UFUNCS: dict[str, Any] = {name: fn for name, fn in dispatch.UFUNCS.items()
                          if fn.__module__ in (__name__, sp.__name__)}

SCIPY_FUNCTIONS: dict[str, Any] = {
    "scipy.special.logsumexp": logsumexp,
    "scipy.special.softmax": softmax,
    "scipy.special.log_softmax": log_softmax,
    "scipy.special.polygamma": polygamma,
    "scipy.stats.norm.logpdf": norm_logpdf,
    "scipy.stats.norm.pdf": norm_pdf,
    "scipy.stats.norm.cdf": norm_cdf,
    "scipy.stats.norm.logcdf": norm_logcdf,
    "scipy.stats.norm.sf": norm_sf,
    "scipy.stats.norm.logsf": norm_logsf,
    "scipy.stats.t.logpdf": t_logpdf,
    "scipy.stats.t.pdf": t_pdf,
    "scipy.stats.t.cdf": t_cdf,
    "scipy.stats.t.logcdf": t_logcdf,
    "scipy.stats.t.sf": t_sf,
    "scipy.stats.gamma.logpdf": gamma_logpdf,
    "scipy.stats.gamma.pdf": _exp_of(gamma_logpdf),
    "scipy.stats.beta.logpdf": beta_logpdf,
    "scipy.stats.beta.pdf": _exp_of(beta_logpdf),
    "scipy.stats.chi2.logpdf": chi2_logpdf,
    "scipy.stats.chi2.pdf": _exp_of(chi2_logpdf),
    "scipy.stats.poisson.logpmf": poisson_logpmf,
    "scipy.stats.poisson.pmf": _exp_of(poisson_logpmf),
    "scipy.stats.multivariate_normal.entropy": multivariate_normal_entropy,
    "scipy.stats.multivariate_normal.logpdf": multivariate_normal_logpdf,
    "scipy.stats.multivariate_normal.pdf": multivariate_normal_pdf,
}

dispatch.SCIPY_FUNCTIONS.update(SCIPY_FUNCTIONS)
