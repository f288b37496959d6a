"""Objective's per-call bookkeeping: points told apart exactly and
cheaply, one linearisation per point, reused output arrays, and the solvers' vector
kernels. Behaviour only: no timings."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize

import newtonad as nad
from newtonad import objective
from newtonad._point import SMALL_POINT_SIZE
from newtonad.ad.captures import same_contents
from newtonad.solvers import linalg
from newtonad.solvers.problem import FlatProblem

from .helpers import assert_close

LARGE = 3 * SMALL_POINT_SIZE  # points kept as a private copy, not as bytes
COPIES = objective._KERNEL_COPIES_FROM  # ... which the value-and-gradient kernel writes


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _point(n: int, shift: float = 0.0) -> np.ndarray:
    return np.resize([-1.2, 1.0, 0.5, 2.0], n) + shift


# ---- points ---------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [5, LARGE])
@pytest.mark.parametrize("where", [0, "middle", -1])
def test_a_point_changed_in_one_entry_is_a_new_point(n, where):
    obj = nad.Objective(rosen, engine="numpy")
    x = _point(n)
    assert_close(obj.jac(x), scipy.optimize.rosen_der(x), 1e-12, 1e-12)
    y = x.copy()
    y[n // 2 if where == "middle" else where] += 1e-9  # a copy, one entry apart
    assert_close(obj.jac(y), scipy.optimize.rosen_der(y), 1e-12, 1e-12)
    assert obj.njev == 2
    assert_close(obj.jac(x.copy()), scipy.optimize.rosen_der(x), 1e-12, 1e-12)
    assert obj.njev == 3


@pytest.mark.parametrize("n", [5, LARGE])
def test_a_point_changed_in_place_is_a_new_point_and_copies_hit(n):
    obj = nad.Objective(rosen, engine="numpy")
    x = _point(n)
    f0, g0 = obj.value_and_grad(x)
    assert obj.value_and_grad(x.copy())[0] == f0 and obj.njev == 1  # equal values hit
    x[-1] = 7.0  # the caller's array, changed in place
    f1, g1 = obj.value_and_grad(x)
    assert f1 == pytest.approx(scipy.optimize.rosen(x), rel=1e-13)
    assert_close(g1, scipy.optimize.rosen_der(x), 1e-12, 1e-12)
    assert obj.njev == 2
    assert_close(obj.fun(x), f1, 0, 0)  # and x, now, is the point
    assert obj.nfev == 2


def test_a_new_large_point_is_copied_into_the_old_copy():
    """First-order use allocates no private copy per point: the record's copy of the last
    point is overwritten by the next (nothing else holds it)."""
    obj = nad.Objective(rosen, engine="numpy")
    x1, x2, x3 = (_point(LARGE, d) for d in (0.0, 0.1, 0.2))
    obj.value_and_grad(x1)
    kept = obj._at.key[1]
    assert kept is not x1 and np.array_equal(kept, x1)
    for x in (x2, x3, x1):
        g = obj.jac(x)
        assert obj._at.key[1] is kept and np.array_equal(kept, x)
        assert_close(g, scipy.optimize.rosen_der(x), 1e-12, 1e-12)
    assert obj.njev == 4


def test_an_operator_keeps_its_point_when_the_objective_moves_on():
    """A point's copy that a linearisation holds is never reused for the next point."""
    obj = nad.Objective(rosen, engine="numpy")
    x1 = _point(LARGE)
    v = np.random.default_rng(0).standard_normal(LARGE)
    op = obj.linearize_hessp(x1)
    expected = scipy.optimize.rosen_hess_prod(x1, v)
    assert_close(op(v), expected, 1e-12, 1e-12)
    for shift in (0.1, 0.2, 0.3):  # value and gradient at new points, after the products
        x = _point(LARGE, shift)
        assert_close(obj.jac(x), scipy.optimize.rosen_der(x), 1e-12, 1e-12)
        assert_close(obj.hessp(x, v), scipy.optimize.rosen_hess_prod(x, v), 1e-12, 1e-12)
    assert_close(op(v), expected, 1e-12, 1e-12)


