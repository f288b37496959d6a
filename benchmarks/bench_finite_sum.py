"""asv: ``nad.FiniteSum`` on a 2-worker LocalCluster against the in-memory ``Objective``.

Two models, written once in plain NumPy and used by both objectives:

* ``logistic`` -- logistic regression, labels in {0, 1}:
  ``sum(log(1 + exp(X w)) - y * (X w))`` (dask-ml's loss, so its solvers can be compared);
* ``decay`` -- non-linear least squares, ``y ~ w0 * exp(-(X w[1:])**2 / 4)`` (one
  parameter more than X has columns).

The data are generated on the workers with ``dask.array.random`` (they never exist on
the client); the in-memory objective gets the same arrays computed to this process.
Tracked: seconds per ``value_and_grad`` at a new point and per ``hessp`` at the same
point; for FiniteSum also the payload bytes moved per ``hessp`` and the round trip's
overhead over the workers' compute (milliseconds).

One cluster per process (asv runs each benchmark in its own process), closed at exit.
``benchmarks/finite_sum_report.py`` prints the full tables (large data, dask-ml,
weak scaling) in one run.
"""

from __future__ import annotations

import atexit
import sys
import time
from pathlib import Path

import numpy as np

ENGINE = "numba"
WORKERS = 2
COLS = 32


def logistic(w, X, y):
    """Logistic regression loss with labels in {0, 1} (dask-glm's ``Logistic``)."""
    z = X @ w
    return np.sum(np.logaddexp(0.0, z) - y * z)


def decay(w, X, y):
    """Non-linear least squares: ``y ~ w0 * exp(-(X @ w[1:]) ** 2 / 4)``."""
    return 0.5 * np.sum((w[0] * np.exp(-0.25 * (X @ w[1:]) ** 2) - y) ** 2)


MODELS = {"logistic": logistic, "decay": decay}


def make_data(model, rows, cols, chunk_rows, seed=0):
    """Dask arrays ``(X, y)`` generated on the workers for ``model`` (nothing computed)."""
    import dask.array as da

    X = da.random.RandomState(seed).normal(size=(rows, cols), chunks=(chunk_rows, cols))
    truth = np.linspace(1.0, -1.0, cols) / np.sqrt(cols)
    noise = da.random.RandomState(seed + 1).normal(size=rows, chunks=chunk_rows)
    if model == "logistic":
        y = (X @ truth + noise > 0).astype(np.float64)
    else:
        y = 2.0 * da.exp(-0.25 * (X @ truth) ** 2) + 0.1 * noise
    return X, y


def start_point(model, cols):
    """The solvers' starting point for ``model`` on data of ``cols`` columns."""
    if model == "decay":
        return np.concatenate([[1.0], np.full(cols, 0.1)])
    return np.zeros(cols)


def warm_kernels(term, chunk_shapes, engine=ENGINE):
    """Compile the term's programs at each chunk shape here, into the disk kernel cache,
    so the workers load them instead of all compiling at once."""
    import newtonad as nad

    for rows, cols in chunk_shapes:
        obj = nad.Objective(term, args=(np.zeros((rows, cols)), np.zeros(rows)), engine=engine)
        w = start_point("decay" if term is decay else "logistic", cols)
        obj.value_and_grad(w)
        obj.hessp(w, np.ones(w.size))
        obj.hessp(w, np.ones(w.size))  # the second product linearises
        obj.fun(w + 0.1)  # after hessp: the residual program


_CLUSTER: dict = {}
#: (objective, model, rows) -> the objective, made once per process (closed with the cluster)
_OBJECTIVES: dict = {}


def importable_on_workers():
    """Put the folder holding ``benchmarks/`` at the end of ``sys.path``.

    The workers unpickle the model functions by reference, by importing
    ``benchmarks.bench_finite_sum``. asv imports the suite through an import hook of
    its own, which spawned worker processes do not inherit; they do inherit
    ``sys.path``. At its end the folder cannot shadow an installed ``newtonad``.
    """
    root = str(Path(__file__).resolve().parents[1])
    if root not in sys.path:
        sys.path.append(root)


def cluster_client(workers=WORKERS, **options):
    """A LocalCluster of single-threaded worker processes, one per process run."""
    key = (workers, tuple(sorted(options.items())))
    if key not in _CLUSTER:
        importable_on_workers()
        from distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               scheduler_port=0, dashboard_address=":0", **options)
        client = Client(cluster, set_as_default=False)
        _CLUSTER[key] = (cluster, client)
        atexit.register(lambda: (client.close(), cluster.close()))
    return _CLUSTER[key][1]


class FiniteSumRound:
    """Seconds per value_and_grad (new point) and per hessp (same point)."""

    params = [["finite_sum", "in_memory"], ["logistic", "decay"], [2**18]]
    param_names = ["objective", "model", "rows"]
    tiny_params = [["finite_sum", "in_memory"], ["logistic"], [2**12]]
    timeout = 600

    def setup(self, objective, model, rows):
        import newtonad as nad

        key = (objective, model, rows)
        if key not in _OBJECTIVES:  # one per process: asv runs a benchmark per process
            term, chunk = MODELS[model], rows // (2 * WORKERS)
            warm_kernels(term, [(chunk, COLS)])
            client = cluster_client()
            X, y = make_data(model, rows, COLS, chunk)
            if objective == "finite_sum":
                _OBJECTIVES[key] = nad.FiniteSum(term, data=(X, y), client=client,
                                                 engine=ENGINE)
            else:
                local = client.compute([X, y], sync=True)
                _OBJECTIVES[key] = nad.Objective(term, args=tuple(local), engine=ENGINE)
        self.obj = _OBJECTIVES[key]
        rng = np.random.default_rng(0)
        w = start_point(model, COLS)
        self.w = w + 0.01 * rng.normal(size=w.size)
        self.p = rng.normal(size=w.size)
        self.obj.hessp(self.w, self.p)
        self.obj.hessp(self.w, self.p)  # state (and linearisations) in place

    def time_value_and_grad(self, objective, model, rows):
        self.w[0] += 1e-9  # a new point every call
        self.obj.value_and_grad(self.w)

    def time_hessp(self, objective, model, rows):
        self.obj.hessp(self.w, self.p)

    def track_hessp_bytes(self, objective, model, rows):
        """Payload bytes sent and received per hessp (FiniteSum; 0 in memory)."""
        if objective != "finite_sum":
            return 0
        before = dict(self.obj.stats)
        self.obj.hessp(self.w, self.p)
        return (self.obj.stats["bytes_sent"] + self.obj.stats["bytes_received"]
                - before["bytes_sent"] - before["bytes_received"])

    track_hessp_bytes.unit = "bytes"

    def track_hessp_overhead_ms(self, objective, model, rows):
        """Median round trip of hessp minus the slowest worker's compute (milliseconds)."""
        if objective != "finite_sum":
            return 0.0
        overheads = []
        for _ in range(21):
            before = self.obj.stats["worker_seconds"]
            start = time.perf_counter()
            self.obj.hessp(self.w, self.p)
            wall = time.perf_counter() - start
            overheads.append(wall - (self.obj.stats["worker_seconds"] - before))
        return 1e3 * float(np.median(overheads))

    track_hessp_overhead_ms.unit = "ms"
