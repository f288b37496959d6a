"""tron: the trust-region Newton method for bound constraints of Lin & Moré.

C.-J. Lin and J. J. Moré, "Newton's method for large bound-constrained
optimization problems", SIAM J. Optim. 9 (1999), 1100–1127 (the algorithm of
their code TRON, and of PETSc/TAO's ``TAOTRON``). It minimises ``f(x)`` subject to
``l <= x <= u`` (infinite bounds allowed; without bounds it is a trust-region
Newton method). Iteration ``k``, at a feasible ``x`` with gradient ``g`` and the
quadratic model ``q(s) = gᵀs + sᵀHs/2``:

1. **Generalised Cauchy point** (section 2, eqs. (2.3)–(2.5)): along the projected
   path ``s(α) = P[x - α g] - x`` find ``α`` with the sufficient decrease
   ``q(s(α)) <= μ₀ gᵀs(α)`` and ``‖s(α)‖ <= Δ``: backtracking by 1/10 from the
   previous iteration's ``α`` if it fails, else extrapolating by 10 while it holds
   (and ``α`` is below the last breakpoint of the path).
2. **Subspace minimisation** (section 3): from the Cauchy point, with the
   variables at a bound fixed — except those the model's gradient pulls into the
   box, which are released (a departure from the paper, whose free set is the
   variables strictly inside their bounds, in the manner of Bertsekas' active-set
   estimate in projected Newton methods, SIAM J. Control Optim. 20, 1982): from a
   start on the bounds, as MINPACK-2's torsion start is, the paper's rule frees one
   grid layer per iteration (32 iterations at n = 10 000, 98 at n = 99 856), this
   one the whole face at once (4 iterations at n = 10 000) — a trust-region
   conjugate-gradient method on the free variables ``F`` (``min g_Fᵀd + dᵀH_FF d/2``,
   ``‖d‖ <= Δ``, :func:`energy_cg`; preconditioned when asked, with ``M`` the
   diagonal or the incomplete Cholesky factor of ``H_FF``, Lin & Moré 1999b) gives
   a direction; a **projected search** (eq. (3.3)) along it, ``w(β) = P[w + β d]``
   with ``β`` halved from 1 until ``q`` decreases by ``μ₀`` times its slope, gives
   the next point. The loop repeats on the new free set, and ends when the reduced
   model gradient is below
   ``min(0.1, sqrt(‖P g‖)) × ‖g_F‖`` at the Cauchy point, or CG stops on the
   trust-region boundary or at negative curvature. With a sparse Hessian, each pass's
   CG set is widened by the variables at a bound near those just released, and the
   projected search puts back on their bounds, at once, those the direction pushes
   out (a further departure, :func:`subspace_step`: it frees the band between the
   start and the solution's free set in about log₂ of its width in grid layers
   instead of one layer per pass).
3. **Step and radius** (section 2, eqs. (2.6)–(2.8)): the step is accepted when
   ``ρ = (f(x) - f(x + s)) / -q(s) > η₀ = 10⁻⁴``, and the radius updated with
   ``σ₁ = 1/4``, ``σ₂ = 1/2``, ``σ₃ = 4`` and the minimiser ``α*`` of the quadratic
   that interpolates ``f`` along ``s``:
   ``ρ <= η₀``: ``Δ = min(max(α*, σ₁) ‖s‖, σ₂ Δ)``;
   ``ρ < η₁ = 1/4``: ``Δ = max(σ₁ Δ, min(α* ‖s‖, σ₂ Δ))``;
   ``ρ < η₂ = 3/4``: ``Δ = max(σ₁ Δ, min(α* ‖s‖, σ₃ Δ))``;
   else ``Δ = max(Δ, min(α* ‖s‖, σ₃ Δ))``.

**The trust region's norm.** Every ``‖·‖`` compared with ``Δ`` above — in the Cauchy
search, in CG and in the radius update — is the energy norm ``‖s‖_H = sqrt(sᵀHs)`` of
the Hessian at ``x`` wherever the curvature along ``s`` is positive, and the Euclidean
norm only where it is not (:func:`_step_norm`). This departs from TRON, whose CG
bounds ``‖Lᵀd‖`` (``L`` the incomplete Cholesky factor) while its Cauchy search and
radius update measure ``‖s‖₂``. In the energy norm the subproblem's solution is the
Newton step shortened onto the boundary, so CG runs to its tolerance and its result
is scaled back, where Steihaug's CG stops at the first iterate outside, a point along
the first, gradient-like CG directions. The energy
norm does not change under a linear change of variables, as Newton's step does not —
the property behind the mesh independence of Newton's method (E. L. Allgower,
K. Böhmer, F. A. Potra and W. C. Rheinboldt, SIAM J. Numer. Anal. 23 (1986),
160–169; P. Deuflhard, *Newton Methods for Nonlinear Problems*, Springer, 2004, on
affine conjugate methods) — and the Euclidean norm and the factor's do not. Measured
(``newtonad.problems``, numba engine, the incomplete Cholesky preconditioner,
``gtol`` 1e-6 of the initial projected gradient): with TRON's mixed norms the steps
were 10–30 times the radius in ``‖·‖₂``, so each rejection halved the radius and
each success multiplied it by 4, and ``obstacle`` took 11, 43 and 53 iterations at
n = 10 000, 40 000 and 99 856 (``minimal-surface``, without bounds: 75, 146 and 234);
in the energy norm 8, 12 and 12 (27, 27 and 31).

The run stops when the projected gradient ``‖P[x - g] - x‖₂ < gtol``
(:func:`.bounds.projected_gradient`). Every Hessian-vector product comes from the
Hessian linearised once per iterate (exact HVP frames or linearised products of the
objective).
"""

