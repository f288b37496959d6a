"""The eager Var / Op expression graph (values as you go, then backward), the Program
IR's validation, and Objective caching."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize

import newtonad as nad
from newtonad import objective
from newtonad._point import new_key
from newtonad.ad.primitives import elementwise as ew
from newtonad.ad.program import Program, Slot, Step

from .helpers import assert_close

# ---- eager Vars ---------------------------------------------------------------------------

def test_api_md_eager_example():
    x = nad.Var(np.array([0.5, 2.0]))
    y = nad.Var(3.0)
    f = nad.numpy.sum(nad.numpy.sin(x) + x * y)
    assert np.isclose(f.value, np.sum(np.sin([0.5, 2.0]) + 3.0 * np.array([0.5, 2.0])))
    assert f.creator is not None and f.creator.primitive.name == "reduce_sum"
    f.backward()
    assert_close(x.grad, np.cos([0.5, 2.0]) + 3.0, 1e-15, 1e-15)
    assert np.isclose(y.grad, 2.5)


def test_eager_intermediate_grads_and_fan_out():
    """f = (x + y) + sin(y): intermediates get grads too, branches add at y."""
    x, y = nad.Var(0.3), nad.Var(1.2)
    a = x + y
    f = a + np.sin(y)
    f.backward()
    assert np.isclose(a.grad, 1.0)
    assert np.isclose(x.grad, 1.0)
    assert np.isclose(y.grad, 1.0 + np.cos(1.2))


def test_eager_vars_work_with_numpy_functions_and_control_flow():
    x = nad.Var(np.array([1.0, -2.0, 3.0]))
    f = np.sum(np.where(x > 0, x ** 2, -x)) if x[0] > 0 else np.sum(x)  # values are known
    f.backward()
    assert_close(x.grad, [2.0, -1.0, 6.0], 1e-15, 1e-15)


def test_backward_needs_a_scalar_or_explicit_grad():
    x = nad.Var(np.array([1.0, 2.0]))
    y = x * x
    with pytest.raises(ValueError, match="scalar"):
        y.backward()
    y.backward(np.array([1.0, 0.5]))
    assert_close(x.grad, [2.0, 2.0], 1e-15, 1e-15)


def test_api_functions_accept_eager_vars():
    x = nad.Var(np.array([0.4, 0.9]))
    g = nad.grad(lambda v: np.sum(v ** 3))(x)  # inlined into the eager graph
    assert_close(g.value, 3 * np.array([0.4, 0.9]) ** 2, 1e-15, 1e-15)
    np.sum(g).backward()
    assert_close(x.grad, 6 * np.array([0.4, 0.9]), 1e-14, 1e-14)


# ---- the IR ---------------------------------------------------------------------------------

def test_program_validation_catches_bad_order_and_shapes():
    sin = ew.sin_p
    ok = Program((Slot((3,)), Slot((3,))), (Step(sin, (0,), (), 1),), (0,), (1,))
    assert "sin(s0)" in str(ok)
    with pytest.raises(ValueError, match="before it is written"):
        Program((Slot((3,)), Slot((3,)), Slot((3,))), (Step(sin, (2,), (), 1),), (0,), (1,))
    with pytest.raises(ValueError, match="shape rule"):
        Program((Slot((3,)), Slot((4,))), (Step(sin, (0,), (), 1),), (0,), (1,))
    with pytest.raises(ValueError, match="written twice"):
        Program((Slot((3,)), Slot((3,))), (Step(sin, (0,), (), 1), Step(sin, (0,), (), 1)),
                (0,), (1,))


# ---- Objective ----------------------------------------------------------------------------

def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def test_objective_fun_and_jac_share_one_evaluation():
    obj = nad.Objective(rosen)
    x = np.array([-1.2, 1.0, 0.5])
    assert np.isclose(obj.fun(x), scipy.optimize.rosen(x))
    assert_close(obj.jac(x.copy()), scipy.optimize.rosen_der(x), 1e-14, 1e-14)  # a copy hits
    assert (obj.nfev, obj.njev) == (1, 1)
    obj.fun(x + 1.0)
    assert (obj.nfev, obj.njev) == (2, 2)


def _rosen_point(n: int, shift: float = 0.0) -> np.ndarray:
    return np.resize([-1.2, 1.0, 0.5, 2.0], n) + shift


@pytest.mark.parametrize("n", [4, 300])  # below and above _LINEARIZE_FROM
def test_objective_hessp_linearises_once_where_it_pays(n):
    obj = nad.Objective(rosen)
    x = _rosen_point(n)
    H = scipy.optimize.rosen_hess(x)
    calls = []
    original = obj._linearized

    def spy(x_, k):
        calls.append(new_key(obj._at.key, x_) is not None or k not in obj._at.linear)
        return original(x_, k)

    obj._linearized = spy
    for j in range(4):
        p = np.eye(n)[j]
        assert_close(obj.hessp(x.copy(), p), H[:, j], 1e-12, 1e-12)
    # n = 300: the first product is one whole HVP pass; the second linearises (the one
    # residual pass); the third and fourth reuse it without asking again. n = 4: every
    # product is a whole pass (the residuals would cost more to pass than they save).
    assert calls == ([True] if n >= objective._LINEARIZE_FROM else [])
    assert obj.nhev == 4
    P = np.random.default_rng(0).standard_normal((n, 3))
    assert_close(obj.hessp(x, P), H @ P, 1e-12, 1e-12)
    assert_close(obj.hess(x), H, 1e-12, 1e-12)


@pytest.mark.parametrize("n", [300, 5000])  # points kept as bytes / as a private copy
def test_objective_newton_pattern_runs_one_primal_pass_per_point(n):
    """Once hessp is used, jac at a new point keeps the residuals there: the products at
    that point run the linear program, never a whole HVP pass; a product at a point
    never seen is one whole pass."""
    obj = nad.Objective(rosen)
    x1, x2, x3 = (_rosen_point(n, d) for d in (0.0, 0.1, 0.2))
    obj.hessp(x1, np.ones(n))  # the first product at a new point: a whole HVP pass
    shape_k, whole_hvp, data = obj._hvp_runner
    passes = []
    obj._hvp_runner = (shape_k, lambda *a: passes.append(1) or whole_hvp(*a), data)
    assert_close(obj.jac(x2), scipy.optimize.rosen_der(x2), 1e-12, 1e-12)
    for j in range(4):
        e = np.eye(n)[j]
        assert_close(obj.hessp(x2.copy(), e), scipy.optimize.rosen_hess_prod(x2, e), 1e-12, 1e-12)
    assert passes == []
    assert obj.nfev == 1  # jac's pass at x2 made the residuals too
    e = np.eye(n)[0]
    assert_close(obj.hessp(x3, e), scipy.optimize.rosen_hess_prod(x3, e), 1e-12, 1e-12)
    assert passes == [1]


def test_objective_with_data_args_and_matrix_shaped_x():
    A = np.random.default_rng(1).standard_normal((3, 3))
    obj = nad.Objective(lambda X, A: np.sum((X @ A) ** 2), args=(A,))
    X = np.eye(3)
    assert_close(obj.jac(X), 2 * X @ A @ A.T, 1e-13, 1e-13)
    assert obj.hess(X).shape == (3, 3, 3, 3)


def test_api_and_objective_share_helpers_without_private_imports():
    """What api and Objective share lives in newtonad._programs; neither module reads a
    private name of the other (``api._traced`` and the like)."""
    import ast
    from pathlib import Path

    root = Path(nad.__file__).parent
    for module, other in (("objective", "api"), ("api", "objective")):
        tree = ast.parse((root / f"{module}.py").read_text())
        reached = [f"{node.value.id}.{node.attr}" for node in ast.walk(tree)
                   if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                   and node.value.id == other and node.attr.startswith("_")]
        imported = [f"{node.module}: {a.name}" for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom) and node.module == other
                    for a in node.names if a.name.startswith("_")]
        assert not reached + imported, (module, reached + imported)
        assert any(isinstance(node, ast.ImportFrom) and node.module == "_programs"
                   for node in ast.walk(tree)), module


def test_objective_with_scipy_trust_ncg():
    obj = nad.Objective(rosen)
    res = scipy.optimize.minimize(obj.fun, np.array([-1.2, 1.0]), jac=obj.jac, hessp=obj.hessp,
                                  method="trust-ncg")
    assert res.success and np.allclose(res.x, 1.0, atol=1e-6)


def test_objective_rejects_non_callable():
    with pytest.raises(TypeError, match="callable"):
        nad.Objective(3.0)


def test_objective_frame_shape_error():
    obj = nad.Objective(rosen)
    with pytest.raises(ValueError, match=r"\(3,\) \+ \(k,\)"):
        obj.hessp(np.zeros(3), np.zeros((2, 2)))


def test_to_dot_draws_computation_and_backpropagation_graphs():
    program = nad.trace(lambda x: np.sum(x[0] * x[1] + np.exp(x[0] * x[1])), np.ones((2, 3)))
    forward = program.to_dot()
    backward = program.to_dot(backward=True)
    assert forward.startswith("digraph") and "doublecircle" in forward and "exp" in forward
    edges = {line.strip() for line in forward.splitlines() if "->" in line}
    reversed_edges = {line.strip() for line in backward.splitlines() if "->" in line}
    flip = {" -> ".join(reversed(e.rstrip(";").split(" -> "))) + ";" for e in edges}
    assert reversed_edges == flip and len(edges) >= len(program.steps)


def test_newton_use_pays_one_pass_per_point():
    """After hessp is used, fun at a new point also keeps the Hessian's residuals."""
    obj = nad.Objective(rosen)
    x = np.array([-1.2, 1.0, 0.5])
    obj.hessp(x, np.ones(3))
    y = x + 0.1
    obj.fun(y)
    n_before = obj.nfev
    H = scipy.optimize.rosen_hess(y)
    assert_close(obj.hessp(y, np.eye(3)), H, 1e-12, 1e-12)
    assert_close(obj.jac(y), scipy.optimize.rosen_der(y), 1e-13, 1e-13)
    assert obj.nfev == n_before  # neither hessp nor jac at y recomputed anything primal


