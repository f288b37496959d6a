"""Lower the benchmark and catalogue programs with the default settings; save each source.

usage: NUMBA_NUM_THREADS=N python make_corpus.py OUTDIR
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from settings_key import save, settings_tag  # noqa: E402

import newtonad as nad  # noqa: E402
from newtonad import problems  # noqa: E402
from newtonad.ad import transforms as tf  # noqa: E402
from newtonad.ad.engine import numba_engine  # noqa: E402

OUT = sys.argv[1]
tag, vals = settings_tag()
print("settings", vals)


def rosen(x):
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def logistic(w, X, y, lam):
    return np.sum(np.logaddexp(0, -y * (X @ w))) + 0.5 * lam * (w @ w)


def surface(u, h):
    return np.sum(np.sqrt(1 + ((u[1:, :-1] - u[:-1, :-1]) * h) ** 2
                          + ((u[:-1, 1:] - u[:-1, :-1]) * h) ** 2))


def least_squares(x, A, b):
    return 0.5 * np.sum((A @ x - b) ** 2)


def derived(program, full=True):
    yield "f", program
    yield "vg", tf.value_and_grad_program(program)
    for k in ((None, 1, 16) if full else (None, 4)):
        yield f"hvp{k}", tf.hvp_program(program, k)
    for k in ((1, 16) if full else (4,)):
        r, lin = tf.linearized_hvp(program, k)
        yield f"lres{k}", r
        yield f"llin{k}", lin


cases = []
for n in (2, 1000, 10**5, 10**6):
    cases.append((f"rosen-{n}", lambda n=n: nad.trace(rosen, np.zeros(n)), True))
for m, n in ((2000, 100), (20000, 500), (200, 50)):
    cases.append((f"logistic-{m}x{n}", lambda m=m, n=n: nad.trace(
        logistic, np.zeros(n), np.zeros((m, n)), np.zeros(m), np.array(1e-2)), True))
cases.append(("lstsq-20000x50", lambda: nad.trace(least_squares, np.zeros(50),
                                                   np.zeros((20000, 50)), np.zeros(20000)), True))
for m in (128, 512):
    cases.append((f"surface-{m}",
                  lambda m=m: nad.trace(surface, np.zeros((m, m)), np.array(0.1)), True))
for p in problems.all_problems():
    cases.append((f"prob-{p.name}-{p.n}", lambda p=p: nad.trace(p.fun, p.x0), False))
for name, n in (("chained-rosenbrock", 10**5), ("extended-rosenbrock", 10**5),
                ("minimal-surface", 256**2), ("dixmaana", 3 * 10**4),
                ("broyden-tridiagonal", 10**5), ("arwhead", 10**5),
                ("engval1", 10**5), ("tridia", 10**5), ("quartc", 10**5), ("nondquar", 10**5),
                ("power", 10**5), ("liarwhd", 10**5), ("fletchcr", 10**5),
                ("discrete-boundary-value", 10**5), ("penalty-1", 10**5)):
    cases.append((f"prob-{name}-{n}", lambda name=name, n=n: (lambda p: nad.trace(p.fun, p.x0))(
        problems.get(name, n)), False))

t0 = time.time()
count = 0
for cname, build, full in cases:
    try:
        program = build()
    except Exception as e:
        print("skip", cname, type(e).__name__, e)
        continue
    for dname, prog in derived(program, full):
        try:
            src = numba_engine.lower(prog).source
        except Exception as e:
            print("fail", cname, dname, type(e).__name__, e)
            continue
        save(OUT, f"{cname}-{dname}-{tag}", src)
        count += 1
print(count, "sources in", round(time.time() - t0, 1), "s")
