"""Objective: an objective function with cached exact derivatives, for solvers and scipy.

``Objective(f, args)`` gives ``fun``, ``jac``, ``value_and_grad``, ``hessp``, ``hess``
and ``linearize_hessp`` in scipy's calling conventions. It remembers the last point:

* ``fun(x)`` and ``jac(x)`` at the same ``x`` cost one value-and-gradient pass
  (scipy calls them separately);
* ``hessp(x, p)`` at one ``x`` reuses one linearisation: the residuals of the
  forward-over-reverse program are computed once (partial evaluation: the part that
  depends on x alone runs once, the part linear in the direction runs per product) and
  each product costs only the linear pass. (A first product at a point that has no
  residuals yet is one whole HVP pass instead; a second product there linearises.
  Problems with fewer than 128 entries of data run every product as a whole pass:
  there, passing the residuals costs more than the work they save.)
* once ``hessp`` has been used, ``fun`` / ``jac`` at a new point run the residual
  program, which yields f, ∇f and the residuals together: a Newton solver pays one
  primal-and-reverse pass per point, not two.

What is known at the current point (value, gradient, linearisations) is one record,
replaced as a whole when x changes, as in scipy's ``ScalarFunction``. Points are compared
by value, so scipy's copies of ``x`` still hit the cache, and a caller that changes its
``x`` in place gets a new point. Gradients are handed out as arrays the caller owns and
may write into. Under the compiled engines, at a new point of 32 768 entries or more the
value-and-gradient kernel itself writes the record's copy of x, in the loops that read x,
and the gradient into a new array that the first caller takes as it is: no pass over
memory before or after it. A second caller at that point, rare in a
solver, has the gradient computed again.
The counters ``nfev``, ``njev`` and ``nhev`` count what was really computed.
"""

from __future__ import annotations

import functools
import sys
import threading
from typing import Any, Callable, Sequence

import numpy as np

from ._hessian_matrices import HessianMatrices
from ._point import SMALL_POINT_SIZE, Point, Unseen, is_point
from ._programs import (
    NO_PATH_MESSAGE,
    PATH_RETRIES,
    TRACE_LOCK,
    GuardFailed,
    Traced,
    as_data,
    as_frame,
    as_point,
    derive,
    path_at,
    traced_at,
    with_copy_of_x,
)
from ._settings import settings
from ._static_args import bind_static
from .ad import transforms as tf
from .objective_protocol import Capabilities

#: From this many entries the value-and-gradient kernel writes the copy of a new point
#: (see with_copy_of_x) and the gradient for the caller into a new array. Below, serial
#: copies around the kernel cost less than passing it its output arrays
#: (``value_and_grad`` of Rosenbrock at a new point, the two ways interleaved in one
#: process, serial copies against the kernel's: n = 4096 3.6 against 4.8 µs a call,
#: 16384 8.3 against 9.9 µs, 32768 even, 65536 34 against 32 µs; at n = 1e6 see
#: benchmarks/objective_overhead.py).
_KERNEL_COPIES_FROM = 1 << 15
#: Below this many entries of data (x and args together), hessp runs every product as
#: one whole HVP pass and never linearises: passing the residuals to the linear kernel
#: then costs more than the primal work they save (measured: linear apply 1.2-1.7x a
#: whole HVP for 2-64 entries, even at 128-300).
_LINEARIZE_FROM = 128
_FLOAT64 = np.dtype(np.float64)


def _alternating(run: Callable) -> Callable:
    """A runner of the same kernel that returns its output in one of two arrays it owns, in
    turn: a result is valid until the second call after it (the solvers' inner loops, which
    drop a product before they ask for the next but one, pay no allocation per product)."""
    if not hasattr(run, "reusing_outputs"):
        return run
    pair = (run.reusing_outputs(), run.reusing_outputs())
    turn = [0]

    def alternate(*args: Any) -> tuple:
        turn[0] ^= 1
        return pair[turn[0]](*args)
    return alternate


