"""Preconditioners of the Newton-CG-type methods: ``M = C Cᵀ ≈ H`` at one point.

``options={"preconditioner": ...}`` on newton-cg, trust-ncg, trust-krylov and tron:

``None``
    no preconditioning (``M = I``);
``"diagonal"``
    ``M = diag(|H_ii|)``, the exact Hessian diagonal, read from the sparse Hessian that
    one coloured HVP frame gives (entries that are zero or tiny are replaced by the
    largest, so that ``M`` is positive definite);
``"ichol"``
    the limited-memory incomplete Cholesky factor of the sparse Hessian
    (:mod:`.ichol`, Lin & Moré 1999b), shifted on breakdown so that ``M`` is
    positive definite whatever the curvature of ``H``, in the symmetric ordering of
    :func:`.ichol.fill_reducing_order` (reverse Cuthill–McKee where it narrows the
    envelope).

Both need the Hessian as a sparse matrix, which a newtonad ``Objective`` gives
(``sparse_hess``: the pattern, colouring and recovery plan are made once per
traced program, then each point costs one HVP frame of as many columns as
colours and one gather).

A :class:`SparsePlusLowRank` object
    for a Hessian ``H = S + U Uᵀ`` with ``S`` sparse and ``U`` of a few dense columns
    (a penalty ``ρ/2 c(x)²`` on a constraint with a dense gradient ``a`` adds
    ``ρ a aᵀ``): the object computes ``S`` and ``U`` at each point, ``S`` gets the
    ``"diagonal"`` or ``"ichol"`` preconditioner ``C₀ C₀ᵀ``, and ``U Uᵀ`` is added to
    it exactly (:class:`LowRankUpdate`), so that ``M = C₀ C₀ᵀ + U Uᵀ`` and
    ``M = H`` when ``C₀ C₀ᵀ = S``.

The methods use ``M`` through the change of variables ``p = C⁻ᵀ y``: CG or Lanczos
runs on ``C⁻¹ H C⁻ᵀ`` with the gradient ``C⁻¹ g``, and a trust region ``‖y‖ <= Δ``
is the ellipsoid ``‖p‖_M <= Δ`` (Conn, Gould & Toint, *Trust-Region Methods*,
2000, section 5.1.3; Nocedal & Wright, 2nd ed., section 7.2, "Preconditioning the
trust-region subproblem").
"""

from __future__ import annotations

from typing import Any, Optional, Protocol

import numpy as np
from scipy import sparse

from .linalg import axpy, dot

__all__ = ["Preconditioner", "DiagonalPreconditioner", "LowRankUpdate", "SparsePlusLowRank",
           "make_preconditioner",
           "sparse_hessian_at", "restrict", "restrict_order", "preconditioned",
           "precondition_products", "CHOOSE"]


#: Hessians with more non-zeros per variable than this are refused (the pattern is found
#: once per traced program and kept, so the test costs nothing after the first iterate)
MAX_NNZ_PER_ROW = 512

#: ``make_preconditioner``'s ``order`` when the ordering is to be chosen for the matrix
CHOOSE = "choose"


class Preconditioner(Protocol):
    """``M = C Cᵀ``, positive definite, seen through ``C⁻¹`` and ``C⁻ᵀ``."""

    def left(self, v: np.ndarray) -> np.ndarray:
        """``C⁻¹ v`` (a new array)."""
        ...

    def right(self, v: np.ndarray) -> np.ndarray:
        """``C⁻ᵀ v`` (a new array)."""
        ...

    def solve(self, r: np.ndarray) -> np.ndarray:
        """``M⁻¹ r`` (a new array)."""
        ...


class DiagonalPreconditioner:
    """``M = diag(d)``, ``d > 0``: ``C = diag(sqrt(d))``."""

    def __init__(self, d: np.ndarray) -> None:
        d = np.abs(np.asarray(d, dtype=np.float64))
        finite = d[np.isfinite(d)]
        top = float(finite.max()) if finite.size else 1.0
        top = top if top > 0.0 else 1.0
        d[~(d > 1e-12 * top) | ~np.isfinite(d)] = top
        self.d = d
        self.root = np.sqrt(d)

    def left(self, v: np.ndarray) -> np.ndarray:
        return v / self.root

    def right(self, v: np.ndarray) -> np.ndarray:
        return v / self.root

    def solve(self, r: np.ndarray) -> np.ndarray:
        return r / self.d