from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple, Optional

import numpy as np
from scipy.optimize import OptimizeResult

from . import monitor as _monitor
from .bounds import breakpoints, free_mask, project, projected_gradient
from .linalg import dot, norm
from .monitor import Monitor, Status, past
from .problem import FlatProblem, HessOperator
from .start import native_start
from .trust_region import MAX_TRUST_RADIUS, boundary_intersections, converged

__all__ = ["minimize_tron", "cauchy_point", "subspace_step", "energy_cg", "run_native",
           "default_preconditioner"]

_EPS = float(np.finfo(float).eps)
_MU0 = 0.01                       # sufficient decrease of the Cauchy and projected searches
_ETA0, _ETA1, _ETA2 = 1e-4, 0.25, 0.75
_SIGMA1, _SIGMA2, _SIGMA3 = 0.25, 0.5, 4.0
_BACKTRACK, _EXTRAPOLATE = 0.1, 10.0
_GROW = 2.0
_MAX_SEARCH = 60                  # trials of one search (each costs a product)
_MAX_PASSES = 50                  # subspace passes per iteration


class CGResult(NamedTuple):
    """Steihaug CG's step, why it stopped and its iterations."""

    d: np.ndarray
    on_boundary: bool      # stopped on the trust-region boundary or at negative curvature
    iterations: int


def energy_cg(op: HessOperator, b: np.ndarray, radius: float, tol: float,
              maxiter: int, deadline: float = math.inf) -> CGResult:
    """Approximately minimise ``bᵀd + dᵀAd/2`` in the energy norm ``‖d‖_A <= radius``.

    CG from ``d = 0`` until the residual ``‖b + A d‖ <= tol`` (the inexact Newton step),
    not stopped where an iterate leaves the region: when the result lies outside, it
    is scaled back onto the boundary, ``d Δ / ‖d‖_A``. Where ``A`` is positive
    definite the minimiser of the model in ``‖d‖_A <= Δ`` is the Newton step
    ``-A⁻¹b`` times ``min(1, Δ / ‖A⁻¹b‖_A)``, which this is up to the CG tolerance;
    Steihaug's rule (Nocedal & Wright, Algorithm 7.2) instead ends at the first iterate
    outside, on a path whose first segments follow the (preconditioned) gradient. With
    an infinite radius this is plain CG. CG's iterates have increasing energy norms,
    ``‖d_{j+1}‖²_A = ‖d_j‖²_A + α_j rᵀr`` (``d_j`` is A-conjugate to ``p_j``), so the
    norm costs nothing.

    A direction of non-positive curvature ends CG: the step is the last iterate
    scaled onto the boundary if it lies outside, else Steihaug's step along that
    direction to the Euclidean boundary ``‖d‖ = Δ`` (in the preconditioned variables,
    the preconditioner's norm; the energy norm is no norm there). A product with nan
    or inf ends CG at the last iterate.
    """
    d = np.zeros_like(b)
    r = b.copy()
    p = -r
    rr = dot(r, r)
    energy = 0.0  # ‖d‖²_A
    j = 0

    def result(on_boundary: bool) -> CGResult:
        if energy > radius * radius:
            return CGResult(d * (radius / math.sqrt(energy)), True, j)
        return CGResult(d, on_boundary, j)

    while j < maxiter:
        if math.sqrt(rr) <= tol or (j > 0 and past(deadline)):
            return result(False)
        ap = np.asarray(op(p))
        curv = dot(p, ap)
        j += 1
        if not math.isfinite(curv):
            return result(False)
        if curv <= 0.0:
            if energy > radius * radius or dot(d, d) >= radius * radius:
                return result(True)
            _, t = boundary_intersections(dot(d, d), dot(d, p), dot(p, p), radius)
            return CGResult(d + t * p, True, j)
        alpha = rr / curv
        d = d + alpha * p
        energy += alpha * rr
        r += alpha * ap
        rr_new = dot(r, r)
        p = -r + (rr_new / rr) * p
        rr = rr_new
    return result(False)


