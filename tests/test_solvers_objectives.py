"""Hand-coded objectives with analytic derivatives, for the solver tests.

They follow the objective protocol of ``newtonad.objective.Objective`` (``fun``,
``jac``, ``value_and_grad``, ``hessp`` with frames, ``linearize_hessp``, ``hess``,
counters) without depending on the AD core, so the solvers are tested on their own.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import rosen, rosen_der, rosen_hess


class AnalyticObjective:
    """An objective from hand-written ``f``, gradient and Hessian-operator factory.

    Parameters
    ----------
    f, grad : callable
        ``f(x) -> float`` and ``grad(x) -> ndarray`` on arrays of the shape of x0.
    hess_operator : callable
        ``hess_operator(x) -> (V -> H V)`` where ``V`` has the shape of x or that
        shape plus a trailing frame axis.
    hess : callable, optional
        ``hess(x) -> dense Hessian`` of shape ``x.shape + x.shape``.
    """

    def __init__(self, f, grad, hess_operator, hess=None):
        self._f, self._grad, self._op, self._hess = f, grad, hess_operator, hess
        self.nfev = self.njev = self.nhev = 0
        self.calls = []

    def fun(self, x):
        self.nfev += 1
        return self._f(x)

    def jac(self, x):
        self.njev += 1
        return self._grad(x)

    def value_and_grad(self, x):
        self.nfev += 1
        self.njev += 1
        return self._f(x), self._grad(x)

    def linearize_hessp(self, x):
        op = self._op(x)

        def apply(v):
            self.nhev += 1
            return op(v)
        return apply

    def hessp(self, x, p):
        self.nhev += 1
        return self._op(x)(p)

    def hess(self, x):
        self.nhev += 1
        if self._hess is not None:
            return self._hess(x)
        n = x.size
        eye = np.eye(n).reshape(x.shape + (n,))
        return self._op(x)(eye).reshape(x.shape + x.shape)


def _rosen_operator(x):
    """Tridiagonal Hessian of chained Rosenbrock at x, applied to vectors or frames."""
    x = np.asarray(x, dtype=float)
    diag = np.zeros_like(x)
    diag[:-1] = 1200.0 * x[:-1] ** 2 - 400.0 * x[1:] + 2.0
    diag[1:] += 200.0
    off = -400.0 * x[:-1]

    def apply(v):
        if v.ndim == 2:
            hv = diag[:, None] * v
            hv[:-1] += off[:, None] * v[1:]
            hv[1:] += off[:, None] * v[:-1]
            return hv
        hv = diag * v
        hv[:-1] += off * v[1:]
        hv[1:] += off * v[:-1]
        return hv
    return apply


def rosenbrock():
    """Chained Rosenbrock (scipy.optimize.rosen), any n >= 2; minimum 0 at ones."""
    return AnalyticObjective(rosen, rosen_der, _rosen_operator, rosen_hess)


def rosen_start(n):
    """The standard start (-1.2, 1, -1.2, 1, ...)."""
    return np.tile([-1.2, 1.0], n // 2 + 1)[:n]


def quadratic(a, b):
    """``f(x) = x @ A x / 2 + b @ x`` (A symmetric), Hessian A everywhere."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    return AnalyticObjective(lambda x: 0.5 * x @ a @ x + b @ x, lambda x: a @ x + b,
                             lambda x: (lambda v: a @ v), lambda x: a.copy())