class LowRankUpdate:
    """``M = C₀ C₀ᵀ + U Uᵀ`` from a preconditioner ``M₀ = C₀ C₀ᵀ`` and ``U`` (n, r).

    With ``V = C₀⁻¹ U = Q R`` (a thin QR factorisation) and ``G`` the Cholesky factor of
    ``I + R Rᵀ`` (r x r),

    .. math::

        M = C_0 (I + V V^T) C_0^T = C C^T, \\qquad C = C_0 B, \\qquad
        B = I + Q (G - I) Q^T,

    since ``B Bᵀ = I + Q (G Gᵀ - I) Qᵀ = I + V Vᵀ``; and
    ``B⁻¹ = I + Q (G⁻¹ - I) Qᵀ``. This is the product form of a low-rank modification of
    a Cholesky factor (P. E. Gill, G. H. Golub, W. Murray and M. A. Saunders, "Methods for
    modifying matrix factorizations", Math. Comp. 28 (1974) 505-535, section 3), with the
    square root of ``I + V Vᵀ`` taken on the range of ``V``. Its ``solve`` is the
    Sherman-Morrison-Woodbury formula (W. W. Hager, "Updating the inverse of a matrix",
    SIAM Review 31 (1989) 221-239, eq. (1.1)),

    .. math::

        M^{-1} = M_0^{-1} - M_0^{-1} U (I + U^T M_0^{-1} U)^{-1} U^T M_0^{-1},

    applied through the factors. Each use of ``C⁻¹`` or ``C⁻ᵀ`` costs one of ``C₀``'s and
    ``O(n r)``; forming ``M`` costs ``r`` of ``C₀⁻¹`` and ``O(n r²)``.
    """

    def __init__(self, base: Preconditioner, u: np.ndarray) -> None:
        from scipy.linalg import cholesky, solve_triangular

        u = np.asarray(u, dtype=np.float64)
        self.base = base
        v = np.column_stack([base.left(u[:, j]) for j in range(u.shape[1])]) \
            if u.shape[1] else np.zeros_like(u)
        q, r = np.linalg.qr(v)
        self.q = q
        self._rows = [np.ascontiguousarray(column) for column in q.T]  # Q's columns
        eye = np.eye(r.shape[0])
        self.g = cholesky(eye + r @ r.T, lower=True)
        # r x r: G^-1 - I and G^-T - I, formed once
        g_inv = solve_triangular(self.g, eye, lower=True)
        self._left_core, self._right_core = g_inv - eye, g_inv.T - eye

    def _add_range(self, core: np.ndarray, v: np.ndarray, out: np.ndarray) -> np.ndarray:
        """``out += Q core Qᵀ v`` by the solvers' vector kernels (no BLAS threads at large
        ``n``: :mod:`.linalg`)."""
        t = core @ np.array([dot(column, v) for column in self._rows])
        for coefficient, column in zip(t, self._rows):
            axpy(float(coefficient), column, out)
        return out

    def left(self, v: np.ndarray) -> np.ndarray:
        """``C⁻¹ v = B⁻¹ C₀⁻¹ v`` (a new array)."""
        y = np.ascontiguousarray(self.base.left(v), dtype=np.float64)  # a new array
        return self._add_range(self._left_core, y, y)

    def right(self, v: np.ndarray) -> np.ndarray:
        """``C⁻ᵀ v = C₀⁻ᵀ B⁻ᵀ v`` (a new array)."""
        v = np.ascontiguousarray(v, dtype=np.float64)
        return self.base.right(self._add_range(self._right_core, v, v.copy()))

    def solve(self, r: np.ndarray) -> np.ndarray:
        """``M⁻¹ r``."""
        return self.right(self.left(r))