def _step_norm(s: np.ndarray, hs: np.ndarray) -> float:
    """The trust region's norm of a step ``s`` with ``hs = H s``: the energy norm
    ``sqrt(sᵀHs)`` where the curvature along ``s`` is positive, else ``‖s‖₂`` (see the
    module docstring)."""
    curvature = dot(s, hs)
    return math.sqrt(curvature) if curvature > 0.0 else norm(s)


def _model_change(g: np.ndarray, s: np.ndarray, hs: np.ndarray) -> float:
    """``q(s) = gᵀs + sᵀHs/2``."""
    return dot(g, s) + 0.5 * dot(s, hs)


def cauchy_point(x: np.ndarray, g: np.ndarray, lb: np.ndarray, ub: np.ndarray,
                 hv: HessOperator, radius: float, alpha: float
                 ) -> tuple[np.ndarray, np.ndarray, float, int]:
    """The generalised Cauchy step ``s = P[x - α g] - x`` (Lin & Moré, eqs. (2.3)–(2.5)).

    The trust region is measured by :func:`_step_norm`, as in the rest of the
    iteration. Returns ``s``, ``H s``, the ``α`` found (the next iteration's first trial) and the
    products used.
    """
    def trial(a: float) -> tuple[np.ndarray, np.ndarray, bool]:
        s = project(x - a * g, lb, ub) - x
        hs = np.array(hv(s))
        gs = dot(g, s)
        ok = _model_change(g, s, hs) <= _MU0 * gs and _step_norm(s, hs) <= radius
        return s, hs, bool(ok)

    _, last = breakpoints(x, -g, lb, ub)
    s, hs, ok = trial(alpha)
    used = 1
    if ok:  # extrapolate while the conditions hold, up to the last breakpoint
        while alpha < last and used < _MAX_SEARCH:
            s2, hs2, ok2 = trial(alpha * _EXTRAPOLATE)
            used += 1
            if not ok2:
                break
            alpha, s, hs = alpha * _EXTRAPOLATE, s2, hs2
    else:
        while not ok and used < _MAX_SEARCH:
            alpha *= _BACKTRACK
            s, hs, ok = trial(alpha)
            used += 1
    return s, hs, alpha, used


def _projected_search(w: np.ndarray, gq: np.ndarray, d: np.ndarray, lb: np.ndarray,
                      ub: np.ndarray, hv: HessOperator, max_trials: int = _MAX_SEARCH
                      ) -> tuple[np.ndarray, np.ndarray, int, bool]:
    """Lin & Moré's projected search (eq. (3.3)): the step ``P[w + β d] - w`` with ``β``
    halved from 1 until ``q`` falls by ``μ₀`` times its slope, and its product; then the
    trials used and whether the decrease was found (else the last trial is returned)."""
    first, _ = breakpoints(w, d, lb, ub)
    beta = 1.0
    used = 0
    while True:
        if beta <= first:  # on the straight part of the path: no projection
            step = beta * d
        else:
            step = project(w + beta * d, lb, ub) - w
        hstep = np.array(hv(step))
        used += 1
        slope = dot(gq, step)
        if slope + 0.5 * dot(step, hstep) <= _MU0 * slope:
            return step, hstep, used, True
        if beta <= first:  # a CG step inside the region decreases q on [0, 1]: done
            return step, hstep, used, True
        if used >= max_trials:
            return step, hstep, used, False
        beta = max(0.5 * beta, first)


