"""Time per Hessian-vector product inside the native solvers, against the product alone.

For every problem of ``newtonad.problems`` at its largest size (:func:`largest_size`) and
every native method, one short run (``maxiter`` iterations) of ``newtonad.minimize`` on
a :class:`CountingObjective`, which counts the products the solver asks for (columns of
every frame, whatever path asks: the solver's operator, ``hessp``, ``hess``,
``sparse_hess``) and times the value-and-gradient evaluations. Printed per problem and
method:

* ``apply``: one linearised product alone (``Objective.linearize_hessp(x)`` applied to
  frames of the widths the solver used, mean of repetitions), per column;
* ``solver``: the wall time inside the solver's inner loops divided by the products
  counted there -- not the time inside the products alone. The loops timed are
  ``newton_cg.truncated_cg`` (newton-cg), ``SteihaugSubproblem._run_cg`` (trust-ncg;
  its re-solves on the recorded path after a rejected step make no products and are
  not timed) and the whole ``GLTRSubproblem.solve`` (trust-krylov: Lanczos steps,
  tridiagonal solves and assembling the step). Everything inside counts: getting the
  product operator at the point (the objective's point comparison, re-linearising,
  any fallback path), the products, the loops' own vector work and set-up (first
  direction, the step), and Python. With one or two products per outer iteration the
  set-up weighs as much as the loop. For trust-exact it is the time inside ``hess`` /
  ``sparse_hess`` per column (its factorisations are not products);
* ``in prod``: the part of ``solver`` spent inside the products themselves (the
  operators the objective handed out, timed per call; a product can be slower inside
  the loop than alone: other vectors evict its inputs from cache, parallel kernels'
  threads have gone to sleep between products);
* ``ratio``: ``solver / apply``; the target is at most 1.5;
* ``outer``: per outer iteration, the time outside the inner loops and the
  value-and-gradient evaluations (model set-up, line search, radius updates, and a
  linearisation the evaluations did not make: noted in the last column);
* the last column notes linearisations made outside evaluations (one at ``x0`` is
  expected: the first gradient there is taken before any product is asked for).

Times are the least of a few repetitions on both sides (a busy machine's preemptions
only ever add). Run
``python benchmarks/products_report.py [--maxiter 3] [--only NAME ...] [--methods M ...]
[--size N]``. Tracing and compiling happen in a warm-up run first, on the numba engine
(``--engine``): the default engine would run short runs on NumPy.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

if __package__ in (None, ""):  # run as a script: import newtonad from this checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import newtonad as nad  # noqa: E402
from newtonad import problems  # noqa: E402

METHODS = ("newton-cg", "trust-ncg", "trust-krylov", "trust-exact")
#: the size of the scalable problems: minimal-surface on a 256 x 256 grid,
#: rounded to each problem's size rule (watson stops at 31)
LARGEST = 65536
#: trust-exact's dense path factorises an n x n matrix per iteration: at most this n
DENSE_EXACT = 1000


def _rule(name: str) -> Any:
    from newtonad.problems._registry import _REGISTRY

    return _REGISTRY[name].size


def largest_size(name: str, largest: int = LARGEST) -> int:
    """The size a problem runs at here: its own for a fixed-size one, else ``largest``
    rounded to the problem's size rule, halved while ``f(x0)`` is not finite there
    (penalty-2's exponentials overflow at n = 65536)."""
    rule = _rule(name)
    if rule is None:
        return problems.get(name).n
    n = rule.nearest(largest)
    while n > rule.minimum:
        with np.errstate(all="ignore"):
            p = problems.get(name, n)
            if np.isfinite(p.fun(p.x0)):
                break
        n = rule.nearest(max(rule.minimum, n // 2))
    return n


def _problem(name: str, n: int) -> Any:
    return problems.get(name) if _rule(name) is None else problems.get(name, n)


class CountingObjective(nad.Objective):
    """An ``Objective`` that counts every Hessian-vector product and times what it does.

    ``products`` counts columns (a frame of k columns is k products); ``widths`` maps a
    frame width (``None``: one vector) to the applications made with it; ``eval_time``
    is the time inside ``fun`` / ``jac`` / ``value_and_grad`` and ``hess_time`` inside
    ``hess`` / ``sparse_hess`` (outermost calls only).
    """

    def __init__(self, f: Callable, **kw: Any) -> None:
        super().__init__(f, **kw)
        self.reset()

    def reset(self) -> None:
        """Zero the counts and timers."""
        #: seconds inside the products of operators handed out by linearize_hessp
        self.product_time = 0.0
        #: residual passes (linearisations) made outside fun / jac / value_and_grad: a
        #: Newton-type solver should need none (the gradient pass makes them)
        self.relinearisations = 0
        self.products = 0
        self.widths: dict[int | None, int] = {}
        self.eval_time = 0.0
        self.hess_time = 0.0
        self._depth = 0
        self._eval_depth = 0

    def _timed(self, kind: str, call: Callable, *args: Any) -> Any:
        if self._depth:
            return call(*args)
        self._depth += 1
        start = time.perf_counter()
        try:
            return call(*args)
        finally:
            elapsed = time.perf_counter() - start
            self._depth -= 1
            setattr(self, kind, getattr(self, kind) + elapsed)

    def _count(self, shape: tuple, V: Any) -> None:
        k = None if np.shape(V) == shape else int(np.shape(V)[-1])
        self.products += 1 if k is None else k
        self.widths[k] = self.widths.get(k, 0) + 1

    def _compiled(self, x: np.ndarray, kind: str, k: int | None, make: Callable) -> tuple:
        runners, data = super()._compiled(x, kind, k, make)
        if kind != "linearized_hvp" or getattr(runners[0], "counted", False):
            return runners, data
        residual_run = runners[0]

        def counted(*args: Any) -> Any:
            if not self._in_eval:
                self.relinearisations += 1
            return residual_run(*args)
        counted.counted = True  # type: ignore[attr-defined]
        runners = (counted, runners[1])
        self._runners[(x.shape, kind, k)] = (runners, data)
        return runners, data

    @property
    def _in_eval(self) -> bool:
        return self._eval_depth > 0

    def _evaluating(self, call: Callable, x: Any) -> Any:
        self._eval_depth += 1
        try:
            return self._timed("eval_time", call, x)
        finally:
            self._eval_depth -= 1

    def fun(self, x: Any) -> float:
        return self._evaluating(super().fun, x)

    def jac(self, x: Any) -> np.ndarray:
        return self._evaluating(super().jac, x)

    def value_and_grad(self, x: Any) -> tuple[float, np.ndarray]:
        return self._evaluating(super().value_and_grad, x)

    def linearize_hessp(self, x: Any, *, reuse_output: bool = False
                        ) -> Callable[[np.ndarray], np.ndarray]:
        op = super().linearize_hessp(x, reuse_output=reuse_output)
        shape = np.shape(x)
        if self._depth:  # inside hess: counted there
            return op

        def counted(V: Any) -> np.ndarray:
            self._count(shape, V)
            start = time.perf_counter()
            try:
                return op(V)
            finally:
                self.product_time += time.perf_counter() - start
        return counted

    def hessp(self, x: Any, p: Any) -> np.ndarray:
        self._count(np.shape(x), p)
        return super().hessp(x, p)

    def _matrix(self, make: Callable, x: Any) -> Any:
        """A Hessian made of products: counted by the objective's own ``nhev``, in frames
        of the widths the objective chose (a dense one in chunks of the identity)."""
        if self._depth:
            return make(x)
        before = self.nhev
        out = self._timed("hess_time", make, x)
        k = self.nhev - before
        if k:
            self.products += k
            width = min(k, _dense_chunk(np.size(x)))
            self.widths[width] = self.widths.get(width, 0) + k // width
        return out

    def hess(self, x: Any) -> Any:
        return self._matrix(super().hess, x)

    def sparse_hess(self, x: Any) -> Any:
        return self._matrix(super().sparse_hess, x)


def _dense_chunk(n: int) -> int:
    from newtonad._programs import frame_chunks

    a, b = frame_chunks(n, n)[0]
    return b - a


class _InnerLoops:
    """Times the inner loops (truncated CG, Steihaug's CG, GLTR's Lanczos) while active,
    by wrapping them where the solvers look them up."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def __enter__(self) -> "_InnerLoops":
        from newtonad.solvers import gltr, newton_cg, steihaug

        cg, lanczos = steihaug.SteihaugSubproblem, gltr.GLTRSubproblem
        self._saved = [(newton_cg, "truncated_cg", newton_cg.truncated_cg),
                       (cg, "_run_cg", cg._run_cg), (lanczos, "solve", lanczos.solve)]
        for owner, name, inner in self._saved:
            setattr(owner, name, self._timed(inner))
        return self

    def _timed(self, inner: Callable) -> Callable:
        def timed(*args: Any, **kw: Any) -> Any:
            start = time.perf_counter()
            try:
                return inner(*args, **kw)
            finally:
                self.seconds += time.perf_counter() - start
        return timed

    def __exit__(self, *exc: Any) -> None:
        for owner, name, inner in self._saved:
            setattr(owner, name, inner)


def apply_time(obj: nad.Objective, x: np.ndarray, k: int | None, calls: int = 1,
               blocks: int = 5) -> float:
    """Seconds of one linearised application to a random frame of width ``k``: the least
    mean over ``blocks`` blocks of ``calls`` applications (at least 5), as the solver's
    figure is the least total over repeated runs."""
    lin = obj.linearize_hessp(x)
    V = np.random.default_rng(0).standard_normal(x.shape if k is None else x.shape + (k,))
    lin(V)
    calls = max(5, min(calls, 200))
    best = math.inf
    for _ in range(blocks):
        start = time.perf_counter()
        for _ in range(calls):
            lin(V)
        best = min(best, (time.perf_counter() - start) / calls)
    return best


@dataclass
class Row:
    """One problem and method: products, time per product alone and in the solver."""

    problem: str
    n: int
    method: str
    nit: int
    products: int
    apply: float       # seconds per product, linearised apply alone
    solver: float      # seconds per product inside the solver's inner loops
    in_products: float  # of which inside the products themselves
    outer: float       # seconds per iteration outside inner loops and evaluations
    total: float       # wall time of the run
    note: str = ""

    @property
    def ratio(self) -> float:
        return self.solver / self.apply if self.apply > 0 else math.nan


def measure(name: str, method: str, maxiter: int = 3, n: int | None = None,
            engine: str = "numba") -> Row:
    """Run ``method`` on problem ``name`` (at ``n``, default :func:`largest_size`) with
    compiled kernels (``engine``; the default engine would run short runs on NumPy)."""
    n = largest_size(name) if n is None else n
    note = ""
    if method == "trust-exact" and n > DENSE_EXACT:
        try:
            return _measure(name, method, maxiter, n, note, engine)
        except (ValueError, MemoryError) as exc:  # a dense Hessian: too large for the path
            n = largest_size(name, DENSE_EXACT)
            note = f"dense Hessian ({type(exc).__name__} at the largest n): run at n = {n}"
    return _measure(name, method, maxiter, n, note, engine)


def _measure(name: str, method: str, maxiter: int, n: int, note: str,
             engine: str = "numba", repeats: int = 3) -> Row:
    p = _problem(name, n)
    opts = {"maxiter": maxiter}
    warm = CountingObjective(p.fun, engine=engine)
    nad.minimize(warm, p.x0, method=method, options=opts)  # trace, compile, patterns
    best = None
    # the least of a few runs (preemptions only ever add); trust-exact's runs are long
    for _ in range(1 if method == "trust-exact" else repeats):
        obj = CountingObjective(p.fun, engine=engine)
        with _InnerLoops() as loops:
            start = time.perf_counter()
            res = nad.minimize(obj, p.x0, method=method, options=opts)
            total = time.perf_counter() - start
        inside = obj.hess_time if method == "trust-exact" else loops.seconds
        outside = total - obj.eval_time - inside  # per-iteration work of the outer loop
        if best is None or inside < best[0]:
            best = (inside, outside, total, obj, res)
    inside, outside, total, obj, res = best
    products = max(obj.products, 1)
    x = np.asarray(res.x, dtype=np.float64)
    alone = sum(count * apply_time(warm, x, k, count) for k, count in obj.widths.items())
    if not obj.products:
        note = (note + " no products").strip()
    if obj.relinearisations:
        note = (note + f" {obj.relinearisations} linearisations outside evaluations").strip()
    return Row(name, p.n, method, int(res.nit), obj.products, alone / products,
               inside / products, obj.product_time / products,
               outside / max(int(res.nit), 1), total, note)


def _format(row: Row) -> str:
    return (f"{row.problem:28s} {row.n:7d} {row.method:13s} {row.nit:4d} {row.products:6d} "
            f"{row.apply * 1e3:9.4f} {row.solver * 1e3:9.4f} {row.in_products * 1e3:9.4f} "
            f"{row.ratio:6.2f} "
            f"{row.outer * 1e3:9.3f} {row.total:7.2f}  {row.note}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--maxiter", type=int, default=3)
    ap.add_argument("--only", nargs="*", help="problem names (default: all)")
    ap.add_argument("--methods", nargs="*", default=list(METHODS))
    ap.add_argument("--size", type=int, default=None, help="n for the scalable problems")
    ap.add_argument("--engine", default="numba")
    ns = ap.parse_args(argv)
    names = ns.only or problems.names()
    print(f"{'problem':28s} {'n':>7s} {'method':13s} {'nit':>4s} {'prods':>6s} "
          f"{'apply ms':>9s} {'solver ms':>9s} {'in prod':>9s} {'ratio':>6s} {'outer ms':>9s} "
          f"{'wall s':>7s}")
    worst = 0.0
    for name in names:
        n = None if ns.size is None else largest_size(name, ns.size)
        for method in ns.methods:
            try:
                row = measure(name, method, ns.maxiter, n, ns.engine)
            except Exception as exc:  # noqa: BLE001 (report and go on)
                print(f"{name:28s} {'':7s} {method:13s} failed: {type(exc).__name__}: "
                      f"{str(exc)[:80]}", flush=True)
                continue
            print(_format(row), flush=True)
            if row.products and math.isfinite(row.ratio):
                worst = max(worst, row.ratio)
    print(f"worst ratio: {worst:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