class SparsePlusLowRank:
    """The ``preconditioner`` option for a Hessian ``H = S + U Uᵀ``: ``S`` sparse, ``U``
    of a few dense columns, both given at each point by ``parts``.

    ``S`` gets the preconditioner ``kind`` (``"diagonal"`` or ``"ichol"``, of the free
    variables' block when a solver asks for one), and ``U Uᵀ`` is added to it exactly
    (:class:`LowRankUpdate`). A solver reads it as it reads a named kind: the matrix it
    factorises (and orders) is ``S``, from :func:`sparse_hessian_at`, and
    :func:`make_preconditioner` adds ``U``'s rows of the same variables.

    Parameters
    ----------
    parts : callable
        ``parts(x) -> (S, U)``: ``S`` a sparse symmetric (n, n) matrix, ``U`` an (n, r)
        array, with ``S + U Uᵀ`` the Hessian at flat ``x`` (or the part of it to
        precondition).
    kind : {"ichol", "diagonal"}
        The preconditioner of ``S``.
    """

    def __init__(self, parts: Any, kind: str = "ichol") -> None:
        if kind not in ("ichol", "diagonal"):
            raise ValueError(f"the preconditioner of the sparse part is 'ichol' or "
                             f"'diagonal', got {kind!r}")
        self.parts = parts
        self.kind = kind
        self._current: Optional[tuple[Any, np.ndarray]] = None

    def sparse_hessian(self, n: int, x: np.ndarray) -> Any:
        """``S`` at ``x`` as a ``csr_array``; ``U`` is kept for :meth:`make`."""
        s, u = self.parts(x)
        s = sparse.csr_array(s, dtype=np.float64)
        u = np.asarray(u, dtype=np.float64).reshape(n, -1)
        if s.shape != (n, n):
            raise ValueError(f"the sparse part has shape {s.shape}; ({n}, {n}) is needed")
        if s.nnz > max(MAX_NNZ_PER_ROW * n, 1024):
            raise ValueError(f"the sparse part of the Hessian has more than "
                             f"{MAX_NNZ_PER_ROW} non-zeros per variable: too dense to "
                             f"factorise; use preconditioner=None")
        self._current = (s, u)
        return s

    def make(self, h: Any, order: Any = CHOOSE,
             subset: Optional[np.ndarray] = None) -> Preconditioner:
        """``M = C₀ C₀ᵀ + U_F U_Fᵀ`` of the rows ``subset`` (all when None): ``h`` is the
        ``S`` that :meth:`sparse_hessian` gave last."""
        if self._current is None or self._current[0] is not h:
            raise ValueError("SparsePlusLowRank.make needs the S of its last "
                             "sparse_hessian call")
        base = make_preconditioner(self.kind, h, order, subset)
        assert base is not None
        u = self._current[1] if subset is None else self._current[1][subset]
        if u.shape[1] == 0:
            return base
        return LowRankUpdate(base, u)


def sparse_hessian_at(problem: Any, x: np.ndarray, kind: Any = None) -> Any:
    """The sparse Hessian at flat ``x`` from ``problem`` (a :class:`.FlatProblem`), or a
    ``ValueError`` saying which objective is needed; for a :class:`SparsePlusLowRank`
    ``kind``, its sparse part ``S``."""
    if isinstance(kind, SparsePlusLowRank):
        return kind.sparse_hessian(problem.n, x)
    if not problem.capabilities.sparse_hess:
        raise ValueError("the 'diagonal' and 'ichol' preconditioners need the Hessian as a "
                         "sparse matrix, which a newtonad Objective gives (pass fun as a "
                         "plain function or nad.Objective(f)); this objective has no "
                         "sparse_hess: use preconditioner=None")
    if not problem.sparse_hessian_fits(x, max(MAX_NNZ_PER_ROW * problem.n, 1024)):
        raise ValueError(f"the Hessian has more than {MAX_NNZ_PER_ROW} non-zeros per "
                         "variable: too dense for the 'diagonal' and 'ichol' "
                         "preconditioners, which form it as a sparse matrix at each "
                         "iterate; use preconditioner=None")
    return problem.sparse_hess(x)


def make_preconditioner(kind: Any, h: Any, order: Any = CHOOSE,
                        subset: Optional[np.ndarray] = None) -> Optional[Preconditioner]:
    """The preconditioner ``kind`` of the sparse symmetric matrix ``h`` (None for None).

    Parameters
    ----------
    kind : {None, "diagonal", "ichol"} or SparsePlusLowRank
    h : scipy sparse matrix, shape (n, n)
        The Hessian (for a :class:`SparsePlusLowRank`, the ``S`` that
        :func:`sparse_hessian_at` gave).
    order : ndarray of int, None or CHOOSE
        The symmetric ordering of the incomplete Cholesky factorisation (row ``order[j]``
        of ``h`` becomes row ``j``); None for ``h``'s own; :data:`CHOOSE` (the default)
        for :func:`.ichol.fill_reducing_order`'s choice. With ``subset``, of the
        submatrix.
    subset : ndarray of int, optional
        Sorted rows: the preconditioner of the principal submatrix ``h[subset][:, subset]``
        (:func:`restrict`), which ``"ichol"`` reads from ``h`` without forming it.

    Returns
    -------
    Preconditioner or None
    """
    if kind is None:
        return None
    if isinstance(kind, SparsePlusLowRank):
        return kind.make(h, order, subset)
    diagonal = h.diagonal() if subset is None else h.diagonal()[subset]
    if kind == "diagonal":
        return DiagonalPreconditioner(diagonal)
    if kind == "ichol":
        from .ichol import incomplete_cholesky

        if not np.isfinite(h.data).all():  # nan or inf in H: the diagonal of what is finite
            return DiagonalPreconditioner(np.nan_to_num(diagonal, posinf=1.0, neginf=1.0))
        if isinstance(order, str):
            from .ichol import fill_reducing_order

            order = fill_reducing_order(h if subset is None else restrict_rows(h, subset))
        return incomplete_cholesky(h, order=order, subset=subset)
    raise ValueError(f"unknown preconditioner {kind!r}; use None, 'diagonal' or 'ichol'")


