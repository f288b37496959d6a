"""Never a silently wrong number from tracing: math.* computes np.*, Python numbers made
of traced values are refused with the line and the fix, random draws are never frozen,
and cached traces are shared safely between functions and Objectives."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

import newtonad as nad
from newtonad.ad import transforms as tf
from newtonad.ad.tracer_errors import ImpureFunctionError

from .helpers import assert_close

X = np.array([0.7, -0.4, 1.3])


# ---- math.* on traced scalars ---------------------------------------------------------

def test_math_functions_on_traced_scalars_compute_numpy_exactly():
    def with_math(x):
        return (math.exp(x[0]) * math.sin(x[1]) + math.log(x[2], 2.0) + math.sqrt(x[2])
                + math.atan2(x[0], x[2]) + math.pow(x[2], 1.5) + math.tanh(x[1])
                + math.hypot(x[0], x[1]) + math.log1p(x[0]) + math.erf(x[1]))

    def with_numpy(x):
        from scipy import special
        return (np.exp(x[0]) * np.sin(x[1]) + np.log(x[2]) / np.log(2.0) + np.sqrt(x[2])
                + np.arctan2(x[0], x[2]) + np.power(x[2], 1.5) + np.tanh(x[1])
                + np.sqrt(x[0] * x[0] + x[1] * x[1]) + np.log1p(x[0]) + special.erf(x[1]))

    value, g = nad.value_and_grad(with_math, engine="numpy")(X)
    value_np, g_np = nad.value_and_grad(with_numpy, engine="numpy")(X)
    assert value == value_np and np.array_equal(g, g_np)  # the same programs: exact
    assert value == pytest.approx(with_math(X), rel=1e-15)  # and math's own number
    assert math.exp(1.0) == np.e  # routing ends with the trace


def test_math_predicates_and_sums_of_traced_values():
    def f(x):
        s = math.fsum([x[0], x[1], x[2]])
        return s * s if not math.isnan(s) and math.isfinite(x[0]) else 0.0 * s

    assert_close(nad.grad(f, engine="numpy")(X), 2 * np.sum(X) * np.ones(3), 1e-15, 0)


def test_math_is_the_original_for_plain_numbers_while_tracing():
    seen = []

    def f(x):
        seen.append(math.exp(1.0))  # a plain number inside the traced function
        return np.sum(x)

    nad.grad(f, engine="numpy")(X)
    assert seen == [math.e]


# ---- Python numbers made of traced values ----------------------------------------------

def as_float(x):
    return float(x[0]) * x[1] + np.sum(x)


def as_int(x):
    return int(x[0]) * x[1] + np.sum(x)


def as_item(x):
    return x[0].item() * x[1] + np.sum(x)


def as_index(x):
    return [1.0, 2.0][x[0]] * x[1] + np.sum(x)


@pytest.mark.parametrize("f, line", [(as_float, "float(x[0]) * x[1]"),
                                     (as_int, "int(x[0]) * x[1]"),
                                     (as_item, "x[0].item() * x[1]"),
                                     (as_index, "[1.0, 2.0][x[0]] * x[1]")],
                         ids=["float", "int", "item", "index"])
def test_python_numbers_of_traced_values_are_refused_with_the_line(f, line):
    with pytest.raises(nad.TracerBoolError) as error:
        nad.grad(f, engine="numpy")(np.array([0.0, 2.0, 1.0]))
    message = str(error.value)
    assert "test_trace_purity.py" in message and line in message
    assert "np.exp(x[0]) instead of math.exp(float(x[0]))" in message


def test_a_number_made_of_data_args_is_refused_too():
    # lam is data (a NumPy array): float(lam) would freeze it into the program
    with pytest.raises(nad.TracerBoolError, match="float"):
        nad.grad(lambda x, lam: float(lam) * np.sum(x), engine="numpy")(X, np.array(2.0))


def test_bool_of_a_traced_value_in_arithmetic_is_a_guarded_branch():
    # bool() is piecewise constant: exact with the path taken, guarded where it changes
    f = lambda x: bool(x[0] > 0) * np.sum(x ** 2)  # noqa: E731
    grad = nad.grad(f, engine="numpy")
    assert_close(grad(X), 2 * X, 0, 0)
    assert_close(grad(-X), 0 * X, 0, 0)


def test_minimize_falls_back_on_float_with_the_line():
    def f(x):
        return math.exp(float(x[0]) - 1.0) - float(x[0]) + (x[1] - 2.0) ** 2

    with pytest.warns(nad.TraceFallbackWarning, match="float.*test_trace_purity.py") as w:
        res = nad.minimize(f, np.array([0.0, 0.0]), method="trust-ncg")
    assert len(w) == 1
    assert_close(res.x, [1.0, 2.0], 0, 1e-2)  # on finite differences


# ---- random draws -------------------------------------------------------------------------

GENERATOR = np.random.default_rng(5)


def noisy_global(x):
    return np.sum(x ** 2) + 1e-3 * np.random.rand()


def noisy_python(x):
    return np.sum(x ** 2) + 1e-3 * random.random()


def noisy_generator(x):
    return np.sum(x ** 2) + 1e-3 * GENERATOR.normal()


def noisy_unseeded(x):
    return np.sum(x ** 2) + 1e-3 * np.random.default_rng().normal()


@pytest.mark.parametrize("fun, source", [
    (noisy_global, r"np\.random"), (noisy_python, r"random\.\*"),
    (noisy_generator, r"captured numpy\.Generator"), (noisy_unseeded, "without a seed")])
def test_random_draws_while_tracing_are_refused(fun, source):
    with pytest.raises(ImpureFunctionError, match=source + ".*freeze"):
        nad.grad(fun, engine="numpy")(X)
    assert issubclass(ImpureFunctionError, nad.TracerBoolError)


def _draw_in_another_thread(source):
    """A thread that draws once from the global generator ``source`` and ends."""
    import threading

    draw = np.random.rand if source == "numpy" else random.random
    thread = threading.Thread(target=draw)
    thread.start()
    thread.join()


@pytest.mark.parametrize("source", ["numpy", "python"])
def test_another_thread_s_draw_during_a_trace_is_not_the_function_s(source):
    import threading

    calls = []
    stay = threading.Event()  # keeps a second thread alive, as a Dask worker's are
    keeper = threading.Thread(target=stay.wait)
    keeper.start()
    try:
        def f(x):
            if not calls:  # another thread draws during the first trace only
                _draw_in_another_thread(source)
            calls.append(1)
            return np.sum(x ** 2)

        assert_close(nad.grad(f, engine="numpy")(X), 2 * X, 1e-15, 0)
        assert len(calls) == 2  # traced once more to tell the draws apart

        # a function that draws on every trace is refused still, naming the threads
        with pytest.raises(ImpureFunctionError, match="other threads drew"):
            nad.grad(noisy_global if source == "numpy" else noisy_python,
                     engine="numpy")(X)
    finally:
        stay.set()
        keeper.join()


def test_a_stochastic_objective_is_called_directly_never_frozen():
    values = []

    def f(x):
        value = np.sum((x - 1.0) ** 2) + 1e-13 * np.random.rand()
        values.append(value)
        return value

    with pytest.warns(nad.TraceFallbackWarning, match="random"):
        res = nad.minimize(f, np.zeros(2), method="BFGS")
    assert_close(res.x, [1.0, 1.0], 0, 1e-3)
    plain = [float(v) for v in values if not isinstance(v, nad.Var)]
    assert len(set(plain)) == len(plain) > 3  # every call drew again


def test_a_generator_seeded_inside_the_function_is_pure_and_traced():
    def f(x):
        shift = np.random.default_rng(0).normal(size=3)  # the same numbers every call
        return np.sum((x - shift) ** 2)

    shift = np.random.default_rng(0).normal(size=3)
    assert_close(nad.grad(f, engine="numpy")(X), 2 * (X - shift), 1e-15, 0)


# ---- the trace cache ------------------------------------------------------------------------

def _derivations() -> int:
    return sum(tf.DERIVATIONS.values())


def test_a_second_objective_of_the_same_code_derives_nothing():
    def make(scale):
        return lambda x: scale * np.sum(np.sin(x) * x ** 2)

    x = np.linspace(0.1, 1.0, 5)
    first = nad.Objective(make(2.0), engine="numpy")
    first.value_and_grad(x)
    first.hessp(x, x)
    before = _derivations()
    for scale in (2.0, 3.0):  # a new function object each time, other captured values
        obj = nad.Objective(make(scale), engine="numpy")
        value, grad = obj.value_and_grad(x)
        assert value == pytest.approx(scale * np.sum(np.sin(x) * x ** 2), rel=1e-15)
        assert_close(obj.hessp(x, x), scale / 2.0 * first.hessp(x, x), 1e-14, 0)
    assert _derivations() == before


def test_a_closure_over_another_array_is_never_stale():
    def make(a):
        return lambda x: np.sum(a * x ** 2)

    x = np.ones(4)
    a = np.arange(4.0)
    obj = nad.Objective(make(a), engine="numpy")
    assert_close(obj.jac(x), 2 * a, 0, 0)
    b = a[::-1].copy()
    assert_close(nad.Objective(make(b), engine="numpy").jac(x), 2 * b, 0, 0)
    a[:] = 7.0  # changed in place: the first objective sees it
    assert_close(obj.jac(x), 14 * x, 0, 0)


# ---- Objective on a function it cannot trace ---------------------------------------------

def with_float(x):
    return math.exp(float(x[0]) - 1.0) - float(x[0]) + (x[1] - 2.0) ** 2


def test_objective_of_an_untraceable_function_runs_on_differences_after_one_warning():
    import scipy.optimize

    x = np.array([0.5, 1.0])
    with pytest.warns(nad.TraceFallbackWarning, match=r"float\(x\) at .*test_trace_purity"
                      ) as record:
        obj = nad.Objective(with_float, engine="numpy")
        value = obj.fun(x)
        grad, hv = obj.jac(x), obj.hessp(x, np.array([1.0, 1.0]))
    assert len(record) == 1 and record[0].filename == __file__
    assert value == with_float(x)
    assert_close(grad, [math.exp(-0.5) - 1.0, -2.0], 0, 1e-6)
    assert_close(hv, [math.exp(-0.5), 2.0], 0, 1e-3)
    assert_close(obj.hess(x), np.diag([math.exp(-0.5), 2.0]), 0, 1e-3)
    res = scipy.optimize.minimize(obj.fun, x, jac=obj.jac, hessp=obj.hessp, method="trust-ncg")
    assert_close(res.x, [1.0, 2.0], 0, 1e-5)
    with pytest.raises(nad.TracerBoolError):  # the derivative functions still refuse
        nad.grad(with_float, engine="numpy")(x)


def test_objective_falls_back_when_a_later_path_cannot_be_traced():
    def g(x):
        if x[0] > 0:
            return np.sum(x ** 2)
        return float(x[0]) ** 2 + x[1] ** 2   # only this path is untraceable

    obj = nad.Objective(g, engine="numpy")
    assert_close(obj.jac(np.array([1.0, 1.0])), [2.0, 2.0], 0, 0)  # traced: exact
    with pytest.warns(nad.TraceFallbackWarning, match="float"):
        grad = obj.jac(np.array([-1.0, 1.0]))
    assert_close(grad, [-2.0, 2.0], 0, 1e-6)
    assert obj.fun(np.array([-1.0, 3.0])) == 10.0


def test_objective_of_a_stochastic_function_draws_every_call():
    def noisy(x):
        return np.sum(x ** 2) + 1e-3 * np.random.rand()

    with pytest.warns(nad.TraceFallbackWarning, match="random"):
        obj = nad.Objective(noisy, engine="numpy")
        values = {obj.fun(np.full(2, t)) for t in np.linspace(0.0, 1.0, 5)}
    assert len(values) == 5 and obj.nfev >= 5
