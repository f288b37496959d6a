"""The trust-region driver shared by trust-ncg, trust-krylov and trust-exact.

The driver owns the outer loop: it asks a subproblem for a step inside the trust
region, compares the actual and predicted decrease, updates the radius and
accepts or rejects the step. Each method is a :class:`QuadraticModel` subclass
with one ``solve(trust_radius) -> (p, hits_boundary)``; adding a method touches
one file. This is algorithm 4.1 of Nocedal & Wright, *Numerical Optimization*,
2nd ed. (2006), with the constants of scipy's ``_minimize_trust_region`` (ratio
thresholds 1/4 and 3/4, radius quartered or doubled), so that each native
method takes the same steps as scipy's method of the same name whenever their
subproblem solutions agree.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional

import numpy as np
from scipy.optimize import OptimizeResult

from . import monitor as _monitor
from .linalg import dot, norm
from .monitor import DeadlinePassed, Monitor, Status, past
from .problem import FlatProblem, HessOperator
from .scratch import POOL_FROM, Workspace, borrow, give_back
from .start import native_start

_EPS = float(np.finfo(float).eps)
#: radius factors of Nocedal & Wright's algorithm 4.1 (and scipy)
_SHRINK = 0.25
_GROW = 2.0
#: default cap on the radius; scipy's is 1000, an absolute length that stops
#: badly scaled problems (Brown's, x* = (1e6, 2e-6)) from getting anywhere
MAX_TRUST_RADIUS = 1e10

__all__ = ["QuadraticModel", "minimize_trust_region", "boundary_intersections",
           "check_start", "converged", "shrunk_radius", "MAX_TRUST_RADIUS", "run_trust_region"]


def boundary_intersections(zz: float, zd: float, dd: float, radius: float
                           ) -> tuple[float, float]:
    """Both roots ``t`` of ``||z + t d|| = radius``, smaller first.

    Parameters
    ----------
    zz, zd, dd : float
        ``z @ z``, ``z @ d`` and ``d @ d``; ``||z|| <= radius`` and ``d != 0``.
    radius : float
        Sphere radius.

    Notes
    -----
    Solves ``dd t**2 + 2 zd t + (zz - radius**2) = 0`` without cancellation:
    the root whose sign matches ``-zd`` comes from the usual formula, the other
    from the product of the roots (Golub & Van Loan, *Matrix Computations*,
    4th ed., section 2.7).
    """
    c = zz - radius * radius
    disc = math.sqrt(max(zd * zd - dd * c, 0.0))
    q = -(zd + math.copysign(disc, zd))
    if q == 0.0:  # z = 0 and zd = 0: symmetric roots
        t = radius / math.sqrt(dd)
        return -t, t
    t1, t2 = q / dd, c / q
    return (t1, t2) if t1 <= t2 else (t2, t1)


class QuadraticModel:
    """The model ``m(p) = f + g @ p + p @ H p / 2`` of the objective at ``x``.

    Values are computed on first use and kept (``fun``, ``jac``, ``jac_mag``,
    ``hess``); the Hessian is linearised once at ``x`` and that operator serves
    every product at ``x``. Subclasses implement :meth:`solve` and record the
    model decrease of the step they return with :meth:`_record`, so the driver
    needs no extra Hessian product to compute it.

    Parameters
    ----------
    problem : FlatProblem
        The objective on flat vectors.
    x : ndarray, shape (n,)
        The point; never modified.
    fun, jac : float and ndarray, optional
        Value and gradient at ``x`` when already known.
    deadline : float, optional
        :func:`.monitor.clock` value at which inner iterations stop early, and before
        which a Hessian or a factorisation must start (else :class:`.DeadlinePassed`).
    workspace : Workspace, optional
        Scratch vectors shared by the models of one run (:mod:`.scratch`), given by
        the driver, which uses a step only until the next ``solve``: then a step may
        live in the workspace and is overwritten by the next ``solve`` of any model of
        the run. Without it every step is a new array.
    operator : callable, optional
        The map ``v -> H v`` to use instead of the problem's linearised Hessian (a
        preconditioned model gives its inner model ``C⁻¹ H C⁻ᵀ``).
    """

    #: whether :meth:`solve` works with Hessian-vector products (not a dense Hessian):
    #: then the gradient passes keep the residuals the products need
    uses_products = False
    #: whether the run's result carries the Hessian at the last point (trust-exact)
    returns_hess = False

    def __init__(self, problem: FlatProblem, x: np.ndarray, fun: Optional[float] = None,
                 jac: Optional[np.ndarray] = None, deadline: float = math.inf,
                 workspace: Optional[Workspace] = None,
                 operator: Optional[HessOperator] = None, **options: Any) -> None:
        self.problem = problem
        self.x = x
        #: scratch arrays the driver hands from the model of one point to the next (one
        #: model is in use at a time), so that large buffers are not made per point
        self.workspace = Workspace() if workspace is None else workspace
        #: whether steps may live in the workspace (the driver's: see ``workspace``)
        self._steps_in_workspace = workspace is not None
        #: :func:`.monitor.clock` value at which inner iterations stop early
        self.deadline = deadline
        #: set once a Hessian product at ``x`` came out nan or inf; from then on
        #: :meth:`steepest_descent_step` stands in for the model's minimiser
        self.nonfinite_hessian = False
        self._f = fun
        self._g = jac
        self._g_mag: Optional[float] = None
        self._h: Optional[np.ndarray] = None
        self._hv: Optional[HessOperator] = operator
        self._last_step: Optional[np.ndarray] = None
        self._last_decrease = 0.0
        #: inner (CG / Lanczos / factorisation) iterations since last read
        self.inner_iterations = 0

    @classmethod
    def at_point(cls, problem: FlatProblem, x: np.ndarray, fun: float, jac: np.ndarray,
                 jac_mag: float, **options: Any) -> QuadraticModel:
        """The model at ``x`` whose gradient's norm is known already.

        The driver computes ``‖g‖`` at a trial point for its own tests; the model takes
        it here instead of computing it again. Not a constructor argument: a model that
        builds an inner model from its options (a preconditioned one) must not hand it
        on.

        Parameters
        ----------
        problem, x, fun, jac
            As for the class.
        jac_mag : float
            ``‖jac‖``.
        **options
            The class's other keyword arguments.

        Returns
        -------
        QuadraticModel
            An instance of ``cls``.
        """
        model = cls(problem, x, fun, jac, **options)
        model._g_mag = jac_mag
        return model

    @property
    def fun(self) -> float:
        """Objective value at ``x``."""
        if self._f is None:
            self._f = self.problem.fun(self.x)
        return self._f

    @property
    def jac(self) -> np.ndarray:
        """Gradient at ``x``."""
        if self._g is None:
            self._g = self.problem.jac(self.x)
        return self._g

    @property
    def jac_mag(self) -> float:
        """Euclidean norm of the gradient at ``x``."""
        if self._g_mag is None:
            g = self.jac
            self._g_mag = norm(g)
        return self._g_mag

    @property
    def hess(self) -> np.ndarray:
        """Dense Hessian at ``x`` (only trust-exact asks for it)."""
        if self._h is None:
            self._h = self.problem.hess(self.x)
        return self._h

    @property
    def has_hess(self) -> bool:
        """Whether the Hessian at ``x`` has been formed."""
        return self._h is not None

    def hess_in_time(self) -> Any:
        """:attr:`hess`, or :class:`.DeadlinePassed` when it is still to be formed and
        the ``max_time`` deadline has passed."""
        if self._h is None and self.out_of_time():
            raise DeadlinePassed
        return self.hess

    def operator(self) -> HessOperator:
        """The map ``v -> H v`` linearised once at ``x`` (for inner loops to call directly).

        A result may be overwritten by the second product after it (the operator
        reuses its output arrays): keep a copy to hold it longer.
        """
        if self._hv is None:
            self._hv = self.problem.linearize_hessp(self.x, scratch=True)
        return self._hv

    def hessp(self, v: np.ndarray) -> np.ndarray:
        """``H v`` at ``x``, through :meth:`operator` (same lifetime of the result)."""
        return self.operator()(v)

    def _vector(self, name: str) -> np.ndarray:
        """An uninitialised n-vector for a step or an inner loop's vector: the workspace's
        ``name`` when steps may live there and the vector is large, else a new array."""
        n = self.x.size
        if n < POOL_FROM or not self._steps_in_workspace:
            return np.empty(n)
        return self.workspace.vector(name, n)

    def __call__(self, p: np.ndarray) -> float:
        """Model value ``m(p)`` (costs one Hessian product)."""
        return self.fun + dot(self.jac, p) + 0.5 * dot(p, self.hessp(p))

    def _record(self, p: np.ndarray, decrease: float) -> None:
        self._last_step = p
        self._last_decrease = decrease

    def predicted_decrease(self, p: np.ndarray) -> float:
        """``m(0) - m(p)``: free for the step the last :meth:`solve` returned."""
        if p is self._last_step:
            return self._last_decrease
        return -(dot(self.jac, p) + 0.5 * dot(p, self.hessp(p)))

    def step_length(self, p: np.ndarray, pp: float) -> float:
        """The length of an interior step ``p`` (``pp = p @ p``) in the norm of the trust
        region: Euclidean here; a preconditioned model's is its ellipsoid's."""
        return math.sqrt(pp)

    def out_of_time(self) -> bool:
        """Whether the run's wall-clock budget is spent (inner loops then stop early)."""
        return past(self.deadline)

    def hessian_failed(self) -> None:
        """Note that the Hessian at ``x`` is not finite (once per point)."""
        if not self.nonfinite_hessian:
            self.nonfinite_hessian = True
            self.problem.note_nonfinite_hessian()

    def steepest_descent_step(self, trust_radius: float) -> tuple[np.ndarray, bool]:
        """``-Δ g / ‖g‖``: the step when the Hessian at ``x`` is not finite.

        Without a usable Hessian the model is the linear one, whose minimiser in
        the ball is this boundary step (Nocedal & Wright, 2nd ed., eq. 4.11)
        with predicted decrease ``Δ ‖g‖``. The driver's ratio test then shrinks
        the radius until the step is short enough for that decrease to be real.
        """
        gnorm = self.jac_mag
        p = self.jac * (-trust_radius / gnorm)
        self._record(p, trust_radius * gnorm)
        return p, True

    def take_inner_iterations(self) -> int:
        """Inner iterations since the last call (for the iteration table)."""
        k, self.inner_iterations = self.inner_iterations, 0
        return k

    def solve(self, trust_radius: float) -> tuple[np.ndarray, bool]:
        """Approximately minimise the model in the ball ``||p|| <= trust_radius``.

        Returns
        -------
        p : ndarray
            The step.
        hits_boundary : bool
            Whether ``||p|| == trust_radius``.
        """
        raise NotImplementedError


