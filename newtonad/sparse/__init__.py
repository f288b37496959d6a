"""Sparse derivatives: colourings of sparsity patterns and recovery of compressed frames.

After Gebremedhin, Manne & Pothen, "What color is your Jacobian? Graph coloring for
computing derivatives", SIAM Review 47(4), 2005.
"""

from .colouring import column_colouring, row_colouring, star_colouring
from .recovery import (
    Recovery,
    assemble,
    column_plan,
    recover_columns,
    recover_rows,
    recover_star,
    row_plan,
    seed_matrix,
    star_plan,
)

__all__ = ["Recovery", "assemble", "column_colouring", "column_plan", "recover_columns",
           "recover_rows", "recover_star", "row_colouring", "row_plan", "seed_matrix",
           "star_colouring", "star_plan"]
