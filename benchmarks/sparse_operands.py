"""A scipy.sparse matrix inside the objective: newtonad's value and gradient against scipy by hand.

The objective is the graph-Laplacian quadratic ``f(x) = 1/2 x L x`` of a ``k x k`` grid
(``n = k^2`` variables, five entries per row), with ``L`` a ``scipy.sparse.csr_array``.
Timed, per call of the value and gradient at a fixed point:

* ``newtonad captured``: ``nad.value_and_grad(f, engine="numba")`` with ``L`` a global;
  each call also compares ``L``'s arrays with the trace's snapshot (the guard that keeps
  a captured value current);
* ``newtonad args``: the same with ``L`` passed in ``args`` (its pattern compared with
  the cached one, its entries a data input);
* ``scipy, two products``: ``y = L @ x; (x @ y / 2, (y + L.T @ x) / 2)`` -- what the
  gradient of ``x L x / 2`` is for any ``L``, as newtonad computes it;
* ``scipy, one product``: ``y = L @ x; (x @ y / 2, y)`` -- using that ``L`` is symmetric,
  which newtonad does not know.

Reported: the median over repeats (after a warm-up call that traces and compiles) and
the ratio to each scipy version. Run::

    python benchmarks/sparse_operands.py [--k 1000] [--repeats 15]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp

import newtonad as nad


def grid_laplacian(k: int) -> sp.csr_array:
    """The graph Laplacian (degree minus adjacency) of a k x k grid, canonical CSR."""
    path = sp.diags_array([np.ones(k - 1), np.ones(k - 1)], offsets=[-1, 1], shape=(k, k))
    eye = sp.eye_array(k)
    adjacency = sp.kron(path, eye) + sp.kron(eye, path)
    degree = sp.diags_array(np.asarray(adjacency.sum(axis=1)).ravel())
    lap = sp.csr_array(degree - adjacency)
    lap.sum_duplicates()
    return lap


L: Any = None  # the captured matrix of ``quadratic``


def quadratic(x):
    return 0.5 * (x @ (L @ x))


def quadratic_of(x, A):
    return 0.5 * (x @ (A @ x))


def scipy_two_products(x: np.ndarray) -> tuple[float, np.ndarray]:
    y = L @ x
    return 0.5 * float(x @ y), 0.5 * (y + L.T @ x)


def scipy_one_product(x: np.ndarray) -> tuple[float, np.ndarray]:
    y = L @ x
    return 0.5 * float(x @ y), y


def median_seconds(call: Callable[[], Any], repeats: int) -> float:
    call()  # warm-up: traces and compiles for newtonad
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure(k: int, repeats: int) -> dict[str, float]:
    global L
    L = grid_laplacian(k)
    x = np.random.default_rng(0).standard_normal(k * k)
    captured = nad.value_and_grad(quadratic, engine="numba")
    in_args = nad.value_and_grad(quadratic_of, engine="numba")
    f0, g0 = captured(x)
    f1, g1 = scipy_two_products(x)
    assert np.isclose(f0, f1, rtol=1e-12) and np.allclose(g0, g1, rtol=1e-12, atol=1e-12)
    return {"newtonad captured": median_seconds(lambda: captured(x), repeats),
            "newtonad args": median_seconds(lambda: in_args(x, L), repeats),
            "scipy, two products": median_seconds(lambda: scipy_two_products(x), repeats),
            "scipy, one product": median_seconds(lambda: scipy_one_product(x), repeats)}


class SparseLaplacianValueAndGrad:
    """asv: value and gradient of ``x L x / 2`` with a captured scipy.sparse ``L``."""

    params = [[100, 1000]]
    tiny_params = [[10]]
    param_names = ["k"]

    def setup(self, k: int) -> None:
        global L
        L = grid_laplacian(k)
        self.x = np.random.default_rng(0).standard_normal(k * k)
        self.vg = nad.value_and_grad(quadratic, engine="numba")
        self.vg(self.x)

    def time_newtonad(self, k: int) -> None:
        self.vg(self.x)

    def time_scipy_two_products(self, k: int) -> None:
        scipy_two_products(self.x)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=1000, help="grid side (n = k^2 variables)")
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    times = measure(args.k, args.repeats)
    n = args.k * args.k
    print(f"value and gradient of x L x / 2, grid Laplacian, n = {n}, nnz = {L.nnz}")
    for name, seconds in times.items():
        print(f"  {name:22s} {seconds * 1e3:8.2f} ms")
    for ref in ("scipy, two products", "scipy, one product"):
        for ours in ("newtonad captured", "newtonad args"):
            print(f"  {ours} / {ref}: {times[ours] / times[ref]:.2f}")


if __name__ == "__main__":
    main()