@pytest.mark.parametrize("n", [300, LARGE])
def test_hessp_at_one_point_linearises_once(n):
    obj = nad.Objective(rosen, engine="numpy")
    x = _point(n)
    v = np.ones(n)
    obj.hessp(x, v)
    obj.hessp(x, v)  # the second product at x linearises: the residual runner exists now
    key = (x.shape, "linearized_hvp", None)
    (residual_run, linear_run), data = obj._runners[key]
    passes = []

    def counted(*args):
        passes.append(1)
        return residual_run(*args)
    obj._runners[key] = ((counted, linear_run), data)
    for j in range(5):
        e = np.zeros(n)
        e[j] = 1.0
        assert_close(obj.hessp(x.copy(), e), scipy.optimize.rosen_hess_prod(x, e), 1e-12, 1e-12)
    op = obj.linearize_hessp(x)
    for _ in range(3):
        assert_close(op(v), scipy.optimize.rosen_hess_prod(x, v), 1e-12, 1e-12)
    assert passes == []  # x's residuals were made once, before the spy
    y = _point(n, 0.1)
    obj.jac(y)  # Newton use: the gradient pass at a new point makes its residuals
    obj.hessp(y, v)
    obj.hessp(y.copy(), 2 * v)
    assert passes == [1]


# ---- the kernel writes the copies (numba engine, large points) ------------------------------

def _spy_on_copies(obj: nad.Objective, x: np.ndarray) -> list:
    """Record the ``out=`` arrays of each run of the value-and-gradient kernel at x's shape."""
    obj.jac(x)  # makes the runner
    shape, run, data, copies = obj._vg_runner
    assert copies is not None  # a large point under numba: the kernel writing the copies
    outs = []

    def spy(*args, out):
        outs.append(out)
        return run(*args, out=out)
    obj._vg_runner = (shape, spy, data, copies)
    return outs


def test_the_kernel_writes_a_large_point_s_copy_and_the_gradient_given_out():
    """value_and_grad at a new large point: the kernel writes x's copy and the gradient
    into a new array, which the caller gets as it is; the record keeps no gradient, so a
    second caller at the point has it computed again, bit for bit."""
    obj = nad.Objective(rosen, engine="numba")
    x = _point(COPIES)
    outs = _spy_on_copies(obj, x - 0.5)
    f, g = obj.value_and_grad(x)
    (value, given, kept), = outs
    assert g is given and obj._at.key[1] is kept and obj._at.grad is None
    assert np.array_equal(kept, x)
    assert f == pytest.approx(scipy.optimize.rosen(x), rel=1e-13)
    assert_close(g, scipy.optimize.rosen_der(x), 1e-12, 1e-12)
    first = g.copy()
    g[:] = 0.0  # the caller's array: nothing else holds it
    assert obj.fun(x.copy()) == f and len(outs) == 1  # f is still the point's
    njev = obj.njev
    again = obj.jac(x.copy())
    assert again is not g and np.array_equal(again, first)
    assert len(outs) == 2 and outs[1][2] is kept and obj.njev == njev + 1
    y = _point(COPIES, 0.1)
    obj.jac(y)  # the next point's copy is written into the last one's (nothing holds it)
    assert outs[2][2] is kept and np.array_equal(kept, y)


