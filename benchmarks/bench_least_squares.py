"""asv: ``nad.least_squares`` against scipy's least_squares with ``jac="2-point"``.

The problems are MGH #30 (Broyden tridiagonal) and MGH #31 (Broyden banded) as
residual vectors, from their standard start ``x0 = -1``: sparse Jacobians (3 and 7
non-zeros per row), n residuals. Solvers:

* ``newtonad`` — ``nad.least_squares``: the exact sparse Jacobian from one coloured
  jvp frame (3 and 7 colours), scipy's ``trf`` with ``lsmr``;
* ``scipy-2point`` — scipy's default: dense forward differences (n residual
  evaluations per Jacobian) and the ``exact`` trust-region solver (an SVD per step);
  only run at n <= 1000, where the dense Jacobian fits;
* ``scipy-2point-sparsity`` — forward differences grouped by the pattern
  (``jac_sparsity``), scipy's best case: 3 (7) residual evaluations per Jacobian.

Tracked: wall ``seconds`` of one solve (after one warm-up solve, numba engine),
``nfev`` (scipy's count of residual evaluations; trf leaves out the finite
differences' own) and ``njev`` (Jacobians: each costs n residual evaluations for
``scipy-2point``, as many as colours for ``scipy-2point-sparsity``, one jvp frame for
``newtonad``). ``python benchmarks/sparse_report.py`` prints them as a table.
"""

import time

import numpy as np

ENGINE = "numba"
SOLVERS = ["newtonad", "scipy-2point", "scipy-2point-sparsity"]
PROBLEMS = ["broyden-tridiagonal", "broyden-banded"]
#: the dense finite-difference solve needs a dense n x n Jacobian and its SVD
DENSE_LIMIT = 1000


def broyden_tridiagonal(x):
    """MGH #30 residuals: (3 - 2 x_i) x_i - x_{i-1} - 2 x_{i+1} + 1, x_0 = x_{n+1} = 0."""
    before = np.concatenate([np.zeros(1), x[:-1]])
    after = np.concatenate([x[1:], np.zeros(1)])
    return (3.0 - 2.0 * x) * x - before - 2.0 * after + 1.0


def broyden_banded(x):
    """MGH #31 residuals: x_i (2 + 5 x_i^2) + 1 - sum of x_j (1 + x_j), i-5 <= j <= i+1, j != i."""
    n = x.size
    g = np.concatenate([np.zeros(5), x * (1.0 + x), np.zeros(1)])  # g[5 + j] = x_j (1 + x_j)
    near = sum(g[5 + d:5 + d + n] for d in (-5, -4, -3, -2, -1, 1))
    return x * (2.0 + 5.0 * x * x) + 1.0 - near


RESIDUALS = {"broyden-tridiagonal": broyden_tridiagonal, "broyden-banded": broyden_banded}


def solve(solver, n, problem="broyden-tridiagonal"):
    """One solve of ``problem`` at size ``n`` by ``solver``; returns scipy's result."""
    from scipy import optimize

    import newtonad as nad

    residuals = RESIDUALS[problem]
    x0 = -np.ones(n)
    if solver == "newtonad":
        return nad.least_squares(residuals, x0, engine=ENGINE)
    if solver == "scipy-2point":
        return optimize.least_squares(residuals, x0, jac="2-point")
    pattern = nad.jacobian_sparsity(residuals)(x0)
    return optimize.least_squares(residuals, x0, jac="2-point", jac_sparsity=pattern)


class LeastSquares:
    """Seconds and residual evaluations of one solve, per solver and size."""

    params = [SOLVERS, [1000, 10_000], PROBLEMS]
    param_names = ["solver", "n", "problem"]
    tiny_params = [SOLVERS, [50], PROBLEMS]  # what tests/test_benchmarks.py runs
    timeout = 600

    def setup(self, solver, n, problem):
        if solver == "scipy-2point" and n > DENSE_LIMIT:
            raise NotImplementedError  # asv: skip (a dense n x n Jacobian and its SVD)
        self.result = solve(solver, n, problem)  # warm-up: traces and compiles for newtonad

    def time_solve(self, solver, n, problem):
        solve(solver, n, problem)

    def track_seconds(self, solver, n, problem):
        start = time.perf_counter()
        solve(solver, n, problem)
        return time.perf_counter() - start

    track_seconds.unit = "seconds"

    def track_nfev(self, solver, n, problem):
        return int(self.result.nfev)

    track_nfev.unit = "evaluations"

    def track_njev(self, solver, n, problem):
        return int(self.result.njev)

    track_njev.unit = "Jacobians"
