"""``max_time``: no expensive step of a native solver starts past the deadline.

The solvers read time from one function, ``newtonad.solvers.monitor.clock``; these tests
replace it with a fake clock that only moves when a Hessian, a factorisation, a product
or a line search runs, and record the clock's reading at the start of each. Nothing
here measures real time.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse
from scipy.optimize import rosen, rosen_hess

from newtonad.solvers import exact, minimize, monitor, newton_cg, sparse_exact
from newtonad.solvers.problem import FlatProblem

from .builders import rosen_start, rosenbrock

MAX_TIME = 2.5


class FakeClock:
    """A clock that moves only when told to; records what started when."""

    def __init__(self) -> None:
        self.now = 0.0
        self.events: list[tuple[str, float]] = []

    def __call__(self) -> float:
        return self.now

    def step(self, name: str, cost: float) -> None:
        """An expensive step ``name`` starts now and takes ``cost`` seconds."""
        self.events.append((name, self.now))
        self.now += cost

    def started(self, name: str) -> list[float]:
        return [t for event, t in self.events if event == name]


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(monitor, "clock", fake)
    return fake


def costly(monkeypatch, owner, name, clock, cost, label=None):
    """Make ``owner.name`` advance the fake clock by ``cost`` each call, recording it."""
    original = getattr(owner, name)

    def timed(*args, **kwargs):
        clock.step(label or name, cost)
        return original(*args, **kwargs)
    monkeypatch.setattr(owner, name, timed)


class _Lapack:
    """scipy's lapack module with dpotrf made costly on the fake clock."""

    def __init__(self, clock, cost):
        from scipy.linalg import lapack
        self._lapack, self._clock, self._cost = lapack, clock, cost

    def dpotrf(self, *args, **kwargs):
        self._clock.step("factorisation", self._cost)
        return self._lapack.dpotrf(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._lapack, name)


def assert_stopped_in_time(res, clock, names):
    assert res.status == 4, res.message
    assert "max_time" in res.message
    assert np.isfinite(res.x).all()
    x0 = rosen_start(res.x.size)
    assert res.fun <= rosen(x0)
    assert res.fun == pytest.approx(rosen(res.x))
    for name in names:
        times = clock.started(name)
        assert times, f"no {name} ran"
        assert all(t < MAX_TIME for t in times), (name, times)


def test_dense_trust_exact_builds_no_hessian_past_the_deadline(clock, monkeypatch):
    costly(monkeypatch, FlatProblem, "hess", clock, 1.0)
    monkeypatch.setattr(exact, "lapack", _Lapack(clock, 0.3))
    n = 8
    res = minimize(rosenbrock(), rosen_start(n), method="trust-exact",
                   options={"max_time": MAX_TIME})
    assert_stopped_in_time(res, clock, ["hess", "factorisation"])
    # the result's Hessian, formed at the last iterate only if it was formed in time
    hess_times = clock.started("hess")
    assert "hess" not in res or len(hess_times) == res.nhev


def test_trust_exact_with_max_time_zero_forms_no_hessian(clock, monkeypatch):
    costly(monkeypatch, FlatProblem, "hess", clock, 1.0)
    res = minimize(rosenbrock(), rosen_start(4), method="trust-exact",
                   options={"max_time": 0.0})
    assert res.status == 4 and res.nit == 0 and clock.started("hess") == []
    assert "hess" not in res
    np.testing.assert_array_equal(res.x, rosen_start(4))


class SparseRosenbrock:
    """Rosenbrock with its (tridiagonal) Hessian given sparse: the sparse trust-exact path."""

    sparse = True

    def __init__(self) -> None:
        self.inner = rosenbrock()

    def fun(self, x):
        return self.inner.fun(x)

    def jac(self, x):
        return self.inner.jac(x)

    def hessp(self, x, p):
        return self.inner.hessp(x, p)

    def hess_sparsity(self, x, max_nnz=None):
        return sparse.csr_array(rosen_hess(x) != 0)

    def sparse_hess(self, x):
        return sparse.csr_array(rosen_hess(x))


def test_sparse_trust_exact_factorises_nothing_past_the_deadline(clock, monkeypatch):
    costly(monkeypatch, FlatProblem, "sparse_hess", clock, 1.0, "hess")
    original = sparse_exact.factoriser

    def factoriser(*args, **kwargs):
        factorise = original(*args, **kwargs)

        def timed(lam):
            clock.step("factorisation", 0.3)
            return factorise(lam)
        return timed
    monkeypatch.setattr(sparse_exact, "factoriser", factoriser)
    res = minimize(SparseRosenbrock(), rosen_start(30), method="trust-exact",
                   options={"max_time": MAX_TIME})
    assert_stopped_in_time(res, clock, ["hess", "factorisation"])


@pytest.mark.parametrize("method", ["trust-ncg", "trust-krylov", "newton-cg"])
def test_products_and_line_searches_stop_at_the_deadline(method, clock, monkeypatch):
    original = FlatProblem.linearize_hessp

    def linearize(self, x, scratch=False):
        op = original(self, x, scratch)

        def product(v):
            clock.step("product", 0.05)
            return op(v)
        return product
    monkeypatch.setattr(FlatProblem, "linearize_hessp", linearize)
    costly(monkeypatch, newton_cg, "wolfe", clock, 0.2, "line search")
    res = minimize(rosenbrock(), rosen_start(30), method=method,
                   options={"max_time": MAX_TIME})
    names = ["product", "line search"] if method == "newton-cg" else ["product"]
    assert_stopped_in_time(res, clock, names)
