"""asv: sparse Hessians by colouring, and sparse trust-exact against the Krylov methods.

Two problems of ``newtonad.problems`` with sparse Hessians:

* ``chained-rosenbrock`` -- tridiagonal, 3 colours at every n;
* ``minimal-surface`` -- a 5-point-stencil energy on a square grid (n is rounded to
  the nearest perfect square: 1024, 10 000, 99 856, 1 000 000).

``SparseHessian`` times one Hessian at the standard start ``x0``, warm (pattern,
colouring, recovery plan and kernels made in ``setup``), on two paths:

* ``sparse`` -- ``nad.hessian(f, sparse=True)``: one HVP frame of k = colours columns,
  recovered into a ``csr_array``;
* ``dense`` -- ``nad.hessian(f)``: identity frames of all n columns (in chunks), an
  n x n array; only up to ``DENSE_LIMIT`` variables (800 MB at n = 1e4).

``track_colours`` is the frame's width: the colours of the star colouring on the sparse
path, n on the dense one. ``HessianOverFrame`` tracks the target ratio: seconds
of one sparse Hessian over seconds of one bare HVP frame of the same k columns
(medians of interleaved calls).

``SparseSolvers`` runs ``nad.minimize`` with trust-exact on ``Objective(f, sparse=True)``
(Moré–Sorensen on a sparse factorisation), trust-ncg and newton-cg at moderate n, all
runs once in ``setup_cache`` after a warm-up solve, and tracks iterations, Hessians or
Hessian-vector products, seconds and the final f (chained Rosenbrock's exact-Newton
iterates end in its local minimum f = 3.9866 from the standard start, as scipy's do).

``nad.least_squares`` against scipy's ``jac="2-point"`` is in ``bench_least_squares``.
``python benchmarks/sparse_report.py`` prints all of these as tables.
"""

import functools
import statistics
import time

import numpy as np

ENGINE = "numba"
PROBLEMS = ["chained-rosenbrock", "minimal-surface"]
SIZES = [1000, 10_000, 100_000, 1_000_000]
#: the dense Hessian is n x n float64: 8 MB at n = 1e3, 800 MB at 1e4
DENSE_LIMIT = 10_000
#: "<problem>-<n>" of the solver comparison: a few seconds per method at most
SOLVER_PROBLEMS = ["broyden-tridiagonal-10000", "chained-rosenbrock-1000", "minimal-surface-1024"]
METHODS = ["trust-exact-sparse", "trust-ncg", "newton-cg"]


def load_key(key):
    """The problem of a ``"<problem>-<n>"`` key."""
    name, n = key.rsplit("-", 1)
    return load(name, int(n))


def load(name, n):
    """``newtonad.problems.get(name, m)`` for the size ``m`` nearest ``n`` it accepts."""
    from newtonad import problems

    if name == "minimal-surface":
        n = int(round(np.sqrt(n))) ** 2
    return problems.get(name, n)


def colours_of(fun, x):
    """(colours, largest row count) of the star colouring of ``fun``'s Hessian pattern."""
    import newtonad as nad
    from newtonad.sparse import star_colouring

    pattern = nad.hessian_sparsity(fun)(x)
    colours = star_colouring(pattern)
    return int(colours.max(initial=-1)) + 1, int(np.diff(pattern.indptr).max(initial=0))


