"""The sparse Hessian's recovery, made once per traced program and shared.

``nad.hessian(f, sparse=True)`` and ``Objective(f, sparse=True)`` both need, per program,
the Hessian pattern, its star colouring, the seed frame of that colouring and the
recovery plan; :func:`hessian_plan` makes them once and keeps them with the program's
other derived objects.
"""

from __future__ import annotations

from typing import Any, MutableMapping, NamedTuple

import numpy as np

from ..ad import sparsity
from ..ad.program import Program
from .colouring import star_colouring
from .recovery import Recovery, seed_matrix, star_plan

#: the key under which the plan is kept among a traced program's derived objects
PLAN_KEY = ("sparse-hessian-plan", None, None)


class HessianPlan(NamedTuple):
    """What a sparse Hessian costs once per program: a frame of ``seed`` then ``recover``."""

    pattern: Any          # scipy.sparse.csr_array of bool, (n, n)
    colours: np.ndarray   # a star colouring of the pattern
    seed: np.ndarray      # (n, k) seed of the colouring: the HVP frame's directions
    recover: Recovery     # compressed (n, k) frame -> csr_array

    @property
    def width(self) -> int:
        """Columns of the HVP frame (the number of colours)."""
        return int(self.seed.shape[1])


def hessian_plan(program: Program, derived: MutableMapping, max_nnz: int | None = None
                 ) -> HessianPlan:
    """The :class:`HessianPlan` of a scalar program, made on first use and kept in ``derived``.

    Parameters
    ----------
    program : Program
        A program with one scalar output.
    derived : dict
        Where the plan is kept (``Traced.derived``).
    max_nnz : int, optional
        Raise :class:`~newtonad.ad.sparsity.PatternTooDense` as soon as the pattern
        would have more non-zeros (nothing is kept then).

    Returns
    -------
    HessianPlan
    """
    plan = derived.get(PLAN_KEY)
    if plan is None:
        pattern = sparsity.hessian_pattern(program, max_nnz)
        colours = star_colouring(pattern)
        plan = derived[PLAN_KEY] = HessianPlan(pattern, colours, seed_matrix(colours),
                                               Recovery(pattern, star_plan(pattern, colours)))
    return plan
