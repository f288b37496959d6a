"""Two checkouts of newtonad, one set of engine benchmarks, interleaved rounds.

``python benchmarks/ab_engine.py OLD_TREE NEW_TREE`` times the measures of
``bench_engine.py`` (value, value+gradient, HVP frames, linearised HVPs, per-call
overhead; newtonad's systems only) with each tree's ``newtonad`` on ``PYTHONPATH``,
in fresh processes, in the order old, new, new, old, ... for ``--rounds`` rounds so
that a machine's load falls on both alike. Each measure's time is the median of its
repeats in a round, and its figure the smallest of those medians over the rounds;
the table gives new / old. A checkout for an older commit:
``git worktree add /tmp/old <commit>``.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _cases() -> list[tuple[str, tuple, str]]:
    """(class name, params, method) of every measure timed."""
    sys.path.insert(0, str(HERE))
    import bench_engine as be

    systems = ["newtonad-numba", "newtonad-numpy"]
    cases = []
    for system in systems:
        for problem in be.PROBLEMS:
            cases += [("ValueAndGrad", (system, problem), m)
                      for m in ("time_value", "time_value_and_grad")]
            cases += [("HVPFrame", (system, problem, k), "time_hvp_frame") for k in (1, 16)]
            cases += [("LinearizedHVP", (system, problem, k), m)
                      for k in (1, 16) for m in ("time_setup", "time_apply")]
        cases += [("PerCallOverhead", (system,), m)
                  for m in ("time_value_and_grad", "time_hvp", "time_objective_jac",
                            "time_objective_hessp", "time_objective_hessp_same_x")]
    return cases


def _time(fn, budget: float, repeats: int) -> float:
    """Median seconds per call of ``fn`` over ``repeats`` batches of about ``budget`` s."""
    start, calls = time.perf_counter(), 0
    while time.perf_counter() - start < budget / repeats or calls < 1:
        fn()
        calls += 1
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - t0) / calls)
    return statistics.median(samples)


def _worker(budget: float, repeats: int, only: str) -> None:
    """Time every case with the ``newtonad`` on ``sys.path``; JSON lines on stdout."""
    sys.path.insert(0, str(HERE))
    import bench_engine as be

    for cls_name, params, method in _cases():
        if only not in f"{cls_name}.{method}{params}":
            continue
        bench = getattr(be, cls_name)()
        bench.setup(*params)
        seconds = _time(functools.partial(getattr(bench, method), *params), budget, repeats)
        print(json.dumps({"case": f"{cls_name}.{method}{params}", "seconds": seconds}),
              flush=True)


def _round(tree: Path, budget: float, repeats: int, only: str) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run([sys.executable, __file__, "--worker", "--budget", str(budget),
                          "--repeats", str(repeats), "--only", only],
                         env=env, check=True, capture_output=True, text=True, cwd=HERE).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return {row["case"]: row["seconds"] for row in rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", nargs="?", type=Path)
    parser.add_argument("new", nargs="?", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--budget", type=float, default=0.3, help="seconds per measure")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", default="", help="time the measures whose name holds this")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.worker:
        _worker(args.budget, args.repeats, args.only)
        return
    if args.old is None or args.new is None:
        parser.error("give two checkouts: OLD_TREE NEW_TREE")
    best: dict[str, dict[str, float]] = {"old": {}, "new": {}}
    order = [("old", args.old), ("new", args.new)]
    for r in range(args.rounds):
        # old, new, new, old, ...: a load that grows or fades falls on both alike
        for label, tree in (order if r % 2 == 0 else order[::-1]):
            for case, seconds in _round(tree, args.budget, args.repeats, args.only).items():
                best[label][case] = min(seconds, best[label].get(case, float("inf")))
            print(f"round {r + 1}/{args.rounds}: {label} done", file=sys.stderr, flush=True)
    ratios = []
    print(f"{'measure':86s} {'old':>10s} {'new':>10s} {'new/old':>8s}")
    for case, old in best["old"].items():
        new = best["new"][case]
        ratios.append(new / old)
        print(f"{case:86s} {old * 1e6:9.1f}µs {new * 1e6:9.1f}µs {new / old:8.3f}")
    geo = statistics.geometric_mean(ratios)
    print(f"{len(ratios)} measures: geometric mean new/old {geo:.3f}; "
          f"median {statistics.median(ratios):.3f}; worst {max(ratios):.3f}")
    if args.json:
        args.json.write_text(json.dumps(best, indent=1))


if __name__ == "__main__":
    main()