def median_seconds(call, repeats, *args):
    """Median wall seconds of ``repeats`` calls of ``call(*args)``."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def hessian_over_frame(fun, x, k, repeats):
    """(sparse Hessian seconds, one k-column HVP frame seconds), medians of interleaved calls.

    Both warm: the caller has made one sparse Hessian and one frame of k columns before.
    """
    import newtonad as nad

    hess = nad.hessian(fun, sparse=True, engine=ENGINE)
    frame = functools.partial(nad.hvp, engine=ENGINE)
    V = np.random.default_rng(0).standard_normal(x.shape + (k,))
    sparse_times, frame_times = [], []
    for _ in range(repeats):
        sparse_times.append(median_seconds(hess, 1, x))
        frame_times.append(median_seconds(frame, 1, fun, x, V))
    return statistics.median(sparse_times), statistics.median(frame_times)


def _solve(method, problem):
    import newtonad as nad

    sparse = method == "trust-exact-sparse"
    meth = "trust-exact" if sparse else method
    obj = nad.Objective(problem.fun, engine=ENGINE, sparse=sparse)
    start = time.perf_counter()
    res = nad.minimize(obj, problem.x0.copy(), method=meth)
    return res, time.perf_counter() - start


def run_solver(method, problem):
    """One warm solve of ``problem`` by ``method``; the numbers tracked, as a dict.

    A first, untimed, solve traces and compiles every program the method uses (the
    linearised HVP of the Krylov methods too); the timed solve reuses them through a
    new ``Objective`` (no values cached from the first).
    """
    _solve(method, problem)
    res, seconds = _solve(method, problem)
    return {"nit": int(res.nit), "nfev": int(res.nfev), "nhev": int(res.nhev),
            "seconds": seconds, "fun": float(res.fun),
            "gnorm": float(np.linalg.norm(res.jac)), "success": bool(res.success)}


class SparseHessian:
    """Seconds of one warm Hessian, and the frame's width, per problem, n and path."""

    params = [PROBLEMS, SIZES, ["sparse", "dense"]]
    param_names = ["problem", "n", "path"]
    tiny_params = [PROBLEMS, [100], ["sparse", "dense"]]  # what tests/test_benchmarks.py runs
    timeout = 900

    def setup(self, problem, n, path):
        import newtonad as nad

        if path == "dense" and n > DENSE_LIMIT:
            raise NotImplementedError  # asv: skip (an n x n array)
        self.problem = load(problem, n)
        self.x = self.problem.x0.copy()
        self.hess = nad.hessian(self.problem.fun, sparse=path == "sparse", engine=ENGINE)
        self.hess(self.x)  # warm-up: trace, pattern, colouring, plan, kernels

    def time_hessian(self, problem, n, path):
        self.hess(self.x)

    def track_colours(self, problem, n, path):
        if path == "dense":
            return self.problem.n  # an identity frame: one column per variable
        return colours_of(self.problem.fun, self.x)[0]

    track_colours.unit = "columns"


class HessianOverFrame:
    """The sparse Hessian's seconds over one bare HVP frame of as many columns (target: <= 3)."""

    params = [PROBLEMS, SIZES]
    param_names = ["problem", "n"]
    tiny_params = [PROBLEMS, [100]]
    timeout = 900

    def setup(self, problem, n):
        import newtonad as nad

        self.problem = load(problem, n)
        self.x = self.problem.x0.copy()
        self.k = colours_of(self.problem.fun, self.x)[0]
        nad.hessian(self.problem.fun, sparse=True, engine=ENGINE)(self.x)
        nad.hvp(self.problem.fun, self.x, np.ones(self.x.shape + (self.k,)), engine=ENGINE)

    def track_ratio(self, problem, n):
        repeats = 9 if self.problem.n <= 100_000 else 5
        sparse, frame = hessian_over_frame(self.problem.fun, self.x, self.k, repeats)
        return sparse / frame

    track_ratio.unit = "ratio"


class SparseSolvers:
    """nit, nhev, seconds and f of sparse trust-exact, trust-ncg and newton-cg."""

    params = [METHODS, SOLVER_PROBLEMS]
    param_names = ["method", "problem"]
    #: what tests/test_benchmarks.py runs (setup_cache solves the problems of ``params``)
    tiny_params = [METHODS, ["broyden-tridiagonal-200"]]
    timeout = 900

    def setup_cache(self):
        methods, keys = self.params
        results = {}
        for key in keys:
            problem = load_key(key)
            for method in methods:
                results[method, key] = run_solver(method, problem)
        return results

    def track_nit(self, results, method, problem):
        return results[method, problem]["nit"]

    def track_nhev(self, results, method, problem):
        return results[method, problem]["nhev"]

    def track_seconds(self, results, method, problem):
        return results[method, problem]["seconds"]

    def track_fun(self, results, method, problem):
        return results[method, problem]["fun"]

    track_nit.unit = "iterations"
    track_nhev.unit = "Hessians or products"
    track_seconds.unit = "seconds"
    track_fun.unit = "f"
