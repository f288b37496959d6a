"""One registration per NumPy function: ``@numpy_function`` where the function is defined
fills the dispatch tables, the ``newtonad.numpy`` namespace and Var's methods.

The expected sets below were computed from the code before the registrations moved to the
definitions (three hand-kept lists: ``numpy_api``'s tables, ``newtonad/numpy.py``'s imports
and Var's one-line forwarders), so the move changed no public name. A name added on
purpose is added here too (``trapezoid``, the first function added with one registration);
a name lost by accident fails.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import newtonad as nad
import newtonad.numpy as nnp
from newtonad.ad import array_methods, dispatch
from newtonad.ad.var import Var

from .helpers import check_hvp, check_jvp, check_vjp_vs_jvp

ROOT = Path(__file__).resolve().parent.parent

#: the public names of newtonad.numpy
NAMESPACE = frozenset("""
    abs absolute add amax amin append arccos arccosh arcsin arcsinh arctan arctan2
    arctanh argmax argmin argpartition argsort around array array_split asarray astype
    atleast_1d atleast_2d atleast_3d average broadcast_to cbrt ceil clip column_stack
    concat concatenate copy cos cosh cross cumprod cumsum deg2rad degrees diag diagonal
    diff divide divmod dot dsplit einsum equal exp exp2 expand_dims expm1 fftshift fix
    flip fliplr flipud floor floor_divide fmod full_like getitem gradient greater
    greater_equal hsplit hstack hypot ifftshift inner kron less less_equal linalg
    linspace log log10 log1p log2 logaddexp logaddexp2 logical_and logical_not
    logical_or logsumexp matmul max maximum mean median min minimum mod moveaxis
    multiply nan_to_num nanmean nansum negative norm not_equal ones_like outer pad
    partition percentile positive power prod quantile rad2deg radians ravel reciprocal
    remainder repeat reshape rint roll rot90 round sign sin sinc sinh sort split sqrt
    square squeeze stack std stop_gradient subtract sum swapaxes take take_along_axis
    tan tanh tensordot tile trace transpose trapezoid tril triu true_divide trunc var vdot
    vsplit vstack where zeros_like
""".split())

#: the names of newtonad.numpy.linalg
LINALG = frozenset("""
    cholesky cross det diagonal eigh eigvalsh inv matrix_norm matrix_power multi_dot
    norm pinv qr slogdet solve svd svdvals trace vector_norm
""".split())

#: the public methods, properties and slots of Var (its class and mixin)
VAR_MEMBERS = frozenset("""
    T argmax argmin argpartition argsort astype aval backward captured clip conj
    conjugate const copy creator cumprod cumsum diagonal dot dtype flatten grad id item
    mT max mean min ndim nonzero partition prod ravel real repeat reshape round shape
    size sort squeeze std sum swapaxes take tolist trace transpose value var
""".split())

#: dispatch.UFUNCS: ufunc names
UFUNCS = frozenset("""
    absolute add arccos arccosh arcsin arcsinh arctan arctan2 arctanh betaln cbrt ceil
    conjugate cos cosh deg2rad degrees divide divmod entr equal erf erfc erfcx erfinv
    exp exp2 expit expm1 fabs floor floor_divide fmax fmin fmod gammaln greater
    greater_equal hypot i0 i0e i1 i1e less less_equal log log10 log1p log2 log_expit
    log_ndtr logaddexp logaddexp2 logical_and logical_not logical_or logit matmul
    maximum minimum multiply ndtr negative not_equal positive power psi rad2deg radians
    reciprocal remainder rint sign sin sinh sqrt square subtract tan tanh true_divide
    trunc xlog1py xlogy
""".split())

#: dispatch.UFUNC_REDUCE: ufunc names
UFUNC_REDUCE = frozenset("""
    add maximum minimum multiply