@pytest.mark.parametrize("n", [4, 5000])  # bytes-compared and elementwise-compared points
def test_objective_cache_survives_mutation_of_inputs_and_results(n):
    obj = nad.Objective(rosen)
    x = np.linspace(-1.0, 1.5, n)
    expected_g = scipy.optimize.rosen_der(x)
    g = obj.jac(x)
    g[:] = 0.0  # the caller owns what it got
    assert_close(obj.jac(x), expected_g, 1e-12, 1e-12)
    x[0] += 0.25  # scipy may update x in place: the cache must see a new point
    assert_close(obj.jac(x), scipy.optimize.rosen_der(x), 1e-12, 1e-12)
    assert obj.njev == 2
    p = np.ones(n)
    hp = obj.hessp(x, p)
    hp[:] = 0.0
    assert_close(obj.hessp(x, p), scipy.optimize.rosen_hess_prod(x, p), 1e-12, 1e-12)
    assert obj.fun(x) == pytest.approx(scipy.optimize.rosen(x), rel=1e-13)
    assert obj.nfev == 2


def test_objective_at_a_non_finite_point_gives_what_f_gives():
    """A solver's trial point may overflow: the Objective evaluates f there (nan / inf),
    as a scipy objective does, instead of raising, and the next finite point is exact."""
    obj = nad.Objective(lambda x: np.sum(np.exp(x)), engine="numpy")
    assert np.isnan(obj.fun(np.array([np.nan, 0.0])))
    assert obj.fun(np.array([np.inf, 0.0])) == np.inf
    assert np.isnan(obj.jac(np.array([np.nan, 0.0]))[0])
    assert_close(obj.jac(np.array([0.0, 1.0])), np.exp([0.0, 1.0]))
