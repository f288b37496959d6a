"""asv: solver cost per method, in scipy's style, with a slow-objective variant.

Every native method (``newtonad.minimize``) and scipy's method of the same name
(``scipy:<method>``, fed with newtonad's ``jac`` and ``hessp`` / ``hess``) runs on
two problems, each in two variants:

* ``fast`` — the objective as it is;
* ``slow`` — the same objective with a fixed sleep of ``DELAY`` seconds per
  evaluation (each value-and-gradient pass, each Hessian-vector frame, each
  dense Hessian), like scipy's ``SlowRosen``: the time is then dominated by
  the objective, so methods are compared by the evaluations they need.

Tracked per run: ``nfev`` (value-and-gradient passes), ``nhev`` (Hessian-vector
products), ``nit``, wall ``time`` and ``overhead`` — the wall time spent outside
the objective's callbacks, i.e. the solver's own cost, which the slow variant
leaves unchanged. All runs happen once in ``setup_cache``.
"""

import time

import numpy as np

#: compiled kernels, named: the tiered default would time its NumPy tier in short runs
ENGINE = "numba"

#: seconds slept per evaluation in the slow variant
DELAY = 2e-4
METHODS = ["newton-cg", "trust-ncg", "trust-krylov", "trust-exact",
           "scipy:newton-cg", "scipy:trust-ncg", "scipy:trust-krylov", "scipy:trust-exact"]
#: (name in newtonad.problems, n or None for the default)
PROBLEMS = {"rosenbrock": ("rosenbrock", None),
            "chained-rosenbrock-100": ("chained-rosenbrock", 100)}
VARIANTS = ["fast", "slow"]


class SlowObjective:
    """An objective wrapper that sleeps ``delay`` seconds per evaluation and times its calls.

    It follows the objective protocol of ``newtonad.Objective`` (``fun``, ``jac``,
    ``value_and_grad``, ``hessp``, ``linearize_hessp``, ``hess`` and the counters),
    so both ``newtonad.minimize`` and scipy accept it. ``inside`` accumulates the
    seconds spent in the callbacks, sleep included.
    """

    def __init__(self, inner, delay=0.0):
        self.inner = inner
        self.delay = delay
        self.inside = 0.0

    # counters of what was really computed
    nfev = property(lambda self: self.inner.nfev)
    njev = property(lambda self: self.inner.njev)
    nhev = property(lambda self: self.inner.nhev)

    def _timed(self, fn, *args, evaluation=True):
        start = time.perf_counter()
        before = self.inner.nfev
        out = fn(*args)
        if self.delay and (evaluation or self.inner.nfev != before):
            time.sleep(self.delay)
        self.inside += time.perf_counter() - start
        return out

    def value_and_grad(self, x):
        return self._timed(self.inner.value_and_grad, x, evaluation=False)

    def fun(self, x):
        return self.value_and_grad(x)[0]

    def jac(self, x):
        return self.value_and_grad(x)[1]

    def linearize_hessp(self, x):
        hvp_at_x = self._timed(self.inner.linearize_hessp, x, evaluation=False)
        return lambda v: self._timed(hvp_at_x, v)

    def hessp(self, x, p):
        return self.linearize_hessp(x)(p)

    def hess(self, x):
        return self._timed(self.inner.hess, x)


def _minimize():
    import newtonad

    found = getattr(newtonad, "minimize", None)
    if found is None:
        from newtonad.solvers import minimize as found
    return found


def _scipy(obj, x0, method):
    import scipy.optimize

    second = {"hess": obj.hess} if method == "trust-exact" else {"hessp": obj.hessp}
    return scipy.optimize.minimize(obj.fun, x0, jac=obj.jac, method=method, **second)


def run_one(method, problem, delay):
    """Solve ``problem`` with ``method``; return the tracked numbers as a dict."""
    import newtonad as nad

    obj = SlowObjective(nad.Objective(problem.fun, engine=ENGINE), delay)
    start = time.perf_counter()
    if method.startswith("scipy:"):
        res = _scipy(obj, problem.x0.copy(), method[len("scipy:"):])
    else:
        res = _minimize()(obj, problem.x0.copy(), method=method)
    wall = time.perf_counter() - start
    return {"nfev": obj.nfev, "nhev": obj.nhev, "nit": int(res.nit), "time": wall,
            "overhead": wall - obj.inside, "fun": float(res.fun)}


def _warm_up(problem):
    """Trace and compile before timing (later Objectives reuse the programs)."""
    import newtonad as nad

    obj = nad.Objective(problem.fun, engine=ENGINE)
    obj.value_and_grad(problem.x0)
    obj.hessp(problem.x0, np.ones_like(problem.x0))
    obj.hess(problem.x0)


class Solvers:
    """nfev, nhev, nit, time and overhead per method, problem and variant."""

    params = [METHODS, list(PROBLEMS), VARIANTS]
    param_names = ["method", "problem", "variant"]
    #: what tests/test_benchmarks.py runs
    tiny_params = [METHODS, ["rosenbrock"], VARIANTS]
    timeout = 600

    def setup_cache(self):
        from newtonad import problems

        try:
            _minimize()
            native = True
        except ImportError:
            native = False
        methods, keys, variants = self.params
        results = {}
        for key in keys:
            problem = problems.get(*PROBLEMS[key])
            _warm_up(problem)
            for method in methods:
                if not native and not method.startswith("scipy:"):
                    continue
                for variant in variants:
                    delay = DELAY if variant == "slow" else 0.0
                    results[method, key, variant] = run_one(method, problem, delay)
        return results

    def setup(self, results, method, problem, variant):
        if (method, problem, variant) not in results:
            raise NotImplementedError("native solvers not importable")

    def track_nfev(self, results, method, problem, variant):
        return results[method, problem, variant]["nfev"]

    def track_nhev(self, results, method, problem, variant):
        return results[method, problem, variant]["nhev"]

    def track_nit(self, results, method, problem, variant):
        return results[method, problem, variant]["nit"]

    def track_time(self, results, method, problem, variant):
        return results[method, problem, variant]["time"]

    def track_overhead(self, results, method, problem, variant):
        return results[method, problem, variant]["overhead"]

    track_nfev.unit = "evaluations"
    track_nhev.unit = "products"
    track_nit.unit = "iterations"
    track_time.unit = "seconds"
    track_overhead.unit = "seconds"
