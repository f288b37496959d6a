"""Write the generated source of many kernels to a directory, lowering only (no compile).

A refactoring of the numba engine's code generator that must not change the kernels
is checked by running this on the old and on the new tree and diffing the two
directories::

    PYTHONPATH=/path/to/old .venv/bin/python benchmarks/kernel_source_snapshot.py /tmp/snap/old
    .venv/bin/python benchmarks/kernel_source_snapshot.py /tmp/snap/new
    .venv/bin/python benchmarks/kernel_source_snapshot.py --diff /tmp/snap/old /tmp/snap/new

Programs: the problems of ``benchmarks/compare.py`` and of the engine corpus
(``benchmarks/engine_corpus/make_corpus.py``: Rosenbrock, logistic regression, least
squares, the minimal surface, every built-in problem at its default size and fifteen
at large sizes) and two long traced loops (kernels split into chunks), each as the
value, value-and-gradient, HVP (single and frames) and linearised-HVP programs. Each
is lowered under several :class:`LoweringOptions`: the shipped settings
(``current``), two threads (parallel loops), small row blocks (regions at small
sizes), and unrolling off / wider (the column pass at its bounds).
``--quick`` keeps the small sizes only.
"""

from __future__ import annotations

import argparse
import difflib
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compare import logistic, rosen, surface  # noqa: E402  (the objectives compare.py times)
from pipeline_report import rosen_loop  # noqa: E402


def least_squares(x, A, b):
    return 0.5 * np.sum((A @ x - b) ** 2)


def rosen_blocks(x):
    s = 0.0
    for a in range(0, x.shape[0] - 4, 4):
        lo, hi = x[a:a + 4], x[a + 1:a + 5]
        s = s + np.sum(100 * (hi - lo ** 2) ** 2 + (1 - lo) ** 2)
    return s


def long_form(f, n):
    """The program of ``f`` as traced, step by step (no loop re-rolling): long kernels,
    split into chunk functions."""
    from newtonad.ad.program import Slot
    from newtonad.ad.trace import trace_function

    return trace_function(f, [Slot((n,))]).program


LARGE = (("chained-rosenbrock", 10**5), ("extended-rosenbrock", 10**5),
         ("minimal-surface", 256**2), ("dixmaana", 3 * 10**4), ("broyden-tridiagonal", 10**5),
         ("arwhead", 10**5), ("engval1", 10**5), ("tridia", 10**5), ("quartc", 10**5),
         ("nondquar", 10**5), ("power", 10**5), ("liarwhd", 10**5), ("fletchcr", 10**5),
         ("discrete-boundary-value", 10**5), ("penalty-1", 10**5))


def cases(quick: bool) -> list[tuple[str, Callable[[], Any], bool]]:
    """(name, program builder, all derived programs?) of every problem."""
    import newtonad as nad
    from newtonad import problems

    out: list[tuple[str, Callable[[], Any], bool]] = []
    for n in (2, 1000) if quick else (2, 1000, 10**5, 10**6):
        out.append((f"rosen-{n}", lambda n=n: nad.trace(rosen, np.zeros(n)), True))
    for m, n in ((2000, 100), (200, 50)) if quick else ((2000, 100), (20000, 500), (200, 50)):
        out.append((f"logistic-{m}x{n}", lambda m=m, n=n: nad.trace(
            logistic, np.zeros(n), np.zeros((m, n)), np.zeros(m), np.array(1e-2)), True))
    out.append(("lstsq-2000x50", lambda: nad.trace(least_squares, np.zeros(50),
                                                   np.zeros((2000, 50)), np.zeros(2000)), True))
    for m in (128,) if quick else (128, 512):
        out.append((f"surface-{m}",
                    lambda m=m: nad.trace(surface, np.zeros((m, m)), np.array(0.1)), True))
    out.append(("rosenloop-301", lambda: long_form(rosen_loop, 301), False))
    out.append(("rosenblocks-201", lambda: long_form(rosen_blocks, 201), False))
    for p in problems.all_problems():
        out.append((f"prob-{p.name}-{p.n}", lambda p=p: nad.trace(p.fun, p.x0), False))
    if not quick:
        for name, n in LARGE:
            out.append((f"prob-{name}-{n}", lambda name=name, n=n: (
                lambda p: nad.trace(p.fun, p.x0))(problems.get(name, n)), False))
    return out


def derived(program: Any, full: bool) -> Iterator[tuple[str, Any]]:
    """The programs the engine runs for one objective: value, gradient, HVPs."""
    from newtonad.ad import transforms as tf

    yield "f", program
    yield "vg", tf.value_and_grad_program(program)
    for k in ((None, 1, 3, 16) if full else (None, 4)):
        yield f"hvp{k}", tf.hvp_program(program, k)
    for k in ((1, 16) if full else (4,)):
        r, lin = tf.linearized_hvp(program, k)
        yield f"lres{k}", r
        yield f"llin{k}", lin


def option_sets() -> dict[str, Any]:
    from newtonad.ad.engine.options import LoweringOptions

    base = LoweringOptions.current().replace(parallel_threads=1, cheap_launch=True)
    return {
        "cur": base,
        "thr2": base.replace(parallel_threads=2, parallel_min_iterations=1 << 10),
        "thr2wq": base.replace(parallel_threads=2, cheap_launch=False,
                               parallel_min_iterations=1 << 10),
        "blk": base.replace(row_block=16, row_block_min_blocks=2),
        "blk2": base.replace(row_block=16, row_block_min_blocks=2, parallel_threads=2,
                             parallel_min_iterations=1 << 8),
        "unroll0": base.replace(unroll=0),
        "unroll8": base.replace(unroll=8, unroll_statements=60),
    }


def snapshot(outdir: Path, quick: bool) -> None:
    from newtonad.ad.engine import numba_engine

    outdir.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    count = 0
    opts = option_sets()
    for cname, build, full in cases(quick):
        program = build()
        for dname, prog in derived(program, full):
            for oname, o in opts.items():
                if not full and oname in ("blk", "blk2", "thr2wq"):
                    continue  # no einsums in the problems; thr2 covers their parallel loops
                try:
                    src = numba_engine.lower(prog, o).source
                except Exception as e:  # recorded: the other tree must fail the same way
                    src = f"FAILED {type(e).__name__}: {e}"
                (outdir / f"{cname}-{dname}-{oname}.py").write_text(src)
                count += 1
    print(f"{count} kernel sources in {outdir} ({time.time() - t0:.0f} s)")


def diff(old: Path, new: Path) -> int:
    names = sorted({p.name for p in old.glob("*.py")} | {p.name for p in new.glob("*.py")})
    changed = 0
    for name in names:
        a, b = old / name, new / name
        if not (a.exists() and b.exists()):
            print("missing in one tree:", name)
            changed += 1
            continue
        ta, tb = a.read_text(), b.read_text()
        if ta != tb:
            changed += 1
            if changed <= 3:
                sys.stdout.writelines(difflib.unified_diff(
                    ta.splitlines(True), tb.splitlines(True), str(a), str(b), n=2))
    print(f"{len(names)} kernels compared, {changed} differ")
    return changed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--diff", action="store_true", help="compare two snapshot directories")
    args = ap.parse_args()
    if args.diff:
        return 1 if diff(*args.dirs) else 0
    snapshot(args.dirs[0], args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
