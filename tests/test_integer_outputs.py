"""Sums, products and running sums of bool and int arrays keep NumPy's dtype rules on every
engine, and an integer-valued objective is differentiable as a constant."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import newtonad as nad
from newtonad.ad.engine import auto

ENGINES = ["numpy", "numba", "auto"]
X = np.array([[1.0, -2.0, 3.0], [-0.5, 0.25, 4.0]])  # four positive entries of six

#: Functions of a point whose result NumPy computes in integers (or, for mean, from them).
INTEGER_VALUED: dict[str, Callable[[Any], Any]] = {
    "sum of bool": lambda x: np.sum(x > 0),
    "sum of bool, axis 0": lambda x: np.sum(x > 0, axis=0),
    "sum of bool, keepdims": lambda x: np.sum(x > 0, axis=1, keepdims=True),
    "sum of int": lambda x: np.sum((x > 0).astype(np.int64) * 3),
    "prod of bool": lambda x: np.prod(x > -1),
    "prod of bool, axis 1": lambda x: np.prod(x > -1, axis=1),
    "prod of int": lambda x: np.prod((x > 0).astype(np.int64) + 1),
    "mean of bool": lambda x: np.mean(x > 0),
    "mean of int, axis 0": lambda x: np.mean((x > 0).astype(np.int64) * 2, axis=0),
    "cumsum of bool": lambda x: np.cumsum(x > 0),
    "cumsum of bool, axis 1": lambda x: np.cumsum(x > 0, axis=1),
    "cumsum of int": lambda x: np.cumsum((x < 0).astype(np.int64) * 5),
    "max of bool": lambda x: np.max(x > 0),
    "sum of bool plus a float": lambda x: np.sum(x > 0) + 0.5,
}


def evaluate(f: Callable, engine: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``f(X)`` through a derived program on ``engine`` (the primal output of a jvp)."""
    if engine == "auto":  # sent to the compiler at the first call, handed over at the next
        monkeypatch.setattr(auto, "SUBMIT_CALLS", 1)
        monkeypatch.setattr(auto, "SUBMIT_SECONDS", 0.0)
        monkeypatch.setattr(auto, "HANDOVER_CALLS", 1)
    y, _ = nad.jvp(f, X, np.ones(X.shape), engine=engine)
    if engine == "auto":  # again on the compiled tier
        y, _ = nad.jvp(f, X, np.ones(X.shape), engine=engine)
    return y


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", sorted(INTEGER_VALUED))
def test_integer_valued_results_have_numpy_s_dtype_and_value(name, engine, monkeypatch):
    f = INTEGER_VALUED[name]
    want = np.asarray(f(X))  # NumPy's own answer
    assert nad.trace(f, X).out_slots[0].dtype == want.dtype.name
    got = np.asarray(evaluate(f, engine, monkeypatch))
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)  # integers (or a mean of them, exact here)


def count_positive(x):
    return np.sum(x > 0)


@pytest.mark.parametrize("engine", ENGINES)
def test_an_integer_valued_objective_is_a_constant_with_zero_derivatives(engine):
    x = np.array([1.0, -2.0, 3.0, -0.5])
    v = np.array([0.3, 1.0, -2.0, 0.5])
    value, g = nad.value_and_grad(count_positive, engine=engine)(x)
    assert value == 2.0 and isinstance(value, float)
    np.testing.assert_array_equal(g, np.zeros(4))
    np.testing.assert_array_equal(nad.hvp(count_positive, x, v, engine=engine), np.zeros(4))
    np.testing.assert_array_equal(nad.hessian(count_positive, engine=engine)(x), np.zeros((4, 4)))
    obj = nad.Objective(count_positive, engine=engine)
    assert obj.fun(x) == 2.0
    np.testing.assert_array_equal(obj.jac(x), np.zeros(4))
    for _ in range(2):  # a whole pass, then the linearised one
        np.testing.assert_array_equal(obj.hessp(x, v), np.zeros(4))


@pytest.mark.parametrize("engine", ENGINES)
def test_minimize_of_an_integer_valued_objective_stays_at_the_start(engine):
    with nad.settings.override(engine=engine):
        x0 = np.array([1.0, -2.0, 3.0, -0.5])
        res = nad.minimize(count_positive, x0)
        assert res.fun == 2.0
        np.testing.assert_array_equal(res.x, x0)  # a zero gradient: already stationary
