"""asv: the numba engine against hand-fused numba kernels, per problem and measure.

The same problems and measures as ``benchmarks/compare.py`` (which also runs JAX,
torch.func and autograd where installed): value, value+gradient, HVP frames over k,
linearised-HVP setup and apply, per-call overhead on the 2-variable Rosenbrock, peak
memory of an HVP frame, and cold start in a fresh process. Sizes are trimmed so a
full ``asv run`` stays within minutes; ``compare.py`` runs the full sizes.

Each class times ``system`` in {"newtonad-numba", "newtonad-numpy", "hand-numba"};
newtonad runners reuse their output buffers (``run.reusing_outputs()``), as the
hand kernels write into preallocated arrays.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import compare  # noqa: E402  (problems, data and system builders are shared)

SYSTEMS = ["newtonad-numba", "newtonad-numpy", "hand-numba"]
PROBLEMS = {
    "rosen-1e3": dict(kind="rosen", n=1000),
    "rosen-1e5": dict(kind="rosen", n=10**5),
    "logistic": dict(kind="logistic", m=2000, n=100),
    "surface": dict(kind="surface", m=128),
}
KS = [1, 4, 16, 64]


def _build(system: str, problem: str, kmax: int = 1):
    spec = PROBLEMS[problem] if problem in PROBLEMS else dict(kind="rosen", n=2)
    x, args = compare.make_data(spec)
    return spec, x, args, compare.BUILDERS[system](spec, x, args, kmax)


class ValueAndGrad:
    """Seconds per value and per value+gradient call."""

    params = [SYSTEMS, list(PROBLEMS)]
    param_names = ["system", "problem"]
    timeout = 300

    def setup(self, system, problem):
        _, _, _, (ops, *_rest) = _build(system, problem)
        self.ops = ops
        for fn in ops.values():
            fn()

    def time_value(self, system, problem):
        self.ops["f"]()

    def time_value_and_grad(self, system, problem):
        self.ops["vg"]()


class HVPFrame:
    """Seconds per HVP frame of k columns (primal pass included) and per column."""

    params = [SYSTEMS, list(PROBLEMS), KS]
    param_names = ["system", "problem", "k"]
    timeout = 300

    def setup(self, system, problem, k):
        _, x, _, (_, hvp, *_rest) = _build(system, problem, k)
        V = np.random.default_rng(1).normal(size=x.shape + (k,))
        self.run = hvp(k, V)
        self.run()

    def time_hvp_frame(self, system, problem, k):
        self.run()

    def track_seconds_per_column(self, system, problem, k):
        return compare.median_time(self.run, 0.2, 3) / k

    track_seconds_per_column.unit = "seconds"


class LinearizedHVP:
    """Linearised HVP: setup once per x, then apply per frame."""

    params = [SYSTEMS, list(PROBLEMS), [1, 16]]
    param_names = ["system", "problem", "k"]
    timeout = 300

    def setup(self, system, problem, k):
        _, x, _, (_, _, linearized, *_rest) = _build(system, problem, k)
        V = np.random.default_rng(1).normal(size=x.shape + (k,))
        self.setup_fn, self.apply_fn = linearized(k, V)
        self.setup_fn()
        self.apply_fn()

    def time_setup(self, system, problem, k):
        self.setup_fn()

    def time_apply(self, system, problem, k):
        self.apply_fn()


class PerCallOverhead:
    """The 2-variable Rosenbrock: per-call cost of gradient and HVP (via Objective)."""

    params = [SYSTEMS]
    param_names = ["system"]

    def setup(self, system):
        _, _, _, (ops, hvp, _, _, extra) = _build(system, "rosen-2")
        self.vg, self.hvp = ops["vg"], hvp(1, np.ones((2, 1)))
        self.jac = extra.get("objective jac, new x each call", self.vg)
        self.hessp = extra.get("objective hessp, new x each call", self.hvp)
        self.hessp_same_x = extra.get("objective hessp, same x", self.hvp)
        for fn in (self.vg, self.hvp, self.jac, self.hessp, self.hessp_same_x):
            fn()

    def time_value_and_grad(self, system):
        self.vg()

    def time_hvp(self, system):
        self.hvp()

    def time_objective_jac(self, system):
        self.jac()

    def time_objective_hessp(self, system):
        self.hessp()

    def time_objective_hessp_same_x(self, system):
        self.hessp_same_x()


class PeakMemory:
    """Peak resident memory added by one HVP frame, over the size of V plus the output."""

    params = [SYSTEMS, ["rosen-1e5", "surface"]]
    param_names = ["system", "problem"]
    timeout = 300

    def track_memory_ratio(self, system, problem):
        command = [sys.executable, compare.__file__, "--quick", "--memory", system, problem]
        out = subprocess.run(command, capture_output=True, text=True, check=True)
        import json

        m = json.loads(out.stdout.strip().splitlines()[-1])
        return m["bytes"] / m["frame_bytes"]

    track_memory_ratio.unit = "ratio"


class ColdStart:
    """Seconds from interpreter start to the first HVP (Rosenbrock n = 1e5)."""

    params = [["newtonad-numba", "hand-numba"], ["empty cache", "warm cache"]]
    param_names = ["system", "cache"]
    timeout = 600
    number = 1
    repeat = 1

    def track_cold_start(self, system, cache):
        code = {"newtonad-numba": compare.COLD, "hand-numba": compare.COLD_HAND}[system]
        code = code.format(n=10**5, here=str(compare.HERE))
        with tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, NEWTONAD_CACHE_DIR=d, NUMBA_CACHE_DIR=d)
            if cache == "warm cache":
                subprocess.run([sys.executable, "-c", code], env=env, check=True)
            t = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], env=env, check=True)
            return time.perf_counter() - t

    track_cold_start.unit = "seconds"