def shrunk_radius(radius: float, step_norm: float) -> float:
    """The radius after a rejected step: quartered until it is below ``step_norm``.

    Quartering is Nocedal & Wright's algorithm 4.1 (and scipy's rule). A
    rejected *interior* step is shorter than the radius, and every radius still
    above its length gives the same step again (the subproblem solution does not
    change while the constraint is inactive), which scipy proposes and rejects
    once per quartering. Quartering until the radius drops below the step's
    length gives the same sequence of distinct steps without those iterations.
    """
    radius *= _SHRINK
    if not math.isfinite(radius):  # an unbounded radius: quartering would never end
        return _SHRINK * step_norm if math.isfinite(step_norm) else MAX_TRUST_RADIUS
    if step_norm > 0.0:
        # finite radius over positive step: at most ~1100 quarterings (2**2100 > 1e308 / 5e-324)
        while radius >= step_norm:
            radius *= _SHRINK
    return radius


def converged(gnorm: float, gtol: float) -> bool:
    """The gradient test: ``‖g‖ < gtol``, as scipy tests it, or ``g`` exactly zero.

    With ``gtol = 0`` scipy's test never passes, and at ``g = 0`` no step
    can lower the model (the subproblems would divide by ``‖g‖``): a stationary
    point is the end of the run whatever ``gtol`` is.
    """
    return gnorm < gtol or gnorm == 0.0


