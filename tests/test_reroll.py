"""Re-rolling of loops traced term by term (newtonad.ad.reroll).

The unrolled program (traced with ``REROLL`` off) is the reference: the re-rolled one
must give the same values (up to the reassociation of the folded sum, 1e-12 relative),
the same derivatives (against the vectorised form and finite differences) and the same
sparsity pattern; programs it cannot fold exactly must come back unchanged.
"""

from __future__ import annotations

import numpy as np
import pytest

import newtonad as nad
from newtonad import _programs
from newtonad.ad import reroll as rr
from newtonad.ad.engine import compile_program
from newtonad.ad.primitives.core import const_p
from tests.helpers import assert_close, central_jvp

RNG = np.random.default_rng(20261201)


def unrolled(f, x, *args):
    """``f`` traced without re-rolling (a fresh trace, not the cached one)."""
    old = rr.REROLL
    rr.REROLL = False
    try:
        return _programs.Traced(f, [_programs.aval_of(np.asarray(a))
                                    for a in (x,) + args], scalar=True).program
    finally:
        rr.REROLL = old


def run(program, *args):
    return compile_program(program, "numpy")(*args)[0]


def assert_same_values(f, x, *args, trials=5):
    """reroll(unrolled) is smaller and equals the unrolled program on random inputs."""
    p = unrolled(f, x, *args)
    q = rr.reroll(p)
    assert q is not p and len(q.steps) < len(p.steps)
    for _ in range(trials):
        xs = RNG.standard_normal(np.shape(x))
        a, b = run(p, xs, *args), run(q, xs, *args)
        assert abs(a - b) <= 1e-12 * max(1.0, abs(a)), (a, b)
    return p, q


# ---- the loops ------------------------------------------------------------------------

def rosen_loop(x):
    s = 0.0
    for i in range(len(x) - 1):
        s = s + 100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2
    return s


def rosen_vec(x):
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def fresh_rosen_loop():
    """A new function object each time, so the trace cache is not shared between tests."""
    def f(x):
        return rosen_loop(x)
    return f


@pytest.mark.parametrize("m", [10, 100, 2000])
def test_rosenbrock_loop_becomes_constant_size(m):
    p, q = assert_same_values(rosen_loop, np.zeros(m + 1), trials=3)
    assert len(p.steps) > 5 * m
    vec = nad.trace(rosen_vec, np.zeros(m + 1))
    assert len(q.steps) <= len(vec.steps)  # the vectorised Rosenbrock's program, O(1)
    assert {s.primitive.name for s in q.steps} == {s.primitive.name for s in vec.steps}


def test_gradient_and_hvp_match_vectorised_and_differences():
    n = 60
    f = fresh_rosen_loop()
    x = RNG.standard_normal(n)
    V = RNG.standard_normal((n, 2))
    assert len(nad.trace(f, x).steps) < 20  # the traced program used by grad is re-rolled
    g = nad.grad(f, engine="numpy")(x)
    assert_close(g, nad.grad(rosen_vec, engine="numpy")(x), 1e-10, 1e-10, "grad")
    for j in range(2):
        assert_close(g @ V[:, j], central_jvp(rosen_loop, x, V[:, j]), 1e-6, 1e-6, "fd grad")
    HV = nad.hvp(f, x, V, engine="numpy")
    assert_close(HV, nad.hvp(rosen_vec, x, V, engine="numpy"), 1e-10, 1e-10, "hvp")
    g_fn = nad.grad(rosen_vec, engine="numpy")
    for j in range(2):
        assert_close(HV[:, j], central_jvp(g_fn, x, V[:, j], eps=1e-5), 1e-5, 1e-5, "fd hvp")


def test_numba_engine_runs_rerolled_loop():
    f = fresh_rosen_loop()
    x = RNG.standard_normal(40)
    V = RNG.standard_normal(40)
    assert_close(nad.grad(f, engine="numba")(x), nad.grad(rosen_vec, engine="numpy")(x),
                 1e-10, 1e-10, "numba grad")
    assert_close(nad.hvp(f, x, V, engine="numba"), nad.hvp(rosen_vec, x, V, engine="numpy"),
                 1e-10, 1e-10, "numba hvp")