@pytest.mark.parametrize("n", [LARGE, COPIES])  # copied after the kernel, or by it
@pytest.mark.parametrize("where", [0, "middle", -1])
def test_in_place_changes_are_seen_when_the_kernel_keeps_the_copy(n, where):
    obj = nad.Objective(rosen, engine="numba")
    x = _point(n)
    g = obj.jac(x)
    assert (obj._vg_runner[3] is not None) == (n >= COPIES)
    g[:] = 0.0
    x[n // 2 if where == "middle" else where] += 1e-9
    assert_close(obj.jac(x), scipy.optimize.rosen_der(x), 1e-12, 1e-12)
    assert obj.njev == 2
    f = obj.fun(x.copy())  # equal values hit
    assert obj.njev == 2 and f == pytest.approx(scipy.optimize.rosen(x), rel=1e-13)
    # the gradient again: a copy of the record's, or (the first caller took the kernel's
    # array) computed again
    f, g = obj.value_and_grad(x.copy())
    assert obj.njev == (3 if n >= COPIES else 2)
    assert_close(g, scipy.optimize.rosen_der(x), 1e-12, 1e-12)


def test_fun_s_kernel_writes_the_copy_of_x_and_no_gradient_for_a_caller():
    """fun at a new point: the kernel writes x's copy and the record's gradient (a line
    search may ask for f alone); jac there then gives a copy of that gradient."""
    obj = nad.Objective(rosen, engine="numba")
    x = _point(COPIES)
    obj.fun(x - 0.5)
    shape, run, data, copies = obj._vg_runner
    assert copies is not None
    outs = []

    def spy(*args, out):
        outs.append(out)
        return run(*args, out=out)
    obj._vg_runner = (shape, spy, data, copies)
    assert obj.fun(x) == pytest.approx(scipy.optimize.rosen(x), rel=1e-13)
    (value, grad, kept), = outs
    assert grad is copies[1] and obj._at.grad is grad  # a plain array: copied when given
    assert obj._at.key[1] is kept and np.array_equal(kept, x)
    first = obj.jac(x)
    assert first is not grad and np.array_equal(first, grad)
    first[:] = -1.0
    assert_close(obj.jac(x), scipy.optimize.rosen_der(x), 1e-12, 1e-12)
    assert (obj.nfev, obj.njev) == (2, 2) and len(outs) == 1
    y = _point(COPIES, 0.1)
    f, g = obj.value_and_grad(y)  # a new array for the caller, from the same kernel
    assert outs[1][1] is g and g is not grad
    assert_close(g, scipy.optimize.rosen_der(y), 1e-12, 1e-12)
    assert obj.fun(x) == pytest.approx(scipy.optimize.rosen(x), rel=1e-13)
    assert_close(obj.jac(x), scipy.optimize.rosen_der(x), 1e-12, 1e-12)
    assert obj.njev == 4


def _decay(x, w):
    return np.sum(w * np.exp(-x) + np.log1p(x * x)) + 0.5 * np.sum(x[1:] * x[:-1])


@pytest.mark.parametrize("n", [COPIES, 600_000])  # serial loops, and loops on threads
def test_a_gradient_computed_again_is_the_one_given_out_bit_for_bit(n):
    """The gradient a second caller at a point gets (computed again) and the one fun's
    pass keeps hold the same bits as the first caller's, for a sum of elementwise terms
    and a coupled one."""
    w = np.linspace(0.5, 2.0, n)
    x = _point(n, 0.25)
    for f, args in ((rosen, ()), (_decay, (w,))):
        obj = nad.Objective(f, args, engine="numba")
        g = obj.value_and_grad(x)[1]
        assert np.array_equal(obj.jac(x), g) and obj.njev == 2
        assert np.array_equal(obj._at.key[1], x)
        other = nad.Objective(f, args, engine="numba")
        other.fun(x)
        assert np.array_equal(other.jac(x), g) and other.njev == 1
    expected = -w * np.exp(-x) + 2 * x / (1 + x * x)
    expected[1:] += 0.5 * x[:-1]
    expected[:-1] += 0.5 * x[1:]
    assert_close(g, expected, 1e-12, 1e-12)


@pytest.mark.parametrize("engine", ["numpy", "numba"])
def test_the_gradient_at_a_point_when_products_start_there(engine):
    """jac, then hessp at the same large point (Newton use from here on), then jac: the
    same gradient, bit for bit. Under numpy the record kept it (no pass); under numba the
    first caller took the kernel's array, so the second jac runs the residual pass (which
    the products there use next) and counts it."""
    obj = nad.Objective(rosen, engine=engine)
    x = _point(COPIES)
    v = np.ones(COPIES)
    g = obj.jac(x)
    assert_close(obj.hessp(x, v), scipy.optimize.rosen_hess_prod(x, v), 1e-12, 1e-12)
    assert np.array_equal(obj.jac(x.copy()), g) and obj.fun(x) == pytest.approx(rosen(x))
    assert (obj.nfev, obj.njev) == ((1, 1) if engine == "numpy" else (2, 2))
    op = obj.linearize_hessp(x)
    assert_close(op(v), scipy.optimize.rosen_hess_prod(x, v), 1e-12, 1e-12)
    assert obj.njev == (1 if engine == "numpy" else 2)  # the residuals were there


@pytest.mark.parametrize("engine", ["numpy", "numba"])
def test_newton_use_hands_the_gradient_out_once_and_computes_it_again(engine):
    """Newton use at a large point: the residual pass's gradient goes to the first caller
    as it is under the compiled engines (no copy); a second caller gets the same bits
    from the pass run again, and neither caller's writes reach the other."""
    obj = nad.Objective(rosen, engine=engine)
    x = _point(COPIES, 0.3)
    obj.linearize_hessp(x)  # Newton use from the start
    f, g = obj.value_and_grad(x)
    expected = g.copy()
    assert_close(g, scipy.optimize.rosen_der(x), 1e-12, 1e-12)
    g[:] = 0.0
    again = obj.jac(x.copy())
    assert again is not g and np.array_equal(again, expected)
    assert obj.njev == (1 if engine == "numpy" else 2)
    again[:] = 1.0
    assert np.array_equal(obj.jac(x), expected)


def test_newton_use_after_first_order_use_keeps_an_operator_s_point():
    """A point the kernel copied, then linearised: later points are copied elsewhere."""
    obj = nad.Objective(rosen, engine="numba")
    x1 = _point(COPIES)
    v = np.random.default_rng(4).standard_normal(COPIES)
    obj.jac(x1)
    op = obj.linearize_hessp(x1)
    expected = scipy.optimize.rosen_hess_prod(x1, v)
    assert_close(op(v), expected, 1e-12, 1e-12)
    for shift in (0.1, 0.2):
        x = _point(COPIES, shift)
        assert_close(obj.jac(x), scipy.optimize.rosen_der(x), 1e-12, 1e-12)
    assert_close(op(v), expected, 1e-12, 1e-12)


# ---- reused outputs and the solvers' side ------------------------------------------------------

def test_reused_outputs_alternate_and_stay_valid_for_one_more_product():
    n = 2 * objective._LINEARIZE_FROM  # smaller problems run whole HVP passes
    obj = nad.Objective(rosen, engine="numba")  # compiled runners can reuse outputs
    x = _point(n)
    H = scipy.optimize.rosen_hess(x)
    op = obj.linearize_hessp(x, reuse_output=True)
    V = np.random.default_rng(1).standard_normal((4, n))
    results = [op(v) for v in V[:2]]
    assert results[0] is not results[1]
    assert_close(results[0], H @ V[0], 1e-12, 1e-12)  # still valid after the next product
    assert_close(results[1], H @ V[1], 1e-12, 1e-12)
    third = op(V[2])
    assert third is results[0]  # the second product after a result reuses its array
    assert_close(third, H @ V[2], 1e-12, 1e-12)
    fresh = obj.linearize_hessp(x)  # the default: a new array per product
    a, b = fresh(V[0]), fresh(V[0])
    assert a is not b and np.shares_memory(a, b) is False
    assert obj.linearize_hessp(x, reuse_output=True)(V[3]).shape == (n,)


def test_flat_problem_asks_for_reused_outputs_only_where_offered():
    calls = []

    class Plain:
        def fun(self, x):
            return float(rosen(x))

        def jac(self, x):
            return scipy.optimize.rosen_der(x)

        def hessp(self, x, p):
            return scipy.optimize.rosen_hess_prod(x, p)

        def linearize_hessp(self, x):  # no reuse_output keyword: never passed one
            calls.append(x)
            return lambda v: scipy.optimize.rosen_hess_prod(x, v)

    x = _point(6)
    for obj in (Plain(), nad.Objective(rosen, engine="numpy")):
        problem = FlatProblem(obj, x.shape)
        op = problem.linearize_hessp(x, scratch=True)
        assert_close(op(np.ones(6)), scipy.optimize.rosen_hess_prod(x, np.ones(6)), 1e-12, 1e-12)
    assert len(calls) == 1


@pytest.mark.parametrize("n", [50, 3 * linalg.SERIAL_FROM])
def test_vector_kernels_match_numpy(n):
    rng = np.random.default_rng(2)
    d, hd, z, r = (rng.standard_normal(n) for _ in range(4))
    z0, r0 = z.copy(), r.copy()
    assert linalg.dot(d, hd) == pytest.approx(float(d @ hd), rel=1e-12)
    assert linalg.norm(d) == pytest.approx(float(np.linalg.norm(d)), rel=1e-12)
    assert linalg.asum(d) == pytest.approx(float(np.abs(d).sum()), rel=1e-12)
    rr, r1 = linalg.cg_update(0.3, d, hd, z, r, l1=True)
    assert_close(z, z0 + 0.3 * d, 1e-15, 1e-15)
    assert_close(r, r0 + 0.3 * hd, 1e-15, 1e-15)
    assert rr == pytest.approx(float(r @ r), rel=1e-12)
    assert r1 == pytest.approx(float(np.abs(r).sum()), rel=1e-12)
    out = np.empty(n)
    linalg.scal_sub(0.7, d, r, out=out)
    assert_close(out, 0.7 * d - r, 1e-15, 1e-15)
    w, q, q_prev = (rng.standard_normal(n) for _ in range(3))
    expected = w - 0.2 * q - 0.4 * q_prev
    ww = linalg.lanczos_orthogonalise(w, 0.2, q, 0.4, q_prev)
    assert_close(w, expected, 1e-14, 1e-14)
    assert ww == pytest.approx(float(expected @ expected), rel=1e-12)
    y = d.copy()
    linalg.axpy(-2.0, hd, y)
    assert_close(y, d - 2.0 * hd, 1e-15, 1e-15)
    linalg.scal(0.5, y)
    assert_close(y, 0.5 * (d - 2.0 * hd), 1e-15, 1e-15)
    d[n // 2] = np.nan  # nan propagates, as the solvers' finiteness tests need
    assert np.isnan(linalg.dot(d, hd))


@pytest.mark.parametrize("method", ["newton-cg", "trust-ncg", "trust-krylov"])
def test_large_inner_loops_call_no_blas_level_1(method, monkeypatch):
    """Above SERIAL_FROM entries the CG and Lanczos loops use serial loops: OpenBLAS
    threads level 1 there, and on busy cores each call waited for its threads."""
    n = 2 * linalg.SERIAL_FROM

    def refuse(*args, **kwargs):
        raise AssertionError("BLAS level 1 called on a large vector")
    for name in ("_daxpy", "_ddot", "_dscal", "_dasum"):
        monkeypatch.setattr(linalg, name, refuse)
    x0 = _point(n)
    res = nad.minimize(nad.Objective(rosen, engine="numpy"), x0, method=method,
                       options={"maxiter": 3})
    assert res.nit == 3 and res.fun < rosen(x0)


# ---- captured values ------------------------------------------------------------------------

def test_same_contents_finds_changes_anywhere_and_takes_nan_as_equal():
    a = np.linspace(0.0, 1.0, 100_003)
    for i in (0, 300, 5000, 100_002):
        b = a.copy()
        b[i] = -1.0
        assert not same_contents(a, b)
        assert not same_contents(b, a)
    assert same_contents(a, a.copy())
    c = a.copy()
    c[[7, 90_000]] = np.nan
    assert same_contents(c, c.copy())
    assert not same_contents(a, a.reshape(-1, 1)) and not same_contents(a, a.astype(np.float32))
    assert same_contents(np.arange(10), np.arange(10))
    assert not same_contents(np.array(["a", "b"]), np.array(["a", "c"]))


@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.int64, np.bool_])
def test_same_contents_on_the_first_entry(dtype):
    """The first entries are compared as Python numbers first: nan there is nan."""
    a = np.arange(1, 1001).astype(dtype)
    b = a.copy()
    b[0] = 0
    assert not same_contents(a, b) and not same_contents(b, a)
    if dtype in (np.float64, np.complex128):
        a[0] = b[0] = np.nan
        assert same_contents(a, b)
        b[0] = 1.0
        assert not same_contents(a, b) and not same_contents(b, a)
    assert same_contents(a[:0], b[:0])


