"""asv: ``nad.least_squares`` against scipy's least_squares with ``jac="2-point"``.

The problem is MGH #30 (Broyden tridiagonal) as a residual vector, from its
standard start ``x0 = -1``: a sparse (tridiagonal) Jacobian, n residuals. Solvers:

* ``newtonad`` — ``nad.least_squares``: the exact sparse Jacobian from one coloured
  jvp frame (3 colours), scipy's ``trf`` with ``lsmr``;
* ``scipy-2point`` — scipy's default: dense forward differences (n residual
  evaluations per Jacobian) and the ``exact`` trust-region solver (an SVD per step);
  only run at n <= 1000, where the dense Jacobian fits;
* ``scipy-2point-sparsity`` — forward differences grouped by the pattern
  (``jac_sparsity``), scipy's best case: 3 residual evaluations per Jacobian.

Tracked: wall ``seconds`` of one solve (after one warm-up solve, numba engine) and
``nfev`` (scipy's count of residual evaluations; finite differences add theirs).
"""

import time

import numpy as np

ENGINE = "numba"
SOLVERS = ["newtonad", "scipy-2point", "scipy-2point-sparsity"]
#: the dense finite-difference solve needs a dense n x n Jacobian and its SVD
DENSE_LIMIT = 1000


def broyden_tridiagonal(x):
    """MGH #30 residuals: (3 - 2 x_i) x_i - x_{i-1} - 2 x_{i+1} + 1, x_0 = x_{n+1} = 0."""
    before = np.concatenate([np.zeros(1), x[:-1]])
    after = np.concatenate([x[1:], np.zeros(1)])
    return (3.0 - 2.0 * x) * x - before - 2.0 * after + 1.0


def solve(solver, n):
    """One solve of the problem at size ``n`` by ``solver``; returns scipy's result."""
    from scipy import optimize

    import newtonad as nad

    x0 = -np.ones(n)
    if solver == "newtonad":
        return nad.least_squares(broyden_tridiagonal, x0, engine=ENGINE)
    if solver == "scipy-2point":
        return optimize.least_squares(broyden_tridiagonal, x0, jac="2-point")
    pattern = nad.jacobian_sparsity(broyden_tridiagonal)(x0)
    return optimize.least_squares(broyden_tridiagonal, x0, jac="2-point",
                                  jac_sparsity=pattern)


class LeastSquares:
    """Seconds and residual evaluations of one solve, per solver and size."""

    params = [SOLVERS, [1000, 10_000]]
    param_names = ["solver", "n"]
    tiny_params = [SOLVERS, [50]]  # what tests/test_benchmarks.py runs
    timeout = 600

    def setup(self, solver, n):
        if solver == "scipy-2point" and n > DENSE_LIMIT:
            raise NotImplementedError  # asv: skip (a dense n x n Jacobian and its SVD)
        self.result = solve(solver, n)  # warm-up: traces and compiles for newtonad

    def time_solve(self, solver, n):
        solve(solver, n)

    def track_seconds(self, solver, n):
        start = time.perf_counter()
        solve(solver, n)
        return time.perf_counter() - start

    track_seconds.unit = "seconds"

    def track_nfev(self, solver, n):
        return int(self.result.nfev)

    track_nfev.unit = "evaluations"