def _on_free(hv: HessOperator, index: np.ndarray, full: np.ndarray) -> HessOperator:
    """``v -> (H v)[F]`` for ``v`` on the free variables ``F = index`` (zero elsewhere)."""
    def products(v: np.ndarray) -> np.ndarray:
        full[:] = 0.0
        full[index] = v
        return np.asarray(hv(full))[index]
    return products


class _FreeSetFactors:
    """The preconditioner of ``H_FF`` for the free sets ``F`` of a run's subspace passes.

    A factor is made for each new free set, as TRON does (Lin & Moré, section 4), and
    kept while neither ``F`` nor the Hessian changes: a pass that leaves the free set as
    it was, and the next iteration of a quadratic (whose Hessian is the same at every
    iterate) on the same free set, reuse it. Keeping the factor of an earlier free set for
    a grown one, with the Hessian's diagonal on the new variables, was measured and
    rejected: on ``torsion`` (n = 100 489), where each pass frees a grid layer, it halved
    the factorisations at the price of 1.5–3 times the CG iterations and more time, the
    residual being largest on just those new variables.
    """

    def __init__(self, kind: Any, n: int) -> None:
        self.kind, self.n = kind, n
        self.hessian: Any = None
        self.order: Optional[np.ndarray] = None
        self.index: Optional[np.ndarray] = None
        self.factor: Any = None
        self.factorisations = 0

    def at(self, hessian: Any) -> Any:
        """Take the (CSR) Hessian of a new iterate; returns it. The last factor is kept
        when the Hessian equals the last one (same pattern and values)."""
        from scipy import sparse

        h = hessian if isinstance(hessian, sparse.csr_array) else sparse.csr_array(hessian)
        last = self.hessian
        same = (last is not None and last.shape == h.shape and last.nnz == h.nnz
                and np.array_equal(last.indptr, h.indptr)
                and np.array_equal(last.indices, h.indices)
                and np.array_equal(last.data, h.data))
        if not same:
            self.index = self.factor = None
        if self.kind == "ichol":  # the whole Hessian's ordering, induced on each free set
            from .ichol import fill_reducing_order

            self.order = fill_reducing_order(h)
        self.hessian = h
        return h

    def __call__(self, index: np.ndarray, free: np.ndarray) -> Any:
        """The preconditioner of ``H_FF`` for ``F = index`` (sorted; ``free`` its mask),
        read from the whole Hessian (no submatrix is formed)."""
        from .preconditioners import make_preconditioner, restrict_order

        if (self.index is not None and self.index.size == index.size
                and np.array_equal(self.index, index)):
            return self.factor
        all_free = index.size == self.n
        self.factor = make_preconditioner(
            self.kind, self.hessian,
            self.order if all_free else restrict_order(self.order, free),
            subset=None if all_free else index)
        self.index = index
        self.factorisations += 1
        return self.factor


#: trials of the projected search after a widened pass (see subspace_step), before the
#: pass is taken again without the widening
_WIDE_TRIALS = 3
#: the widening is doubled when at least this fraction of its variables ends inside
_WIDE_KEPT = 0.5


