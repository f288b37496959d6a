"""Objective and the api functions called from many threads at once.

Every answer a thread gets is checked against a reference computed beforehand on one
thread with the NumPy reference evaluator, to a rounding tolerance: the compiled kernels
add in another order than NumPy does, so they agree to a few ulps of the terms' scale, not
bit for bit. A race (one thread's point or scratch arrays read by another) gives answers
wrong in far more than the last bits, or errors.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import numpy as np
import pytest

import newtonad as nad

N = 5000
THREADS = 8
CALLS = 40  # per thread
#: Relative to the largest entry of the reference: kernels and NumPy differ in the order of
#: additions only (a sum of N terms differs by at most ~N ulps, in practice far less).
RTOL = 1e-11


def f(x: np.ndarray) -> Any:
    # chained terms (x[i] with x[i+1]) so the Hessian is not diagonal, and a transcendental
    # so the HVP's residuals are not just x
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2) + np.sum(np.sin(x) * x)


def run_threads(work: Callable[[int], None], threads: int = THREADS) -> None:
    """Run ``work(t)`` on ``threads`` threads started together; re-raise the first error."""
    start = threading.Barrier(threads)
    errors: list[BaseException] = []

    def body(t: int) -> None:
        try:
            start.wait()
            work(t)
        except BaseException as e:  # noqa: BLE001 - handed to the main thread
            errors.append(e)

    pool = [threading.Thread(target=body, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    if errors:
        raise errors[0]


def close(got: Any, want: Any) -> bool:
    want = np.asarray(want)
    scale = max(float(np.max(np.abs(want))), 1.0)
    return bool(np.shape(got) == want.shape and np.all(np.abs(got - want) <= RTOL * scale))


@pytest.fixture(scope="module")
def points() -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(7)
    return [(rng.standard_normal(N), rng.standard_normal(N)) for _ in range(THREADS)]


@pytest.fixture(scope="module")
def reference(points: list) -> list[tuple[float, np.ndarray, np.ndarray]]:
    """f, ∇f and H p at each point, one thread, the NumPy evaluator."""
    ref = nad.Objective(f, engine="numpy")
    return [(ref.fun(x), ref.jac(x), ref.hessp(x, p)) for x, p in points]


def mixed_calls(obj: nad.Objective, points: list, reference: list, same_point: bool
                ) -> list[tuple[int, int, str]]:
    """Each thread calls fun / jac / value_and_grad / hessp (and hessp twice at one point,
    which linearises there) at its own sequence of points; the wrong answers."""
    wrong: list[tuple[int, int, str]] = []

    def work(t: int) -> None:
        for r in range(CALLS):
            i = 0 if same_point else (t + r // 2) % len(points)
            x, p = points[i]
            value, grad, hp = reference[i]
            kind = ("fun", "jac", "value_and_grad", "hessp")[(t + r) % 4]
            if kind == "fun":
                ok = close(obj.fun(x), value)
            elif kind == "jac":
                ok = close(obj.jac(x), grad)
            elif kind == "value_and_grad":
                v, g = obj.value_and_grad(x)
                ok = close(v, value) and close(g, grad)
            else:
                ok = close(obj.hessp(x, p), hp) and close(obj.hessp(x, p), hp)
            if not ok:
                wrong.append((t, r, kind))

    run_threads(work)
    return wrong


@pytest.mark.parametrize("engine", ["numpy", "numba", "auto"])
def test_threads_at_different_points_get_the_single_threaded_answers(engine, points, reference):
    obj = nad.Objective(f, engine=engine)
    obj.hessp(*points[0])  # compile before the threads start, so they race on the calls
    assert mixed_calls(obj, points, reference, same_point=False) == []


@pytest.mark.parametrize("engine", ["numpy", "numba"])
def test_threads_at_the_same_point_get_the_single_threaded_answers(engine, points, reference):
    obj = nad.Objective(f, engine=engine)
    assert mixed_calls(obj, points, reference, same_point=True) == []


@pytest.mark.parametrize("engine", ["numpy", "numba"])
def test_threads_compiling_one_objective_together(engine, points, reference):
    # nothing compiled yet: the threads trace and derive at once
    obj = nad.Objective(f, engine=engine)
    assert mixed_calls(obj, points[:2], reference[:2], same_point=False) == []


@pytest.mark.parametrize("engine", ["numpy", "numba"])
def test_linearized_products_from_many_threads(engine, points, reference):
    obj = nad.Objective(f, engine=engine)
    maps = [obj.linearize_hessp(x, reuse_output=True) for x, _ in points]
    wrong = []

    def work(t: int) -> None:
        for r in range(CALLS // 4):
            i = (t + r) % len(points)
            if not close(maps[i](points[i][1]), reference[i][2]):
                wrong.append((t, r))

    run_threads(work)
    assert wrong == []


def g(x: np.ndarray) -> Any:
    return np.sin(x[1:]) * x[:-1] + x[1:] ** 2


@pytest.mark.parametrize("engine", ["numpy", "numba"])
def test_api_functions_from_many_threads(engine):
    n = 400
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal(n) for _ in range(4)]
    V = rng.standard_normal((n, 3))
    W = rng.standard_normal((n - 1, 2))
    calls: dict[str, Callable[[np.ndarray, str], Any]] = {
        "grad": lambda x, e: nad.grad(f, engine=e)(x),
        "value_and_grad": lambda x, e: nad.value_and_grad(f, engine=e)(x)[1],
        "hvp": lambda x, e: nad.hvp(f, x, V, engine=e),
        "jvp": lambda x, e: nad.jvp(g, x, V, engine=e)[1],
        "vjp": lambda x, e: nad.vjp(g, x, W, engine=e)[1],
        "linearize": lambda x, e: nad.linearize(g, x, engine=e)[1](V),
        "jacobian": lambda x, e: nad.jacobian(g, engine=e)(x[:60]),
        "hessian": lambda x, e: nad.hessian(f, engine=e)(x[:60]),
    }
    names = sorted(calls)
    want = {(name, i): calls[name](x, "numpy") for name in names for i, x in enumerate(xs)}
    wrong = []

    def work(t: int) -> None:
        for r in range(2 * len(names)):
            name, i = names[(t + r) % len(names)], (t + 3 * r) % len(xs)
            if not close(calls[name](xs[i], engine), want[name, i]):
                wrong.append((t, name, i))

    run_threads(work)
    assert wrong == []
