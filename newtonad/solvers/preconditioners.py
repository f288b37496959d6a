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

__all__ = ["Preconditioner", "DiagonalPreconditioner", "make_preconditioner",
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


def sparse_hessian_at(problem: Any, x: np.ndarray) -> Any:
    """The sparse Hessian at flat ``x`` from ``problem`` (a :class:`.FlatProblem`), or a
    ``ValueError`` saying which objective is needed."""
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


def make_preconditioner(kind: Optional[str], h: Any, order: Any = CHOOSE,
                        subset: Optional[np.ndarray] = None) -> Optional[Preconditioner]:
    """The preconditioner ``kind`` of the sparse symmetric matrix ``h`` (None for None).

    Parameters
    ----------
    kind : {None, "diagonal", "ichol"}
    h : scipy sparse matrix, shape (n, n)
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


def preconditioned(inner: type, kind: str) -> type:
    """The trust-region model class of ``inner`` (a :class:`.QuadraticModel` subclass)
    preconditioned by ``kind`` (``"diagonal"`` or ``"ichol"``).

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
                m = make_preconditioner(kind, sparse_hessian_at(self.problem, self.x))
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
