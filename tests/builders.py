"""Builders the test modules share.

* :class:`Builder` assembles a Program from primitives by name, for engine tests that
  need programs no tracer would write.
* :class:`AnalyticObjective` and its instances (:func:`rosenbrock`, :func:`quadratic`)
  are hand-coded objectives with analytic derivatives. They follow the objective protocol
  of ``newtonad.Objective`` (``fun``, ``jac``, ``value_and_grad``, ``hessp`` with frames,
  ``linearize_hessp``, ``hess``, counters) without the AD core, so the solvers are tested
  on their own; ``tests/test_solvers_objectives.py`` checks them against ``Objective``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.optimize import rosen, rosen_der, rosen_hess

from newtonad.ad import primitives as P
from newtonad.ad.program import ArrayConst, Program, Slot, Step

# ---- programs step by step ------------------------------------------------------------------

class Builder:
    """Assemble a Program from primitives by name (shape rules give the slots)."""

    def __init__(self):
        self.slots: list[Slot] = []
        self.steps: list[Step] = []
        self.inputs: list[int] = []
        self.outputs: list[int] = []

    def _slot(self, slot: Slot) -> int:
        self.slots.append(slot)
        return len(self.slots) - 1

    def input(self, shape: tuple[int, ...], dtype: str = "float64") -> int:
        i = self._slot(Slot(tuple(shape), dtype))
        self.inputs.append(i)
        return i

    def const(self, value: Any, dtype: str = "float64") -> int:
        value = ArrayConst(np.asarray(value, dtype)) if np.ndim(value) else value
        return self.op("const", value=value, dtype=dtype)

    def op(self, name: str, *args: int, out: bool = False, **params: Any) -> int:
        prim = P.REGISTRY[name]
        slot = prim.abstract_eval(*(self.slots[i] for i in args), **params)
        i = self._slot(slot)
        self.steps.append(Step(prim, tuple(args), tuple(sorted(params.items())), i))
        if out:
            self.outputs.append(i)
        return i

    def ret(self, *slots: int) -> None:
        self.outputs.extend(slots)

    def build(self) -> Program:
        return Program(tuple(self.slots), tuple(self.steps), tuple(self.inputs),
                       tuple(self.outputs))


# ---- objectives with analytic derivatives ---------------------------------------------------

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
