"""asv: time per frame column against k for forward, reverse and HVP frames.

Each ``track_seconds_per_column`` returns seconds per column of one frame of k
columns (best of a few calls after a warm-up), so the dashboard plots how the
cost per column falls as k grows: the primal pass (and, for HVP frames, the
single cotangent column) is shared by all k columns. Parametrised over
k = 1, 2, 4, ..., 64 and n = 1e3, 1e5.

The workloads (chained Rosenbrock and its residual map) are defined once in
:mod:`newtonad.cli.workloads`, shared with ``newtonad bench`` and the docs. The
engine is named (``numba``, the default) rather than inherited, so that a
``NEWTONAD_ENGINE`` setting cannot mix two engines in one series.
"""

from newtonad.cli.workloads import KS, NS, best_time, frame_runner, value_and_grad_runner

#: calls per measurement and seconds of budget (``best_time``)
REPEAT, BUDGET = 5, 0.5
ENGINE = "numba"


class _Frame:
    """A frame mode, parametrised over (k, n); subclasses set ``mode``."""

    mode = ""
    params = [list(KS), list(NS)]
    param_names = ["k", "n"]
    tiny_params = [[1, 4], [100]]  # what tests/test_benchmarks.py runs
    unit = "seconds"
    timeout = 300

    def setup(self, k, n):
        self.run = frame_runner(self.mode, n, k, ENGINE)

    def track_seconds_per_column(self, k, n):
        return best_time(self.run, REPEAT, BUDGET) / k


class ForwardFrame(_Frame):
    """jvp: a tangent frame of k columns through the residual map R^n -> R^(2n-2)."""

    mode = "jvp"


class ReverseFrame(_Frame):
    """vjp: a cotangent frame of k columns through the residual map."""

    mode = "vjp"


class HVPFrame(_Frame):
    """hvp: k Hessian-vector products by forward-over-reverse, primal pass included."""

    mode = "hvp"


class LinearizedHVPFrame(_Frame):
    """Objective.linearize_hessp: residuals at x once, then the linear program per frame."""

    mode = "linearized-hvp"


class ValueAndGrad:
    """f and its gradient in one pass (chained Rosenbrock)."""

    params = [list(NS)]
    param_names = ["n"]
    tiny_params = [[100]]
    timeout = 300

    def setup(self, n):
        self.run = value_and_grad_runner(n, ENGINE)

    def time_value_and_grad(self, n):
        self.run()

    def track_seconds(self, n):
        return best_time(self.run, REPEAT, BUDGET)

    track_seconds.unit = "seconds"