def test_hessian_sparsity_stays_tridiagonal():
    f = fresh_rosen_loop()
    n = 30
    pattern = nad.hessian_sparsity(f)(np.ones(n)).toarray().astype(bool)
    i, j = np.indices((n, n))
    np.testing.assert_array_equal(pattern, np.abs(i - j) <= 1)
    assert len(nad.trace(f, np.ones(n)).steps) < 20


def test_loop_over_data_arguments():
    def f(x, y, t):
        r = 0.0
        a, b = x[0], x[1]
        for i in range(len(y)):
            r = r + (y[i] - a * t[i] - b) ** 2
        return r

    y, t = RNG.standard_normal(50), RNG.standard_normal(50)
    x = np.array([0.3, -0.2])
    p, q = assert_same_values(f, x, y, t)
    assert len(q.steps) < 15
    # the data stay inputs: other data give the right value from the same program
    y2 = RNG.standard_normal(50)
    assert_close(run(q, x, y2, t), np.sum((y2 - x[0] * t - x[1]) ** 2), 1e-12, 0, "new data")
    g = nad.grad(f, engine="numpy")(x, y, t)
    r = y - x[0] * t - x[1]
    assert_close(g, [-2 * np.sum(r * t), -2 * np.sum(r)], 1e-10, 1e-10, "grad with data")


