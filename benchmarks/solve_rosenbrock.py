"""End-to-end solve of chained Rosenbrock: newtonad's native solvers against scipy + hand numba.

Usage::

    python benchmarks/solve_rosenbrock.py                  # n = 10^4, 3 rounds
    python benchmarks/solve_rosenbrock.py --n 1000 --rounds 5 --methods trust-ncg
    python benchmarks/solve_rosenbrock.py --split          # also time inside the callbacks

The reference is ``scipy.optimize.minimize(method="trust-ncg")`` with hand-written
numba callbacks for f, ∇f and Hessian-vector products (``benchmarks/hand_numba.py``:
one fused pass each, the Hessian's three diagonals applied directly). Against it
run the same scipy solver with a ``newtonad.Objective``'s callbacks (the per-call cost
of newtonad's derivatives shows there), and ``newtonad.minimize`` with each native
method and its defaults; the Objective is of the plain-NumPy chained Rosenbrock
(``newtonad.problems``), built with ``engine="numba"``. Everything runs in one process, the systems
interleaved round by round, after a warm-up that compiles (or loads) every kernel;
the table gives the median wall time over the rounds and its ratio to the
reference. A run counts only if it ends within 1e-8 of f* = 0.

With ``--split`` one more round times the calls into the objective (numba kernels
and the Objective's bookkeeping) separately, so the solver's own time per
iteration — what this benchmark is about besides derivative speed — can be read
off: ``solver`` = wall time minus time inside the callbacks.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np

HERE = Path(__file__).resolve().parent
REFERENCE = "scipy trust-ncg + hand numba"
SCIPY_OBJECTIVE = "scipy trust-ncg + newtonad Objective"  # same solver: per-call cost shows
METHODS = ["newton-cg", "trust-ncg", "trust-krylov"]
F_TOL = 1e-8


def chained_start(n: int) -> np.ndarray:
    """The standard start (-1.2, 1, -1.2, 1, ...)."""
    x0 = np.ones(n)
    x0[::2] = -1.2
    return x0


class HandRosenbrock:
    """scipy callbacks from the hand-fused numba kernels.

    Each allocates its output, as scipy expects.
    """

    def __init__(self, n: int) -> None:
        sys.path.insert(0, str(HERE))  # numba's disk cache knows the kernels as module hand_numba
        import hand_numba as H

        self.H = H
        self.n = n

    def fun(self, x: np.ndarray) -> float:
        return self.H.rosen_value(x)

    def jac(self, x: np.ndarray) -> np.ndarray:
        g = np.empty(self.n)
        self.H.rosen_value_and_grad(x, g)
        return g

    def hessp(self, x: np.ndarray, p: np.ndarray) -> np.ndarray:
        out = np.empty((self.n, 1))
        self.H.rosen_hvp(x, p.reshape(self.n, 1), out)
        return out[:, 0]


class Timed:
    """Wraps an objective's methods to add up the seconds spent inside them."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.inside = 0.0

    def _wrap(self, fn: Callable) -> Callable:
        def timed(*args: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args)
            finally:
                self.inside += time.perf_counter() - start
        return timed

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if name in ("fun", "jac", "value_and_grad", "hessp", "hess"):
            return self._wrap(attr)
        if name == "linearize_hessp":
            def linearize(x: np.ndarray) -> Callable:
                return self._wrap(self._wrap(attr)(x))
            return linearize
        return attr


def run_scipy(n: int, x0: np.ndarray, split: bool, hand: bool) -> dict:
    """scipy's trust-ncg with the hand kernels' callbacks, or with a newtonad Objective's."""
    import scipy.optimize as so

    obj: Any = HandRosenbrock(n) if hand else _objective(n)
    timed = Timed(obj) if split else None
    if timed is not None:
        obj = timed
    start = time.perf_counter()
    res = so.minimize(obj.fun, x0.copy(), jac=obj.jac, hessp=obj.hessp, method="trust-ncg")
    wall = time.perf_counter() - start
    return dict(time=wall, nit=res.nit, nfev=res.nfev, nhev=res.nhev, fun=float(res.fun),
                inside=timed.inside if timed else None)


