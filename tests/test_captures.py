"""Values an objective reads outside its arguments are always current.

Each test changes a captured value between two calls -- a module global, a closure
cell, ``self.lam``, an array changed in place, a rebound global, a default argument,
a helper function's global, an item of a captured dict -- and checks that every entry
point answers for the new value, as the NumPy code computes it now.
"""

from __future__ import annotations

import functools
import types

import numpy as np
import pytest

import newtonad as nad
from newtonad.ad.captures import find_captures

NP = {"engine": "numpy"}
X = np.array([0.5, -1.5, 2.0])

lam = 1.0  # read by the module-level objectives below
data = np.array([1.0, 2.0, 3.0])
config = types.SimpleNamespace(scale=2.0)
params = {"lam": 1.0}


def _quadratic(x):
    return lam * np.sum(x ** 2)


def _helper(x):
    return config.scale * np.sum(np.sin(x))


def _calls_helper(x):
    return _helper(x) + np.sum(x ** 4)


def _fit(x):
    return np.sum((x - data) ** 2) + 0.1 * np.sum(x ** 4)


def _from_dict(x):
    return params["lam"] * np.sum(np.cos(x))


@pytest.fixture
def restore_globals():
    saved = lam, data, config.scale, dict(params)
    yield
    globals().update(lam=saved[0], data=saved[1])
    config.scale = saved[2]
    params.clear()
    params.update(saved[3])


def test_module_global_scalar_every_entry_point(restore_globals):
    global lam
    g, vg = nad.grad(_quadratic, **NP), nad.value_and_grad(_quadratic, **NP)
    obj = nad.Objective(_quadratic, **NP)
    V = np.eye(3)[:, :2]
    for value in (1.0, 3.0, -0.5):
        lam = value
        np.testing.assert_allclose(g(X), 2 * value * X)
        assert vg(X)[0] == pytest.approx(value * np.sum(X ** 2))
        np.testing.assert_allclose(nad.hvp(_quadratic, X, V, **NP), 2 * value * V)
        np.testing.assert_allclose(nad.hessian(_quadratic, **NP)(X), 2 * value * np.eye(3))
        np.testing.assert_allclose(nad.jacobian(nad.grad(_quadratic), **NP)(X),
                                   2 * value * np.eye(3))
        np.testing.assert_allclose(obj.jac(X), 2 * value * X)
        assert obj.fun(X) == pytest.approx(value * np.sum(X ** 2))
        np.testing.assert_allclose(obj.hessp(X, V), 2 * value * V)
        np.testing.assert_allclose(obj.hess(X), 2 * value * np.eye(3))


def test_closure_cell_changes():
    scale = 1.0

    def f(x):
        return scale * np.sum(np.exp(x))

    g = nad.grad(f, **NP)
    np.testing.assert_allclose(g(X), np.exp(X))
    scale = 4.0
    np.testing.assert_allclose(g(X), 4.0 * np.exp(X))


def test_attribute_of_a_bound_method():
    class Model:
        def __init__(self):
            self.lam = 2.0

        def loss(self, x):
            return self.lam * np.sum(x ** 2)

    m = Model()
    obj = nad.Objective(m.loss, **NP)
    np.testing.assert_allclose(obj.jac(X), 4.0 * X)
    m.lam = 5.0
    np.testing.assert_allclose(obj.jac(X), 10.0 * X)
    np.testing.assert_allclose(nad.grad(m.loss, **NP)(X), 10.0 * X)


def test_callable_object_attribute():
    class Energy:
        def __init__(self, k):
            self.k = k

        def __call__(self, x):
            return self.k * np.sum(x ** 2)

    e = Energy(1.0)
    g = nad.grad(e, **NP)
    np.testing.assert_allclose(g(X), 2.0 * X)
    e.k = 3.0
    np.testing.assert_allclose(g(X), 6.0 * X)


@pytest.mark.parametrize("engine", ["numpy", "numba"])
def test_array_changed_in_place_stays_the_users(engine):
    target = np.zeros(3)

    def f(x):
        return np.sum((x - target) ** 2 * np.cos(x))

    g = nad.grad(f, engine=engine)
    expected = lambda: 2 * (X - target) * np.cos(X) - (X - target) ** 2 * np.sin(X)  # noqa: E731
    np.testing.assert_allclose(g(X), expected(), rtol=1e-12)
    assert target.flags.writeable  # tracing never freezes the user's array
    target[:] = 1.0  # the user's own write works
    np.testing.assert_allclose(g(X), expected(), rtol=1e-12)
    target += np.array([0.5, -2.0, 3.0])
    np.testing.assert_allclose(g(X), expected(), rtol=1e-12)


