"""trust-krylov: the generalised Lanczos trust-region (GLTR) subproblem solver.

N. I. M. Gould, S. Lucidi, M. Roma and Ph. L. Toint, "Solving the trust-region
subproblem using the Lanczos method", SIAM J. Optim. 9 (1999), 504–525; also
algorithm 7.5.2 of Conn, Gould & Toint, *Trust-Region Methods* (2000). The
model is minimised over the ball intersected with the Krylov subspace
``K_k = span{g, Hg, ..., H^{k-1} g}``: Lanczos gives an orthonormal basis ``Q_k``
with ``Q_kᵀ H Q_k = T_k`` tridiagonal and ``Q_kᵀ g = ‖g‖ e₁``, so the subspace
problem is the small tridiagonal one ``min ‖g‖ h₀ + hᵀ T_k h / 2, ‖h‖ <= Δ``
(solved by Moré–Sorensen, :mod:`.tridiagonal`), and ``p = Q_k h``. Unlike
Steihaug's CG it does not stop at the boundary or at negative curvature but
keeps enlarging the subspace until the subproblem's optimality residual
``‖(H + λI) p + g‖ = γ_{k+1} |h_{k-1}|`` is small, which pays on indefinite
problems. While the solution is interior this is CG in Lanczos form, and it is
run as such (GLTR's "CG phase", as trlib does): the pivots of ``T_k = L D Lᵀ``
give CG's step lengths, residuals and iterate norms in O(1) per step, so no
tridiagonal problem is solved until the iterate leaves the ball or ``T_k``
stops being positive definite.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional

import numpy as np
from scipy.linalg import lapack

from .linalg import combine_rows, lanczos_step
from .tridiagonal import TRSSolution, solve_tridiagonal_trs
from .trust_region import QuadraticModel, run_trust_region

__all__ = ["GLTRSubproblem", "run_native"]

#: bytes of Lanczos vectors kept per point; the Krylov dimension is capped to fit
BASIS_MEMORY = 256 * 2**20
#: on the boundary, from a subspace of 2 * this dimension on, the tridiagonal problem is
#: solved every k // this Lanczos steps rather than every step
_SOLVES_EVERY = 16
#: a basis of at most this many entries (its whole 2 n by n: n <= 181) is one matrix,
#: and each new Lanczos vector is orthogonalised against all the others
REORTHOGONALISE_ENTRIES = 1 << 16


class GLTRSubproblem(QuadraticModel):
    """Quadratic model solved in growing Krylov subspaces (GLTR).

    Parameters
    ----------
    inexact : bool
        As scipy's trust-krylov option. ``True`` (default) stops the Lanczos
        process at the residual ``min(1/2, ‖g‖) ‖g‖`` when the solution is
        interior (quadratic forcing, as trlib under scipy's ``tol_rel_i = -2``)
        and at ``max(1e-6, min(1/2, sqrt(‖g‖))) ‖g‖`` on the boundary (trlib's
        ``tol_rel_b = -3``). A tenth of that on the boundary, tried before,
        took about 3 % fewer outer iterations over the built-in problems but
        two to three times the products of scipy's trust-krylov on some
        (dixmaanj and trigonometric at n = 1000: 2.7x scipy's time, against
        1.9x now). ``False`` solves to ``1e-8 ‖g‖`` inside and
        ``1e-6 ‖g‖`` on the boundary, as scipy's ``inexact=False``.

    Notes
    -----
    A Hessian product with nan or inf in it ends the Lanczos process: the step
    then comes from the subspace built so far, or, if even ``H g`` is not
    finite, is :meth:`~.QuadraticModel.steepest_descent_step`. The ``max_time``
    deadline ends it the same way.

    The Lanczos basis and ``T`` are kept, so re-solving for a smaller radius
    after a rejected step first re-solves the small tridiagonal problem and only
    extends the subspace if that is not accurate enough.
    """

    uses_products = True

    def __init__(self, problem: Any, x: np.ndarray, fun: Optional[float] = None,
                 jac: Optional[np.ndarray] = None, inexact: bool = True, **options: Any) -> None:
        super().__init__(problem, x, fun, jac, **options)
        self.inexact = inexact
        self._basis: Any = None  # q_0, q_1, ...: a matrix, or the workspace's Rows
        self._orthogonal = False  # the basis is small: each new vector is reorthogonalised
        self._diag = np.empty(0)                 # T[j, j]
        self._off = np.empty(0)                  # off[j] = T[j, j+1] couples q_j and q_{j+1}
        self._k = 0                              # Lanczos steps taken: T is k by k
        self._w: Optional[np.ndarray] = None     # unnormalised next Lanczos vector
        self._lam = 0.0
        self._exhausted = False  # no more Lanczos steps: H q was not finite, or time is up
        self._steepest_only = False  # even H g was not finite: no Krylov model at this point
        # the CG iteration equivalent to the Lanczos steps (Gould et al., section 2):
        # its iterate is the subspace solution while T is positive definite and
        # the iterate inside the ball, so no tridiagonal problem need be solved
        self._pivot = 0.0   # last pivot of T = L D Lᵀ; the CG step length is 1 / pivot
        self._rr = 0.0      # ‖r_k‖², the CG residual (the model's gradient) at the iterate
        self._ss = self._sd = self._dd = 0.0  # ‖s‖², s·d, ‖d‖² of CG iterate and direction

    def _tolerances(self) -> tuple[float, float]:
        gnorm = self.jac_mag
        if self.inexact:
            return min(0.5, gnorm) * gnorm, max(1e-6, min(0.5, math.sqrt(gnorm))) * gnorm
        return 1e-8 * gnorm, 1e-6 * gnorm

    def _start(self) -> bool:
        """First Lanczos vector ``g / ‖g‖`` and step; False if ``H g`` is not finite."""
        g = self.jac
        n = g.size
        # Lanczos without reorthogonalisation loses orthogonality, and then
        # needs more than n steps to reach a small residual: allow 2 n, as
        # scipy's trlib wrapper does (its itmax)
        self._maxdim = max(1, min(2 * n, BASIS_MEMORY // (8 * n)))
        cap = self._maxdim
        # Lanczos in floating point loses orthogonality once Ritz values converge: on an
        # ill-conditioned problem its step at the 2 n cap can be far from the Newton
        # step (discrete-boundary-value, n = 100: 3 iterations and 600 products where
        # scipy's trust-krylov takes 1). A small basis is one matrix, kept orthogonal (1
        # iteration and 100 products there); for a large one that would cost more than
        # the products.
        # The basis is kept in the driver's workspace for the next point's model (and the
        # next run's): growing it by copies and faulting in a new one at every point cost
        # more than the products at n = 65536
        self._orthogonal = cap * n <= REORTHOGONALISE_ENTRIES
        if self._orthogonal:
            self._basis = self.workspace.vector("gltr-basis-matrix", cap * n).reshape(cap, n)
        else:
            self._basis = self.workspace.rows("gltr-basis", cap, n)
        self._diag = np.empty(cap)
        self._off = np.empty(cap)
        np.multiply(g, 1.0 / self.jac_mag, out=self._basis[0])
        self._rr = self._dd = self.jac_mag ** 2
        return self._lanczos_step()

    def _lanczos_step(self) -> bool:
        """From ``q_{k-1}`` (stored): ``T[k-1, k-1]``, ``γ_k`` and the next ``w``; ``k += 1``.

        Returns False, leaving ``T`` as it was, when ``H q`` has nan or inf in it.
        """
        j = self._k
        q = self._basis[j]
        w = self.operator()(q)
        if not w.flags.writeable:  # a user's product may hand out an array it keeps
            w = w.copy()
        self.inner_iterations += 1
        # delta = q @ w, then w -= delta q_j + gamma_j q_{j-1} (one pass)
        if j > 0:
            delta, ww = lanczos_step(q, w, self._basis[j - 1], float(self._off[j - 1]))
        else:
            delta, ww = lanczos_step(q, w, None, 0.0)
        if self._orthogonal:  # a small basis: w orthogonal to all of it
            kept = self._basis[:j + 1]
            w -= (kept @ w) @ kept
            ww = float(w @ w)
        gamma = math.sqrt(ww)
        if not (math.isfinite(delta) and math.isfinite(gamma)):
            self.hessian_failed()
            self._exhausted = True
            return False
        self._diag[j] = delta
        self._off[j] = gamma
        self._w = w
        self._k = j + 1
        return True

    def _grow(self) -> bool:
        """Normalise ``w`` into the next basis vector and step.

        Returns False, changing nothing, when the subspace cannot grow: at its
        size limit, after a product with nan or inf, or past the deadline.
        """
        j = self._k
        if self._exhausted or j >= self._maxdim or self.out_of_time():
            return False
        np.multiply(self._w, 1.0 / self._off[j - 1], out=self._basis[j])
        return self._lanczos_step()

    def _cg_advance(self, radius: float) -> bool:
        """Follow the last Lanczos step with the equivalent CG step; False once not interior.

        With ``T = L D Lᵀ`` the pivots are the reciprocal CG step lengths and
        ``‖r_{j+1}‖ = γ_{j+1} α_j ‖r_j‖``, so the CG iterate's norm, residual and
        the sign of the curvature follow from ``T`` in O(1) per step.
        """
        j = self._k - 1
        pivot = self._diag[j] - (self._off[j - 1] ** 2 / self._pivot if j > 0 else 0.0)
        if not pivot > 0.0:
            return False
        alpha = 1.0 / pivot
        ss = self._ss + alpha * (2.0 * self._sd + alpha * self._dd)
        if ss >= radius * radius:
            return False
        rr = (self._off[j] * alpha) ** 2 * self._rr
        beta = rr / self._rr
        self._sd = beta * (self._sd + alpha * self._dd)
        self._dd = rr + beta * beta * self._dd
        self._ss, self._rr, self._pivot = ss, rr, pivot
        return True

    def solve(self, trust_radius: float) -> tuple[np.ndarray, bool]:
        """GLTR step for radius ``trust_radius``; see the module docstring.

        Returns
        -------
        p : ndarray
            The proposed step.
        hits_boundary : bool
            True if ``||p|| == trust_radius``.
        """
        tol_interior, tol_boundary = self._tolerances()
        gnorm = self.jac_mag
        if gnorm == 0.0:  # stationary: no Krylov space to search
            self._record(np.zeros_like(self.jac), 0.0)
            return self._last_step, False
        if self._basis is None:
            self._steepest_only = not self._start()
            # interior phase: CG in Lanczos form, no tridiagonal problem to solve
            while not self._steepest_only and self._cg_advance(trust_radius):
                k = self._k
                small = self._off[k - 1] <= 1e-14 * max(1.0, abs(self._diag[k - 1]))
                if self._rr <= tol_interior * tol_interior or small or not self._grow():
                    return self._finish(self._interior_solution(), trust_radius)
        if self._steepest_only:
            return self.steepest_descent_step(trust_radius)
        while True:  # each pass adds a Lanczos step, so at most _maxdim passes
            k = self._k
            diag, off = self._diag[:k], self._off[: k - 1]
            sol = solve_tridiagonal_trs(diag, off, gnorm, trust_radius, self._lam)
            residual = self._off[k - 1] * abs(sol.h[-1])
            tol = tol_boundary if sol.hits_boundary else tol_interior
            if residual <= tol or self._invariant() or not self._grow():
                break
            # A solve per step made the Lanczos loop cost 1.2 ms per product where the
            # product takes 0.14 ms (trigonometric, n = 65536, ~170 steps per subproblem):
            # from k = 32 on take k // 16 steps between solves, at most 1/16 more products
            # than needed for many times fewer solves.
            for _ in range(k // _SOLVES_EVERY - 1 if k >= 2 * _SOLVES_EVERY else 0):
                if self._invariant() or not self._grow():
                    break
        self._lam = sol.lam
        return self._finish(sol, trust_radius)

    def _invariant(self) -> bool:
        """Whether the Krylov subspace is (numerically) invariant: ``γ_k`` negligible."""
        k = self._k
        return bool(self._off[k - 1] <= 1e-14 * max(1.0, float(np.abs(self._diag[:k]).max())))

    def _interior_solution(self) -> TRSSolution:
        """The CG iterate in the Lanczos basis: ``T h = -‖g‖ e₁``."""
        k = self._k
        c = np.zeros(k)
        c[0] = -self.jac_mag
        if k == 1:
            return TRSSolution(c / self._diag[0], 0.0, False)
        dl, el, _ = lapack.dpttrf(self._diag[:k], self._off[: k - 1])
        return TRSSolution(lapack.dpttrs(dl, el, c)[0], 0.0, False)

    def _finish(self, sol: TRSSolution, radius: float) -> tuple[np.ndarray, bool]:
        h = sol.h
        k = h.size
        if not np.isfinite(h).all():  # T's entries overflowed the small solve
            self.hessian_failed()
            self._steepest_only = True
            return self.steepest_descent_step(radius)
        p = self._combination(h)
        diag, off = self._diag[:k], self._off[: k - 1]
        quad = float(diag @ (h * h)) + 2.0 * float(off @ (h[:-1] * h[1:]))
        self._record(p, -(self.jac_mag * h[0] + 0.5 * quad))
        return p, sol.hits_boundary

    def _combination(self, h: np.ndarray) -> np.ndarray:
        """``h @ Q_k``: the step from its coordinates in the Lanczos basis.

        Large vectors: serial compiled loops, row by row (not a threaded BLAS
        ``dgemv``: see :mod:`.linalg`); the traffic is the same, ``k n`` reads. The step
        lives in the driver's workspace (see :class:`~.trust_region.QuadraticModel`).
        """
        return combine_rows(h, self._basis, self._vector("gltr-step"))


def run_native(problem: Any, x0: np.ndarray, opts: dict,
               callback: Optional[Callable[[np.ndarray, float], None]],
               bounds: Optional[object] = None) -> Any:
    """trust-krylov as ``minimize`` runs it (:func:`.trust_region.run_trust_region`)."""
    from .preconditioners import preconditioned

    sub_opts = {"inexact": bool(opts.pop("inexact", True))}
    kind = opts.pop("preconditioner", None)
    model = GLTRSubproblem if kind is None else preconditioned(GLTRSubproblem, kind)
    return run_trust_region(problem, x0, model, opts, callback, sub_opts)