def subspace_step(x: np.ndarray, g: np.ndarray, lb: np.ndarray, ub: np.ndarray,
                  hv: HessOperator, radius: float, s: np.ndarray, hs: np.ndarray,
                  rtol: float, *, preconditioner: Any = None,
                  hessian: Any = None, deadline: float = math.inf,
                  factors: Optional[_FreeSetFactors] = None
                  ) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Improve the Cauchy step ``s`` on the free variables (Lin & Moré, section 3).

    Each pass runs CG on the free set ``F`` (the variables strictly inside, and those at
    a bound that the model's gradient pulls inside: the module docstring), then takes
    the projected search (3.3) from its direction. With a sparse ``hessian``, the CG set
    of a pass is also **widened** by the variables at a bound within ``k`` edges, in the
    Hessian's graph, of those released in this pass (the free set's growing edge; no
    widening when none is released): CG moves them with the rest, and the projected search's
    ``P[w + β d]`` returns to its bound, at once, every one the direction pushes
    outwards (the search "can add many constraints" at each minor iteration, as Lin &
    Moré stress). ``k`` starts at 1 in each iteration, doubles after a pass that leaves
    at least half of the widening inside the box, and halves after one that does not;
    a widened pass whose search finds no decrease of ``q`` in :data:`_WIDE_TRIALS`
    trials is discarded and taken again with ``k`` halved.

    Why: the release rule alone moves the boundary of the free set by one layer of the
    grid per pass (a variable's model gradient changes only when a neighbour moves), so
    from MINPACK-2's torsion start on the bounds the passes grew as the grid's side
    (32, 98 and 306 passes, each with its factorisation, over the iterations at
    n = 1e4, 1e5 and 1e6). Doubling ``k`` crosses the band in about ``log₂`` of its
    width. The stopping test and CG tolerance are measured on ``F`` alone, as before.

    Returns the step, its product, the CG iterations and the products used.
    ``hessian`` is the sparse Hessian at ``x`` for the ``"diagonal"`` or ``"ichol"``
    preconditioner of ``H_FF`` (made by ``factors``, a :class:`_FreeSetFactors` that a
    run keeps from one iteration to the next; a new one when None).
    """
    from .bounds import neighbourhood
    from .preconditioners import precondition_products

    n = x.size
    if preconditioner is not None and factors is None:
        factors = _FreeSetFactors(preconditioner, n)
        hessian = factors.at(hessian)
    pattern = None
    if hessian is not None:
        from scipy import sparse

        pattern = hessian if isinstance(hessian, sparse.csr_array) else sparse.csr_array(hessian)
    w = x + s
    gq = g + hs
    reference = None
    cg_total = used = 0
    hops = 1 if pattern is not None else 0
    full = np.zeros(n)
    for _ in range(_MAX_PASSES):
        # the free variables, and those at a bound that the model's gradient pulls
        # inside (see the module docstring)
        released = ((w <= lb) & (gq < 0.0)) | ((w >= ub) & (gq > 0.0))
        free = free_mask(w, lb, ub) | released
        index = np.flatnonzero(free)
        if index.size == 0:
            break
        gf = gq[index]
        gfnorm = norm(gf)
        if reference is None:
            reference = gfnorm
        if gfnorm <= rtol * reference or gfnorm == 0.0 or past(deadline):
            break
        wide = None
        if hops > 0 and released.any():
            assert pattern is not None
            wide = neighbourhood(pattern, released, hops)
            wide &= ~free
            if wide.any():
                free = free | wide
                index = np.flatnonzero(free)
            else:
                wide = None
        cgset = gq[index]
        cgnorm = norm(cgset) if wide is not None else gfnorm
        all_free = index.size == n
        op: HessOperator = hv if all_free else _on_free(hv, index, full)
        b = cgset
        m = None
        if factors is not None:
            m = factors(index, free)
            assert m is not None
            op = precondition_products(m, op)
            b = m.left(cgset)
        cg = energy_cg(op, b, radius, rtol * reference * norm(b) / cgnorm,
                       max(2 * index.size, 20), deadline)
        cg_total += cg.iterations
        used += cg.iterations
        if cg.iterations == 0 or not np.isfinite(cg.d).all():
            if wide is None:
                break
            hops //= 2
            continue
        d = np.zeros(n)
        d[index] = cg.d if m is None else m.right(cg.d)
        step, hstep, trials, ok = _projected_search(
            w, gq, d, lb, ub, hv, _MAX_SEARCH if wide is None else _WIDE_TRIALS)
        used += trials
        if wide is not None:
            if not ok:  # the widening spoilt the direction: the pass again, narrower
                hops //= 2
                continue
            w_new = project(w + step, lb, ub)
            kept = np.count_nonzero(wide & free_mask(w_new, lb, ub))
            hops = 2 * hops if kept >= _WIDE_KEPT * np.count_nonzero(wide) else hops // 2
        w = project(w + step, lb, ub)
        s = s + step
        hs = hs + hstep
        gq = gq + hstep
        if cg.on_boundary:
            break
    return s, hs, cg_total, used


def _new_radius(radius: float, rho: float, snorm: float, f: float, f_new: float,
                gs: float) -> float:
    """Lin & Moré's radius update (eqs. (2.6)–(2.8)); see the module docstring."""
    curvature = f_new - f - gs  # of the quadratic through f, its slope gs and f_new
    alpha = _SIGMA3 if not (curvature > 0.0) else max(_SIGMA1, -0.5 * gs / curvature)
    if not (rho > _ETA0):  # also for rho = nan or -inf
        return min(max(alpha, _SIGMA1) * snorm, _SIGMA2 * radius)
    if rho < _ETA1:
        return max(_SIGMA1 * radius, min(alpha * snorm, _SIGMA2 * radius))
    if rho < _ETA2:
        return max(_SIGMA1 * radius, min(alpha * snorm, _SIGMA3 * radius))
    return max(radius, min(alpha * snorm, _SIGMA3 * radius))


def minimize_tron(problem: FlatProblem, x0: np.ndarray, lb: np.ndarray, ub: np.ndarray, *,
                  gtol: float = 1e-5, maxiter: Optional[int] = None,
                  initial_trust_radius: Optional[float] = None,
                  max_trust_radius: float = MAX_TRUST_RADIUS,
                  preconditioner: Optional[str] = None, max_time: Optional[float] = None,
                  disp: bool = False, return_all: bool = False,
                  callback: Optional[Callable[[np.ndarray, float], None]] = None,
                  start: Optional[tuple[float, np.ndarray]] = None,
                  started: Optional[float] = None) -> OptimizeResult:
    """Minimise ``f`` subject to ``lb <= x <= ub`` by TRON (see the module docstring).

    Parameters
    ----------
    problem : FlatProblem
        The objective on flat vectors.
    x0 : ndarray, shape (n,)
        Feasible starting point.
    lb, ub : ndarray, shape (n,)
        Bounds, ``lb <= ub`` (infinite allowed).
    gtol : float
        Stop when the Euclidean norm of the projected gradient is below this.
    maxiter : int, optional
        Iteration budget (every step, accepted or not), ``200 * n`` by default.
    initial_trust_radius : float, optional
        In the trust region's norm (the energy norm, see the module docstring).
        Default: the norm of the projected gradient at ``x0`` (Lin & Moré), or 1 if
        that is 0.
    max_trust_radius : float
        Cap on the radius, in the same norm.
    preconditioner : {None, "diagonal", "ichol"}
        Of the CG on the free variables (:mod:`.preconditioners`).
    max_time, disp, return_all, callback, start, started : optional
        As for the other native methods (:func:`.trust_region.minimize_trust_region`).

    Returns
    -------
    OptimizeResult
        scipy's fields, plus ``nactive`` (the variables at a bound at ``x``),
        ``ncg``, ``time`` and ``nhvp``.
    """
    n = problem.n
    maxiter = 200 * n if maxiter is None else int(maxiter)
    monitor = Monitor(problem, maxiter=maxiter, max_time=max_time, callback=callback,
                      disp=disp, return_all=return_all, step_label="radius", started=started)
    if start is None:
        problem.expect_products(x0)
        start = problem.value_and_grad(x0, check=True)
    f, g = start
    x = x0
    pgnorm = norm(projected_gradient(x, g, lb, ub))
    if initial_trust_radius is not None:
        radius = float(initial_trust_radius)
        if not radius > 0.0:
            raise ValueError(f"initial_trust_radius must be > 0, got {initial_trust_radius}")
    else:
        radius = pgnorm if pgnorm > 0.0 else 1.0
    radius = min(radius, max_trust_radius)
    alpha = 1.0
    factors = None if preconditioner is None else _FreeSetFactors(preconditioner, n)
    monitor.start_run(x, f, pgnorm, radius)
    k = 0
    status = Status.SUCCESS if converged(pgnorm, gtol) else None
    if status is None and maxiter <= 0:
        status = Status.MAXITER
    while status is None:
        if monitor.out_of_time():
            status = Status.MAX_TIME
            break
        hv = problem.linearize_hessp(x)
        hessian = None
        if factors is not None:
            from .preconditioners import sparse_hessian_at

            hessian = factors.at(sparse_hessian_at(problem, x, preconditioner))
        s, hs, alpha, _ = cauchy_point(x, g, lb, ub, hv, radius, alpha)
        s, hs, inner, _ = subspace_step(x, g, lb, ub, hv, radius, s, hs,
                                        min(0.1, math.sqrt(pgnorm)), preconditioner=preconditioner,
                                        hessian=hessian, deadline=monitor.deadline,
                                        factors=factors)
        predicted = -_model_change(g, s, hs)
        snorm = _step_norm(s, hs)
        x_new = project(x + s, lb, ub)
        s = x_new - x
        f_new = problem.fun(x_new) if snorm > 0.0 else f
        rho = -math.inf
        if predicted > 0.0 and math.isfinite(predicted) and math.isfinite(f_new):
            slack = 10.0 * _EPS * max(1.0, abs(f))
            rho = (f - f_new + slack) / (predicted + slack)
        gs = dot(g, s)
        updated = _new_radius(radius, rho, snorm, f, f_new, gs)
        if rho >= _ETA2 and snorm >= 0.99 * radius:
            # a very successful step as long as the region: grow it at least by 2, as
            # Nocedal & Wright's algorithm 4.1 does (Lin & Moré's rule keeps it when the
            # interpolated minimiser along s is not beyond s)
            updated = max(updated, _GROW * radius)
        radius = min(updated, max_trust_radius)
        if rho > _ETA0:
            g_new = problem.jac(x_new)
            if np.isfinite(g_new).all():
                x, f, g = x_new, f_new, g_new
                pgnorm = norm(projected_gradient(x, g, lb, ub))
            else:
                radius = _SIGMA1 * snorm
        k += 1
        status = monitor.iteration(k, x, f, pgnorm, radius, inner)
        if status is Status.CALLBACK:
            break
        if converged(pgnorm, gtol):
            status = Status.SUCCESS
        elif status is None and radius <= 1e-15 * max(1.0, norm(x)):
            status = Status.NO_PROGRESS
    nactive = int(n - np.count_nonzero(free_mask(x, lb, ub)))
    return monitor.result(status, x, f, g, k, nactive=nactive,
                          nfactor=0 if factors is None else factors.factorisations)


def default_preconditioner(problem: FlatProblem, x0: np.ndarray) -> Optional[str]:
    """tron's preconditioner when the options name none: ``"ichol"`` from
    :data:`.methods.PRECONDITION_FROM` variables on when the Hessian is sparse (at most
    :data:`.methods.PRECONDITION_MAX_NNZ` non-zeros per variable), else None.

    Measured on the MINPACK-2 problems at n = 99 856 (this machine, numba engine):
    obstacle 680 iterations and 39 s without, 47 and 7.6 s with; journal bearing 9 and
    5.3 s against 6 and 4.4 s; torsion 5 and 5.5 s against 4 and 7.1 s. Without it the
    steps on obstacle (a minimal surface) are those of an unpreconditioned elliptic
    operator, short and with mediocre ratios, so the radius cannot grow.
    """
    from .methods import PRECONDITION_FROM, PRECONDITION_MAX_NNZ

    if problem.n < PRECONDITION_FROM:
        return None
    fits = problem.sparse_hessian_fits(x0, PRECONDITION_MAX_NNZ * problem.n)
    return "ichol" if fits else None


def run_native(problem: FlatProblem, x0: np.ndarray, opts: dict,
               callback: Optional[Callable[[np.ndarray, float], None]],
               bounds: Optional[tuple[np.ndarray, np.ndarray]] = None) -> OptimizeResult:
    """tron as ``minimize`` runs it: ``x0`` projected onto the bounds (as L-BFGS-B
    does), the start checked (:mod:`.start`), then :func:`minimize_tron`.

    ``bounds`` is ``(lb, ub)`` from :func:`.bounds.parse_bounds`, or None. Without a
    ``preconditioner`` option, :func:`default_preconditioner` chooses.
    """
    if bounds is None:
        lb, ub = np.full(problem.n, -np.inf), np.full(problem.n, np.inf)
    else:
        lb, ub = bounds
    x0 = project(x0, lb, ub)
    if "preconditioner" not in opts:
        opts = dict(opts, preconditioner=default_preconditioner(problem, x0))
    started = _monitor.clock()
    start = native_start(problem, x0)
    if isinstance(start, OptimizeResult):
        return start
    return minimize_tron(problem, x0, lb, ub, callback=callback, start=start,
                         started=started, **opts)
