"""How soon the default engine reaches compiled speed, with its deterministic hand-over.

Usage::

    python benchmarks/tier_handover.py              # Rosenbrock value_and_grad, n = 1e5
    python benchmarks/tier_handover.py --n 1000000 --seconds 12 --runs 3

Each run is a fresh process with an empty kernel cache (``NEWTONAD_CACHE_DIR``) that
calls ``nad.value_and_grad(rosen)`` (the ``auto`` engine) in a loop for ``--seconds``,
then times the same call on ``engine="numba"`` (compiled beforehand). It reports when
the first call within 1.5x of the compiled per-call time came (seconds after the first
call began), the call at which the program handed over, how long the caller waited for
the kernel there, and the median per call before and after. A second run in the same
cache directory shows the warm-cache case: the hand-over comes at the same call.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time

WORKER = r"""
import json, sys, time
import numpy as np
import newtonad as nad
from newtonad.ad import engine
from newtonad.ad.engine import auto

def rosen(x):
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)

n, seconds = int(sys.argv[1]), float(sys.argv[2])
x = np.linspace(-1.0, 1.0, n)
vg = nad.value_and_grad(rosen)
marks = []
t0 = time.perf_counter()
while time.perf_counter() - t0 < seconds:
    s = time.perf_counter()
    vg(x)
    marks.append((s - t0, time.perf_counter() - s))
compiled = nad.value_and_grad(rosen, engine="numba")
compiled(x)
per = []
for _ in range(50):
    s = time.perf_counter()
    compiled(x)
    per.append(time.perf_counter() - s)
ref = float(np.median(per))
fast = next((i for i, (t, d) in enumerate(marks) if d < 1.5 * ref), None)
tier = next(t for t in auto._TIERS.values() if len(t.program.steps) > 1 and t.handover)
print(json.dumps({
    "compiled": ref, "first_fast_at": None if fast is None else marks[fast][0],
    "handover_call": tier.handover, "calls": len(marks),
    "wait": engine.timings().handover_wait_seconds,
    "before": float(np.median([d for _, d in marks[1:fast or len(marks)]] or [0.0])),
    "after": float(np.median([d for _, d in marks[fast:]])) if fast is not None else None}))
"""


def run(n: int, seconds: float, cache: str) -> dict:
    env = {"NEWTONAD_CACHE_DIR": cache}
    proc = subprocess.run([sys.executable, "-c", WORKER, str(n), str(seconds)],
                          capture_output=True, text=True, env={**_environ(), **env})
    if proc.returncode != 0:
        raise SystemExit(proc.stderr[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _environ() -> dict:
    import os

    return {k: v for k, v in os.environ.items()
            if not k.startswith(("NEWTONAD_ENGINE", "NEWTONAD_TIER", "NEWTONAD_BACKGROUND"))}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--runs", type=int, default=3, help="fresh cold-cache runs")
    a = parser.parse_args(argv)
    print(f"value_and_grad of Rosenbrock, n = {a.n}, auto engine, {a.seconds:g} s per run")
    print("run         first call within 1.5x  hand-over call  waited   per call before  after"
          "     compiled")
    for i in range(a.runs):
        with tempfile.TemporaryDirectory() as cache:
            for label in ("cold", "warm"):
                if label == "warm" and i > 0:
                    continue  # one warm run is enough
                r = run(a.n, a.seconds, cache)
                at = "never" if r["first_fast_at"] is None else f"{r['first_fast_at']:.2f} s"
                after = "-" if r["after"] is None else f"{r['after'] * 1e3:.3f} ms"
                print(f"{i + 1} {label:8s}  {at:22s}  {r['handover_call']:14d}  "
                      f"{r['wait']:.2f} s   {r['before'] * 1e3:.3f} ms         {after}  "
                      f"{r['compiled'] * 1e3:.3f} ms")
                time.sleep(0.2)


if __name__ == "__main__":
    main()