class _PerThread(threading.local):
    """One thread's current point and hot-path runners: threads calling one Objective at
    different points each keep their own record (and the arrays its runners write), so
    one thread's point never replaces another's mid-call."""

    at: Point
    vg: tuple | None  # (shape, runner, data, copies) of the value and gradient
    hvp: tuple | None  # ((shape, k), runner, data) of the whole HVP pass
    alternating: tuple | None  # (shape, linear runner, its alternating sibling)

    def __init__(self) -> None:
        self.at = Point()
        self.vg = self.hvp = self.alternating = None


class Objective(HessianMatrices):
    """A scalar objective ``f(x, *args)`` with cached exact derivatives.

    Parameters
    ----------
    f : callable
        ``f(x, *args) -> scalar`` written in plain NumPy.
    args : sequence, optional
        Extra data inputs (never differentiated, never baked into programs).
    engine : str, optional
        The engine that runs derived programs.
    sparse : bool, optional
        If True, :meth:`hess` returns a ``scipy.sparse.csr_array`` recovered from one
        coloured HVP frame (:meth:`sparse_hess`); default False: a dense array.

    Examples
    --------
    >>> import numpy as np, scipy.optimize, newtonad as nad
    >>> obj = nad.Objective(lambda x: np.sum((x - 1.0) ** 2))
    >>> res = scipy.optimize.minimize(obj.fun, np.zeros(3), jac=obj.jac,
    ...                               hessp=obj.hessp, method="trust-ncg")
    >>> bool(np.allclose(res.x, 1.0))
    True
    """

    def __init__(self, f: Callable, args: Sequence[Any] = (), *, engine: str | None = None,
                 sparse: bool = False):
        if not callable(f):
            raise TypeError(f"Objective needs a callable f(x, *args), got {type(f).__name__}")
        f, args = bind_static(f, tuple(args))  # Python scalars and strings: static
        self.f = f
        self.args = tuple(as_data(a) for a in args)
        self.engine = engine or settings.engine
        self.sparse = bool(sparse)
        self._args_size = sum(int(np.size(a)) for a in self.args)
        self.nfev = self.njev = self.nhev = 0
        # each thread's point and the last runner of each hot path, checked by shape alone
        # (no dict lookup per call)
        self._local = _PerThread()
        self._runners: dict[tuple, tuple] = {}  # (shape, kind, k) -> (runner, its data inputs)
        self._second_order = False  # set once hessp is used: then keep residuals with ∇f
        self._identity: np.ndarray | None = None  # the identity frame hess runs, when small
        # guards on what f reads outside its arguments, one per traced shape (see _check)
        self._guards: tuple = ()
        self._fallback: Any = None  # why f is called directly (UntracedObjective), or None
        # newtonad's own entry points (minimize, FiniteSum, ...) keep their own ladders:
        # only an Objective the user made falls back by itself
        self._may_fall_back = not sys._getframe(1).f_globals.get(
            "__name__", "").startswith("newtonad.")

    @property
    def capabilities(self) -> Capabilities:
        """What the objective computes (all of the objective protocol, by AD).

        Returns
        -------
        Capabilities
            Every method is its own; ``sparse_requested`` is ``sparse``.

        Examples
        --------
        >>> import numpy as np, newtonad as nad
        >>> caps = nad.Objective(lambda x: np.sum(x ** 2), sparse=True).capabilities
        >>> caps.products, caps.sparse_hess, caps.sparse_requested
        (True, True, True)
        """
        return Capabilities(value_and_grad=True, linearized_products=True, reuse_output=True,
                            products=True, hess=True, sparse_hess=True,
                            sparse_requested=self.sparse)

    def counters(self) -> dict[str, int]:
        """Return the evaluations made: ``nfev``, ``njev`` and ``nhev`` (products).

        Returns
        -------
        dict of str to int
            Each counter by its name (the attributes of the same names).

        Examples
        --------
        >>> import numpy as np, newtonad as nad
        >>> obj = nad.Objective(lambda x: np.sum(x ** 2))
        >>> _ = obj.value_and_grad(np.ones(3))
        >>> obj.counters()
        {'nfev': 1, 'njev': 1, 'nhev': 0}
        """
        return {"nfev": self.nfev, "njev": self.njev, "nhev": self.nhev}

    # the calling thread's record and runners, for inspection (the methods read _local)
    @property
    def _at(self) -> Point:
        return self._local.at

    @property
    def _vg_runner(self) -> tuple | None:
        return self._local.vg

    @_vg_runner.setter
    def _vg_runner(self, vg: tuple | None) -> None:
        self._local.vg = vg

    @property
    def _hvp_runner(self) -> tuple | None:
        return self._local.hvp

    @_hvp_runner.setter
    def _hvp_runner(self, hvp: tuple | None) -> None:
        self._local.hvp = hvp

    def _forget(self) -> None:
        """Drop every thread's point, every runner and captured value: f now computes
        another thing."""
        self._local = _PerThread()
        self._runners = {}
        self._guards = ()

    def _on_new_path(self, method: Callable, x: Any, *rest: Any) -> Any:
        """Run ``method`` again after f's branches went another way at x than on the path
        its runners were made for: on the path that holds at x (kept, or traced there).
        When that path cannot be traced, on finite differences of f called directly."""
        for _ in range(PATH_RETRIES):
            if self._fallback is not None:  # now an UntracedObjective
                return getattr(self, method.__name__)(x, *rest)
            point = as_point(x)
            try:
                path_at(self._traced(point), point, self.args)
            except GuardFailed:
                continue
            except Exception as error:  # noqa: BLE001 (every tracing failure, as probe)
                try:
                    self._untraceable(error, point)  # raises GuardFailed, or error itself
                except GuardFailed:
                    continue
            # every runner and point record was made on the other path
            self._local = _PerThread()
            self._runners = {}
            try:
                return method(self, x, *rest)
            except GuardFailed:
                continue
        raise RuntimeError(NO_PATH_MESSAGE)

    def _untraceable(self, error: BaseException, x: np.ndarray) -> None:
        """``f`` cannot be traced at x: if calling it there works (and the user made this
        Objective: newtonad's entry points have their own fallbacks), warn once and become an
        :class:`UntracedObjective` (then raise GuardFailed,
        so the call runs again as one); else raise what calling it raised, or ``error``."""
        from ._programs import find_user_stacklevel
        from .fallback import Fallback, is_real_scalar, user_line, warn_fallback
        from .objective_fallback import INSTEAD

        if not self._may_fall_back:  # made by minimize & co: their ladder decides
            raise error
        value = self.f(x.copy(), *self.args)  # an error of f itself propagates
        if not is_real_scalar(value):
            raise error
        fallback = Fallback(error, value, user_line(error))
        warn_fallback(getattr(self.f, "__name__", type(self.f).__name__), fallback, INSTEAD,
                      stacklevel=find_user_stacklevel())
        self.__class__ = untraced_class()
        self._fallback = fallback
        self._forget()
        self._start_direct(x, value)  # type: ignore[attr-defined]
        raise GuardFailed from error

    # ---- programs ----------------------------------------------------------------------
    def _traced(self, x: np.ndarray) -> Traced:
        try:
            return traced_at(self.f, x, self.args, scalar=True)
        except GuardFailed:
            raise
        except Exception as error:  # noqa: BLE001 (every tracing failure, as probe)
            self._untraceable(error, x)  # raises GuardFailed (now untraced) or error
            raise

    def _compiled(self, x: np.ndarray, kind: str, k: int | None, make: Callable) -> tuple:
        """``(runner, data)`` for a derived program at x's shape; one dict hit per call."""
        key = (x.shape, kind, k)
        found = self._runners.get(key)
        if found is None:
            with TRACE_LOCK:  # one thread traces and compiles; the others then find it
                found = self._runners.get(key)
                if found is None:
                    traced = self._traced(x)
                    run = derive(traced, kind, k, make, self.engine)
                    found = (run, (*self.args, *traced.closed_values()))
                    if traced.guard is not None and traced.guard not in self._guards:
                        self._guards += (traced.guard,)
                    self._runners = {**self._runners, key: found}
        return found

    def _small(self, x: np.ndarray) -> bool:
        """Too little data for linearising to pay (see ``_LINEARIZE_FROM``)."""
        return x.size + self._args_size < _LINEARIZE_FROM

    def _check(self, x: Any) -> np.ndarray:
        """``x`` as a float64 array; first, forget everything if f's captured values changed."""
        if self._guards:  # a truth test first: most objectives read nothing that can change
            for guard in self._guards:
                if guard.changed():
                    self._forget()
                    break
        if x.__class__ is not np.ndarray or x.dtype is not _FLOAT64:
            x = as_point(x)
        return x

    # ---- value and gradient ------------------------------------------------------------
    def _evaluate(self, x: np.ndarray, give: bool = True) -> Point:
        """The current point, made ``x`` (a checked point) with its value and gradient.

        ``give``: the caller hands the gradient out (jac, value_and_grad): it must be
        there (not given away already), and at a new large point the kernel writes it
        into a new array for the caller; fun passes False (f is enough).
        """
        local = self._local
        at = local.at
        if x.size <= SMALL_POINT_SIZE:
            if not at.move_to_small(x) and at.grad is not None:
                return at
            if not self._second_order or self._small(x):
                # the per-call path of small problems, written out (no copies there)
                vg = local.vg
                if vg is None or vg[0] != x.shape:  # the shape check replaces a dict lookup
                    vg = self._value_and_grad_runner(x)
                at.value, at.grad = vg[1](x, *vg[2])
                self.nfev += 1
                self.njev += 1
                return at
        elif self._second_order:  # Newton use: _linearized below runs another program
            if not at.move_to(x) and (at.grad is not None or not give and at.value is not None):
                return at
        elif not is_point(at.key, x):
            vg = local.vg
            if vg is None or vg[0] != x.shape:  # the shape check replaces a dict lookup
                vg = self._value_and_grad_runner(x)
            if vg[3] is None:
                at.copy_in(x)
                at.value, at.grad = vg[1](x, *vg[2])
                self.nfev += 1
                self.njev += 1
                return at
            # the kernel writes x's private copy: no pass over x before it
            kept = at.free_copy(x)
            if kept is None:
                kept = np.empty(x.shape)
            at.clear(None)  # a kernel that fails leaves no point behind
            self._run_with_copies(at, x, vg, kept, give)
            at.key = (x.shape, kept)
            return at
        elif at.grad is not None or not give and at.value is not None:
            return at
        if self._second_order and not self._small(x):
            # Newton-type use: the pass that gives f and ∇f also keeps the residuals of
            # the Hessian at x, so hessp there needs no further primal work.
            self._linearized(x, None, need_grad=True)
            return at
        vg = local.vg
        if vg is None or vg[0] != x.shape:  # the shape check replaces a dict lookup
            vg = self._value_and_grad_runner(x)
        if vg[3] is None:
            at.value, at.grad = vg[1](x, *vg[2])
            self.nfev += 1
            self.njev += 1
        else:  # x is the current point: its copy is written again with the same values
            self._run_with_copies(at, x, vg, at.key[1], give)  # type: ignore[index]
        return at

    def _value_and_grad_runner(self, x: np.ndarray) -> tuple:
        """``(shape, runner, data, copies)`` of the value and gradient at x's shape, kept
        as the thread's ``vg``: the last runner of the hot path, checked by shape alone.

        ``copies`` is None, or for a point of ``_KERNEL_COPIES_FROM`` entries or more under
        an engine that takes ``out=``, the record's arrays of f and ∇f for the runner of
        :func:`~newtonad._programs.with_copy_of_x` (which also writes x's private copy;
        see :meth:`_run_with_copies`).
        """
        vg: tuple
        if x.size >= _KERNEL_COPIES_FROM:
            run, data = self._compiled(x, "value_and_grad_copy_x", 0, with_copy_of_x)
            # the compiled engines' runners (numba, auto) take out= and reuse outputs
            if hasattr(run, "reusing_outputs"):
                vg = self._local.vg = (x.shape, run, data, (np.empty(()), np.empty(x.shape)))
                return vg
        run, data = self._compiled(x, "value_and_grad", 0, tf.value_and_grad_program)
        if hasattr(run, "reusing_outputs"):
            # outputs overwritten by the next point are fine: only the last one is kept
            run = run.reusing_outputs()
        vg = self._local.vg = (x.shape, run, data, None)
        return vg

    def _run_with_copies(self, at: Point, x: np.ndarray, vg: tuple, kept: np.ndarray,
                         give: bool) -> None:
        """Run the kernel of :func:`~newtonad._programs.with_copy_of_x` at x: x's copy
        into ``kept``, f into the runner's array and ∇f -- for a caller (``give``: jac,
        value_and_grad) into a new array the first caller takes as it is (:class:`Unseen`);
        for fun into the record's array (the next point overwrites it: that gradient is
        only handed out as copies; a line search asks for f alone at most points)."""
        _, run, data, (value, grad) = vg
        if give:
            at.value, given, _ = run(x, *data, out=(value, np.empty(x.shape), kept))
            at.grad = Unseen(given)
        else:
            at.value, at.grad, _ = run(x, *data, out=(value, grad, kept))
        self.nfev += 1
        self.njev += 1

    @staticmethod
    def _hand_out(at: Point) -> np.ndarray:
        """The gradient at the point ``at`` in an array the caller owns: a copy of the
        record's, or the :class:`Unseen` one itself (then the record has none)."""
        grad = at.grad
        if grad.__class__ is Unseen:
            at.grad = None  # the caller owns the only array with it
            return grad.array
        return grad.copy()  # type: ignore[union-attr]

    def value_and_grad(self, x: Any) -> tuple[float, np.ndarray]:
        """Return ``(f(x), ∇f(x))`` from one pass; for ``scipy.optimize.minimize(jac=True)``.

        Parameters
        ----------
        x : array_like
            The point: a float array of the shape ``f`` was written for (non-finite
            entries are not refused: f gives what its NumPy code gives there, as a solver
            expects of a trial point).

        Returns
        -------
        value : float
            ``f(x, *args)``.
        grad : ndarray
            ``∇f(x, *args)``, shaped like ``x`` (a copy the caller may keep).

        Raises
        ------
        TypeError
            When ``x`` is not a float array, or ``f`` does not return a scalar array.
        ValueError
            When ``f`` does not return a scalar.

        Examples
        --------
        >>> import numpy as np, newtonad as nad
        >>> obj = nad.Objective(lambda x: np.sum(x ** 3))
        >>> obj.value_and_grad(np.array([1.0, 2.0]))
        (9.0, array([ 3., 12.]))
        """
        try:
            at = self._evaluate(self._check(x))
        except GuardFailed:  # f branches another way at x
            return self._on_new_path(Objective.value_and_grad, x)
        return float(at.value), self._hand_out(at)

    def fun(self, x: Any) -> float:
        """Return ``f(x)``; the gradient at ``x`` is computed in the same pass and kept.

        Parameters
        ----------
        x : array_like
            The point: a float array of the shape ``f`` was written for (non-finite
            entries are not refused: f gives what its NumPy code gives there, as a solver
            expects of a trial point).

        Returns
        -------
        float
            ``f(x, *args)``.

        Raises
        ------
        TypeError
            When ``x`` is not a float array, or ``f`` does not return a scalar array.
        ValueError
            When ``f`` does not return a scalar.

        Examples
        --------
        >>> import numpy as np, newtonad as nad
        >>> obj = nad.Objective(lambda x: np.sum(x ** 3))
        >>> obj.fun(np.array([1.0, 2.0]))
        9.0
        """
        try:
            return float(self._evaluate(self._check(x), False).value)
        except GuardFailed:  # f branches another way at x
            return self._on_new_path(Objective.fun, x)

    def jac(self, x: Any) -> np.ndarray:
        """Return ``∇f(x)``, shaped like ``x``; free after ``fun`` at the same ``x``.

        Parameters
        ----------
        x : array_like
            The point: a float array of the shape ``f`` was written for (non-finite
            entries are not refused: f gives what its NumPy code gives there, as a solver
            expects of a trial point).

        Returns
        -------
        ndarray
            The gradient, shaped like ``x`` (a copy the caller may keep).

        Raises
        ------
        TypeError
            When ``x`` is not a float array, or ``f`` does not return a scalar array.
        ValueError
            When ``f`` does not return a scalar.

        Examples
        --------
        >>> import numpy as np, newtonad as nad
        >>> obj = nad.Objective(lambda x: np.sum(x ** 3))
        >>> obj.jac(np.array([1.0, 2.0]))
        array([ 3., 12.])
        """
        try:
            return self._hand_out(self._evaluate(self._check(x)))
        except GuardFailed:  # f branches another way at x
            return self._on_new_path(Objective.jac, x)

    # ---- second order --------------------------------------------------------------------
    def _linearized(self, x: np.ndarray, k: int | None, need_grad: bool = False
                    ) -> tuple[Callable, tuple]:
        """``(linear runner, its inputs before V)`` at x for frames of width k.

        ``k`` None: for one vector. The residual pass also gives f and ∇f: kept when the
        point has no gradient; with ``need_grad`` (a caller asks for it) the pass runs
        again for it if a caller took the gradient before. Under the compiled engines
        its outputs are new arrays no one else holds, so the first caller takes ∇f as
        it is (:class:`Unseen`).
        """
        at = self._local.at
        at.move_to(x)
        if at.x is None:  # a large point's key is already a private copy
            assert at.key is not None  # set above, or x is the current point
            kept = at.key[1]
            at.x = kept if kept.__class__ is np.ndarray else x.copy()
        at.products = True  # products at x use these residuals
        linear = at.linear.get(k)
        if linear is None or need_grad and at.grad is None:
            (residual_run, linear_run), data = self._compiled(
                x, "linearized_hvp", k, lambda program: tf.linearized_hvp(program, k))
            y, g, *res = residual_run(x, *data)
            if linear is None:
                linear = (linear_run, (at.x, *data, *res))
                at.linear = {**at.linear, k: linear}  # its own dict: the empty one is shared
            if at.grad is None:
                if at.value is None or need_grad:  # else f and ∇f came with products
                    self.nfev += 1
                    self.njev += 1
                # the compiled engines' runners (numba, auto) give new arrays
                at.value, at.grad = y, (Unseen(g) if hasattr(residual_run, "reusing_outputs")
                                        else g)
        return linear

    def linearize_hessp(self, x: Any, *, reuse_output: bool = False
                        ) -> Callable[[np.ndarray], np.ndarray]:
        """Return the linear map ``V -> H V`` at ``x``; the residuals at ``x`` are made once.

        (With fewer than 128 entries of data, x and ``args`` together, every product is
        one whole HVP pass instead: there the residuals cost more than they save.)

        Parameters
        ----------
        x : array_like
            The point: a float array of the shape ``f`` was written for (non-finite
            entries are not refused: f gives what its NumPy code gives there, as a solver
            expects of a trial point).
        reuse_output : bool, optional
            For inner loops: products of one vector may be written into two arrays the
            map owns, in turn, so a result is valid only until the second product after
            it (no allocation per product). Default False: every result is a new array.

        Returns
        -------
        callable
            ``V -> H(x) V`` for ``V`` of shape ``x.shape`` or ``x.shape + (k,)``; the
            result has the shape of ``V``. It raises ValueError for another shape.

        Raises
        ------
        TypeError
            When ``x`` is not a float array, or ``f`` does not return a scalar array.
        ValueError
            When ``f`` does not return a scalar.

        Examples
        --------
        >>> import numpy as np, newtonad as nad
        >>> obj = nad.Objective(lambda x: np.sum(x ** 3))
        >>> hessp_at_x = obj.linearize_hessp(np.array([1.0, 2.0]))
        >>> hessp_at_x(np.array([1.0, 0.0])), hessp_at_x(np.array([0.0, 1.0]))
        (array([6., 0.]), array([ 0., 12.]))
        """
        x = self._check(x)
        self._second_order = True
        linear: dict[int | None, tuple] = {}  # frame width -> (linear runner, its inputs)
        linearized: set[int | None] = set()  # the widths whose runner takes residuals
        at = self._local.at
        if at.x is not None and None in at.linear and is_point(at.key, x):
            # x is the current point and its residuals are there (a Newton solver's
            # gradient pass made them): take them now, with the record's private copy
            # of x, which a linearisation keeps for good (no copy of x here)
            x = at.x
            linear[None] = at.linear[None]
            linearized.add(None)
        else:
            x = x.copy()

        def hessp_at_x(V: Any, _tries: int = 0) -> np.ndarray:
            try:
                V, k = as_frame(V, x.shape, "p")
                if k not in linear and self._small(x):
                    # too little data for residuals to pay (see _LINEARIZE_FROM): each
                    # product is one whole HVP pass, as in hessp
                    run, data = self._compiled(x, "hvp", k,
                                               lambda program: tf.hvp_program(program, k))
                    linear[k] = (run, (x, *data))
                if k not in linear:
                    linear[k] = self._linearized(x, k)
                    linearized.add(k)
                linear_run, known = linear[k]
                if reuse_output and k is None and k in linearized:
                    # the calling thread's own pair of output arrays: a result stays valid
                    # until that thread's second product after it, whatever other threads do
                    linear_run = self._alternating_runner(x, linear_run)
                (hv,) = linear_run(*known, V)
            except GuardFailed:  # f branches another way at x than the runners' path
                if _tries >= PATH_RETRIES:
                    raise RuntimeError(NO_PATH_MESSAGE) from None
                if self._fallback is not None:  # f cannot be traced: now untraced
                    return self.hessp(x, V)
                try:
                    path_at(self._traced(x), x, self.args)
                except GuardFailed:
                    return self.hessp(x, V)  # _traced fell back
                self._local = _PerThread()  # runners and records of the other path
                self._runners = {}
                linear.clear()
                linearized.clear()
                return hessp_at_x(V, _tries + 1)
            self.nhev += 1 if k is None else k
            return hv

        return hessp_at_x

    def _alternating_runner(self, x: np.ndarray, run: Callable) -> Callable:
        """The :func:`_alternating` sibling of the linear runner ``run`` (for one vector at
        x's shape): kept with the traced program's derived runners, so objectives of one
        function share it as they share ``run`` (making one costs milliseconds) -- one per
        thread, since its two arrays hold the thread's results."""
        local = self._local
        kept = local.alternating
        if kept is None or kept[0] != x.shape or kept[1] is not run:
            derived = self._traced(x).derived
            key = ("alternating-linear", threading.get_ident(), self.engine)
            pair = derived.get(key)
            if pair is None or pair[0] is not run:
                pair = derived[key] = (run, _alternating(run))
            kept = local.alternating = (x.shape, run, pair[1])
        return kept[2]

    def hessp(self, x: Any, p: Any) -> np.ndarray:
        """Return ``H(x) p`` for a vector ``p`` or a frame of k vectors.

        Parameters
        ----------
        x : array_like
            The point: a float array of the shape ``f`` was written for (non-finite
            entries are not refused: f gives what its NumPy code gives there, as a solver
            expects of a trial point).
        p : array_like
            A direction shaped like ``x``, or a frame of shape ``x.shape + (k,)``.

        Returns
        -------
        ndarray
            ``H(x) p``, shaped like ``p``.

        Raises
        ------
        TypeError
            When ``x`` is not a float array, or ``f`` does not return a scalar array.
        ValueError
            When ``p`` has another shape, or ``f`` does not return a scalar.

        Examples
        --------
        >>> import numpy as np, newtonad as nad
        >>> obj = nad.Objective(lambda x: np.sum(x ** 3))
        >>> obj.hessp(np.array([1.0, 2.0]), np.array([1.0, 1.0]))
        array([ 6., 12.])
        """
        try:
            x = self._check(x)
            self._second_order = True
            if p.__class__ is np.ndarray and p.shape == x.shape and p.dtype is _FLOAT64:
                k = None  # the solvers' case: one direction, checked without as_frame
            else:
                p, k = as_frame(p, x.shape, "p")
            self.nhev += 1 if k is None else k
            local = self._local
            whole = self._small(x)  # small: every product is a whole pass, the point is kept
            if not whole:
                # The first product at a point is one whole HVP pass: a caller that moves x
                # on every call pays no residual pass. A second product at the same point
                # linearises, and the rest cost a linear pass.
                at = local.at
                at.move_to(x)
                if not at.products:
                    at.products = whole = True
            if whole:
                hvp = local.hvp
                if hvp is None or hvp[0] != (x.shape, k):
                    run, data = self._compiled(x, "hvp", k,
                                               lambda program: tf.hvp_program(program, k))
                    hvp = local.hvp = ((x.shape, k), run, data)
                return hvp[1](x, *hvp[2], p)[0]
            # x is the current point, so _linearized need not compare it again when the
            # residuals for this frame width are there
            linear = at.linear.get(k)
            if linear is None:
                linear = self._linearized(x, k)
            linear_run, known = linear
            return linear_run(*known, p)[0]
        except GuardFailed:  # f branches another way at x
            return self._on_new_path(Objective.hessp, x, p)

    def hess(self, x: Any) -> Any:  # noqa: D102 (HessianMatrices.hess's docstring, below)
        try:
            return HessianMatrices.hess(self, x)
        except GuardFailed:  # f branches another way at x
            return self._on_new_path(HessianMatrices.hess, x)

    def hess_sparsity(self, x: Any, max_nnz: int | None = None) -> Any:  # noqa: D102
        try:
            point = self._check(x)
            traced = self._traced(point)
            if traced.check is not None and not traced.holds(point, self.args):
                path_at(traced, point, self.args)  # the pattern of the path x takes
            return HessianMatrices.hess_sparsity(self, x, max_nnz)
        except GuardFailed:  # f cannot be traced at x
            return self._on_new_path(HessianMatrices.hess_sparsity, x, max_nnz)

    def sparse_hess(self, x: Any) -> Any:  # noqa: D102 (HessianMatrices.sparse_hess's)
        try:
            return HessianMatrices.sparse_hess(self, x)
        except GuardFailed:  # f branches another way at x
            return self._on_new_path(HessianMatrices.sparse_hess, x)

    def __repr__(self) -> str:
        name = getattr(self.f, "__name__", type(self.f).__name__)
        return f"Objective({name}, nfev={self.nfev}, njev={self.njev}, nhev={self.nhev})"


# the overrides above only add the retry on another path: HessianMatrices' documentation
for _name in ("hess", "sparse_hess", "hess_sparsity"):
    getattr(Objective, _name).__doc__ = getattr(HessianMatrices, _name).__doc__


@functools.cache
def untraced_class() -> type:
    """``UntracedObjective``: an :class:`Objective` whose ``f`` cannot be traced, with the
    methods of :class:`~newtonad.objective_fallback.UntracedMethods` (finite differences
    of ``f`` called directly) before Objective's."""
    from .objective_fallback import UntracedMethods

    return type("UntracedObjective", (UntracedMethods, Objective),
                {"__doc__": untraced_class.__doc__, "__module__": __name__})