""".split())

#: dispatch.FUNCTIONS: where users find each function object (one name each)
FUNCTIONS = frozenset("""
    numpy.amax numpy.amin numpy.angle numpy.append numpy.argmax numpy.argmin
    numpy.argpartition numpy.argsort numpy.around numpy.array_split numpy.atleast_1d
    numpy.atleast_2d numpy.atleast_3d numpy.average numpy.broadcast_to numpy.clip
    numpy.column_stack numpy.concat numpy.copy numpy.cross numpy.cumprod numpy.cumsum
    numpy.diag numpy.diagonal numpy.diff numpy.dot numpy.dsplit numpy.einsum
    numpy.empty_like numpy.expand_dims numpy.fft.fft numpy.fft.fft2 numpy.fft.fftn
    numpy.fft.fftshift numpy.fft.hfft numpy.fft.ifft numpy.fft.ifft2 numpy.fft.ifftn
    numpy.fft.ifftshift numpy.fft.ihfft numpy.fft.irfft numpy.fft.irfft2
    numpy.fft.irfftn numpy.fft.rfft numpy.fft.rfft2 numpy.fft.rfftn numpy.fix numpy.flip
    numpy.fliplr numpy.flipud numpy.full_like numpy.gradient numpy.hsplit numpy.hstack
    numpy.imag numpy.inner numpy.kron numpy.linalg.cholesky numpy.linalg.cross
    numpy.linalg.det numpy.linalg.diagonal numpy.linalg.eigh numpy.linalg.eigvalsh
    numpy.linalg.inv numpy.linalg.matrix_norm numpy.linalg.matrix_power
    numpy.linalg.multi_dot numpy.linalg.norm numpy.linalg.pinv numpy.linalg.qr
    numpy.linalg.slogdet numpy.linalg.solve numpy.linalg.svd numpy.linalg.svdvals
    numpy.linalg.trace numpy.linalg.vector_norm numpy.linspace numpy.matmul numpy.max
    numpy.mean numpy.median numpy.min numpy.moveaxis numpy.nan_to_num numpy.nanmean
    numpy.nansum numpy.ndim numpy.ones_like numpy.outer numpy.pad numpy.partition
    numpy.percentile numpy.permute_dims numpy.prod numpy.quantile numpy.ravel numpy.real
    numpy.repeat numpy.reshape numpy.result_type numpy.roll numpy.rollaxis numpy.rot90
    numpy.round numpy.select numpy.shape numpy.sinc numpy.size numpy.sort numpy.split
    numpy.squeeze numpy.stack numpy.std numpy.sum numpy.swapaxes numpy.take
    numpy.take_along_axis numpy.tensordot numpy.tile numpy.trace numpy.trapezoid numpy.tril
    numpy.triu numpy.var numpy.vdot numpy.vsplit numpy.vstack numpy.where numpy.zeros_like
""".split())

#: dispatch.METHODS: named implementations
METHODS = frozenset("""
    astype fold_objects getitem op_backward
""".split())

#: dispatch.SCIPY_FUNCTIONS: dotted public names
SCIPY_FUNCTIONS = frozenset("""
    scipy.linalg.cho_factor scipy.linalg.cho_solve scipy.linalg.cholesky
    scipy.linalg.solve scipy.linalg.solve_triangular scipy.special.log_softmax
    scipy.special.logsumexp scipy.special.polygamma scipy.special.softmax
    scipy.stats.beta.logpdf scipy.stats.beta.pdf scipy.stats.chi2.logpdf
    scipy.stats.chi2.pdf scipy.stats.gamma.logpdf scipy.stats.gamma.pdf
    scipy.stats.multivariate_normal.entropy scipy.stats.multivariate_normal.logpdf
    scipy.stats.multivariate_normal.pdf scipy.stats.norm.cdf scipy.stats.norm.logcdf
    scipy.stats.norm.logpdf scipy.stats.norm.logsf scipy.stats.norm.pdf
    scipy.stats.norm.sf scipy.stats.poisson.logpmf scipy.stats.poisson.pmf
    scipy.stats.t.cdf scipy.stats.t.logcdf scipy.stats.t.logpdf scipy.stats.t.pdf
    scipy.stats.t.sf
