"""What newtonad's SciPy routing costs other code: SciPy calls on plain arrays, on and off.

``import newtonad`` replaces some SciPy functions with wrappers that look for a traced
argument and otherwise call SciPy's original (see ``newtonad.scipy_routing``). This
script times the calls other code makes -- through SciPy's public names, as
``scipy.special.logsumexp(x)`` -- with routing on (the wrappers) and off (SciPy's own
objects), in one process, interleaved: each round times every case in one state and at once in
the other, the state first timed alternating between rounds, so drift of a busy machine
falls on both. Reported: the median time per call over rounds (CPU time of the process by
default, ``--clock wall`` for elapsed time), and the ratio on / off.

``expit`` is a ufunc (never wrapped; NumPy hands traced values to newtonad) and is a
control: its ratio shows the noise. The others are wrapped: ``logsumexp``,
``scipy.stats.norm.logpdf`` (a method, wrapped on the distribution's class),
``scipy.linalg.solve``, ``solve_triangular`` and ``cho_solve``. Last, the wrapper's
fixed cost alone: a function that does nothing, called plain and wrapped.

Run::

    python benchmarks/scipy_routing_overhead.py [--rounds 31] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from typing import Any, Callable

import numpy as np
import scipy.linalg
import scipy.special
import scipy.stats

import newtonad as nad


def cases(rng: np.random.Generator) -> dict[str, Callable[[], Any]]:
    """Name -> a call of a SciPy public name on plain arrays (small and medium)."""
    out: dict[str, Callable[[], Any]] = {}
    for label, n in (("small", 10), ("medium", 10_000)):
        x = rng.standard_normal(n)
        out[f"logsumexp n={n} ({label})"] = lambda x=x: scipy.special.logsumexp(x)
        out[f"expit n={n} ({label}, ufunc: control)"] = lambda x=x: scipy.special.expit(x)
        out[f"norm.logpdf n={n} ({label})"] = lambda x=x: scipy.stats.norm.logpdf(x, 0.5, 2.0)
    for label, n in (("small", 4), ("medium", 50)):
        m = rng.standard_normal((n, n))
        a = m @ m.T + n * np.eye(n)
        b = rng.standard_normal(n)
        u = np.triu(a)
        c = scipy.linalg.cho_factor(a)
        out[f"linalg.solve n={n} ({label})"] = lambda a=a, b=b: scipy.linalg.solve(a, b)
        out[f"linalg.solve_triangular n={n} ({label})"] = \
            lambda u=u, b=b: scipy.linalg.solve_triangular(u, b)
        out[f"linalg.cho_solve n={n} ({label})"] = lambda c=c, b=b: scipy.linalg.cho_solve(c, b)
    return out


def wrapper_alone(calls: int = 200_000, repeats: int = 15) -> tuple[float, float]:
    """Seconds per call of a function that does nothing, and of newtonad's wrapper of it
    (the search for a traced argument, then the call): the wrapper's fixed cost."""
    from newtonad.ad.scipy_dispatch import dispatching

    def nothing(a: Any, b: Any = None) -> Any:
        return a

    wrapped = dispatching(nothing, nothing)
    x = np.ones(3)
    best: dict[Callable, list[float]] = {nothing: [], wrapped: []}
    for r in range(repeats):
        for fn in ((nothing, wrapped) if r % 2 == 0 else (wrapped, nothing)):
            start = clock()
            for _ in range(calls):
                fn(x, b=x)
            best[fn].append((clock() - start) / calls)
    return statistics.median(best[nothing]), statistics.median(best[wrapped])


#: the clock: CPU time of this process by default, since on a machine shared with other
#: work the wall clock also counts the time this process waits for a core
CLOCK = {"cpu": time.process_time, "wall": time.perf_counter}
clock = CLOCK["cpu"]


def per_call(fn: Callable[[], Any], budget: float) -> float:
    """Seconds per call, timed over about ``budget`` seconds of calls."""
    fn()
    calls, start = 0, clock()
    batch = 1
    while True:
        for _ in range(batch):
            fn()
        calls += batch
        elapsed = clock() - start
        if elapsed >= budget:
            return elapsed / calls
        batch *= 2


def measure(rounds: int, budget: float) -> dict[str, dict[str, float]]:
    table = cases(np.random.default_rng(0))
    times: dict[str, dict[bool, list[float]]] = {k: {True: [], False: []} for k in table}
    for r in range(rounds):
        for name, fn in table.items():
            for state in ((True, False) if r % 2 == 0 else (False, True)):
                with nad.scipy_routing(state):
                    times[name][state].append(per_call(fn, budget))
    return {name: {"on_us": 1e6 * statistics.median(t[True]),
                   "off_us": 1e6 * statistics.median(t[False]),
                   "ratio": statistics.median(t[True]) / statistics.median(t[False])}
            for name, t in times.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=61)
    parser.add_argument("--budget", type=float, default=0.01,
                        help="seconds of calls per case, state and round")
    parser.add_argument("--clock", choices=sorted(CLOCK), default="cpu",
                        help="cpu: this process's CPU time (default); wall: elapsed time")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args(argv)
    global clock
    clock = CLOCK[args.clock]
    # check what is measured: wrapped while on, SciPy's own while off
    assert hasattr(scipy.special.logsumexp, "__newtonad_impl__")
    with nad.scipy_routing(False):
        assert not hasattr(scipy.special.logsumexp, "__newtonad_impl__")
    results = measure(args.rounds, args.budget)
    width = max(map(len, results))
    print(f"{'call':{width}}  {'on (us)':>10}  {'off (us)':>10}  {'on/off':>7}")
    for name, row in results.items():
        print(f"{name:{width}}  {row['on_us']:10.2f}  {row['off_us']:10.2f}  {row['ratio']:7.3f}")
    plain, wrapped = wrapper_alone()
    print(f"\nthe wrapper alone (f(x, b=x) of a function that returns x): "
          f"{1e6 * plain:.3f} us plain, {1e6 * wrapped:.3f} us wrapped, "
          f"+{1e6 * (wrapped - plain):.3f} us per call")
    results["wrapper alone"] = {"on_us": 1e6 * wrapped, "off_us": 1e6 * plain,
                                "ratio": wrapped / plain}
    if args.json:
        meta = {"python": sys.version.split()[0], "numpy": np.__version__,
                "scipy": scipy.__version__, "machine": platform.machine(),
                "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "rounds": args.rounds,
                "clock": args.clock}
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