def check_start(problem: FlatProblem, x0: np.ndarray) -> tuple[float, np.ndarray]:
    """Value and gradient at ``x0``, or a ``ValueError`` saying why they are unusable.

    Exceptions raised by the objective itself propagate unchanged.
    """
    f, g = problem.value_and_grad(x0, check=True)
    if not math.isfinite(f):
        raise ValueError(f"f(x0) = {f}; start from a point where the objective is finite")
    if not np.isfinite(g).all():
        raise ValueError("the gradient at x0 has non-finite entries; start elsewhere")
    return f, g


def minimize_trust_region(problem: FlatProblem, x0: np.ndarray,
                          subproblem: type[QuadraticModel], *,
                          initial_trust_radius: float = 1.0,
                          max_trust_radius: float = MAX_TRUST_RADIUS, eta: float = 0.15,
                          gtol: float = 1e-4, maxiter: Optional[int] = None,
                          max_time: Optional[float] = None, disp: bool = False,
                          return_all: bool = False,
                          callback: Optional[Callable[[np.ndarray, float], None]] = None,
                          subproblem_options: Optional[dict] = None,
                          start: Optional[tuple[float, np.ndarray]] = None,
                          started: Optional[float] = None) -> OptimizeResult:
    """Minimise with a trust-region method; the step comes from ``subproblem``.

    This is algorithm 4.1 of Nocedal & Wright, 2nd ed., with scipy's
    constants: a step ``p`` that (approximately) minimises the quadratic model
    in the ball of radius ``Δ`` is accepted when
    ``ρ = (f(x) - f(x + p)) / (m(0) - m(p)) > eta``; the radius is quartered
    when ``ρ < 1/4`` (repeatedly, until below ``‖p‖``: see
    :func:`shrunk_radius`) and doubled, up to ``max_trust_radius``, when
    ``ρ > 3/4`` and the step reached the boundary. The run stops when
    ``‖g‖₂ < gtol``, tested as scipy tests it; every step, accepted or rejected,
    is one iteration (``nit``), as in scipy.

    Safeguards scipy lacks: a trial point where ``f`` or its gradient is not
    finite, and a step or predicted decrease that is not finite, count as
    ``ρ = -∞`` (the radius shrinks; nan and inf never reach ``x``); where the
    Hessian is not finite the subproblem takes a steepest-descent step
    (:meth:`QuadraticModel.steepest_descent_step`); a gradient that is exactly
    zero ends the run with success even when ``gtol = 0``; inner iterations
    stop at the ``max_time`` deadline too, and no Hessian, factorisation or
    subproblem solve starts after it; and both reductions get
    ``10 ε max(1, |f|)`` added, so that ``ρ`` stays meaningful when they are at
    the level of rounding in ``f`` (Conn, Gould & Toint, *Trust-Region
    Methods*, 2000, section 17.4.2) instead of rejecting every step there.

    Parameters
    ----------
    problem : FlatProblem
        The objective on flat vectors.
    x0 : ndarray, shape (n,)
        Starting point (finite).
    subproblem : type
        A :class:`QuadraticModel` subclass, built as
        ``subproblem(problem, x, fun, jac, **subproblem_options)`` at each point (or
        by :meth:`QuadraticModel.at_point`); its ``solve`` gives the step.
    initial_trust_radius, max_trust_radius, eta, gtol, maxiter : optional
        As in ``scipy.optimize.minimize`` for the trust-region methods, with
        scipy's defaults (``gtol`` 1e-4 on the Euclidean norm of the gradient,
        ``maxiter`` ``200 * n``) except ``max_trust_radius``: 1e10, where
        scipy's 1000 holds back badly scaled problems.
    max_time : float, optional
        Wall-clock limit in seconds.
    disp, return_all, callback : optional
        See :class:`~newtonad.solvers.monitor.Monitor`.
    start : (float, ndarray), optional
        Value and gradient at ``x0``, finite, when the caller has them (``minimize``
        evaluates them first, :mod:`.start`); else they are computed here and a value
        or gradient that is not finite raises ``ValueError``.
    started : float, optional
        :func:`.monitor.clock` value at which the run started, when before this call
        (``minimize`` evaluates ``x0`` first): ``max_time`` counts from it.

    Returns
    -------
    OptimizeResult
        The best (last accepted) point; ``status`` and ``message`` say why it stopped.
        trust-exact's ``hess`` is the Hessian there, left out of a run stopped by
        ``max_time`` before it was formed.
    """
    if not 0 <= eta < 0.25:
        raise ValueError(f"eta must be in [0, 0.25), got {eta}")
    if not 0 < initial_trust_radius < max_trust_radius:
        raise ValueError("need 0 < initial_trust_radius < max_trust_radius, got "
                         f"{initial_trust_radius} and {max_trust_radius}")
    n = problem.n
    maxiter = 200 * n if maxiter is None else int(maxiter)
    monitor = Monitor(problem, maxiter=maxiter, max_time=max_time, callback=callback,
                      disp=disp, return_all=return_all, step_label="radius",
                      started=started)
    workspace = borrow()  # the inner loops' vectors, warm from an earlier run if any
    try:
        return _trust_region_loop(problem, x0, subproblem, monitor, workspace, radius0=float(
            initial_trust_radius), max_trust_radius=max_trust_radius, eta=eta, gtol=gtol,
            maxiter=maxiter, subproblem_options=subproblem_options, start=start)
    finally:
        give_back(workspace)


