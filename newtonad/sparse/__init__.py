"""Sparse derivatives: colourings of sparsity patterns and recovery of compressed frames.

After Gebremedhin, Manne & Pothen, "What color is your Jacobian? Graph coloring for
computing derivatives", SIAM Review 47(4), 2005.
"""

from .colouring import column_colouring, row_colouring, star_colouring
from .recovery import recover_columns, recover_rows, recover_star, seed_matrix

__all__ = ["column_colouring", "recover_columns", "recover_rows", "recover_star",
           "row_colouring", "seed_matrix", "star_colouring"]
