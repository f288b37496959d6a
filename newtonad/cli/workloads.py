"""Benchmark workloads shared by ``newtonad bench``, the asv suites and the docs.

One definition of what is measured, so the command line, the asv dashboard and
the performance page agree:

* ``jvp`` — a forward (tangent) frame of k columns through the residual map
  ``r: R^n -> R^(2n-2)`` of the chained Rosenbrock function;
* ``vjp`` — a reverse (cotangent) frame of k columns through the same map;
* ``hvp`` — a Hessian-vector-product frame (forward-over-reverse) of the chained
  Rosenbrock function, everything recomputed at x per call;
* ``linearized-hvp`` — the same frame through ``Objective.linearize_hessp``: the
  residuals at x are computed once, each frame runs the linear program only;
* ``value-and-grad`` — f and its gradient in one pass (no frame).

Times are the best of a few repetitions after a warm-up call (tracing and
compilation excluded); frame times are reported per column, ``seconds / k``.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, Optional

import numpy as np

__all__ = ["KS", "NS", "FRAME_MODES", "chained_rosenbrock", "rosenbrock_residuals",
           "Measurement", "frame_runner", "value_and_grad_runner", "best_time", "measure"]

KS = (1, 2, 4, 8, 16, 32, 64)
NS = (1_000, 100_000)
FRAME_MODES = ("jvp", "vjp", "hvp", "linearized-hvp")


def chained_rosenbrock(x: np.ndarray) -> Any:
    """``sum(100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2)``."""
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_residuals(x: np.ndarray) -> Any:
    """The residuals ``r`` with ``chained_rosenbrock(x) == sum(r**2)``, shape ``(2n-2,)``."""
    return np.concatenate([10.0 * (x[1:] - x[:-1] ** 2), 1.0 - x[:-1]])


def _point(n: int) -> np.ndarray:
    return np.resize(np.array([-1.2, 1.0]), n)


def frame_runner(mode: str, n: int, k: int, engine: Optional[str] = None,
                 seed: int = 0) -> Callable[[], Any]:
    """A zero-argument callable that computes one frame of ``k`` columns at size ``n``.

    The callable has already run once, so tracing and compilation are done.

    Parameters
    ----------
    mode : {"jvp", "vjp", "hvp", "linearized-hvp"}
    n, k : int
        Problem size and number of frame columns.
    engine : str, optional
        AD engine (default: newtonad's default).
    seed : int
        Seed of the random frame.
    """
    import newtonad as nad

    rng = np.random.default_rng(seed)
    x = _point(n)
    if mode == "jvp":
        V = rng.standard_normal((n, k))
        run = lambda: nad.jvp(rosenbrock_residuals, x, V, engine=engine)  # noqa: E731
    elif mode == "vjp":
        W = rng.standard_normal((2 * n - 2, k))
        run = lambda: nad.vjp(rosenbrock_residuals, x, W, engine=engine)  # noqa: E731
    elif mode == "hvp":
        V = rng.standard_normal((n, k))
        run = lambda: nad.hvp(chained_rosenbrock, x, V, engine=engine)  # noqa: E731
    elif mode == "linearized-hvp":
        V = rng.standard_normal((n, k))
        hvp_at_x = nad.Objective(chained_rosenbrock, engine=engine).linearize_hessp(x)
        run = lambda: hvp_at_x(V)  # noqa: E731
    else:
        raise ValueError(f"unknown frame mode {mode!r}; choose from {FRAME_MODES}")
    run()
    return run


def value_and_grad_runner(n: int, engine: Optional[str] = None) -> Callable[[], Any]:
    """A warmed-up zero-argument callable computing f and its gradient at size ``n``."""
    import newtonad as nad

    x = _point(n)
    vg = nad.value_and_grad(chained_rosenbrock, engine=engine)
    run = lambda: vg(x)  # noqa: E731
    run()
    return run


def best_time(fn: Callable[[], Any], repeat: int = 5, budget: float = 1.0) -> float:
    """The fastest of up to ``repeat`` calls of ``fn``, stopping early after ``budget`` seconds.

    ``fn`` runs at least once. Returns seconds.
    """
    best = float("inf")
    deadline = time.perf_counter() + budget
    for _ in range(max(1, repeat)):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
        if time.perf_counter() > deadline:
            break
    return best


@dataclass(frozen=True)
class Measurement:
    """One benchmark number.

    Attributes
    ----------
    mode : str
        A frame mode or ``"value-and-grad"``.
    n, k : int
        Size and frame width (k = 1 for value-and-grad).
    seconds : float
        Seconds per call.
    """

    mode: str
    n: int
    k: int
    seconds: float

    @property
    def per_column(self) -> float:
        """Seconds per frame column."""
        return self.seconds / self.k

    def to_dict(self) -> dict:
        """A JSON-ready dict (with ``per_column``)."""
        return {**asdict(self), "per_column": self.per_column}


def measure(mode: str, n: int, k: int = 1, *, engine: Optional[str] = None, repeat: int = 5,
            budget: float = 1.0) -> Measurement:
    """Time one workload (see the module docstring for the modes)."""
    if mode == "value-and-grad":
        return Measurement(mode, n, 1, best_time(value_and_grad_runner(n, engine), repeat,
                                                 budget))
    return Measurement(mode, n, k, best_time(frame_runner(mode, n, k, engine), repeat, budget))