def _trust_region_loop(problem: FlatProblem, x0: np.ndarray,
                       subproblem: type[QuadraticModel], monitor: Monitor,
                       workspace: Workspace, *, radius0: float, max_trust_radius: float,
                       eta: float, gtol: float, maxiter: int,
                       subproblem_options: Optional[dict],
                       start: Optional[tuple[float, np.ndarray]]) -> OptimizeResult:
    """The outer loop of :func:`minimize_trust_region` (arguments checked there)."""
    opts = dict(subproblem_options or {}, deadline=monitor.deadline, workspace=workspace)
    if start is None:
        if subproblem.uses_products:
            problem.expect_products(x0)  # the gradient at x0 then keeps the residuals
        start = check_start(problem, x0)
    f, g = start
    x = x0
    m = subproblem(problem, x, f, g, **opts)
    radius = radius0
    x_bound = norm(x)  # bounds ‖x‖: ‖x0‖ plus (twice) the lengths of the steps taken
    monitor.start_run(x, f, m.jac_mag, radius)
    k = 0
    status = Status.SUCCESS if converged(m.jac_mag, gtol) else None
    if status is None and maxiter <= 0:
        status = Status.MAXITER
    while status is None:
        try:
            if past(monitor.deadline):  # no subproblem (Hessian, products) past it
                raise DeadlinePassed
            p, hits_boundary = m.solve(radius)
        except DeadlinePassed:
            status = Status.MAX_TIME
            break
        inner = m.take_inner_iterations()
        predicted = m.predicted_decrease(p)
        pp = dot(p, p)
        step_norm = radius if hits_boundary else m.step_length(p, pp)
        if math.isfinite(predicted) and predicted <= 0.0:
            # the model promises no decrease (rounding: the subproblems cannot give
            # it otherwise); scipy's test and stop ("failure to predict improvement")
            status = Status.NO_PROGRESS
            break
        rho = -math.inf  # also for a step or a model that is not finite: shrink
        unmeasurable = stalled = False
        if predicted > 0.0 and math.isfinite(predicted) and math.isfinite(pp):
            x_new = x + p
            f_new = problem.fun(x_new)
            if math.isfinite(f_new):
                slack = 10.0 * _EPS * max(1.0, abs(f))
                rho = (f - f_new + slack) / (predicted + slack)
                unmeasurable = predicted <= slack  # below f's rounding: rho ~ 1 by the slack
        if rho > eta:
            g_new = problem.jac(x_new)
            gg = dot(g_new, g_new)  # finite unless g is (or overflows when squared)
            # an unmeasurable step that does not shrink |g| by 10% either: rounding noise
            # (a singular Hessian's noise floor above gtol), where scipy stops on rho
            stalled = unmeasurable and gg >= 0.81 * m.jac_mag * m.jac_mag
            if math.isfinite(gg) or np.isfinite(g_new).all():
                x, f = x_new, f_new
                x_bound += 2.0 * step_norm  # (boundary steps may overshoot a little)
                m = subproblem.at_point(problem, x, f_new, g_new, math.sqrt(gg), **opts)
            else:
                rho = -math.inf
        if rho < 0.25:
            radius = shrunk_radius(radius, step_norm)
        elif rho > 0.75 and hits_boundary:
            radius = min(_GROW * radius, max_trust_radius)
        k += 1
        status = monitor.iteration(k, x, f, m.jac_mag, radius, inner)
        if status is Status.CALLBACK:
            break
        if converged(m.jac_mag, gtol):
            status = Status.SUCCESS
        elif status is None and (stalled or (radius <= 1e-15 * max(1.0, x_bound)
                                             and radius <= 1e-15 * max(1.0, norm(x)))):
            status = Status.NO_PROGRESS
    returns_hess = m.returns_hess
    if status is Status.MAX_TIME and not m.has_hess:
        returns_hess = False  # forming it now would overrun the time limit
    extra = {"hess": m.hess} if returns_hess else {}
    return monitor.result(status, x, f, m.jac, k, **extra)


def run_trust_region(problem: FlatProblem, x0: np.ndarray,
                     subproblem: type[QuadraticModel], opts: dict,
                     callback: Optional[Callable[[np.ndarray, float], None]],
                     subproblem_options: Optional[dict] = None,
                     started: Optional[float] = None) -> OptimizeResult:
    """A native trust-region run from ``minimize``: the start checked (:mod:`.start`),
    then :func:`minimize_trust_region` with the parsed options ``opts``."""
    started = _monitor.clock() if started is None else started
    start = native_start(problem, x0, subproblem.uses_products)
    if isinstance(start, OptimizeResult):
        return start
    return minimize_trust_region(problem, x0, subproblem, callback=callback,
                                 subproblem_options=subproblem_options, start=start,
                                 started=started, **opts)
