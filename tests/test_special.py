"""Special and elementwise functions: values against SciPy / NumPy, first and second
derivatives against central differences, stable forms at extreme arguments, and the
routing of plain SciPy calls on traced values (newtonad.ad.scipy_dispatch).

Derivative checks run on the NumPy reference engine (fast); a few run on numba.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
import scipy.linalg
import scipy.special as sps
import scipy.stats as stats

import newtonad as nad
from newtonad.ad import scipy_dispatch
from newtonad.ad.primitives import Primitive
from newtonad.ad.primitives import special as special_prims
from newtonad.ad.trace import Var
from newtonad.scipy import special as nsp
from tests.helpers import assert_close, central_jvp, check_hvp, check_jvp, check_vjp_vs_jvp

rng = np.random.default_rng(20261130)


@pytest.fixture(autouse=True)
def numpy_engine():
    with nad.settings.override(engine="numpy"):
        yield


def _normal(n, s=1.0):
    return rng.normal(size=n) * s


def _uniform(lo, hi, n=5):
    return rng.uniform(lo, hi, size=n)


# ---- elementwise cases: (id, traced function, reference, point) ----------------------------------
# Binary functions take one vector holding both arguments.

def _split(f):
    return lambda z: f(z[: z.size // 2], z[z.size // 2:])


def _pair(a, b):
    return np.concatenate([a, b])


CASES = [
    ("erf", sps.erf, sps.erf, _normal(5, 1.5)),
    ("erfc", sps.erfc, sps.erfc, _normal(5, 1.5)),
    ("erfinv", sps.erfinv, sps.erfinv, _uniform(-0.9, 0.9)),
    ("erfcx", sps.erfcx, sps.erfcx, _normal(5, 2.0)),
    ("ndtr", sps.ndtr, sps.ndtr, _normal(5, 2.0)),
    ("log_ndtr", sps.log_ndtr, sps.log_ndtr, _normal(5, 3.0)),
    ("gammaln", sps.gammaln, sps.gammaln, _uniform(0.3, 6.0)),
    ("digamma", sps.digamma, sps.digamma, _uniform(0.3, 6.0)),
    ("polygamma1", lambda x: sps.polygamma(1, x), lambda x: sps.polygamma(1, x), _uniform(0.5, 4)),
    ("polygamma2", lambda x: nsp.polygamma(2, x), lambda x: sps.polygamma(2, x), _uniform(0.5, 4)),
    ("betaln", _split(sps.betaln), _split(sps.betaln), _uniform(0.4, 5.0, 8)),
    ("xlogy", _split(sps.xlogy), _split(sps.xlogy), _pair(_normal(4), _uniform(0.2, 3, 4))),
    ("xlog1py", _split(sps.xlog1py), _split(sps.xlog1py), _pair(_normal(4), _uniform(-0.5, 3, 4))),
    ("entr", sps.entr, sps.entr, _uniform(0.05, 3.0)),
    ("i0", sps.i0, sps.i0, _normal(5, 2.0)),
    ("i1", sps.i1, sps.i1, _normal(5, 2.0)),
    ("i0e", sps.i0e, sps.i0e, _normal(5, 2.0)),
    ("i1e", sps.i1e, sps.i1e, _normal(5, 2.0)),
    ("expit", sps.expit, sps.expit, _normal(5, 3.0)),
    ("logit", sps.logit, sps.logit, _uniform(0.05, 0.95)),
    ("log_expit", sps.log_expit, sps.log_expit, _normal(5, 3.0)),
    ("arcsinh", np.arcsinh, np.arcsinh, _normal(5, 3.0)),
    ("arccosh", np.arccosh, np.arccosh, _uniform(1.1, 5.0)),
    ("arctanh", np.arctanh, np.arctanh, _uniform(-0.9, 0.9)),
    ("cbrt", np.cbrt, np.cbrt, _pair(_uniform(0.2, 3, 3), -_uniform(0.2, 3, 3))),
    ("deg2rad", np.deg2rad, np.deg2rad, _normal(4, 90)),
    ("radians", np.radians, np.radians, _normal(4, 90)),
    ("rad2deg", np.rad2deg, np.rad2deg, _normal(4)),
    ("degrees", np.degrees, np.degrees, _normal(4)),
    ("logaddexp2", _split(np.logaddexp2), _split(np.logaddexp2), _normal(8, 3.0)),
    ("hypot", _split(np.hypot), _split(np.hypot), _normal(8)),
    ("remainder", lambda x: x % 0.7, lambda x: np.remainder(x, 0.7), _normal(5, 2.0)),
    ("remainder_y", _split(np.remainder), _split(np.remainder),
     _pair(_normal(4, 3.0), _uniform(0.5, 2.0, 4) * np.array([1, -1, 1, -1]))),
    ("rmod", lambda x: 5.0 % x, lambda x: np.remainder(5.0, x), _uniform(0.7, 3.0)),
    ("fmod", _split(np.fmod), _split(np.fmod),
     _pair(_normal(4, 3.0), _uniform(0.5, 2.0, 4) * np.array([1, -1, 1, -1]))),
    ("floor_divide", lambda x: x * (x // 0.7), lambda x: x * np.floor_divide(x, 0.7),
     _normal(5, 2.0)),
    ("divmod", lambda x: divmod(x, 0.6)[1] * divmod(x, 0.6)[0],
     lambda x: np.remainder(x, 0.6) * np.floor_divide(x, 0.6), _normal(5, 2.0)),
    ("rint", lambda x: x * np.rint(x), lambda x: x * np.rint(x), _normal(5, 3.0)),
    ("trunc", lambda x: x * np.trunc(x), lambda x: x * np.trunc(x), _normal(5, 3.0)),
    ("fix", lambda x: x * np.fix(x), lambda x: x * np.fix(x), _normal(5, 3.0)),
    ("round2", lambda x: x * np.round(x, 2), lambda x: x * np.round(x, 2), _normal(5, 3.0)),
    ("around-1", lambda x: x * np.around(x, -1), lambda x: x * np.around(x, -1), _normal(5, 30.0)),
    ("sinc", np.sinc, np.sinc, np.array([-2.3, -0.7, 0.004, 0.3, 1.6])),
    ("nan_to_num", lambda x: np.nan_to_num(np.log(x), neginf=-5.0) * x,
     lambda x: np.nan_to_num(np.log(x), neginf=-5.0) * x, _uniform(0.2, 2.0)),
    # scipy.stats beyond norm: t's cdf (the stdtr primitive), and densities written with
    # gammaln / betaln / xlogy, shape parameters traced where SciPy allows
    ("t.cdf", lambda x: stats.t.cdf(x, 3.5), lambda x: stats.t.cdf(x, 3.5), _normal(5, 2.0)),
    ("t.logcdf", lambda x: stats.t.logcdf(x, 2.0, loc=0.5, scale=1.5),
     lambda x: stats.t.logcdf(x, 2.0, loc=0.5, scale=1.5), _normal(5, 2.0)),
    ("t.sf", lambda x: stats.t.sf(x, 5.0), lambda x: stats.t.sf(x, 5.0), _normal(5, 2.0)),
    ("gamma.logpdf", lambda x: stats.gamma.logpdf(x, 1.5 + x, scale=2.0),
     lambda x: stats.gamma.logpdf(x, 1.5 + x, scale=2.0), _uniform(0.3, 4.0)),
    ("beta.pdf", lambda x: stats.beta.pdf(x, 2.5, 1.5 + x),
     lambda x: stats.beta.pdf(x, 2.5, 1.5 + x), _uniform(0.1, 0.9)),
    ("chi2.logpdf", lambda x: stats.chi2.logpdf(x, 3.0), lambda x: stats.chi2.logpdf(x, 3.0),
     _uniform(0.3, 5.0)),
    ("poisson.logpmf", lambda x: stats.poisson.logpmf(np.arange(5.0), x),
     lambda x: stats.poisson.logpmf(np.arange(5.0), x), _uniform(0.5, 4.0)),
]
IDS = [c[0] for c in CASES]


@pytest.mark.parametrize("name,f,ref,x", CASES, ids=IDS)
def test_values_match_scipy_and_numpy(name, f, ref, x):
    (value, _) = nad.jvp(f, x, np.ones_like(x))
    with np.errstate(all="ignore"):
        expected = ref(x)
    np.testing.assert_allclose(value, expected, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("name,f,ref,x", CASES, ids=IDS)
def test_first_derivatives(name, f, ref, x):
    check_jvp(f, x, rtol=1e-6, atol=1e-7)
    check_vjp_vs_jvp(f, x)


@pytest.mark.parametrize("name,f,ref,x", CASES, ids=IDS)
def test_second_derivatives(name, f, ref, x):
    w = np.linspace(0.5, 1.5, np.shape(f(x))[0] if np.ndim(ref(x)) else 1)
    check_hvp(lambda z: np.sum(f(z) * w), x, rtol=1e-5, atol=1e-6)


def test_t_cdf_refuses_a_traced_df():
    with pytest.raises(NotImplementedError, match="df must be a constant"):
        nad.grad(lambda x: np.sum(stats.t.cdf(1.0, x)), engine="numpy")(np.array([3.0]))


def test_multivariate_normal_entropy_with_traced_cov():
    def f(x):
        return stats.multivariate_normal.entropy(np.zeros(2), np.array([[2.0, x[0]], [x[0], 3.0]]))

    x = np.array([0.4])
    value, g = nad.value_and_grad(f, engine="numpy")(x)
    assert value == pytest.approx(f(x), rel=1e-13)
    assert_close(g, [central_jvp(f, x, np.ones(1))], 1e-7, 1e-9)


def test_unsupported_scipy_function_is_named_not_blamed_on_an_if():
    with pytest.raises(nad.TracerBoolError, match=r"cannot trace scipy\.stats\.gamma\.cdf"):
        nad.grad(lambda x: np.sum(stats.gamma.cdf(x, 2.0)), engine="numpy")(np.array([1.0, 2.0]))


def test_every_special_primitive_has_a_jvp_case():
    defined = {v.name for v in vars(special_prims).values()
               if isinstance(v, Primitive) and v.jvp.__module__ == special_prims.__name__}
    assert len(defined) >= 28
    covered = set()
    for _, f, _, x in CASES:
        covered |= {s.primitive.name for s in nad.trace(f, x).steps}
    assert defined - covered == set()


# ---- rounding has a zero derivative --------------------------------------------------------------

@pytest.mark.parametrize("fn", [np.rint, np.trunc, np.fix, np.round, lambda x: np.round(x, 1),
                                lambda x: np.floor_divide(x, 0.3), lambda x: x // 0.3])
def test_rounding_has_zero_gradient(fn):
    x = _normal(6, 4.0)
    np.testing.assert_array_equal(nad.grad(lambda z: np.sum(fn(z) ** 2))(x), 0.0)


def test_round_matches_numpy_decimals():
    x = _normal(50, 1000.0)
    for d in (-3, -1, 0, 1, 2, 5):
        value, _ = nad.jvp(lambda z, d=d: np.round(z, d), x, np.ones_like(x))
        np.testing.assert_array_equal(value, np.round(x, d))
        value, _ = nad.jvp(lambda z, d=d: z.round(d), x, np.ones_like(x))
        np.testing.assert_array_equal(value, np.round(x, d))


# ---- stable forms --------------------------------------------------------------------------------

def test_hypot_is_scaled():
    big = np.array([3e200, 4e200])
    tiny = np.array([3e-200, 4e-200])
    f = lambda z: np.hypot(z[0], z[1])  # noqa: E731
    value, g = nad.value_and_grad(f)(big)
    assert value == pytest.approx(5e200)
    np.testing.assert_allclose(g, [0.6, 0.8], rtol=1e-14)
    value, g = nad.value_and_grad(f)(tiny)
    assert value == pytest.approx(5e-200)
    np.testing.assert_allclose(g, [0.6, 0.8], rtol=1e-14)
    np.testing.assert_array_equal(nad.grad(f)(np.zeros(2)), [0.0, 0.0])  # a subgradient


def test_log_ndtr_far_left_tail():
    x = np.array([-40.0, -1e3, -1e5, 5.0, 40.0])
    value, g = nad.value_and_grad(lambda z: np.sum(sps.log_ndtr(z)))(x)
    assert value == pytest.approx(np.sum(sps.log_ndtr(x)))
    # pdf / cdf: through SciPy's logs where that is accurate, the asymptotic series of
    # -x / (1 - 1/x^2 + 3/x^4 - ...) far in the left tail
    mills = np.exp(stats.norm.logpdf(x) - stats.norm.logcdf(x))
    u = 1.0 / x[:3] ** 2
    mills[:3] = -x[:3] / (1 - u * (1 - 3 * u * (1 - 5 * u * (1 - 7 * u * (1 - 9 * u)))))
    np.testing.assert_allclose(g, mills, rtol=1e-13, atol=1e-300)
    assert np.all(np.isfinite(nad.hessian(lambda z: np.sum(sps.log_ndtr(z)))(x)))


def test_erfcx_large_argument():
    x = np.array([30.0, 49.0, 51.0, 1e3, 1e4, 1e8])
    g = nad.grad(lambda z: np.sum(sps.erfcx(z)))(x)
    # central differences with a relative step (2 x erfcx(x) - 2/sqrt(pi) cancels to 0 at 1e8)
    h = x * 1e-5
    fd = (sps.erfcx(x + h) - sps.erfcx(x - h)) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-8)
    assert np.all(g < 0)


def test_expit_log_expit_saturated():
    x = np.array([-800.0, -40.0, 40.0, 800.0])
    g = nad.grad(lambda z: np.sum(sps.expit(z)))(x)
    np.testing.assert_allclose(g, sps.expit(x) * sps.expit(-x), rtol=1e-14)
    assert g[2] > 0  # y (1 - y) would be 0 here
    g = nad.grad(lambda z: np.sum(sps.log_expit(z)))(x)
    np.testing.assert_allclose(g, sps.expit(-x), rtol=1e-14)


def test_arcsinh_gradient_at_large_x():
    g = nad.grad(lambda z: np.sum(np.arcsinh(z)))(np.array([1e200, -1e300]))
    np.testing.assert_allclose(g, [1e-200, 1e-300], rtol=1e-14)


def test_bessel_at_zero():
    x = np.array([0.0])
    for fn, slope in ((sps.i1, 0.5), (sps.i1e, 0.5), (sps.i0, 0.0)):
        def total(z, fn=fn):
            return np.sum(fn(z))

        g = nad.grad(total)(x)
        assert g[0] == pytest.approx(slope)
        # i1e = exp(-|x|) i1(x): its second derivative jumps at 0, differences see O(eps)
        assert g[0] == pytest.approx(central_jvp(total, x, np.ones(1)), abs=1e-5)


def test_sinc_at_zero():
    f = lambda z: np.sum(np.sinc(z))  # noqa: E731
    x = np.array([0.0, 1e-9, -0.0099, 0.0101])
    assert nad.value_and_grad(f)(x)[0] == pytest.approx(np.sum(np.sinc(x)), rel=1e-15)
    H = nad.hessian(f)(np.zeros(1))
    assert H[0, 0] == pytest.approx(-np.pi ** 2 / 3, rel=1e-12)
    check_hvp(f, x, rtol=1e-5, atol=1e-6)


def test_xlogy_at_zero():
    f = lambda z: np.sum(sps.xlogy(z[:2], z[2:]))  # noqa: E731
    z = np.array([0.0, 0.0, 2.0, 0.5])
    value, g = nad.value_and_grad(f)(z)
    assert value == 0.0
    np.testing.assert_allclose(g, [np.log(2.0), np.log(0.5), 0.0, 0.0])


def test_nan_to_num_replacements():
    x = np.array([0.0, -1.0, 800.0, 2.0])  # log: -inf, nan; exp: inf
    f = lambda z: np.nan_to_num(np.log(z) + np.exp(z), nan=-1.0, posinf=7.0)  # noqa: E731
    with np.errstate(all="ignore"):
        value, jv = nad.jvp(f, x, np.ones_like(x))
        expected = np.nan_to_num(np.log(x) + np.exp(x), nan=-1.0, posinf=7.0)
    np.testing.assert_array_equal(value, expected)
    np.testing.assert_array_equal(jv, [0.0, 0.0, 0.0, 0.5 + np.exp(2.0)])


# ---- logsumexp, softmax --------------------------------------------------------------------------

X34 = _normal(12, 2.0).reshape(3, 4)


@pytest.mark.parametrize("kw", [{}, {"axis": 0}, {"axis": 1}, {"axis": -1, "keepdims": True},
                                {"axis": (0, 1)}, {"keepdims": True}])
def test_logsumexp_axes(kw):
    f = lambda z: sps.logsumexp(z, **kw)  # noqa: E731
    value, _ = nad.jvp(f, X34, np.ones_like(X34))
    np.testing.assert_allclose(value, sps.logsumexp(X34, **kw), rtol=1e-14)
    check_jvp(f, X34)
    check_hvp(lambda z: np.sum(f(z) ** 2), X34)


def test_logsumexp_weights():
    b = np.array([[1.0, 0.0, 2.0, 0.5]])
    x = X34.copy()
    x[:, 1] = 900.0  # b == 0 there: SciPy ignores these entries, their size too
    f = lambda z: sps.logsumexp(z, axis=1, b=b)  # noqa: E731
    value, _ = nad.jvp(f, x, np.ones_like(x))
    np.testing.assert_allclose(value, sps.logsumexp(x, axis=1, b=b), rtol=1e-14)
    check_jvp(f, x)
    check_hvp(lambda z: np.sum(f(z)), x)
    # traced weights
    g = lambda z: sps.logsumexp(X34, axis=0, b=np.exp(z))  # noqa: E731
    w = _normal(4)
    value, _ = nad.jvp(g, w, np.ones_like(w))
    np.testing.assert_allclose(value, sps.logsumexp(X34, axis=0, b=np.exp(w)), rtol=1e-14)
    check_jvp(g, w)


def test_logsumexp_return_sign():
    b = np.array([1.0, -2.0, 0.5, -0.1])
    f = lambda z: sps.logsumexp(z, b=b, return_sign=True)  # noqa: E731
    for x in (np.array([0.1, 0.2, 0.3, 0.4]), np.array([1.0, -1.0, 0.3, 2.0])):
        out, sign = f(Var(x))
        ref_out, ref_sign = sps.logsumexp(x, b=b, return_sign=True)
        assert out.value == pytest.approx(ref_out, rel=1e-14) and sign.value == ref_sign
        check_jvp(lambda z: f(z)[0], x)


def test_logsumexp_infinities():
    for x in (np.array([-np.inf, -np.inf]), np.array([np.inf, 1.0])):
        out = sps.logsumexp(Var(x))
        assert out.value == sps.logsumexp(x)


@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("fn", [sps.softmax, sps.log_softmax])
def test_softmax(fn, axis):
    f = lambda z: fn(z, axis=axis)  # noqa: E731
    value, _ = nad.jvp(f, X34, np.ones_like(X34))
    np.testing.assert_allclose(value, fn(X34, axis=axis), rtol=1e-14, atol=1e-300)
    check_jvp(f, X34)
    check_hvp(lambda z: np.sum(f(z) * X34), X34)


def test_log_softmax_large_gap():
    x = np.array([1e3, 0.0])
    value, _ = nad.jvp(lambda z: sps.log_softmax(z), x, np.ones_like(x))
    np.testing.assert_array_equal(value, sps.log_softmax(x))


# ---- scipy.stats ---------------------------------------------------------------------------------

@pytest.mark.parametrize("method", ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"])
def test_norm_methods_with_traced_loc_scale(method):
    x = _normal(4, 2.0)
    f = lambda z: getattr(stats.norm, method)(x, loc=z[0], scale=np.exp(z[1]))  # noqa: E731
    g = lambda z: getattr(stats.norm, method)(z, 0.3, 1.7)  # noqa: E731
    p = np.array([0.2, -0.3])
    value, _ = nad.jvp(f, p, np.ones(2))
    np.testing.assert_allclose(value, getattr(stats.norm, method)(x, 0.2, np.exp(-0.3)), rtol=1e-13)
    value, _ = nad.jvp(g, x, np.ones_like(x))
    np.testing.assert_allclose(value, getattr(stats.norm, method)(x, 0.3, 1.7), rtol=1e-13)
    check_jvp(f, p)
    check_jvp(g, x)
    check_hvp(lambda z: np.sum(f(z)), p)


def test_frozen_norm_routes():
    x = _normal(3)
    value, g = nad.value_and_grad(lambda z: np.sum(stats.norm(1.0, 2.0).logpdf(z)))(x)
    assert value == pytest.approx(np.sum(stats.norm(1.0, 2.0).logpdf(x)), rel=1e-14)
    np.testing.assert_allclose(g, -(x - 1.0) / 4.0, rtol=1e-14)


def test_t_logpdf_traced_df():
    x = _normal(5, 2.0)
    f = lambda z: stats.t.logpdf(x, np.exp(z[0]), z[1], np.exp(z[2]))  # noqa: E731
    p = np.array([1.2, 0.1, -0.2])
    value, _ = nad.jvp(f, p, np.ones(3))
    np.testing.assert_allclose(value, stats.t.logpdf(x, np.exp(1.2), 0.1, np.exp(-0.2)), rtol=1e-12)
    check_jvp(f, p)
    check_hvp(lambda z: np.sum(f(z)), p)
    check_jvp(lambda z: stats.t.pdf(z, 3.5), x)


MEAN = np.array([0.5, -1.0, 0.2])
_A = rng.normal(size=(3, 3))
COV = _A @ _A.T + 3 * np.eye(3)


@pytest.mark.parametrize("cov", [COV, np.array([1.0, 2.0, 0.5]), 2.5],
                         ids=["full", "diag", "scalar"])
@pytest.mark.parametrize("shape", [(3,), (4, 3), (2, 2, 3)])
def test_multivariate_normal_constant_cov(cov, shape):
    x = _normal(int(np.prod(shape))).reshape(shape)
    f = lambda z: stats.multivariate_normal.logpdf(z, MEAN, cov)  # noqa: E731
    value, _ = nad.jvp(f, x, np.ones_like(x))
    np.testing.assert_allclose(value, stats.multivariate_normal.logpdf(x, MEAN, cov), rtol=1e-13)
    check_jvp(f, x)
    check_hvp(lambda z: np.sum(f(z)), x)


def test_multivariate_normal_traced_mean_and_cov():
    x = _normal(12).reshape(4, 3)

    def f(z):
        L = np.tril(np.reshape(z[3:], (3, 3)))
        return np.sum(stats.multivariate_normal.logpdf(x, z[:3], L @ L.T + np.eye(3)))

    L0 = np.linalg.cholesky(COV - np.eye(3))
    z = np.concatenate([MEAN, L0.ravel()])
    value, g = nad.value_and_grad(f)(z)
    assert value == pytest.approx(np.sum(stats.multivariate_normal.logpdf(x, MEAN, COV)), rel=1e-12)
    assert_close(g, np.array([central_jvp(f, z, e) for e in np.eye(z.size)]), 1e-6, 1e-7)
    check_hvp(f, z)


def test_multivariate_normal_one_dimensional_points():
    x = _normal(5)
    f = lambda z: stats.multivariate_normal.logpdf(z, 0.5, 2.0)  # noqa: E731
    value, _ = nad.jvp(f, x, np.ones_like(x))
    np.testing.assert_allclose(value, stats.multivariate_normal.logpdf(x, 0.5, 2.0), rtol=1e-13)


# ---- unsupported arguments are named -------------------------------------------------------------

def test_unsupported_arguments_are_rejected_by_name():
    x = np.array([0.3, 0.4, 0.2])
    with pytest.raises(NotImplementedError, match="allow_singular"):
        nad.grad(lambda z: stats.multivariate_normal.logpdf(z, allow_singular=True))(x)
    with pytest.raises(NotImplementedError, match="copy"):
        nad.grad(lambda z: np.sum(np.nan_to_num(z, copy=False)))(x)
    with pytest.raises(NotImplementedError, match="out"):
        nad.grad(lambda z: np.sum(np.round(z, 1, out=np.empty(3))))(x)
    with pytest.raises(NotImplementedError, match="order n"):
        nad.grad(lambda z: np.sum(sps.polygamma(z, z)))(x)
    with pytest.raises(NotImplementedError, match="out"):
        nad.grad(lambda z: np.sum(sps.erf(z, out=np.empty(3))))(x)


# ---- numba engine --------------------------------------------------------------------------------

def test_numba_engine_runs_lowered_special_functions(monkeypatch):
    def f(z):
        return (np.sum(sps.erf(z) + sps.expit(z) * sps.log_expit(-z) + sps.xlogy(z, z * z + 1.0))
                + np.sum(np.hypot(z, 2.0) + np.arcsinh(z) + np.cbrt(z + 5.0)
                         + sps.logit(sps.expit(z)))
                + np.sum(z % 0.7 + np.rint(z) * z) + sps.logsumexp(z)
                + np.sum(sps.gammaln(z + 4.0)))

    x = _normal(6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback warning: lowered or documented NumPy-only
        v, g = nad.value_and_grad(f, engine="numba")(x)
        hv = nad.hvp(f, x, np.eye(6)[:, :2], engine="numba")
        v_ref, g_ref = nad.value_and_grad(f, engine="numpy")(x)
    assert v == pytest.approx(v_ref, rel=1e-12)
    np.testing.assert_allclose(g, g_ref, rtol=1e-11)
    np.testing.assert_allclose(hv, nad.hvp(f, x, np.eye(6)[:, :2], engine="numpy"), rtol=1e-10)
    check_jvp(f, x)


def test_numba_value_program_of_special_functions_is_compiled():
    from newtonad.ad.engine import compile_program, numba_engine

    program = nad.trace(lambda z: np.sum(sps.erf(z) + sps.expit(z) + np.hypot(z, 1.0)), np.ones(3))
    assert numba_engine.lower(program) is not None  # no Unsupported primitive
    assert compile_program(program, "numba")(np.ones(3))[0] == pytest.approx(
        3 * (sps.erf(1.0) + sps.expit(1.0) + np.hypot(1.0, 1.0)), rel=1e-14)


# ---- routing plain SciPy calls -------------------------------------------------------------------

def test_scipy_functions_are_wrapped_and_unchanged_on_arrays():
    for fn in (scipy.special.logsumexp, scipy.special.softmax, scipy.special.log_softmax,
               scipy.special.polygamma, stats.norm.logpdf, scipy.linalg.solve_triangular):
        assert hasattr(fn, "__newtonad_impl__") and hasattr(fn, "__wrapped__"), fn
    x = _normal(5)
    assert scipy.special.logsumexp(x) == scipy.special.logsumexp.__wrapped__(x)
    assert scipy.special.logsumexp.__name__ == "logsumexp"
    np.testing.assert_array_equal(stats.norm.logpdf(x, 1.0),
                                  stats.norm.logpdf.__wrapped__(stats.norm, x, 1.0))


def test_wrapped_scipy_functions_pickle():
    import pickle

    for fn in (scipy.special.logsumexp, scipy.linalg.solve_triangular):
        assert pickle.loads(pickle.dumps(fn)) is fn
    assert pickle.loads(pickle.dumps(stats.norm.logpdf))(0.3) == stats.norm.logpdf(0.3)


def test_traced_values_inside_lists_route():
    x = np.array([0.3, 1.2])
    g = nad.grad(lambda z: scipy.special.logsumexp([z[0], z[1], 0.5]))(x)
    e = np.exp(np.array([0.3, 1.2, 0.5]))
    np.testing.assert_allclose(g, (e / e.sum())[:2], rtol=1e-14)


def test_newtonad_scipy_namespaces():
    import newtonad.scipy.linalg as nla
    import newtonad.scipy.stats as nst

    assert {"logsumexp", "softmax", "log_softmax", "polygamma", "erf", "expit", "gammaln",
            "digamma", "i0e", "log_ndtr"} <= set(nsp.__all__)
    assert set(nst.__all__) == {"norm", "t", "multivariate_normal", "gamma", "beta", "chi2",
                                "poisson"}
    assert {"solve_triangular", "cho_solve", "cho_factor", "cholesky"} <= set(nla.__all__)
    x = _normal(4)
    assert nsp.logsumexp(x) == sps.logsumexp(x)
    g = nad.grad(lambda z: nsp.logsumexp(z) + np.sum(nst.norm.logcdf(z)))(x)
    expected = sps.softmax(x) + np.exp(stats.norm.logpdf(x) - stats.norm.logcdf(x))
    np.testing.assert_allclose(g, expected, rtol=1e-13)


def test_hint_names_a_scipy_function_bound_before_routing(monkeypatch):
    unwrapped = scipy.special.logsumexp.__wrapped__  # as bound by an early `from ... import`
    seen = []

    def concrete(self, what):
        seen.append(scipy_dispatch.scipy_caller_hint())
        raise nad.TracerBoolError(what)

    monkeypatch.setattr(Var, "_concrete", concrete)
    with pytest.raises(nad.TracerBoolError):  # raised by the patched _concrete
        nad.grad(lambda z: unwrapped(z))(np.ones(3))
    assert seen and seen[0] is not None
    assert "scipy.special.logsumexp" in seen[0] and "newtonad.scipy.special.logsumexp" in seen[0]
    seen.clear()
    with pytest.raises(nad.TracerBoolError):  # raised by the patched _concrete
        nad.grad(lambda z: float(z[0]))(np.ones(3))
    assert seen == [None]


def _run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_import_order_scipy_after_newtonad():
    out = _run(
        "import sys, numpy as np, newtonad as nad\n"
        "assert not [m for m in sys.modules if m.startswith('scipy')], 'newtonad imported scipy'\n"
        "from scipy.special import logsumexp\n"
        "from scipy.stats import norm\n"
        "f = lambda z: logsumexp(z) + np.sum(norm.logpdf(z))\n"
        "print(nad.grad(f, engine='numpy')(np.array([0.0, 1.0])).tolist())\n")
    e = np.exp([0.0, 1.0])
    np.testing.assert_allclose(eval(out), e / e.sum() - np.array([0.0, 1.0]), rtol=1e-14)


def test_import_order_scipy_before_newtonad():
    out = _run(
        "import numpy as np, scipy.special, scipy.stats\n"
        "import newtonad as nad\n"
        "f = lambda z: scipy.special.logsumexp(z) + np.sum(scipy.stats.norm.logpdf(z))\n"
        "print(nad.grad(f, engine='numpy')(np.array([0.0, 1.0])).tolist())\n")
    e = np.exp([0.0, 1.0])
    np.testing.assert_allclose(eval(out), e / e.sum() - np.array([0.0, 1.0]), rtol=1e-14)
