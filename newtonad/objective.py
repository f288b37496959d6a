"""Objective: an objective function with cached exact derivatives, for solvers and scipy.

``Objective(f, args)`` gives ``fun``, ``jac``, ``value_and_grad``, ``hessp``, ``hess``
and ``linearize_hessp`` in scipy's calling conventions. It remembers the last point:

* ``fun(x)`` and ``jac(x)`` at the same ``x`` cost one value-and-gradient pass
  (scipy calls them separately);
* ``hessp(x, p)`` at one ``x`` reuses one linearisation: the residuals of the
  forward-over-reverse program are computed once (seed 001's partial evaluation) and
  each product costs only the linear pass. (A first product at a point that has no
  residuals yet is one whole HVP pass instead; a second product there linearises.
  Problems with fewer than 128 entries of data run every product as a whole pass:
  there, passing the residuals costs more than the work they save.)
* once ``hessp`` has been used, ``fun`` / ``jac`` at a new point run the residual
  program, which yields f, ∇f and the residuals together: a Newton solver pays one
  primal-and-reverse pass per point, not two.

Points are compared by value, so scipy's copies of ``x`` still hit the cache.
The counters ``nfev``, ``njev`` and ``nhev`` count what was really computed.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from . import api
from .ad import transforms as tf


#: Points of up to this many entries are compared by their bytes: one memcmp, ~0.1 µs.
_SMALL_POINT_SIZE = 2048
#: Below this many entries of data (x and args together), hessp runs every product as
#: one whole HVP pass and never linearises: passing the residuals to the linear kernel
#: then costs more than the primal work they save (measured: linear apply 1.2-1.7x a
#: whole HVP for 2-64 entries, even at 128-300).
_LINEARIZE_FROM = 128
_FLOAT64 = np.dtype(np.float64)


def _new_key(key: tuple | None, x: np.ndarray) -> tuple | None:
    """``None`` when ``x`` equals the point ``key`` was made from, else the key of ``x``.

    A point is remembered by value (scipy passes copies of ``x``): small points by their
    bytes, so the test is one bytes comparison, made once per call; larger ones by a
    private copy compared elementwise (copied only on a miss), which costs little next
    to the program run there.
    """
    if x.size <= _SMALL_POINT_SIZE:
        new = (x.shape, x.tobytes())
        return None if new == key else new  # a shape mismatch ends the comparison
    return None if _is_point(key, x) else (x.shape, x.copy())


def _is_point(key: tuple | None, x: np.ndarray) -> bool:
    """Whether ``x`` equals the point ``key`` was made from (no key is made)."""
    if key is None or key[0] != x.shape:
        return False
    data = key[1]
    return x.tobytes() == data if data.__class__ is bytes else bool((x == data).all())


class Objective:
    """A scalar objective ``f(x, *args)`` with cached exact derivatives.

    Parameters
    ----------
    f : callable
        ``f(x, *args) -> scalar`` written in plain NumPy.
    args : sequence, optional
        Extra data inputs (never differentiated, never baked into programs).
    engine : str, optional
        The engine that runs derived programs.

    Examples
    --------
    >>> import numpy as np, scipy.optimize, newtonad as nad
    >>> obj = nad.Objective(lambda x: np.sum((x - 1.0) ** 2))
    >>> res = scipy.optimize.minimize(obj.fun, np.zeros(3), jac=obj.jac,
    ...                               hessp=obj.hessp, method="trust-ncg")
    >>> bool(np.allclose(res.x, 1.0))
    True
    """

    def __init__(self, f: Callable, args: Sequence[Any] = (), *, engine: str | None = None):
        if not callable(f):
            raise TypeError(f"Objective needs a callable f(x, *args), got {type(f).__name__}")
        self.f = f
        self.args = tuple(api._as_data(a) for a in args)
        self.engine = api._engine(engine)
        self._args_size = sum(int(np.size(a)) for a in self.args)
        self.nfev = self.njev = self.nhev = 0
        self._vg_point: tuple | None = None  # the _new_key of the point below
        self._value: Any = 0.0  # f there (a 0-d array until fun asks for a float)
        self._grad: np.ndarray | None = None
        self._lin_point: tuple | None = None
        self._lin_x: np.ndarray | None = None
        self._product_point: tuple | None = None  # where hessp last ran or residuals were made
        self._hvp_runner: tuple | None = None  # ((shape, k), runner, data) of the last whole HVP
        self._linear: dict[int | None, tuple] = {}  # at _lin_point, per frame width
        self._runners: dict[tuple, tuple] = {}
        self._vg_runner: tuple | None = None  # (shape, runner, data) of the last value_and_grad
        self._second_order = False  # set once hessp is used: then keep residuals with ∇f
        # guards on what f reads outside its arguments, one per traced shape (see _check)
        self._guards: tuple = ()

    def _forget(self) -> None:
        """Drop every cached point, runner and captured value: f now computes another thing."""
        self._vg_point = self._lin_point = self._product_point = None
        self._lin_x = self._grad = None
        self._hvp_runner = self._vg_runner = None
        self._linear = {}
        self._runners = {}
        self._guards = ()

    # ---- programs ----------------------------------------------------------------------
    def _traced(self, x: np.ndarray) -> api.Traced:
        return api._traced(self.f, x, self.args, scalar=True)

    def _compiled(self, x: np.ndarray, kind: str, k: int, make) -> tuple:
        """``(runner, data)`` for a derived program at x's shape; one dict hit per call."""
        key = (x.shape, kind, k)
        if key not in self._runners:
            traced = self._traced(x)
            run = api._derived(traced, kind, k, lambda: make(traced.program), self.engine)
            self._runners[key] = (run, (*self.args, *traced.closed_values()))
            if traced.guard is not None and traced.guard not in self._guards:
                self._guards += (traced.guard,)
        return self._runners[key]

    def _small(self, x: np.ndarray) -> bool:
        """Too little data for linearising to pay (see ``_LINEARIZE_FROM``)."""
        return x.size + self._args_size < _LINEARIZE_FROM

    def _check(self, x: Any) -> np.ndarray:
        """``x`` as a float64 array; first, forget everything if f's captured values changed."""
        for guard in self._guards:
            if guard.changed():
                self._forget()
                break
        if x.__class__ is not np.ndarray or x.dtype is not _FLOAT64:
            x = api._as_point(x)
        return x

    # ---- value and gradient ------------------------------------------------------------
    def _evaluate(self, x: np.ndarray) -> None:
        """Make ``self._value`` and ``self._grad`` those at ``x`` (a checked point)."""
        key = _new_key(self._vg_point, x)
        if key is None:
            return
        if self._second_order and not self._small(x):
            # Newton-type use: the pass that gives f and ∇f also keeps the residuals of
            # the Hessian at x, so hessp there needs no further primal work.
            self._linearized(x, None)
            return
        vg = self._vg_runner
        if vg is None or vg[0] != x.shape:  # the shape check replaces a dict lookup per call
            run, data = self._compiled(x, "value_and_grad", 0, tf.value_and_grad_program)
            # outputs overwritten by the next point are fine: only the last one is kept
            run = run.reusing_outputs() if hasattr(run, "reusing_outputs") else run
            vg = self._vg_runner = (x.shape, run, data)
        y, g = vg[1](x, *vg[2])
        self._store(key, y, g)

    def _store(self, key: tuple, y: Any, g: np.ndarray) -> None:
        self.nfev += 1
        self.njev += 1
        self._vg_point = key
        self._value = y
        self._grad = g  # the runner's array; handed out as copies

    def value_and_grad(self, x: Any) -> tuple[float, np.ndarray]:
        """``(f(x), ∇f(x))`` from one pass; for ``scipy.optimize.minimize(jac=True)``."""
        self._evaluate(self._check(x))
        return float(self._value), self._grad.copy()

    def fun(self, x: Any) -> float:
        """``f(x)``; the gradient at ``x`` is computed in the same pass and kept."""
        self._evaluate(self._check(x))
        return float(self._value)

    def jac(self, x: Any) -> np.ndarray:
        """``∇f(x)``, shaped like ``x``; free after ``fun`` at the same ``x``."""
        self._evaluate(self._check(x))
        return self._grad.copy()

    # ---- second order --------------------------------------------------------------------
    def _linearized(self, x: np.ndarray, k: int | None) -> tuple[Callable, tuple]:
        """``(linear runner, its inputs before V)`` at x for frames of width k (None: one vector)."""
        key = _new_key(self._lin_point, x)
        if key is not None:
            self._lin_point = self._product_point = key  # products at x use these residuals
            kept = key[1]  # a large point's key is already a private copy
            self._lin_x = kept if kept.__class__ is np.ndarray else x.copy()  # read per product
            self._linear = {}
        linear = self._linear.get(k)
        if linear is None:
            (residual_run, linear_run), data = self._compiled(
                x, "linearized_hvp", k, lambda program: tf.linearized_hvp(program, k))
            y, g, *res = residual_run(x, *data)
            linear = self._linear[k] = (linear_run, (self._lin_x, *data, *res))
            if self._vg_point is not self._lin_point and not _is_point(self._vg_point, x):
                self._store(self._lin_point, y, g)  # the key made above: x is not copied again
        return linear

    def linearize_hessp(self, x: Any) -> Callable[[np.ndarray], np.ndarray]:
        """The linear map ``V -> H V`` at ``x``, with the residuals at ``x`` computed once.

        ``V`` has shape ``x.shape`` or ``x.shape + (k,)``; the result has the shape of ``V``.
        """
        x = self._check(x).copy()
        self._second_order = True
        linear: dict[int | None, tuple] = {}  # frame width -> (linear runner, its inputs)

        def hessp_at_x(V: Any) -> np.ndarray:
            V, k = api._frame(V, x.shape, "p")
            if k not in linear:
                linear[k] = self._linearized(x, k)
            linear_run, known = linear[k]
            (hv,) = linear_run(*known, V)
            self.nhev += 1 if k is None else k
            return hv

        return hessp_at_x

    def hessp(self, x: Any, p: Any) -> np.ndarray:
        """``H(x) p`` for a vector ``p`` (shape of ``x``) or a frame ``P`` (``x.shape + (k,)``)."""
        x = self._check(x)
        self._second_order = True
        if p.__class__ is np.ndarray and p.shape == x.shape and p.dtype is _FLOAT64:
            k = None  # the solvers' case: one direction, checked without _frame
        else:
            p, k = api._frame(p, x.shape, "p")
        self.nhev += 1 if k is None else k
        whole = self._small(x)  # small: every product is a whole pass
        if not whole:
            # The first product at a point is one whole HVP pass: a caller that moves x
            # on every call pays no residual pass. A second product at the same point
            # linearises, and the rest cost a linear pass.
            key = _new_key(self._product_point, x)
            if key is not None:
                self._product_point = key
                whole = True
        if whole:
            hvp = self._hvp_runner
            if hvp is None or hvp[0] != (x.shape, k):
                run, data = self._compiled(x, "hvp", k, lambda program: tf.hvp_program(program, k))
                hvp = self._hvp_runner = ((x.shape, k), run, data)
            return hvp[1](x, *hvp[2], p)[0]
        # x is the product point; when residuals were made there, that key *is* the
        # linearisation point's, so x needs no second comparison
        linear = self._linear.get(k) if self._product_point is self._lin_point else None
        if linear is None:
            linear = self._linearized(x, k)
        linear_run, known = linear
        return linear_run(*known, p)[0]

    def hess(self, x: Any) -> np.ndarray:
        """The dense Hessian, shape ``x.shape + x.shape``, from identity frames in chunks."""
        x = self._check(x)
        n = x.size
        out = np.empty((n, n))
        lin = self.linearize_hessp(x)
        for a, b in api._chunks(n, n):
            E = api._identity_columns(n, a, b)
            out[:, a:b] = lin(E.reshape(x.shape + (b - a,))).reshape(n, b - a)
        return out.reshape(x.shape + x.shape)

    def __repr__(self) -> str:
        name = getattr(self.f, "__name__", type(self.f).__name__)
        return f"Objective({name}, nfev={self.nfev}, njev={self.njev}, nhev={self.nhev})"