def test_stride_two_and_reversed_loops():
    def stride2(x):
        s = 0.0
        for i in range(len(x) // 2):
            s = s + x[2 * i] * x[2 * i + 1] + np.sin(x[2 * i]) ** 2
        return s

    def backwards(x):
        s = 0.0
        for i in range(len(x) - 1, 0, -1):
            s = s + (x[i] - x[i - 1]) ** 2 / (1.0 + x[i] ** 2)
        return s

    for f in (stride2, backwards):
        p, q = assert_same_values(f, np.zeros(40))
        assert len(q.steps) < 20
        slices = [s.kwargs["slices"] for s in q.steps if s.primitive.name == "slice"]
        assert slices and all(len(sl) == 1 for sl in slices)
    strides = {s.kwargs["slices"][0][2] for s in rr.reroll(unrolled(stride2, np.zeros(40))).steps
               if s.primitive.name == "slice"}
    assert strides == {2}


def test_two_dimensional_reads_and_loop_counter_constants():
    def f(x):
        X = x.reshape(10, 3)
        s = 0.0
        for i in range(10):
            s += X[i, 2] * X[i, 0] - 0.5 * i * X[i, 1]
        return s

    p, q = assert_same_values(f, np.zeros(30))
    assert len(q.steps) < 15
    vectors = [s.kwargs["value"].array for s in q.steps
               if s.primitive is const_p and q.slots[s.output].shape == (10,)]
    assert len(vectors) == 1 and np.array_equal(vectors[0], 0.5 * np.arange(10))


def test_list_then_sum_and_np_array():
    def by_sum(x):
        return sum([x[i] * x[i + 1] for i in range(len(x) - 1)])

    def by_array(x):
        r = np.array([x[i] - 2 * x[i + 1] for i in range(len(x) - 1)])
        return np.sum(r ** 2)

    for f in (by_sum, by_array):
        p, q = assert_same_values(f, np.zeros(30))
        assert len(q.steps) < 12


def test_subtraction_and_prefix_iterations():
    def prefix_and_suffix(x):
        s = x[0] ** 3            # a prefix that is not one of the iterations
        s = s - np.exp(x[1])
        for i in range(2, len(x)):
            s -= np.cos(x[i]) * x[i - 1]
        return s + x[0] * x[-1]  # a suffix after the loop

    def first_iteration_differs(x):
        s = 0.0
        for i in range(len(x)):
            s = s + (x[i] ** 2 if i < 2 else x[i] ** 4 - x[i])
        return s

    for f in (prefix_and_suffix, first_iteration_differs):
        p, q = assert_same_values(f, np.zeros(30))
        assert len(q.steps) < 25


def test_period_with_repeated_structure():
    def f(x):  # two isomorphic terms per iteration: the period is 2, not 1
        s = 0.0
        for i in range(len(x) - 1):
            s = s + (x[i] - 1.0) ** 2 + (x[i + 1] - 1.0) ** 2
        return s

    p, q = assert_same_values(f, np.zeros(25))
    assert len(q.steps) < 15


@pytest.mark.parametrize("case", ["squares", "irregular", "varying_op", "short"])
def test_non_affine_or_irregular_loops_are_left_unchanged(case):
    def squares(x):
        s = 0.0
        for i in range(6):
            s = s + x[i * i] ** 2       # index i*i: not affine
        return s

    def irregular(x):
        s = 0.0
        for i in [0, 3, 4, 9, 10, 20, 21]:
            s = s + x[i] ** 2
        return s

    def varying_op(x):
        s = 0.0
        for i in range(10):
            s = s + (np.sin(x[i]) if i % 2 else np.cos(x[i])) * (x[i] if i % 3 else 1.0)
        return s

    def short(x):
        return x[0] ** 2 + x[1] ** 2 + x[2] ** 2

    f = {"squares": squares, "irregular": irregular, "varying_op": varying_op,
         "short": short}[case]
    p = unrolled(f, np.zeros(30))
    assert rr.reroll(p) is p


def test_recurrence_is_left_unchanged():
    def accumulator_read(x):
        s = 0.0
        for i in range(20):
            s = s + s * x[i] ** 2   # the term reads the accumulator: a recurrence
        return s

    p = unrolled(accumulator_read, np.zeros(21))
    assert rr.reroll(p) is p


def test_iteration_value_used_after_the_loop_stays_unrolled():
    def kept(x):
        s = 0.0
        terms = []
        for i in range(20):
            t = (x[i] - x[i + 1]) ** 2
            terms.append(t)
            s = s + t
        return s * terms[7]   # iteration 7's term is read after the loop

    def returned(x):
        s = 0.0
        for i in range(20):
            t = np.exp(x[i] - x[i + 1])
            s = s + t
        return s + t          # the last iteration's term, returned beside the sum

    p, q = assert_same_values(kept, np.zeros(21))
    # iteration 7 is computed on its own still: the folds are around it
    reads = {s.kwargs["slices"] for s in q.steps if s.primitive.name == "slice"}
    assert ((7, 8, 1),) in reads and ((8, 9, 1),) in reads
    assert len(q.steps) < 30
    p = unrolled(returned, np.zeros(21))
    q = rr.reroll(p)
    xs = RNG.standard_normal(21)
    assert abs(run(p, xs) - run(q, xs)) <= 1e-12 * abs(run(p, xs))
    assert any(s.primitive.name == "exp" and q.slots[s.output].shape == () for s in q.steps)


def test_switch_off_and_near_linear_cost():
    f = fresh_rosen_loop()
    old = rr.REROLL
    rr.REROLL = False
    try:
        assert len(nad.trace(f, np.zeros(50)).steps) > 200
    finally:
        rr.REROLL = old
    # no quadratic behaviour: a long irregular chain is scanned quickly
    import time

    def long_irregular(x):
        s = 0.0
        for i in range(3000):
            s = s + x[(i * i) % 3001] ** 2
        return s

    p = unrolled(long_irregular, np.zeros(3001))
    t0 = time.process_time()  # CPU time: other processes on the machine do not count
    assert rr.reroll(p) is p
    assert time.process_time() - t0 < 2.0  # about 0.1 s: no candidate is built


def test_rerolled_programs_are_left_as_they_are():
    p = rr.reroll(unrolled(rosen_loop, np.zeros(30)))
    assert rr.reroll(p) is p
    vec = nad.trace(rosen_vec, np.zeros(30))
    assert rr.reroll(vec) is vec
    assert sorted(s.primitive.name for s in p.steps) == sorted(s.primitive.name for s in vec.steps)


def test_residuals_listed_then_np_array():
    def residuals(x, t, y):
        return np.array([y[i] - x[0] * np.exp(x[1] * t[i]) for i in range(len(t))])

    def interleaved(x):
        r = [x[0] - 1.0]
        for i in range(len(x) - 1):
            r.append(10 * (x[i + 1] - x[i] ** 2))
            r.append(1 - x[i])
        return np.array(r)

    t, y = np.linspace(0, 1, 40), RNG.standard_normal(40)
    x = np.array([0.7, -0.4])
    for f, args, size in ((residuals, (t, y), 2), (interleaved, (), 25)):
        x0 = x if size == 2 else RNG.standard_normal(size)
        old = rr.REROLL
        rr.REROLL = False
        try:
            p = _programs.Traced(f, [_programs.aval_of(np.asarray(a)) for a in (x0,) + args],
                                 scalar=False).program
        finally:
            rr.REROLL = old
        q = rr.reroll(p)
        assert len(q.steps) < 20 < len(p.steps)
        for _ in range(3):
            xs = RNG.standard_normal(x0.shape)
            np.testing.assert_array_equal(run(q, xs, *args), run(p, xs, *args))
    # the jacobian of the re-rolled residuals, against the closed form
    J = nad.jacobian(residuals, engine="numpy")(x, t, y)
    e = np.exp(x[1] * t)
    assert_close(J, np.stack([-e, -x[0] * t * e], axis=1), 1e-12, 1e-12, "jacobian")
    # and the jacobian's sparsity pattern of the interleaved residuals: bidiagonal rows
    P = nad.jacobian_sparsity(interleaved)(np.ones(6)).toarray().astype(bool)
    J = nad.jacobian(interleaved, engine="numpy")(RNG.standard_normal(6))
    assert P.shape == (11, 6) and np.all(P[J != 0])
    assert P.sum() == 1 + 5 * 2 + 5  # x0-1; 10(x[i+1]-x[i]^2): two entries; 1-x[i]: one


def test_nested_loops_fold_the_inner_sums():
    def nested(x, A):
        s = 0.0
        for i in range(A.shape[0]):
            r = 0.0
            for j in range(A.shape[1]):
                r = r + A[i, j] * x[j]
            s = s + (r - 1.0) ** 2
        return s

    A = RNG.standard_normal((12, 9))
    p, q = assert_same_values(nested, np.zeros(9), A)
    assert len(q.steps) < len(p.steps) // 4


def _random_loop(rng):
    """A random loop body from a small grammar: reads x[a*i+b] and y[c*i+d], constants,
    a loop-invariant x[0], the loop counter, unary and binary elementwise operations."""
    m = int(rng.integers(4, 12))
    depth = int(rng.integers(1, 4))
    reads = [(int(rng.integers(1, 3)), int(rng.integers(0, 3))) for _ in range(3)]
    unary = [np.sin, np.square, np.tanh, lambda v: v * 0.5]
    binary = [lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b]
    plan = [(int(rng.integers(0, 7)), int(rng.integers(0, 4)), int(rng.integers(0, 3)))
            for _ in range(2 ** depth)]

    def leaf(x, y, i, code):
        a, b = reads[code % 3]
        return [x[a * i + b], y[a * i + b], x[0], 1.5, 0.25 * i, x[a * i + b] * 2.0,
                y[i]][code]

    def term(x, y, i):
        values = [leaf(x, y, i, c) for c, _, _ in plan]
        ops = [(u, b) for _, u, b in plan]
        while len(values) > 1:
            values = [binary[ops[k][1]](unary[ops[k][0]](values[2 * k]), values[2 * k + 1])
                      for k in range(len(values) // 2)]
        return values[0]

    periods = int(rng.integers(1, 3))
    negate = bool(rng.integers(0, 2))

    def f(x, y):
        s = 0.0
        for i in range(m):
            s = s + term(x, y, i)
            if periods == 2:
                s = s - term(x, y, i + 1) if negate else s + np.cos(term(y, x, i))
        return s

    return f


@pytest.mark.parametrize("seed", range(12))
def test_random_loops_equal_their_unrolled_programs(seed):
    rng = np.random.default_rng(seed)
    f = _random_loop(rng)
    x, y = np.zeros(40), RNG.standard_normal(40)
    p = unrolled(f, x, y)
    q = rr.reroll(p)
    for _ in range(3):
        xs = RNG.standard_normal(40)
        a, b = run(p, xs, y), run(q, xs, y)
        assert abs(a - b) <= 1e-12 * max(1.0, abs(a)), (a, b)


@pytest.mark.parametrize("case", ["two_d", "stride2", "data", "windows"])
def test_sparsity_patterns_equal_the_unrolled_programs(case):
    def make():
        def two_d(x):
            X = x.reshape(6, 3)
            s = 0.0
            for i in range(6):
                s += X[i, 2] * X[i, 0] - 0.5 * i * X[i, 1] ** 2
            return s

        def stride2(x):
            s = 0.0
            for i in range(len(x) // 2):
                s = s + x[2 * i] * x[2 * i + 1] + np.sin(x[2 * i]) ** 2
            return s

        def data(x, w):
            s = 0.0
            for i in range(len(x) - 2):
                s = s + w[i] * (x[i + 2] - x[i]) ** 2
            return s

        def windows(x, w):
            s = 0.0
            for a in range(0, len(x) - 5, 2):
                s = s + np.sum(w * np.sin(x[a:a + 5])) * x[a]
            return s

        return {"two_d": two_d, "stride2": stride2, "data": data, "windows": windows}[case]

    args = {"data": (np.ones(16),), "windows": (np.ones(5),)}.get(case, ())
    on = nad.hessian_sparsity(make())(np.ones(18), *args).toarray()
    old = rr.REROLL
    rr.REROLL = False
    try:
        f_off = make()
        assert len(nad.trace(f_off, np.ones(18), *args).steps) > 30
        off = nad.hessian_sparsity(f_off)(np.ones(18), *args).toarray()
    finally:
        rr.REROLL = old
    assert on.any()
    np.testing.assert_array_equal(on, off)
    x = RNG.standard_normal(18)
    H = nad.hessian(make(), engine="numpy")(x, *args)
    assert np.all(on[H != 0])


def test_loops_over_blocks_fold_into_two_dimensional_steps():
    def blocks(x):   # Rosenbrock over blocks of 8 entries: the blocks tile x
        s = 0.0
        for a in range(0, x.shape[0] - 8, 8):
            lo, hi = x[a:a + 8], x[a + 1:a + 9]
            s = s + np.sum(100 * (hi - lo ** 2) ** 2 + (1 - lo) ** 2)
        return s

    def windows(x, w):  # overlapping windows: a gather
        s = 0.0
        for a in range(0, len(x) - 5, 2):
            s = s + np.sum(w * np.sin(x[a:a + 5])) * x[a]
        return s

    w = RNG.standard_normal(5)
    for f, args in ((blocks, ()), (windows, (w,))):
        p, q = assert_same_values(f, np.zeros(81), *args)
        assert len(q.steps) < 20 < len(p.steps)
    x = RNG.standard_normal(81)
    assert_close(nad.grad(blocks, engine="numpy")(x), nad.grad(rosen_vec, engine="numpy")(x),
                 1e-10, 1e-10, "blocks grad")
    V = RNG.standard_normal(81)
    HV = nad.hvp(windows, x, V, (w,), engine="numpy")
    g = nad.grad(windows, engine="numpy")
    assert_close(HV, central_jvp(lambda z: g(z, w), x, V, eps=1e-5), 1e-5, 1e-5, "windows hvp")
    assert_close(nad.grad(windows, engine="numba")(x, w), g(x, w), 1e-12, 1e-12, "numba")


def test_loops_over_rows_of_a_data_matrix():
    def squares(w, X, y):
        s = 0.0
        for i in range(len(y)):
            s = s + (y[i] - X[i] @ w) ** 2
        return s

    def every_other_row(w, X):
        s = 0.0
        for i in range(0, X.shape[0], 2):
            s = s + np.sum(np.sin(X[i] * w) ** 2)
        return s

    def residuals(w, X, y):
        return np.array([y[i] - X[i] @ w for i in range(len(y))])

    X, y = RNG.standard_normal((30, 3)), RNG.standard_normal(30)
    for f, args in ((squares, (X, y)), (every_other_row, (X,))):
        p, q = assert_same_values(f, np.zeros(3), *args)
        assert len(q.steps) < 10 < len(p.steps)
    w = RNG.standard_normal(3)
    assert_close(nad.grad(squares, engine="numpy")(w, X, y), -2 * X.T @ (y - X @ w),
                 1e-12, 1e-12, "least-squares gradient")
    assert_close(nad.hessian(squares, engine="numpy")(w, X, y), 2 * X.T @ X, 1e-12, 1e-12,
                 "least-squares Hessian")
    assert_close(nad.jacobian(residuals, engine="numpy")(w, X, y), -X, 1e-15, 0, "jacobian")
    assert len(nad.trace(residuals, w, X, y).steps) < 8
    assert_close(nad.grad(squares, engine="numba")(w, X, y), -2 * X.T @ (y - X @ w),
                 1e-12, 1e-12, "numba")