def test_captured_array_is_a_program_input_not_a_constant():
    """A change of a captured array's contents re-traces to the same program, so the
    compiled kernels are reused; the program carries no copy of the data."""
    target = np.arange(3.0)
    f = lambda x: np.sum((x - target) ** 2)  # noqa: E731
    program = nad.trace(f, X)
    assert len(program.inputs) == 2
    assert not any(s.primitive.name == "const" and s.kwargs["dtype"] == "float64"
                   and np.shape(s.kwargs["value"]) for s in program.steps)
    target[0] = 7.0
    assert nad.trace(f, X) == program


def test_rebound_global_between_two_minimize_calls(restore_globals):
    global data
    first = nad.minimize(_fit, np.zeros(3), method="trust-ncg", options={"gtol": 1e-10})
    data = np.array([-1.0, 0.5, 2.0])
    second = nad.minimize(_fit, np.zeros(3), method="trust-ncg", options={"gtol": 1e-10})
    for res, d in ((first, np.array([1.0, 2.0, 3.0])), (second, data)):
        assert res.success
        # the minimiser solves 2 (x - d) + 0.4 x^3 = 0 for the data of *that* call
        np.testing.assert_allclose(2 * (res.x - d) + 0.4 * res.x ** 3, 0.0, atol=1e-9)
    assert not np.allclose(first.x, second.x)


def test_objective_follows_in_place_data_change(restore_globals):
    obj = nad.Objective(_fit, **NP)
    before = obj.jac(X)
    data[:] = 0.0
    np.testing.assert_allclose(obj.jac(X), 2 * X + 0.4 * X ** 3)
    assert not np.allclose(before, obj.jac(X))
    np.testing.assert_allclose(obj.hessp(X, np.ones(3)), 2 + 1.2 * X ** 2)


def test_global_read_by_a_helper_function(restore_globals):
    g = nad.grad(_calls_helper, **NP)
    np.testing.assert_allclose(g(X), 2.0 * np.cos(X) + 4 * X ** 3)
    config.scale = -1.0
    np.testing.assert_allclose(g(X), -np.cos(X) + 4 * X ** 3)


def test_item_of_a_captured_dict(restore_globals):
    g = nad.grad(_from_dict, **NP)
    np.testing.assert_allclose(g(X), -np.sin(X))
    params["lam"] = 3.0
    np.testing.assert_allclose(g(X), -3.0 * np.sin(X))


def test_default_argument_and_partial():
    w = np.ones(3)

    def f(x, w=w):
        return np.sum(w * x ** 2)

    p = functools.partial(lambda x, c: np.sum(c * x), c=np.ones(3))
    gf, gp = nad.grad(f, **NP), nad.grad(p, **NP)
    np.testing.assert_allclose(gf(X), 2 * X)
    np.testing.assert_allclose(gp(X), np.ones(3))
    w[:] = 3.0
    p.keywords["c"][:] = 2.0
    np.testing.assert_allclose(gf(X), 6 * X)
    np.testing.assert_allclose(gp(X), 2 * np.ones(3))


def test_value_dependent_python_branch_on_a_captured_flag():
    use_square = True

    def f(x):
        return np.sum(x ** 2) if use_square else np.sum(x ** 3)

    g = nad.grad(f, **NP)
    np.testing.assert_allclose(g(X), 2 * X)
    use_square = False
    np.testing.assert_allclose(g(X), 3 * X ** 2)


def test_nothing_to_guard_for_module_and_library_reads():
    """Only modules and library functions are read: no per-call check at all."""
    def rosen(x):
        return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)

    assert find_captures(rosen) is None
    assert find_captures(np.sum) is None


def test_unchanged_values_do_not_retrace():
    calls = []
    scale = 2.0

    def f(x):
        calls.append(1)
        return scale * np.sum(x ** 2)

    g = nad.grad(f, **NP)
    for _ in range(3):
        g(X)
    assert len(calls) == 1
    scale = 2.0 + 0.0  # an equal value in another object is not a change
    g(X)
    assert len(calls) == 1
    scale = 3.0
    g(X)
    assert len(calls) == 2