""".split())


def _resolve(dotted: str):
    obj = importlib.import_module(dotted.split(".")[0])
    for part in dotted.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


def _public(obj) -> set[str]:
    return {name for name in vars(obj) if not name.startswith("_")}


# ---- nothing lost, nothing added --------------------------------------------------------------

def test_the_namespace_keeps_its_names():
    assert _public(nnp) == NAMESPACE
    assert _public(nnp.linalg) == LINALG


def test_var_keeps_its_methods():
    members = set()
    for klass in Var.__mro__:
        if klass.__module__.startswith("newtonad"):
            members |= _public(klass)
    assert members == VAR_MEMBERS


def test_the_dispatch_tables_keep_their_keys():
    assert set(dispatch.UFUNCS) == UFUNCS
    assert set(dispatch.UFUNC_REDUCE) == UFUNC_REDUCE
    assert set(dispatch.METHODS) == METHODS
    assert set(dispatch.SCIPY_FUNCTIONS) == SCIPY_FUNCTIONS
    expected = {id(_resolve(name)) for name in FUNCTIONS}
    assert {id(fn) for fn in dispatch.FUNCTIONS} == expected


# ---- the three views agree ---------------------------------------------------------------------

def test_a_function_registered_for_numpy_is_the_namespace_function_of_that_name():
    """``nnp.sum`` is what ``np.sum`` reaches on a traced value (one object, not two copies)."""
    checked = 0
    for name in NAMESPACE - {"linalg"}:
        target = getattr(np, name, None)
        if isinstance(target, np.ufunc):
            impl = dispatch.UFUNCS.get(target.__name__)
        else:
            impl = dispatch.FUNCTIONS.get(target)
        if impl is not None:
            assert impl is getattr(nnp, name), name
            checked += 1
    assert checked > 120
    for name in LINALG:
        if hasattr(np.linalg, name):
            assert dispatch.FUNCTIONS[getattr(np.linalg, name)] is getattr(nnp.linalg, name)


X = np.arange(1.0, 13.0).reshape(3, 4) / 7.0

# method -> (arguments, the NumPy array method's value on X with those arguments)
METHOD_CALLS = {
    "sum": ((), {"axis": 0}), "mean": ((1,), {}), "prod": ((), {"keepdims": True}),
    "max": ((), {"axis": 1}), "min": ((0,), {}), "var": ((), {"ddof": 1}), "std": ((1,), {}),
    "cumsum": ((), {"axis": 1}), "cumprod": ((0,), {}), "argsort": ((), {"axis": 0}),
    "argmax": ((), {}), "argmin": ((1,), {}), "argpartition": ((1,), {"axis": 1}),
    "round": ((2,), {}), "dot": ((X.T,), {}), "swapaxes": ((0, 1), {}), "squeeze": ((), {}),
    "clip": ((0.5, 1.2), {}), "repeat": ((2,), {"axis": 0}), "take": (([0, 5],), {}),
    "ravel": (("C",), {}), "flatten": ((), {}), "diagonal": ((1,), {}), "trace": ((), {}),
}


def test_generated_methods_are_numpy_array_methods():
    """Each generated method returns what NumPy's array method returns, on an eager Var."""
    assert set(METHOD_CALLS) == set(dispatch.ARRAY_METHODS)
    for name, (args, kwargs) in METHOD_CALLS.items():
        got = getattr(nad.Var(X), name)(*args, **kwargs)
        np.testing.assert_allclose(np.asarray(got.value), getattr(X, name)(*args, **kwargs),
                                   rtol=1e-14, err_msg=name)


def test_generated_methods_show_their_arguments_and_name_the_original():
    for name, impl in dispatch.ARRAY_METHODS.items():
        method = getattr(Var, name)
        params = list(inspect.signature(method).parameters)
        assert params[0] == "self" and params[1:] == list(inspect.signature(impl).parameters)[1:]
        assert method.__doc__ == f"Traced version of numpy.ndarray.{name}."
    assert list(inspect.signature(nad.Var(X).sum).parameters)[:2] == ["axis", "dtype"]


