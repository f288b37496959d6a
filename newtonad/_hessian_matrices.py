"""The Hessian as a matrix for :class:`~newtonad.objective.Objective`: dense from identity
frames, or sparse from one coloured HVP frame, and the sparsity pattern.

A mixin: :class:`HessianMatrices` builds on what an Objective keeps (``_check``,
``_compiled``, ``_traced``, ``linearize_hessp``, the ``nhev`` counter, ``sparse`` and the
kept identity frame ``_identity``), so the per-point machinery stays in one module and
the matrix forms, made from products, in this one.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ._programs import (
    FRAME_BUDGET,
    HESSIAN_INSTEAD,
    Traced,
    check_dense,
    frame_chunks,
    identity_columns,
)
from .ad import transforms as tf
from .objective_protocol import dense_hessian

#: Identity frames of up to this many bytes are kept by hess between points (n <= 1448).
_KEEP_IDENTITY_BYTES = 16 * 2**20


class HessianMatrices:
    """``hess``, ``sparse_hess`` and ``hess_sparsity`` of an objective (see the module)."""

    sparse: bool
    nhev: int
    _identity: np.ndarray | None

    # provided by the Objective
    def _check(self, x: Any) -> np.ndarray: ...
    def _compiled(self, x: np.ndarray, kind: str, k: int | None, make: Callable) -> tuple: ...
    def _traced(self, x: np.ndarray) -> Traced: ...
    def linearize_hessp(self, x: Any, *, reuse_output: bool = False) -> Callable: ...

    def hess(self, x: Any) -> Any:
        """Return the Hessian at ``x``: dense from identity frames in chunks, or sparse.

        With ``sparse=True`` this is :meth:`sparse_hess`.

        Parameters
        ----------
        x : array_like
            The point: a float array of the shape ``f`` was written for (non-finite
            entries are not refused: f gives what its NumPy code gives there, as a solver
            expects of a trial point).

        Returns
        -------
        ndarray or scipy.sparse.csr_array
            ``H(x)``, of shape ``x.shape + x.shape``; with ``sparse=True`` a
            ``csr_array`` of shape ``(x.size, x.size)``.

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
        >>> obj.hess(np.array([1.0, 2.0]))
        array([[ 6.,  0.],
               [ 0., 12.]])
        """
        x = self._check(x)
        if self.sparse:
            return self.sparse_hess(x)
        n = x.size
        chunks = frame_chunks(n, n)
        # one frame: the identity (unless kept) and the product; in chunks: the matrix
        check_dense(n, n, "Objective.hess", HESSIAN_INSTEAD, copies=2 if len(chunks) == 1 else 1)
        if len(chunks) == 1:
            # One frame of n columns: one whole HVP pass. Residuals kept for later frames
            # would not pay (a residual pass and a linear pass cost more than the one).
            run, data = self._compiled(x, "hvp", n, lambda program: tf.hvp_program(program, n))
            self.nhev += n
            (frame,) = run(x, *data, self._identity_frame(x))
            return frame.reshape(x.shape + x.shape)
        out = dense_hessian(self.linearize_hessp(x), x.shape, block_elements=FRAME_BUDGET)
        return out.reshape(x.shape + x.shape)

    def _identity_frame(self, x: np.ndarray) -> np.ndarray:
        """The n x n identity as a frame at x's shape; kept (never written) up to
        :data:`_KEEP_IDENTITY_BYTES`: trust-exact asks for a Hessian at every point, and
        writing the identity cost as much as the product of a cheap Hessian with it."""
        n = x.size
        kept = self._identity
        if kept is not None and kept.shape == x.shape + (n,):
            return kept
        eye = identity_columns(n, 0, n).reshape(x.shape + (n,))
        if eye.nbytes <= _KEEP_IDENTITY_BYTES:
            self._identity = eye
        return eye

    def _hessian_plan(self, x: np.ndarray, max_nnz: int | None = None) -> Any:
        """The :class:`~newtonad.sparse.hessian.HessianPlan` of x's program: made once per
        trace (``max_nnz``: raise :class:`~newtonad.ad.sparsity.PatternTooDense` early
        rather than build a denser pattern; nothing is then kept)."""
        from .sparse.hessian import hessian_plan

        traced = self._traced(x)
        return hessian_plan(traced.program, traced.derived, max_nnz)

    def hess_sparsity(self, x: Any, max_nnz: int | None = None) -> Any:
        """Return the structural non-zeros of the Hessian at x's program.

        Parameters
        ----------
        x : array_like
            A point: only its shape (and ``args``) matter.
        max_nnz : int, optional
            Raise :class:`~newtonad.ad.sparsity.PatternTooDense` as soon as the pattern
            would have more non-zeros (a dense pattern is costly to propagate).

        Returns
        -------
        scipy.sparse.csr_array of bool, shape (x.size, x.size)
            Conservative: an entry left out is zero at every point.

        Examples
        --------
        >>> import numpy as np, newtonad as nad
        >>> obj = nad.Objective(lambda x: np.sum(x[1:] * x[:-1]))
        >>> int(obj.hess_sparsity(np.ones(4)).nnz)
        6
        """
        return self._hessian_plan(self._check(x), max_nnz).pattern.copy()

    def sparse_hess(self, x: Any) -> Any:
        """Return the Hessian at ``x`` as a sparse matrix, from one coloured HVP frame.

        The pattern, its star colouring and the recovery plan are made once per traced
        program; at each ``x`` one HVP pass of ``k`` = colours columns runs, and one
        gather recovers the Hessian from it (no arithmetic: direct recovery).

        Parameters
        ----------
        x : array_like
            The point: a float array of the shape ``f`` was written for (non-finite
            entries are not refused: f gives what its NumPy code gives there, as a solver
            expects of a trial point).

        Returns
        -------
        scipy.sparse.csr_array of float64, shape (x.size, x.size)
            ``H(x)``, symmetric, with the structural pattern of :meth:`hess_sparsity`.

        Raises
        ------
        TypeError
            When ``x`` is not a float array, or ``f`` does not return a scalar array.
        ValueError
            When ``f`` does not return a scalar.

        Examples
        --------
        >>> import numpy as np, newtonad as nad
        >>> obj = nad.Objective(lambda x: np.sum(x ** 3), sparse=True)
        >>> obj.hess(np.array([1.0, 2.0])).toarray()
        array([[ 6.,  0.],
               [ 0., 12.]])
        """
        x = self._check(x)
        plan = self._hessian_plan(x)
        k = plan.width
        if k == 0:
            return plan.recover(np.zeros((x.size, 0)))
        # One whole HVP pass: the Hessian is made once per point, so residuals kept for
        # later products would not pay.
        run, data = self._compiled(x, "hvp", k, lambda program: tf.hvp_program(program, k))
        self.nhev += k
        (frame,) = run(x, *data, plan.seed.reshape(x.shape + (k,)))
        return plan.recover(frame)


__all__ = ["HessianMatrices"]
