"""The sparse-derivative tables in one run: sparse Hessians, sparse trust-exact, least squares.

Usage::

    python benchmarks/sparse_report.py            # the full sizes (n up to 1e6)
    python benchmarks/sparse_report.py --quick    # n up to 1e4, a minute or so
    python benchmarks/sparse_report.py --sections hessian lsq --json out.json
    python benchmarks/sparse_report.py --threads 2   # BLAS and numba on two threads

BLAS and numba run one thread each unless ``--threads N`` says otherwise (as in
``compare.py``). Everything runs warm on the numba engine (kernels compiled, patterns,
colourings and recovery plans made before the clock starts), in this one process, with
the compared calls interleaved and their medians taken; ratios are within one run. The
asv suites ``bench_sparse`` and ``bench_least_squares`` track the same numbers.

1. **Sparse Hessians** of chained Rosenbrock and the minimal surface at n = 1e3 ... 1e6
   (the surface at the nearest square): pattern non-zeros, the largest row count,
   colours of the star colouring; seconds of the first call (trace, pattern,
   colouring, recovery plan, and kernels compiled or loaded from the disk cache: it
   depends on the cache's state), of one warm sparse Hessian and of one bare HVP
   frame of as many columns, and their ratio (target <= 3); the dense Hessian from
   identity frames where it fits (n <= 1e4) and its ratio to the sparse one.
2. **Solvers**: ``nad.minimize`` with trust-exact on ``Objective(f, sparse=True)``,
   trust-ncg and newton-cg: iterations, Hessians (trust-exact) or Hessian-vector
   products, final f and gradient norm, seconds and seconds per iteration.
3. **Least squares**: ``nad.least_squares`` against scipy's ``least_squares`` with
   ``jac="2-point"`` (dense differences up to n = 1000) and with the pattern given
   (``jac_sparsity``), on the Broyden tridiagonal and banded residuals: residual
   evaluations (scipy's count), Jacobians, seconds (median of interleaved solves after a
   warm-up; a solve over ``SLOW`` seconds is timed once), the ratio to scipy's time and
   the largest difference of the solutions.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "NUMBA_NUM_THREADS")
if __name__ == "__main__":
    # Before numpy and numba start their pools: one thread each unless --threads N. On
    # a loaded machine BLAS threads oversubscribe the cores (scipy's dense 2-point solve
    # at n = 1000 took 45 s with the default threads, 5 s with one).
    _argv = sys.argv[1:]
    _threads = _argv[_argv.index("--threads") + 1] if "--threads" in _argv[:-1] else "1"
    for _name in THREAD_VARIABLES:
        os.environ.setdefault(_name, _threads)

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import bench_least_squares as lsq  # noqa: E402
from benchmarks import bench_sparse as bs  # noqa: E402

SECTIONS = ("hessian", "solvers", "lsq")
#: least-squares solves slower than this are timed once (scipy's dense 2-point at n = 1000)
SLOW = 5.0


def _seconds(call, *args) -> float:
    start = time.perf_counter()
    call(*args)
    return time.perf_counter() - start


def _fmt(value: float, digits: int = 3) -> str:
    return "" if value is None else f"{value:.{digits}g}"


def _table(header: list[str], rows: list[list]) -> str:
    """A markdown table, columns padded to their widest cell."""
    cells = [header] + [["" if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = ["| " + " | ".join(c.rjust(w) for c, w in zip(row, widths)) + " |"
             for row in cells]
    lines.insert(1, "|" + "|".join("-" * (w + 1) + ":" for w in widths) + "|")
    return "\n".join(lines)


# ---- 1. sparse Hessians ----------------------------------------------------------------------

def hessian_rows(sizes: list[int], dense_limit: int) -> list[dict]:
    import newtonad as nad

    rows = []
    for name in bs.PROBLEMS:
        for size in sizes:
            problem = bs.load(name, size)
            f, x, n = problem.fun, problem.x0.copy(), problem.n
            hess = nad.hessian(f, sparse=True, engine=bs.ENGINE)
            first = _seconds(hess, x)
            H = hess(x)
            k, widest = bs.colours_of(f, x)
            nad.hvp(f, x, np.ones(x.shape + (k,)), engine=bs.ENGINE)  # compile the bare frame
            repeats = 15 if n <= 100_000 else 7
            sparse, frame = bs.hessian_over_frame(f, x, k, repeats)
            dense = None
            if n <= dense_limit:
                dense_hess = nad.hessian(f, engine=bs.ENGINE)
                Hd = dense_hess(x)  # warm-up, and the check that both paths agree
                assert np.allclose(H.toarray(), Hd, rtol=1e-12, atol=1e-12 * abs(Hd).max())
                del Hd
                dense = bs.median_seconds(dense_hess, 3 if n <= 1000 else 1, x)
            row = {"problem": name, "n": n, "nnz": int(H.nnz), "widest row": widest,
                   "colours": k, "first call s": first, "sparse H s": sparse,
                   "HVP frame s": frame, "H / frame": sparse / frame, "dense H s": dense,
                   "dense / sparse": None if dense is None else dense / sparse}
            rows.append(row)
            print(f"  {name} n={n}: {k} colours, sparse {sparse:.3g} s, frame {frame:.3g} s"
                  + ("" if dense is None else f", dense {dense:.3g} s"), file=sys.stderr)
    return rows


def hessian_table(rows: list[dict]) -> str:
    header = ["problem", "n", "nnz", "max row", "colours", "first s", "sparse s",
              "frame s", "sparse/frame", "dense s", "dense/sparse"]
    return _table(header, [[r["problem"], r["n"], r["nnz"], r["widest row"], r["colours"],
                            _fmt(r["first call s"]), _fmt(r["sparse H s"]),
                            _fmt(r["HVP frame s"]), _fmt(r["H / frame"], 2),
                            _fmt(r["dense H s"]), _fmt(r["dense / sparse"], 3)]
                           for r in rows])


# ---- 2. solvers ----------------------------------------------------------------------------

def solver_rows(keys: list[str]) -> list[dict]:
    rows = []
    for key in keys:
        problem = bs.load_key(key)
        for method in bs.METHODS:
            result = bs.run_solver(method, problem)
            result.update(problem=problem.name, n=problem.n, method=method)
            rows.append(result)
            print(f"  {key} {method}: nit {result['nit']}, {result['seconds']:.3g} s",
                  file=sys.stderr)
    return rows


def solver_table(rows: list[dict]) -> str:
    header = ["problem", "n", "method", "nit", "nhev", "f", "|g|", "seconds", "ms/iter"]
    return _table(header, [[r["problem"], r["n"], r["method"], r["nit"], r["nhev"],
                            _fmt(r["fun"], 6), _fmt(r["gnorm"], 2) + ("" if r["success"]
                                                                      else " (failed)"),
                            _fmt(r["seconds"]), _fmt(1e3 * r["seconds"] / max(r["nit"], 1))]
                           for r in rows])


# ---- 3. least squares ----------------------------------------------------------------------

def lsq_rows(sizes: list[int], repeats: int) -> list[dict]:
    rows = []
    for problem in lsq.PROBLEMS:
        for n in sizes:
            solvers = [s for s in lsq.SOLVERS if not (s == "scipy-2point" and n > lsq.DENSE_LIMIT)]
            results, times = {}, {}
            for s in solvers:  # warm-up (traces and compiles for newtonad), timed too
                start = time.perf_counter()
                results[s] = lsq.solve(s, n, problem)
                times[s] = [time.perf_counter() - start]
            # a solver slower than SLOW seconds keeps its one time: no warm-up to discount
            fast = [s for s in solvers if times[s][0] < SLOW]
            for s in fast:
                times[s] = []
            for _ in range(repeats):  # interleaved
                for s in fast:
                    times[s].append(_seconds(lsq.solve, s, n, problem))
            base = "scipy-2point" if "scipy-2point" in solvers else "scipy-2point-sparsity"
            seconds = {s: statistics.median(t) for s, t in times.items()}
            for s in solvers:
                res = results[s]
                rows.append({"problem": problem, "n": n, "solver": s, "nfev": int(res.nfev),
                             "njev": int(res.njev), "cost": float(res.cost),
                             "seconds": seconds[s], "baseline": base,
                             "ratio": seconds[s] / seconds[base],
                             "max |x - x_base|": float(np.abs(res.x - results[base].x).max())})
            print(f"  {problem} n={n}: newtonad {seconds['newtonad']:.3g} s, {base} "
                  f"{seconds[base]:.3g} s", file=sys.stderr)
    return rows


def lsq_table(rows: list[dict]) -> str:
    header = ["problem", "n", "solver", "nfev", "njev", "cost", "seconds", "/ baseline",
              "max |x - x_baseline|"]
    return _table(header, [[r["problem"], r["n"], r["solver"], r["nfev"], r["njev"],
                            _fmt(r["cost"], 2), _fmt(r["seconds"]), _fmt(r["ratio"], 2),
                            _fmt(r["max |x - x_base|"], 2)] for r in rows])


# ---- main -----------------------------------------------------------------------------------

def _environment() -> str:
    import numba
    import scipy

    return (f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; Python "
            f"{platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}, "
            f"numba {numba.__version__}; {os.cpu_count()} CPUs, "
            f"{os.environ.get('NUMBA_NUM_THREADS', 'default')} thread(s); "
            f"engine {bs.ENGINE!r}; load average {os.getloadavg()[0]:.1f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="n up to 1e4 and the asv suite's solver problems")
    parser.add_argument("--sections", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS and numba threads (default 1; set before the imports)")
    opts = parser.parse_args(argv)

    sizes = bs.SIZES[:2] if opts.quick else bs.SIZES
    solver_keys = list(bs.SOLVER_PROBLEMS) + ([] if opts.quick else [
        "broyden-tridiagonal-100000", "minimal-surface-4096"])
    out: dict[str, list[dict]] = {}
    print(f"# newtonad sparse derivatives\n\n{_environment()}\n")
    if "hessian" in opts.sections:
        out["hessian"] = hessian_rows(sizes, bs.DENSE_LIMIT)
        print("## Sparse Hessians: one coloured HVP frame, against the dense identity "
              "frames\n\nmax row: the pattern's largest row count; first s: the first call "
              "(trace, pattern, colouring, plan, kernels compiled or loaded from the disk "
              "cache); sparse s / frame s: one warm "
              "sparse Hessian / one bare HVP frame of k = colours columns; dense s: "
              "nad.hessian from identity frames (n <= 1e4)\n")
        print(hessian_table(out["hessian"]) + "\n", flush=True)
    if "solvers" in opts.sections:
        out["solvers"] = solver_rows(solver_keys)
        print("## Solvers: sparse trust-exact against trust-ncg and newton-cg\n")
        print(solver_table(out["solvers"]) + "\n", flush=True)
    if "lsq" in opts.sections:
        out["lsq"] = lsq_rows([1000, 10_000], repeats=3 if opts.quick else 5)
        print("## Least squares: nad.least_squares against scipy's jac='2-point'\n\n"
              "baseline: scipy-2point (dense differences) up to n = 1000, else "
              "scipy-2point-sparsity (differences grouped by jac_sparsity)\n")
        print(lsq_table(out["lsq"]) + "\n", flush=True)
    if opts.json:
        Path(opts.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
