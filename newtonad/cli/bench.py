"""``newtonad bench``: time per frame column against k for jvp, vjp and HVP frames.

Runs the workloads of :mod:`newtonad.cli.workloads` (the same ones the asv suite
tracks) and prints, for each n, a table of seconds per column with k = 1, 2, 4, …,
64 across and one row per mode, plus the value-and-gradient time per call.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .args import add_engine_argument, positive_int
from .errors import UsageError
from .progress import Progress
from .table import Column, Table, fmt_time
from .workloads import FRAME_MODES, KS, NS, Measurement, measure

__all__ = ["add_parser", "run", "render"]


def add_parser(sub: Any) -> None:
    """Register ``bench`` on the subcommand parsers ``sub``."""
    p = sub.add_parser("bench", help="time per frame column against k (jvp, vjp, HVP)",
                       description="Time jvp, vjp and Hessian-vector-product frames of k "
                                   "columns (k = 1, 2, 4, ..., 64) on the chained "
                                   "Rosenbrock function and its residuals: the workloads "
                                   "the asv benchmark suite tracks. For each n, prints "
                                   "seconds per column, one row per mode, plus the "
                                   "value-and-gradient time per call.")
    p.add_argument("--quick", action="store_true",
                   help=f"n = {NS[0]:,} only and fewer repetitions (default n: "
                        f"{', '.join(f'{n:,}' for n in NS)})")
    p.add_argument("--n", type=positive_int, nargs="+", metavar="N",
                   help="sizes to run (each at least 2)")
    p.add_argument("--modes", nargs="+", metavar="MODE", default=list(FRAME_MODES),
                   help=f"frame modes (default: {' '.join(FRAME_MODES)})")
    p.add_argument("--plot", metavar="FILE", help="save a plot (png, svg, pdf) of the results")
    p.add_argument("--json", metavar="FILE", help="save the measurements as JSON")
    # compiled kernels: the tiered default would time its NumPy tier in a short run
    add_engine_argument(p, default="numba", note="numba")
    p.add_argument("--format", choices=("text", "markdown"), default="text",
                   help="table format (default: text)")
    p.set_defaults(handler=run)


def render(measurements: list[Measurement], fmt: str = "text") -> str:
    """Tables of seconds per column: one per n, modes down, k across."""
    blocks = []
    for n in sorted({m.n for m in measurements}):
        at_n = [m for m in measurements if m.n == n]
        ks = sorted({m.k for m in at_n if m.mode != "value-and-grad"})
        table = Table([Column(f"n = {n:,}", 16, "<")] + [Column(f"k={k}", 8) for k in ks], fmt)
        rows = []
        for mode in dict.fromkeys(m.mode for m in at_n if m.mode != "value-and-grad"):
            by_k = {m.k: m.per_column for m in at_n if m.mode == mode}
            rows.append([mode] + [fmt_time(by_k.get(k)) for k in ks])
        block = table.render(rows)
        for m in at_n:
            if m.mode == "value-and-grad":
                block += f"\nvalue+gradient: {fmt_time(m.seconds)} per call"
        blocks.append(block)
    return "\n\n".join(blocks)


def run(args: argparse.Namespace) -> int:
    """Measure, print the tables, and optionally plot and save."""
    for mode in args.modes:
        if mode not in FRAME_MODES:
            raise UsageError(f"unknown mode {mode!r}; choose from {', '.join(FRAME_MODES)}")
    ns = args.n or (NS[:1] if args.quick else NS)
    if any(n < 2 for n in ns):
        raise UsageError(f"--n must be at least 2, got {min(ns)}")
    if args.plot:  # fail before the measurements, not after
        from .plots import require_matplotlib
        require_matplotlib()
    repeat, budget = (3, 0.2) if args.quick else (7, 1.0)
    engine = args.engine
    print(f"newtonad bench: seconds per frame column, engine {engine!r}, best of {repeat} "
          "after a warm-up\n")
    sys.stdout.flush()

    results: list[Measurement] = []
    jobs = [(mode, n, k) for n in ns for mode in args.modes for k in KS]
    jobs += [("value-and-grad", n, 1) for n in ns]
    with Progress(len(jobs)) as bar:
        for mode, n, k in jobs:
            bar.update(f"{mode} n={n} k={k}")
            results.append(measure(mode, n, k, engine=args.engine, repeat=repeat,
                                   budget=budget))
            bar.advance()
    print(render(results, args.format))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"engine": engine, "results": [m.to_dict() for m in results]}, fh,
                      indent=1)
        print(f"\nwrote {args.json}")
    if args.plot:
        from .plots import plot_per_column
        plot_per_column(results, args.plot, title=f"newtonad, engine {engine!r}")
        print(f"wrote {args.plot}")
    return 0
