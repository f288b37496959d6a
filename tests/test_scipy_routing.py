"""The switch of the SciPy routing: ``newtonad.scipy_routing`` and ``NEWTONAD_SCIPY_ROUTING``.

Off, SciPy's modules hold SciPy's own objects again (compared by identity with the
functions in SciPy's private modules, which newtonad never touches) and newtonad has no
hook on ``sys.meta_path``; a traced call then fails saying how to turn routing on. On,
the same wrappers come back and plain SciPy calls trace. Derivatives are checked
against SciPy's own closed forms (softmax is the gradient of logsumexp).
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.linalg
import scipy.special
import scipy.stats
from scipy.linalg import _basic, _decomp_cholesky
from scipy.special import _logsumexp
from scipy.stats import _distn_infrastructure

import newtonad as nad
import newtonad.scipy.special as nsp

X = np.array([0.3, -1.2, 2.0])


def _originals() -> dict[str, object]:
    """What SciPy itself binds: its functions from the private modules that define them."""
    return {"logsumexp": _logsumexp.logsumexp, "softmax": _logsumexp.softmax,
            "solve_triangular": _basic.solve_triangular,
            "cho_solve": _decomp_cholesky.cho_solve,
            "norm.logpdf": _distn_infrastructure.rv_continuous.logpdf}


def _current() -> dict[str, object]:
    return {"logsumexp": scipy.special.logsumexp, "softmax": scipy.special.softmax,
            "solve_triangular": scipy.linalg.solve_triangular,
            "cho_solve": scipy.linalg.cho_solve,
            "norm.logpdf": type(scipy.stats.norm).logpdf}


def _newtonad_finders() -> list[object]:
    return [f for f in sys.meta_path if type(f).__module__.startswith("newtonad")]


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()


def test_off_restores_scipy_objects_and_on_brings_the_same_wrappers_back():
    wrapped = _current()
    assert all(wrapped[k] is not v for k, v in _originals().items())  # routing is on here
    assert len(_newtonad_finders()) == 1  # one hook serves every watched SciPy module
    with nad.scipy_routing(False):
        now = _current()
        for name, original in _originals().items():
            assert now[name] is original, name
        assert "logpdf" not in vars(type(scipy.stats.norm))  # inherited again, as SciPy has it
        assert _newtonad_finders() == []
        with nad.scipy_routing(True):  # nested: on inside off
            assert _current() == wrapped and len(_newtonad_finders()) == 1
        assert _current() == _originals()
    assert all(_current()[k] is v for k, v in wrapped.items())
    assert len(_newtonad_finders()) == 1


def test_traced_call_while_off_says_how_to_turn_it_on():
    with nad.scipy_routing(False):
        with pytest.raises(nad.TracerBoolError, match=r"scipy_routing\(True\)") as err:
            nad.grad(lambda z: scipy.special.logsumexp(z), engine="numpy")(X)
        assert "scipy.special.logsumexp" in str(err.value)
        assert "newtonad.scipy.special.logsumexp" in str(err.value)
        with pytest.raises(nad.TracerBoolError, match=r"NEWTONAD_SCIPY_ROUTING"):
            nad.grad(lambda z: np.sum(scipy.stats.norm.logpdf(z)), engine="numpy")(X)
        # newtonad's own namespace holds the wrappers: it traces with routing off
        g = nad.grad(lambda z: nsp.logsumexp(z), engine="numpy")(X)
        np.testing.assert_allclose(g, _softmax(X), rtol=1e-14)
        # and other code's plain calls get SciPy's results
        assert scipy.special.logsumexp(X) == _logsumexp.logsumexp(X)


def test_on_traces_module_functions_methods_and_linalg():
    def f(z):
        a = np.array([[2.0, 0.0], [0.5, 1.5]]) + z[0] * np.eye(2)
        c = scipy.linalg.cho_factor(a @ a.T, lower=True)
        return (scipy.special.logsumexp(z) + np.sum(scipy.stats.norm.logpdf(z, 0.5, 2.0))
                + np.sum(scipy.linalg.cho_solve(c, z[1:])))

    with nad.scipy_routing(False):
        with nad.scipy_routing(True):
            g = nad.grad(f, engine="numpy")(X)
    eps = 1e-6
    fd = np.array([(f(X + eps * e) - f(X - eps * e)) / (2 * eps) for e in np.eye(3)])
    np.testing.assert_allclose(g, fd, rtol=1e-7, atol=1e-8)
    z = X
    expected = _softmax(z) - (z - 0.5) / 4.0  # the first two terms in closed form
    a = np.array([[2.0, 0.0], [0.5, 1.5]]) + z[0] * np.eye(2)
    expected[1:] += np.linalg.solve(a @ a.T, np.ones(2))  # d/db of 1^T (A A^T)^{-1} b
    np.testing.assert_allclose(g[1:], expected[1:], rtol=1e-12)


def test_switch_takes_a_bool():
    with pytest.raises(TypeError, match="True or False"):
        nad.scipy_routing("off")  # type: ignore[arg-type]
    assert hasattr(scipy.special.logsumexp, "__newtonad_impl__")  # state unchanged


def _fresh(code: str, value: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, NEWTONAD_SCIPY_ROUTING=value)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=env)


def test_environment_variable_turns_routing_off_at_import():
    code = ("import sys, numpy as np, newtonad as nad\n"
            "assert not [f for f in sys.meta_path if type(f).__module__.startswith('newtonad')]\n"
            "import scipy.special\n"
            "from scipy.special import _logsumexp\n"
            "assert scipy.special.logsumexp is _logsumexp.logsumexp\n"
            "f = lambda z: scipy.special.logsumexp(z)\n"
            "try:\n"
            "    nad.grad(f, engine='numpy')(np.zeros(2))\n"
            "except nad.TracerBoolError as e:\n"
            "    assert 'scipy_routing(True)' in str(e), str(e)\n"
            "else:\n"
            "    raise AssertionError('traced with routing off')\n"
            "nad.scipy_routing(True)\n"
            "print(nad.grad(f, engine='numpy')(np.array([0.0, np.log(3.0)])).tolist())\n")
    out = _fresh(code, "0")
    assert out.returncode == 0, out.stderr
    np.testing.assert_allclose(eval(out.stdout), [0.25, 0.75], rtol=1e-14)


def test_unknown_environment_value_is_a_clear_error():
    out = _fresh("import newtonad", "maybe")
    assert out.returncode != 0
    assert "NEWTONAD_SCIPY_ROUTING='maybe'" in out.stderr and "set it to 0" in out.stderr


@pytest.mark.parametrize("kw", [{}, {"assume_a": "pos"}, {"assume_a": "sym", "lower": True},
                                {"assume_a": "lower triangular"}, {"assume_a": "diagonal"},
                                {"transposed": True},
                                {"assume_a": "lower triangular", "transposed": True},
                                {"assume_a": "pos", "lower": True, "transposed": True}])
def test_scipy_linalg_solve_reads_what_scipy_reads(kw):
    """Values and gradients (w.r.t. the matrix) against SciPy's own solve, on a matrix
    whose two triangles disagree, so reading the wrong part shows."""
    rng = np.random.default_rng(3)
    m = rng.standard_normal((4, 4))
    a = m @ m.T + 4 * np.eye(4) + np.triu(rng.standard_normal((4, 4)), 1)
    b, w = rng.standard_normal((4, 2)), rng.standard_normal((4, 2))

    def f(z):
        return np.sum(w * scipy.linalg.solve(z, b, **kw))

    value, g = nad.value_and_grad(f, engine="numpy")(a)
    assert value == pytest.approx(f(a), rel=1e-12)
    eps = 1e-6
    fd = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        e = np.zeros_like(a)
        e[i] = eps
        fd[i] = (f(a + e) - f(a - e)) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


def test_scipy_linalg_solve_refuses_banded():
    with pytest.raises(NotImplementedError, match="assume_a='banded'"):
        nad.grad(lambda z: np.sum(scipy.linalg.solve(z, np.ones(3), assume_a="banded")),
                 engine="numpy")(np.eye(3))