def test_a_large_captured_array_changed_in_its_last_entry_is_seen():
    weights = np.ones(LARGE)

    def weighted(x):
        return np.sum(weights * x ** 2)

    obj = nad.Objective(weighted, engine="numpy")
    x = _point(LARGE)
    assert_close(obj.jac(x), 2 * x, 1e-14, 1e-14)
    weights[-1] = 3.0
    expected = 2 * x
    expected[-1] *= 3.0
    assert_close(obj.jac(x), expected, 1e-14, 1e-14)


def test_a_small_problem_s_operator_runs_whole_products_and_makes_no_residuals():
    obj = nad.Objective(rosen, engine="numpy")
    x = _point(5)
    op = obj.linearize_hessp(x)
    for j in range(3):
        e = np.eye(5)[j]
        assert_close(op(e), scipy.optimize.rosen_hess(x)[:, j], 1e-12, 1e-12)
    assert (x.shape, "linearized_hvp", None) not in obj._runners
    assert (x.shape, "hvp", None) in obj._runners and obj.nhev == 3


def test_an_operator_taken_at_the_current_point_outlives_the_point():
    """linearize_hessp at the point whose residuals the gradient pass made takes them
    (and the record's copy of x) at once; both stay valid after the objective moves on."""
    obj = nad.Objective(rosen, engine="numpy")
    v = np.random.default_rng(3).standard_normal(LARGE)
    obj.hessp(_point(LARGE), v)  # Newton use from here on
    x2 = _point(LARGE, 0.1)
    obj.jac(x2)  # makes x2's residuals
    op = obj.linearize_hessp(x2.copy())
    for shift in (0.2, 0.3, 0.4):
        obj.jac(_point(LARGE, shift))
    assert_close(op(v), scipy.optimize.rosen_hess_prod(x2, v), 1e-12, 1e-12)
    assert_close(op(np.stack([v, 2 * v], axis=1))[:, 1],
                 scipy.optimize.rosen_hess_prod(x2, 2 * v), 1e-12, 1e-12)


def test_a_dense_hessian_in_one_frame_is_one_whole_pass():
    obj = nad.Objective(rosen, engine="numpy")
    x = _point(300)
    assert_close(obj.hess(x), scipy.optimize.rosen_hess(x), 1e-12, 1e-12)
    assert (x.shape, "hvp", 300) in obj._runners
    assert not any(key[1] == "linearized_hvp" for key in obj._runners)  # no residual pass
    assert obj.nhev == 300
    y = _point(300, 0.5)  # the identity frame kept from the first Hessian serves the next
    assert_close(obj.hess(y), scipy.optimize.rosen_hess(y), 1e-12, 1e-12)
    assert np.array_equal(obj._identity_frame(y), np.eye(300))
