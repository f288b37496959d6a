"""trust-ncg: the Steihaug–Toint truncated conjugate-gradient subproblem solver.

This is algorithm 7.2 of Nocedal & Wright, *Numerical Optimization*, 2nd ed.
(2006), from T. Steihaug, "The conjugate gradient method and trust regions in
large scale optimization", SIAM J. Numer. Anal. 20 (1983), and Ph. L. Toint,
"Towards an efficient sparsity exploiting Newton method for minimization" (1981).
Only Hessian-vector products are needed, and the Hessian need not be positive
definite.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional

import numpy as np

from .linalg import CONVERGED, NOT_POSITIVE, OUTSIDE, along, axpy, line_dots, steihaug_step
from .scratch import POOL_FROM
from .trust_region import QuadraticModel, boundary_intersections, run_trust_region

__all__ = ["SteihaugSubproblem", "run_native"]

#: bytes of CG directions kept per point so that a rejected step is re-solved
#: without Hessian products
PATH_MEMORY = 256 * 2**20


class SteihaugSubproblem(QuadraticModel):
    """Quadratic model solved by truncated CG (Steihaug–Toint).

    CG runs on ``H p = -g`` from ``p = 0`` and stops at the first of: the
    residual test ``||g + H p|| <= min(1/2, ||g||) ||g||`` (the forcing
    sequence of Nocedal & Wright's theorem 7.2, which makes the local
    convergence quadratic; scipy's trust-krylov uses the same one through
    trlib, its trust-ncg the looser ``min(1/2, sqrt(||g||))``, which ends runs
    less accurately for the same ``gtol``), a direction of non-positive curvature
    (then the step goes to the boundary along it, choosing the end with the
    lower model value), or an iterate leaving the ball (then the step stops
    on the boundary).

    A product ``H d`` with nan or inf in it ends CG at the last iterate (or, at
    the first product, gives :meth:`~.QuadraticModel.steepest_descent_step`),
    and so does the ``max_time`` deadline.

    The CG iterates grow in norm monotonically (Steihaug 1983, theorem 2.1), so
    the steps for every smaller radius lie on the same piecewise-linear path.
    The path is recorded (within :data:`PATH_MEMORY`), and when the driver
    rejects a step and shrinks the radius, :meth:`solve` finds the new step on
    the recorded path without any Hessian product.

    Each CG iteration's vector work is one function
    (:func:`~newtonad.solvers.linalg.steihaug_step`), on vectors of the
    workspace (:mod:`.scratch`), the path's directions included: no iteration
    allocates, and a step returned lives in the workspace when the driver gave
    one (see :class:`~.trust_region.QuadraticModel`).
    """

    uses_products = True

    def __init__(self, problem: Any, x: np.ndarray, fun: Optional[float] = None,
                 jac: Optional[np.ndarray] = None, **options: Any) -> None:
        super().__init__(problem, x, fun, jac, **options)
        self.maxiter = max(2 * problem.n, 20)
        self._path_radius = -1.0          # radius the recorded path is valid up to
        self._dirs: Any = ()                  # d_j: the workspace's path vectors
        self._alpha: list[float] = []         # alpha_j (0 for a negative-curvature segment)
        self._rr: list[float] = []            # r_j @ r_j
        self._curv: list[float] = []          # d_j @ H d_j
        self._end_sq: list[float] = []        # ||z_j + alpha_j d_j||^2 (inf if curv <= 0)
        self._interior: Optional[np.ndarray] = None  # converged interior solution
        self._interior_decrease = 0.0
        self._steepest_only = False  # H g was not finite: no CG path at this point

    # ------------------------------------------------------------------ solve
    def solve(self, trust_radius: float) -> tuple[np.ndarray, bool]:
        """Steihaug–Toint step for radius ``trust_radius``; see the class docstring.

        Returns
        -------
        p : ndarray
            The proposed step.
        hits_boundary : bool
            True if ``||p|| == trust_radius``.
        """
        if self._steepest_only:
            return self.steepest_descent_step(trust_radius)
        if self.jac_mag == 0.0:  # stationary: no descent direction to follow
            self._record(np.zeros_like(self.jac), 0.0)
            return self._last_step, False
        if trust_radius <= self._path_radius:
            r2 = trust_radius * trust_radius
            for j, (end_sq, curv) in enumerate(zip(self._end_sq, self._curv)):
                if curv <= 0.0 or end_sq >= r2:
                    return self._on_segment(j, self._start_of(j), trust_radius), True
            if self._interior is not None:
                self._record(self._interior, self._interior_decrease)
                return self._interior, False
        return self._run_cg(trust_radius)

    def _run_cg(self, radius: float) -> tuple[np.ndarray, bool]:
        g = self.jac
        n = g.size
        self._path_radius = radius
        alphas: list[float] = []
        rrs: list[float] = []
        curvs: list[float] = []
        ends: list[float] = []
        self._alpha, self._rr, self._curv, self._end_sq = alphas, rrs, curvs, ends
        self._interior = None
        record = True
        max_records = max(1, min(PATH_MEMORY // (8 * n), self.maxiter + 1))
        # the directions d_j; z and r are set by the first step
        if n < POOL_FROM:  # small: new arrays cost less than the workspace's lookups
            path: Any = [-g]
            z, r = np.empty(n), np.empty(n)
        else:  # vectors kept from point to point and run to run (no new pages)
            path = self.workspace.rows("steihaug-path", max_records, n)
            z, r = self._vector("steihaug-z"), self._vector("steihaug-r")
            np.negative(g, out=path[0])
        self._dirs = path
        d = path[0]
        gnorm = self.jac_mag
        tol2 = (min(0.5, gnorm) * gnorm) ** 2
        r2 = radius * radius
        rr = gnorm * gnorm
        zz = zd = 0.0
        dd = rr
        q = 0.0  # model value m(z) - f
        hv = self.operator()
        for j in range(self.maxiter):
            if j > 0 and self.out_of_time():
                break  # z is a valid, if truncated, step
            self.inner_iterations += 1
            bd = hv(d)
            # d_{j+1} goes to the next path vector while the path is recorded, else over d_j
            if not (record and j + 1 < max_records):
                d_next = d
            elif j + 1 < len(path):
                d_next = path[j + 1]
            else:  # a small problem's list of directions
                d_next = np.empty(n)
                path.append(d_next)
            # curv = d @ H d; unless the step leaves the ball or the curvature is not
            # positive: z += alpha d, r += alpha H d, d_next = beta d - r
            outcome, curv, alpha, end_sq, rr_new = steihaug_step(
                d, bd, z, r, g, d_next, rr, zz, zd, dd, r2, tol2, j == 0)
            if outcome == NOT_POSITIVE and not math.isfinite(curv):
                # nan or inf in H d: the model is unusable beyond z
                self.hessian_failed()
                if j == 0:
                    self._path_radius = -1.0
                    self._steepest_only = True
                    return self.steepest_descent_step(radius)
                break  # z comes from finite products only
            if record:
                rrs.append(rr)
                curvs.append(curv)
            if outcome == NOT_POSITIVE:
                if record:
                    alphas.append(0.0)
                    ends.append(math.inf)
                return self._to_boundary(z, d, q, -rr, curv, radius, j == 0), True
            if record:
                alphas.append(alpha)
                ends.append(end_sq)
            if outcome == OUTSIDE:
                return self._to_boundary(z, d, q, -rr, curv, radius, j == 0), True
            q -= 0.5 * alpha * rr
            if outcome == CONVERGED:
                break
            beta = rr_new / rr
            if record and j + 1 >= max_records:
                record = False
                self._path_radius = -1.0
                for kept in (alphas, rrs, curvs, ends):
                    kept.clear()
            d = d_next
            zz = end_sq
            zd = beta * (zd + alpha * dd)
            dd = rr_new + beta * beta * dd
            rr = rr_new
        if record:
            self._interior, self._interior_decrease = z, -q
        self._record(z, -q)
        return z, False

    # -------------------------------------------------------------- helpers
    def _start_of(self, j: int) -> np.ndarray:
        """The CG iterate ``z_j`` rebuilt from the recorded directions."""
        z = self._vector("steihaug-start")
        z.fill(0.0)
        for i in range(j):
            axpy(self._alpha[i], self._dirs[i], z)
        return z

    def _on_segment(self, j: int, z: np.ndarray, radius: float) -> np.ndarray:
        q = -0.5 * sum(a * rr for a, rr in zip(self._alpha[:j], self._rr[:j]))
        return self._to_boundary(z, self._dirs[j], q, -self._rr[j], self._curv[j], radius)

    def _to_boundary(self, z: np.ndarray, d: np.ndarray, q: float, rd: float, curv: float,
                     radius: float, from_origin: bool = False) -> np.ndarray:
        """Step from ``z`` along ``d`` to the sphere; with ``curv <= 0`` the better end.

        ``q`` is ``m(z) - f``, ``rd`` is ``(g + H z) @ d`` and ``curv`` is ``d @ H d``;
        the model along the line is ``q + t rd + t**2 curv / 2``. With
        ``from_origin`` (``z = 0``, ``d = -g``) the products are known without
        computing them, and ``z`` is not read.
        """
        if from_origin:
            ta, tb = boundary_intersections(0.0, 0.0, -rd, radius)
        else:
            ta, tb = boundary_intersections(*line_dots(z, d), radius)
        t = tb
        if curv <= 0.0:
            qa = ta * rd + 0.5 * ta * ta * curv
            qb = tb * rd + 0.5 * tb * tb * curv
            t = ta if qa < qb else tb
        p = self._vector("steihaug-step")
        if from_origin:
            np.multiply(d, t, out=p)
        else:
            along(z, t, d, p)
        self._record(p, -(q + t * rd + 0.5 * t * t * curv))
        return p


def run_native(problem: Any, x0: np.ndarray, opts: dict,
               callback: Optional[Callable[[np.ndarray, float], None]],
               bounds: Optional[object] = None) -> Any:
    """trust-ncg as ``minimize`` runs it (:func:`.trust_region.run_trust_region`)."""
    from .preconditioners import preconditioned

    kind = opts.pop("preconditioner", None)
    model = SteihaugSubproblem if kind is None else preconditioned(SteihaugSubproblem, kind)
    return run_trust_region(problem, x0, model, opts, callback)