def test_a_method_derivative_is_the_function_derivative():
    """``x.var(axis=0)`` traces to the same derivative as ``np.var(x, axis=0)``."""
    w = np.array([0.3, -1.0, 2.0, 0.5])
    by_method = nad.grad(lambda x: np.sum(w * x.var(axis=0)), engine="numpy")(X)
    by_function = nad.grad(lambda x: np.sum(w * np.var(x, axis=0)), engine="numpy")(X)
    centred = X - X.mean(axis=0)
    np.testing.assert_allclose(by_method, by_function, rtol=1e-14)
    np.testing.assert_allclose(by_method, 2 * w * centred / X.shape[0], rtol=1e-13, atol=1e-15)


# ---- one decorator, every view -----------------------------------------------------------------

@pytest.fixture
def scratch_tables():
    """The tables and Var's mixin as they were, after a test registers a toy function."""
    saved = {name: dict(getattr(dispatch, name)) for name in
             ("UFUNCS", "UFUNC_REDUCE", "FUNCTIONS", "NAMESPACE", "ARRAY_METHODS")}
    mixin = dict(vars(array_methods.ArrayMethods))
    yield
    for name, table in saved.items():
        getattr(dispatch, name).clear()
        getattr(dispatch, name).update(table)
    for name in set(vars(array_methods.ArrayMethods)) - set(mixin):
        delattr(array_methods.ArrayMethods, name)


def test_one_decorator_registers_in_every_table(scratch_tables):
    """A function NumPy has and newtonad lacks (``np.ptp``), registered in one line, traces
    through ``np.ptp``, ``x.ptp()`` and the namespace table, and differentiates."""
    assert np.ptp not in dispatch.FUNCTIONS and not hasattr(Var, "ptp")

    @dispatch.numpy_function(np.ptp, method="ptp")
    def ptp(a, axis=None, out=None, keepdims=False):
        return nnp.max(a, axis=axis, keepdims=keepdims) - nnp.min(a, axis=axis,
                                                                   keepdims=keepdims)

    assert dispatch.NAMESPACE["ptp"] is ptp and dispatch.FUNCTIONS[np.ptp] is ptp
    x = np.array([0.5, -2.0, 3.0, 1.0])
    assert float(np.ptp(nad.Var(x)).value) == float(nad.Var(x).ptp().value) == 5.0
    np.testing.assert_array_equal(nad.grad(lambda x: np.ptp(x))(x), [0.0, -1.0, 1.0, 0.0])


@pytest.mark.skipif(not hasattr(np, "vecdot"), reason="np.vecdot is NumPy 2's")
def test_a_ufunc_registers_by_name_and_a_generalised_ufunc_also_as_function(scratch_tables):
    @dispatch.numpy_function(np.heaviside, np.vecdot, ufunc="toy", name=())
    def toy(x, y):
        return x

    assert dispatch.UFUNCS["heaviside"] is dispatch.UFUNCS["vecdot"] is dispatch.UFUNCS["toy"]
    assert dispatch.FUNCTIONS[np.vecdot] is toy and np.heaviside not in dispatch.FUNCTIONS
    assert "toy" not in dispatch.NAMESPACE


def test_a_second_registration_of_a_name_is_an_error(scratch_tables):
    """Two functions claiming one name would leave the later one winning silently."""
    def sum(a, axis=None):
        return a

    with pytest.raises(ValueError, match=r"numpy\.sum is registered twice, by "
                                         r"newtonad\.ad\.numpy_reductions\.sum"):
        dispatch.numpy_function(np.sum)(sum)
    with pytest.raises(ValueError, match=r"newtonad\.numpy\.sum is registered twice"):
        dispatch.numpy_function(np.ptp)(sum)
    assert dispatch.FUNCTIONS[np.sum].__module__ == "newtonad.ad.numpy_reductions"


# ---- the first function added with one registration: np.trapezoid ------------------------------