def _objective(n: int) -> Any:
    import newtonad as nad
    from newtonad import problems

    return nad.Objective(problems.get("chained-rosenbrock", n=n).fun, engine="numba")


def run_native(method: str, n: int, x0: np.ndarray, split: bool) -> dict:
    import newtonad as nad

    obj: Any = _objective(n)
    timed = Timed(obj) if split else None
    start = time.perf_counter()
    res = nad.minimize(timed if timed is not None else obj, x0.copy(), method=method)
    wall = time.perf_counter() - start
    return dict(time=wall, nit=res.nit, nfev=res.nfev, nhev=res.nhev, fun=float(res.fun),
                inside=timed.inside if timed else None)


def warm_up(n: int, x0: np.ndarray) -> float:
    """Compile (or load from the disk caches) every kernel both systems use."""
    import newtonad.solvers.exact  # noqa: F401,E401  (import every
    import newtonad.solvers.gltr
    import newtonad.solvers.newton_cg  # noqa: F401,E401  solver now)

    start = time.perf_counter()
    hand = HandRosenbrock(n)
    hand.fun(x0), hand.jac(x0), hand.hessp(x0, x0)
    obj = _objective(n)
    obj.value_and_grad(x0)
    obj.hessp(x0, x0)  # a first product at a point: the whole HVP program
    obj.hessp(x0, x0)  # a second one there: the residual and linear programs
    obj.value_and_grad(x0 + 1.0)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10_000, help="problem size (default 10^4)")
    ap.add_argument("--rounds", type=int, default=3, help="timed rounds (default 3)")
    ap.add_argument("--methods", nargs="+", default=METHODS, metavar="M",
                    help=f"native methods (default: {' '.join(METHODS)})")
    ap.add_argument("--split", action="store_true",
                    help="one more round timing the callbacks, to show the solver's own time")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    n = args.n
    x0 = chained_start(n)
    print(f"chained Rosenbrock, n = {n}, start (-1.2, 1, ...); warm-up {warm_up(n, x0):.1f} s; "
          f"median of {args.rounds} rounds", flush=True)

    systems = [REFERENCE, SCIPY_OBJECTIVE] + [f"newtonad {m}" for m in args.methods]
    runs: dict[str, list[dict]] = {s: [] for s in systems}

    def one(system: str, split: bool) -> dict:
        if system in (REFERENCE, SCIPY_OBJECTIVE):
            return run_scipy(n, x0, split, hand=system == REFERENCE)
        return run_native(system.split()[-1], n, x0, split)

    for r in range(args.rounds):
        for system in systems:
            out = one(system, False)
            runs[system].append(out)
            print(f"  round {r + 1}: {system:36s} {out['time']:8.2f} s  nit {out['nit']}",
                  file=sys.stderr, flush=True)
    split = {s: one(s, True) for s in systems} if args.split else {}

    ref = statistics.median(r["time"] for r in runs[REFERENCE])
    head = (f"| {'solver':36s} | {'nit':>6s} | {'nfev':>6s} | {'nhev':>7s} | {'f':>9s} | "
            f"{'time (s)':>8s} | {'ratio':>5s} | {'ms/it':>6s} |")
    if split:
        head += f" {'solver ms/it':>12s} |"
    print(head)
    print("|" + "|".join("-" * (len(c) + 0) for c in head.split("|")[1:-1]) + "|")
    for system in systems:
        last = runs[system][-1]
        med = statistics.median(r["time"] for r in runs[system])
        ok = all(r["fun"] <= F_TOL for r in runs[system])
        row = (f"| {system:36s} | {last['nit']:6d} | {last['nfev']:6d} | {last['nhev']:7d} | "
               f"{last['fun']:9.2e}{'' if ok else '*'} | {med:8.2f} | {med / ref:5.2f} | "
               f"{1e3 * med / max(last['nit'], 1):6.3f} |")
        if split:
            s = split[system]
            row += f" {1e3 * (s['time'] - s['inside']) / max(s['nit'], 1):12.3f} |"
        print(row)
    print(f"\nratio: median time over the reference's ({ref:.2f} s); * marks f above {F_TOL:g}.")
    if split:
        print("solver ms/it: wall time outside the objective's callbacks per iteration "
              "(one extra round, callbacks timed).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
