"""The derived functions test a large point for inf and nan inside their own loops.

At ``TEST_IN_KERNEL_FROM`` entries or more, under the compiled engines with threads,
``value_and_grad``, ``grad``, ``jvp``, ``vjp`` and ``hvp`` derive programs with one more
output, ``sum(x * 0.0)`` (0 at a finite point, nan otherwise), which the numba engine
fuses into the threaded loops that read ``x``: a large point is not read once more
before the kernel to be tested. Smaller points are tested before the call. These tests
check that both ways refuse every non-finite entry wherever it sits -- also entries the
function never reads, and entries a ``where`` masks out of the result -- with the same
message, that the large calls do test inside the kernel, and that the answers at finite
points are those of the program without the test.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest

import newtonad as nad
from newtonad import _programs
from newtonad.ad import transforms as tf
from newtonad.ad.engine import numba_engine, numpy_eval

pytestmark = pytest.mark.usefixtures("module_kernel_cache")

N = 3001
LARGE = _programs.TEST_IN_KERNEL_FROM + 5
ENGINES = ["numba", "numpy", "auto"]
THREADS = pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2,
                             reason="the in-kernel test runs where kernels have threads")


def rosen(x):
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def first_entry_only(x):
    """Reads x[0] alone: the other entries never reach a result."""
    return x[0] ** 2 * np.ones(1)[0]


def masked(x):
    """A nan in x is masked out of the value: the result alone would not show it."""
    return np.sum(np.where(x > 0.5, x, 0.0) ** 2)


def calls(f, x, engine):
    v = np.cos(np.arange(x.size)).reshape(x.shape)
    return {
        "value_and_grad": lambda: nad.value_and_grad(f, engine=engine)(x),
        "grad": lambda: nad.grad(f, engine=engine)(x),
        "hvp": lambda: nad.hvp(f, x, v, engine=engine),
        "hvp frame": lambda: nad.hvp(f, x, np.stack([v, -v], axis=-1), engine=engine),
        "jvp": lambda: nad.jvp(f, x, v, engine=engine),
        "vjp": lambda: nad.vjp(f, x, np.ones(()), engine=engine),
    }


@pytest.mark.parametrize("engine, n", [(e, N) for e in ENGINES] + [("numba", LARGE)])
@pytest.mark.parametrize("f", [rosen, first_entry_only, masked], ids=lambda f: f.__name__)
def test_every_non_finite_entry_is_refused_by_every_derived_function(engine, n, f):
    x = np.linspace(-1.0, 1.0, n)
    for fn in calls(f, x, engine).values():  # traced and compiled at a finite point
        fn()
    for bad in (np.nan, np.inf, -np.inf):
        for at in (0, n // 2, n - 1):
            y = x.copy()
            y[at] = bad
            for fn in calls(f, y, engine).values():
                with pytest.raises(ValueError, match=rf"x has 1 non-finite entries \(first "
                                                     rf"at flat index {at}\)"):
                    fn()


@THREADS
@pytest.mark.parametrize("f", [rosen, masked], ids=lambda f: f.__name__)
def test_large_points_are_tested_in_the_kernel_only(monkeypatch, f):
    """At a large point the compiled engine makes no pass of its own over x."""
    x = np.linspace(-1.0, 1.0, LARGE)
    for fn in calls(f, x, "numba").values():  # traced at x: tested once, before tracing
        fn()
    real = _programs._all_finite

    def refuse_large(arr):
        assert arr.size < LARGE, "a separate pass over the point"
        return real(arr)

    monkeypatch.setattr(_programs, "_all_finite", refuse_large)
    for fn in calls(f, x, "numba").values():
        fn()
    monkeypatch.undo()  # the error path finds the entries with the exact test
    y = x.copy()
    y[LARGE - 2] = -np.inf
    with pytest.raises(ValueError, match=f"flat index {LARGE - 2}"):
        nad.hvp(f, y, x, engine="numba")


def test_a_first_call_at_a_non_finite_point_is_refused_before_tracing():
    def traced_once(x):
        traced_once.calls += 1
        return np.sum(x ** 2)
    traced_once.calls = 0
    x = np.ones(10)
    x[3] = np.nan
    with pytest.raises(ValueError, match="flat index 3"):
        nad.value_and_grad(traced_once, engine="numba")(x)
    assert traced_once.calls == 0


@pytest.mark.parametrize("kind", ["value_and_grad", "hvp"])
def test_the_tested_program_gives_the_untested_program_s_answers(kind):
    x = np.linspace(-1.0, 1.0, N)
    v = np.sin(np.arange(N))
    program = nad.trace(rosen, x)
    derived = (tf.value_and_grad_program(program) if kind == "value_and_grad"
               else tf.hvp_program(program, None))
    inputs = (x,) if kind == "value_and_grad" else (x, v)
    tested = _programs.with_point_test(derived)
    assert len(tested.outputs) == len(derived.outputs) + 1
    for compile_program in (numba_engine.compile_program, numpy_eval.compile_program):
        plain = compile_program(derived)(*inputs)
        *outs, flag = compile_program(tested)(*inputs)
        assert float(flag) == 0.0
        for a, b in zip(outs, plain):
            np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-14 * np.max(np.abs(b)))
    y = x.copy()
    y[N - 1] = np.inf
    assert np.isnan(numba_engine.compile_program(tested)(y, *inputs[1:])[-1])


def test_a_guarded_function_tests_its_point_and_its_path():
    """A function that branches on traced values: the path's test and the point's test
    are both outputs of the derived program; each raises its own way."""
    def branchy(x):
        if x[0] > 0:
            return np.sum(x ** 2)
        return np.sum(x ** 4)

    x = np.linspace(0.1, 1.0, 50)
    vg = nad.value_and_grad(branchy, engine="numba")
    np.testing.assert_allclose(vg(x)[1], 2 * x)
    np.testing.assert_allclose(vg(-x)[1], -4 * x ** 3)  # the other path
    y = x.copy()
    y[7] = np.nan
    with pytest.raises(ValueError, match="flat index 7"):
        vg(y)
    with pytest.raises(ValueError, match="flat index 7"):
        vg(-y)
