"""FiniteSum: its measurements in one run, printed as tables.

    python benchmarks/finite_sum_report.py [--quick]

1. Against the in-memory Objective (2 workers, data that also fit this process):
   seconds per value_and_grad and per hessp, the hessp round trip's overhead over the
   workers' compute, payload bytes per hessp, and the minimiser of both (newton-cg).
2. Data 4x one worker's memory_limit (generated on the workers with dask.array.random,
   never on the client): 12 workers of 400 MiB (spilling and pausing off, the nanny
   still kills a worker above 95%; a worker process with newtonad loaded is ~160 MiB
   before any data), 1600 MiB of data; FiniteSum's newton-cg on logistic regression
   and a non-linear least-squares model, and dask-ml's LogisticRegression (solver
   newton, and lbfgs for at most 100 iterations) on the same arrays.
3. Weak scaling: 1 and 2 workers with the same data per worker, measured; beyond by
   the model  T(W) = t_compute + L(W),  L(W) = L(1) + (W - 1) * dL  for the direct
   hessp round (the client talks to every worker), with t_compute the slowest
   worker's compute and L(1), dL the measured overheads.

``--quick`` shrinks every size (a smoke run of the script itself). The machine is
shared: every time is a median of several calls, and ratios are taken in one run.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_finite_sum import (  # noqa: E402
    ENGINE,
    MODELS,
    make_data,
    start_point,
    warm_kernels,
)

MIB = 2**20
#: gradient tolerance per row of data: the losses are sums over rows, so |g| at the
#: minimum is limited by rounding in proportion to the rows (1e-9 per row is ~1e-12
#: relative to f for these models)
GTOL = 1e-9


def median_seconds(call, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def table(title, header, rows):
    print(f"\n{title}")
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(header)]
    print("  ".join(str(h).rjust(w) for h, w in zip(header, widths)))
    for r in rows:
        print("  ".join(str(c).rjust(w) for c, w in zip(r, widths)))


def start_cluster(workers, memory_limit="auto"):
    import dask
    from distributed import Client, LocalCluster

    # keep data in memory: the chunks are referenced by the workers' state, so
    # spilling them would free nothing; the nanny still enforces memory_limit
    dask.config.set({"distributed.worker.memory.target": False,
                     "distributed.worker.memory.spill": False,
                     "distributed.worker.memory.pause": False,
                     "distributed.worker.memory.terminate": 0.95})
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           memory_limit=memory_limit, scheduler_port=0, dashboard_address=":0")
    return cluster, Client(cluster)  # the default client: dask-ml computes on it


def round_costs(obj, w, p, repeat):
    """Seconds per value_and_grad (new point) and per hessp (same point)."""
    step = [0.0]

    def new_point():
        step[0] += 1e-9
        obj.value_and_grad(w + step[0])

    vg = median_seconds(new_point, repeat)
    obj.hessp(w + step[0], p)
    hp = median_seconds(lambda: obj.hessp(w + step[0], p), repeat)
    return vg, hp


def hessp_overhead(fs, w, p, repeat, cpu=False):
    """Median (wall, slowest worker's compute, payload bytes) of one direct hessp; with
    ``cpu``, also the client's CPU seconds per round (both of its threads)."""
    fs.hessp(w, p)
    walls, computes, moved = [], [], []
    cpu_start = time.process_time()
    for _ in range(repeat):
        before = dict(fs.stats)
        start = time.perf_counter()
        fs.hessp(w, p)
        walls.append(time.perf_counter() - start)
        computes.append(fs.stats["worker_seconds"] - before["worker_seconds"])
        moved.append(fs.stats["bytes_sent"] + fs.stats["bytes_received"]
                     - before["bytes_sent"] - before["bytes_received"])
    out = (float(np.median(walls)), float(np.median(computes)), int(np.median(moved)))
    return out + ((time.process_time() - cpu_start) / repeat,) if cpu else out


def relative(a, b):
    return abs(a - b) / max(abs(b), 1e-300)


# ---- 1. against the in-memory objective -------------------------------------------------

def against_in_memory(rows, cols, repeat):
    import newtonad as nad

    cluster, client = start_cluster(2)
    chunk = rows // 4
    out_rounds, out_solve, out_overhead = [], [], []
    try:
        for model, term in MODELS.items():
            warm_kernels(term, [(chunk, cols)])
            X, y = make_data(model, rows, cols, chunk)
            local = client.compute([X, y], sync=True)
            obj = nad.Objective(term, args=tuple(local), engine=ENGINE)
            w0 = start_point(model, cols)
            rng = np.random.default_rng(0)
            w, p = w0 + 0.01 * rng.normal(size=w0.size), rng.normal(size=w0.size)
            with nad.FiniteSum(term, data=(X, y), client=client, engine=ENGINE) as fs:
                fs.hessp(w, p)
                vg_mem, hp_mem = round_costs(obj, w, p, repeat)
                vg_fs, hp_fs = round_costs(fs, w, p, repeat)
                wall, compute, moved = hessp_overhead(fs, w + 1.0, p, repeat)
                out_rounds.append((model, f"{rows}x{cols}", f"{vg_mem * 1e3:.2f}",
                                   f"{vg_fs * 1e3:.2f}", f"{hp_mem * 1e3:.2f}",
                                   f"{hp_fs * 1e3:.2f}"))
                out_overhead.append((model, f"{wall * 1e3:.2f}", f"{compute * 1e3:.2f}",
                                     f"{(wall - compute) * 1e3:.2f}", moved,
                                     4 * w0.size * 8 * 2))
                for method in ("newton-cg", "trust-krylov"):
                    start = time.perf_counter()
                    res = nad.minimize(fs, w0, method=method, options={"gtol": GTOL * rows})
                    t_fs = time.perf_counter() - start
                    start = time.perf_counter()
                    ref = nad.minimize(obj, w0, method=method, options={"gtol": GTOL * rows})
                    t_mem = time.perf_counter() - start
                    out_solve.append((model, method, res.nit, ref.nit, f"{res.fun:.12g}",
                                      f"{relative(res.fun, ref.fun):.1e}",
                                      f"{t_fs:.2f}", f"{t_mem:.2f}"))
            del local, obj
            gc.collect()
        # the round trip alone: tiny data, so compute is negligible
        Xs, ys = make_data("logistic", 4096, cols, 1024)
        with nad.FiniteSum(MODELS["logistic"], data=(Xs, ys), client=client,
                           engine=ENGINE) as fs:
            w = start_point("logistic", cols)
            wall, compute, moved = hessp_overhead(fs, w, np.ones(w.size), 4 * repeat)
            out_overhead.append(("logistic, 4096 rows", f"{wall * 1e3:.2f}",
                                 f"{compute * 1e3:.2f}", f"{(wall - compute) * 1e3:.2f}",
                                 moved, 4 * cols * 8 * 2))
    finally:
        client.close()
        cluster.close()
    table("1a. seconds per round, 2 workers (ms; in-memory = Objective in this process)",
          ["model", "data", "vg in-memory", "vg FiniteSum", "hessp in-memory",
           "hessp FiniteSum"], out_rounds)
    table("1b. hessp round trip on 2 workers: overhead = wall - slowest worker's compute "
          "(target <= 5 ms); payload bytes per hessp (target <= 4 * n * 8 * workers)",
          ["case", "wall ms", "compute ms", "overhead ms", "bytes", "bytes target"],
          out_overhead)
    table(f"1c. same minimiser as in memory (target: relative difference of f <= 1e-10); "
          f"gtol {GTOL * rows:.1e}",
          ["model", "method", "nit FiniteSum", "nit in-memory", "f", "rel. diff f",
           "s FiniteSum", "s in-memory"], out_solve)


# ---- 2. data four times one worker's memory_limit --------------------------------------

def count_calls(owner, name, counter):
    original = getattr(owner, name)

    def counted(*args, **kwargs):
        counter[0] += 1
        return original(*args, **kwargs)
    setattr(owner, name, staticmethod(counted))
    return lambda: setattr(owner, name, staticmethod(original))


def dask_ml_fit(solver, X, y, tol, max_iter):
    """dask-ml's LogisticRegression (no intercept, no effective penalty): (w, s, iterations)."""
    from dask_glm.families import Logistic
    from dask_ml.linear_model import LogisticRegression

    counter = [0]
    restore = count_calls(Logistic, "hessian" if solver == "newton" else "pointwise_loss",
                          counter)
    try:
        model = LogisticRegression(fit_intercept=False, solver=solver, tol=tol,
                                   max_iter=max_iter, C=1e12)
        start = time.perf_counter()
        model.fit(X, y)
        seconds = time.perf_counter() - start
    finally:
        restore()
    return np.asarray(model.coef_).ravel(), seconds, counter[0]


def beyond_one_worker(total_mib, workers, memory_limit_mib, cols, repeat,
                      methods=("newton-cg", "trust-krylov"), lbfgs_iterations=200,
                      models=tuple(MODELS)):
    import newtonad as nad

    rows = int(total_mib * MIB // ((cols + 1) * 8))
    # small chunks: generating one (and dask's X @ v on it) makes temporaries of its size
    chunk = rows // (8 * workers)
    rows = chunk * 8 * workers
    cluster, client = start_cluster(workers, f"{memory_limit_mib}MiB")
    out_solve, out_rounds = [], []
    try:
        for model in models:
            term = MODELS[model]
            warm_kernels(term, [(chunk, cols)])
            X, y = make_data(model, rows, cols, chunk)
            w0 = start_point(model, cols)
            start = time.perf_counter()
            fs = nad.FiniteSum(term, data=(X, y), client=client, engine=ENGINE,
                               timeout=1800)
            fs.fun(w0)
            setup = time.perf_counter() - start
            results = {}
            for method in methods:
                start = time.perf_counter()
                res = nad.minimize(fs, w0, method=method, options={"gtol": GTOL * rows})
                seconds = time.perf_counter() - start
                results[method] = res
                out_solve.append((model, f"FiniteSum {method}", res.nit, res.nfev, res.nhvp,
                                  f"{res.fun:.12g}", f"{np.linalg.norm(res.jac):.1e}",
                                  f"{seconds:.1f}"))
                print(out_solve[-1], flush=True)
            if len(methods) > 1:
                f_ref = results[methods[0]].fun
                out_solve.append((model, "rel. diff f, the two methods", "", "", "",
                                  f"{relative(results[methods[1]].fun, f_ref):.1e}", "", ""))
            rng = np.random.default_rng(1)
            w = results[methods[0]].x + 0.01 * rng.normal(size=w0.size)
            p = rng.normal(size=w0.size)
            vg, hp = round_costs(fs, w, p, repeat)
            wall, compute, moved = hessp_overhead(fs, w, p, repeat)
            out_rounds.append((model, f"{rows}x{cols}", f"{(X.nbytes + y.nbytes) / MIB:.0f}",
                               f"{setup:.1f}", f"{vg * 1e3:.1f}", f"{hp * 1e3:.1f}",
                               f"{(wall - compute) * 1e3:.2f}", moved,
                               4 * w0.size * 8 * workers))
            print(out_rounds[-1], flush=True)
            if model == "logistic":
                fs.close()  # free the workers' memory for dask-ml's copy of the arrays
                Xp, yp = client.persist([X, y])
                for solver, max_iter in (("newton", 50), ("lbfgs", lbfgs_iterations)):
                    start = time.perf_counter()
                    try:
                        coef, seconds, iterations = dask_ml_fit(solver, Xp, yp, 1e-8,
                                                                max_iter)
                    except Exception as exc:  # noqa: BLE001 - e.g. workers out of memory
                        out_solve.append((model, f"dask-ml {solver}", "", "", "",
                                          f"failed: {type(exc).__name__}", "",
                                          f"{time.perf_counter() - start:.1f}"))
                        print(f"dask-ml {solver} failed: {str(exc)[:300]}", flush=True)
                        client.wait_for_workers(workers, timeout=120)
                        Xp, yp = client.persist([X, y])
                        continue
                    with nad.FiniteSum(term, data=(X, y), client=client,
                                       engine=ENGINE) as check:
                        f, g = check.value_and_grad(coef)
                    out_solve.append((model, f"dask-ml {solver}", iterations, "", "",
                                      f"{f:.12g}", f"{np.linalg.norm(g):.1e}",
                                      f"{seconds:.1f}"))
                    print(out_solve[-1], flush=True)
                del Xp, yp
            else:
                fs.close()
            gc.collect()
    finally:
        client.close()
        cluster.close()
    table(f"2a. data {total_mib} MiB = {total_mib / memory_limit_mib:.0f} x one worker's "
          f"memory_limit ({memory_limit_mib} MiB), {workers} workers, generated on the workers",
          ["model", "data", "MiB", "setup s", "vg ms", "hessp ms", "hessp overhead ms",
           "bytes/hessp", "bytes target"], out_rounds)
    table(f"2b. solves from the same start (gtol {GTOL * rows:.1e}; dask-ml tol 1e-8): "
          "iterations, f, "
          "gradient norm at the answer (evaluated by FiniteSum), seconds",
          ["model", "solver", "nit", "nfev", "nhvp", "f", "|g|", "seconds"], out_solve)


# ---- 3. weak scaling --------------------------------------------------------------------

def weak_scaling(mib_per_worker, cols, repeat):
    import newtonad as nad

    measured = {}
    term = MODELS["logistic"]
    for workers in (1, 2):
        rows_per_worker = int(mib_per_worker * MIB // ((cols + 1) * 8))
        chunk = rows_per_worker // 2
        warm_kernels(term, [(chunk, cols)])
        cluster, client = start_cluster(workers)
        try:
            X, y = make_data("logistic", chunk * 2 * workers, cols, chunk)
            with nad.FiniteSum(term, data=(X, y), client=client, engine=ENGINE) as fs:
                rng = np.random.default_rng(2)
                w, p = 0.01 * rng.normal(size=cols), rng.normal(size=cols)
                vg, hp = round_costs(fs, w, p, repeat)
                wall, compute, _ = hessp_overhead(fs, w, p, repeat)
                # the round trip alone, on the same cluster
                Xs, ys = make_data("logistic", 512 * workers, cols, 256)
                with nad.FiniteSum(term, data=(Xs, ys), client=client, engine=ENGINE) as tiny:
                    t_wall, t_compute, _, t_cpu = hessp_overhead(tiny, w, p, 8 * repeat,
                                                                 cpu=True)
            measured[workers] = dict(vg=vg, hp=hp, wall=wall, compute=compute,
                                     latency=t_wall - t_compute, client_cpu=t_cpu)
        finally:
            client.close()
            cluster.close()
    rows = [(w, "measured", f"{m['vg'] * 1e3:.1f}", f"{m['hp'] * 1e3:.1f}",
             f"{m['compute'] * 1e3:.1f}", f"{m['latency'] * 1e3:.2f}",
             f"{m['compute'] / m['hp']:.2f}") for w, m in measured.items()]
    latency_1 = measured[1]["latency"]
    # the client's work grows with the workers it messages (one payload out, one partial
    # back, one sum each); its CPU time per round is steadier than wall time on a
    # shared machine, so the per-worker increment is taken from it
    per_worker = max(0.0, measured[2]["client_cpu"] - measured[1]["client_cpu"])
    compute = float(np.mean([m["compute"] for m in measured.values()]))
    for workers in (4, 8, 16, 64, 256):
        latency = latency_1 + (workers - 1) * per_worker
        rows.append((workers, "model", "", f"{(compute + latency) * 1e3:.1f}",
                     f"{compute * 1e3:.1f}", f"{latency * 1e3:.2f}",
                     f"{compute / (compute + latency):.2f}"))
    table(f"3. weak scaling, {mib_per_worker} MiB of data per worker (logistic, {cols} "
          f"parameters); model T(W) = t_compute + L(1) + (W - 1) dL with t_compute = "
          f"{compute * 1e3:.1f} ms (slowest worker, measured), L(1) = {latency_1 * 1e3:.2f} ms "
          f"(round trip at 1 worker, measured), dL = {per_worker * 1e3:.3f} ms per worker "
          f"(client CPU per round at 2 workers minus at 1: "
          f"{measured[2]['client_cpu'] * 1e3:.3f} - {measured[1]['client_cpu'] * 1e3:.3f} ms)",
          ["workers", "", "vg ms", "hessp ms", "compute ms", "latency ms",
           "efficiency"], rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument("--only", choices=["1", "2", "3"], help="one section")
    parser.add_argument("--rows", type=int, default=2**20, help="rows of section 1")
    parser.add_argument("--mib-per-worker", type=int, default=128, help="section 3")
    parser.add_argument("--big-mib", type=int, default=1600, help="data of section 2")
    parser.add_argument("--big-workers", type=int, default=12, help="workers of section 2")
    parser.add_argument("--memory-limit-mib", type=int, default=400,
                        help="one worker's memory_limit in section 2")
    parser.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS),
                        help="models of section 2")
    parser.add_argument("--gtol-per-row", type=float, default=GTOL,
                        help="gradient tolerance per row of data")
    parser.add_argument("--lbfgs-iterations", type=int, default=100,
                        help="dask-ml lbfgs max_iter in section 2")
    args = parser.parse_args(argv)
    globals()["GTOL"] = args.gtol_per_row
    quick = args.quick
    repeat = 5 if quick else 15
    if args.only in (None, "1"):
        against_in_memory(2**14 if quick else args.rows, 32, repeat)
    if args.only in (None, "3"):
        weak_scaling(8 if quick else args.mib_per_worker, 64, repeat)
    if args.only in (None, "2"):
        if quick:
            beyond_one_worker(64, 2, 400, 16, repeat)
        else:
            beyond_one_worker(args.big_mib, args.big_workers, args.memory_limit_mib, 64,
                              repeat, methods=("newton-cg",),
                              lbfgs_iterations=args.lbfgs_iterations, models=args.models)


if __name__ == "__main__":
    main()
