"""asv: bound-constrained solvers on the MINPACK-2 / COPS grid problems.

``tron`` (``newtonad.minimize``), scipy's L-BFGS-B with newtonad's exact gradient,
scipy's trust-constr with newtonad's exact Hessian products, and IPOPT through CasADi
(exact Hessian; skipped when casadi is not installed), each asked for a
projected-gradient norm of 1e-6 times its value at x0, as in
``benchmarks/bounds_report.py`` (whose runner this uses). Tracked per run:
iterations, Hessian(-vector) products, wall time and the final projected-gradient
norm relative to x0's. All runs happen once in ``setup_cache``; the solvers take turns
problem by problem.
"""

import importlib.util

import numpy as np

#: compiled kernels, named: the tiered default would time its NumPy tier in short runs
ENGINE = "numba"
SOLVERS = ["tron", "L-BFGS-B", "trust-constr", "ipopt"]
PROBLEMS = ["torsion", "journal-bearing", "obstacle"]
#: n = m^2 of the asv runs; tests/test_benchmarks.py runs ``TINY_N``
N = 100 ** 2
TINY_N = 10 ** 2
#: seconds per run before it is stopped (trust-constr is slow on the larger grids)
MAX_TIME = 120.0


def _runs(solvers, names, sizes):
    import newtonad as nad
    from newtonad import problems

    from .bounds_report import projected_gradient_norm, run_one

    results = {}
    cases = [(name, n) for n in sizes for name in names]
    for turn, (name, n) in enumerate(cases):
        p = problems.get(name, n)
        obj = nad.Objective(p.fun, engine=ENGINE)
        x0 = np.clip(p.x0, p.bounds.lb, p.bounds.ub)
        _, g0 = obj.value_and_grad(x0)          # compile before timing
        obj.hessp(x0, np.ones_like(x0))
        pg0 = projected_gradient_norm(x0, np.asarray(g0), p.bounds)
        order = solvers[turn % len(solvers):] + solvers[:turn % len(solvers)]
        for solver in order:
            if solver == "ipopt" and importlib.util.find_spec("casadi") is None:
                continue
            out = run_one(solver, p, obj, pg0, 1e-6, MAX_TIME, 100000, 10 ** 6)
            if "skipped" not in out:
                results[solver, name, n] = out
    return results


class BoundSolvers:
    """nit, products, time and final projected gradient per solver and grid problem."""

    params = [SOLVERS, PROBLEMS, [N]]
    param_names = ["solver", "problem", "n"]
    tiny_params = [SOLVERS, ["torsion"], [TINY_N]]
    timeout = 1800

    def setup_cache(self):
        solvers, names, sizes = self.params
        return _runs(list(solvers), list(names), list(sizes))

    def setup(self, results, solver, problem, n):
        if (solver, problem, n) not in results:
            raise NotImplementedError(f"{solver} not available (casadi or tron missing)")

    def track_nit(self, results, solver, problem, n):
        return results[solver, problem, n]["nit"]

    def track_products(self, results, solver, problem, n):
        return results[solver, problem, n]["products"]

    def track_time(self, results, solver, problem, n):
        return results[solver, problem, n]["time"]

    def track_pg_rel(self, results, solver, problem, n):
        return results[solver, problem, n]["pg_rel"]

    track_nit.unit = "iterations"
    track_products.unit = "products"
    track_time.unit = "seconds"
    track_pg_rel.unit = "relative"