def restrict(h: Any, free: np.ndarray) -> Any:
    """The submatrix ``h[F, F]`` of the free variables ``F`` (a boolean mask)."""
    return restrict_rows(h, np.flatnonzero(free))


def restrict_rows(h: Any, index: np.ndarray) -> Any:
    """The principal submatrix ``h[index][:, index]``."""
    csr = sparse.csr_array(h)
    return csr[index][:, index]


def restrict_order(order: Optional[np.ndarray], free: np.ndarray) -> Optional[np.ndarray]:
    """The ordering that ``order`` (of all variables, or None) induces on the free ones
    (a boolean mask): the free variables in the order ``order`` puts them, numbered as
    rows of :func:`restrict`'s submatrix. A solver whose free set changes keeps the
    ordering of the whole Hessian, found once, instead of ordering each submatrix."""
    if order is None:
        return None
    position = np.cumsum(free) - 1
    return position[order[free[order]]]


def preconditioned(inner: type, kind: Any) -> type:
    """The trust-region model class of ``inner`` (a :class:`.QuadraticModel` subclass)
    preconditioned by ``kind`` (``"diagonal"``, ``"ichol"`` or a :class:`SparsePlusLowRank`).

    Its step comes from an inner model of the same method in the variables
    ``y = Cᵀ p``: the inner model sees the gradient ``C⁻¹ g`` and the operator
    ``C⁻¹ H C⁻ᵀ``; its step ``y`` maps back to ``p = C⁻ᵀ y`` with the same model
    decrease, and the radius bounds ``‖y‖ = ‖p‖_M``. The outer model keeps the true
    gradient (the driver's stopping test reads it). ``M`` is formed once per point,
    from the sparse Hessian there, when the first step is asked for.
    """
    from .trust_region import QuadraticModel

    class Model(QuadraticModel):
        uses_products = True

        def __init__(self, problem: Any, x: np.ndarray, fun: Optional[float] = None,
                     jac: Optional[np.ndarray] = None, **options: Any) -> None:
            super().__init__(problem, x, fun, jac, **options)
            self._options = options  # the inner model's too (deadline, workspace, ...)
            self._inner: Any = None
            self._m: Optional[Preconditioner] = None
            self._y_length = 0.0

        def _model(self) -> Any:
            if self._inner is None:
                m = make_preconditioner(kind, sparse_hessian_at(self.problem, self.x, kind))
                assert m is not None  # kind is "diagonal" or "ichol"
                self._m = m
                self._inner = inner(self.problem, self.x, self.fun, m.left(self.jac),
                                    operator=precondition_products(m, self.operator()),
                                    **self._options)
            return self._inner

        def solve(self, trust_radius: float) -> tuple[np.ndarray, bool]:
            model = self._model()
            y, hits = model.solve(trust_radius)
            assert self._m is not None
            p = self._m.right(y)
            self._y_length = float(np.linalg.norm(y))
            self._record(p, model.predicted_decrease(y))
            return p, hits

        def step_length(self, p: np.ndarray, pp: float) -> float:
            return self._y_length if p is self._last_step else float(np.sqrt(pp))

        def take_inner_iterations(self) -> int:
            return 0 if self._inner is None else self._inner.take_inner_iterations()

    Model.__name__ = Model.__qualname__ = f"Preconditioned{inner.__name__}"
    return Model


def precondition_products(m: Preconditioner, hv: Any) -> Any:
    """The operator ``v -> C⁻¹ H C⁻ᵀ v`` of ``M = C Cᵀ`` and ``hv: v -> H v``."""
    def transformed(v: np.ndarray) -> np.ndarray:
        return m.left(hv(m.right(v)))
    return transformed