Y = np.random.default_rng(3).standard_normal((3, 5))
T1 = np.cumsum(np.abs(Y[0])) + 0.1   # sample points along the last axis
T2 = np.cumsum(np.abs(Y), axis=0)     # sample points shaped like Y, along axis 0

TRAPEZOID_CALLS = [
    lambda y: np.trapezoid(y), lambda y: np.trapezoid(y, T1), lambda y: np.trapezoid(y, dx=0.3),
    lambda y: np.trapezoid(y, T2, axis=0), lambda y: np.trapezoid(y, dx=2.0, axis=0),
    lambda y: np.trapezoid(y ** 2, x=np.cumsum(np.exp(y[0])), axis=1),  # traced sample points
]


@pytest.mark.skipif(not hasattr(np, "trapezoid"), reason="np.trapezoid is NumPy 2's")
def test_trapezoid_matches_numpy_and_differentiates():
    with nad.settings.override(engine="numpy"):
        for f in TRAPEZOID_CALLS:
            traced, _ = nad.jvp(f, Y, np.zeros_like(Y))
            np.testing.assert_allclose(traced, f(Y), rtol=1e-13, atol=1e-14)
            check_jvp(f, Y)
            check_vjp_vs_jvp(f, Y)
        check_hvp(lambda y: np.sum(np.trapezoid(y ** 2, x=np.cumsum(np.exp(y[0])), axis=1)), Y)
        # the rule is exact on a straight line: the integral of 2t + 1 over [0, 3]
        t = np.array([0.0, 0.5, 2.0, 3.0])
        assert float(nnp.trapezoid(2 * t + 1, t)) == 12.0


# ---- what type checkers see ------------------------------------------------------------------

def _static_view() -> tuple[list[str], set[str]]:
    """The modules star-imported by newtonad/numpy.py's TYPE_CHECKING block and the names
    it binds itself."""
    tree = ast.parse((ROOT / "newtonad" / "numpy.py").read_text())
    block = next(node for node in tree.body if isinstance(node, ast.If)
                 and "TYPE_CHECKING" in ast.unparse(node.test))
    stars, names = [], set()
    for node in block.body:
        if isinstance(node, ast.ImportFrom):
            module = "newtonad" + "." * (node.level > 0) + (node.module or "")
            for alias in node.names:
                if alias.name == "*":
                    stars.append(module)
                else:
                    names.add(alias.asname or alias.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return stars, names


def test_the_static_imports_cover_the_generated_namespace():
    """Every name of ``newtonad.numpy`` is visible to a type checker, as the same object."""
    stars, bound = _static_view()
    modules = [importlib.import_module(m) for m in stars]
    for name in NAMESPACE:
        homes = [m for m in modules if name in vars(m)]
        if name in bound:
            continue
        assert homes, f"newtonad.numpy.{name}: no static import; add it to numpy.py"
        # star imports: a type checker keeps the first module's definition of a name
        assert vars(homes[0])[name] is getattr(nnp, name), (name, homes[0].__name__)
    assert bound - {"linalg"} <= NAMESPACE


def test_mypy_reads_the_namespace(tmp_path, request):
    """``mypy`` sees ``nnp.sum``'s real parameters and an alias, and flags a misspelt name."""
    script = tmp_path / "user_script.py"
    script.write_text("import newtonad.numpy as nnp\n"
                      "reveal_type(nnp.sum)\nreveal_type(nnp.amax)\nreveal_type(nnp.linalg)\n"
                      "nnp.summ\n")
    cache = request.config.cache.mkdir("mypy_numpy_namespace")
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--follow-imports=silent", "--no-error-summary",
         "--cache-dir", str(cache), str(script)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
        env={"MYPYPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    revealed = re.findall(r'note: Revealed type is "(.*)"', out.stdout)
    assert len(revealed) == 3, out.stdout + out.stderr
    assert revealed[0].startswith("def (a: Any, axis: Any =") and "keepdims" in revealed[0]
    assert revealed[1].startswith("def (a: Any, axis: Any =")
    assert revealed[2] == "types.SimpleNamespace"
    assert 'Module has no attribute "summ"' in out.stdout
