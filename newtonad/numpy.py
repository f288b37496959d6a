"""An explicit NumPy-like namespace: ``import newtonad.numpy as nnp``.

The same functions that ``np.*`` calls reach on traced arrays, by name, plus a few
that NumPy lacks (``logsumexp``, ``stop_gradient``). On plain arrays they return plain
NumPy results.
"""

from .ad.numpy_api import (  # noqa: F401
    absolute, add, arccos, array, asarray, arcsin, arctan, arctan2, astype, atleast_1d, atleast_2d,
    broadcast_to, ceil, clip, concatenate, copy, cos, cosh, cumsum, diag, diagonal, diff,
    dot, einsum, equal, exp, exp2, expand_dims, expm1, flip, floor, full_like, greater,
    greater_equal, hstack, hypot, inner, less, less_equal, log, log1p, log2, log10,
    logaddexp, logical_and, logical_not, logical_or, logsumexp, matmul, max, maximum, mean,
    min, minimum, moveaxis, multiply, negative, norm, not_equal, ones_like, outer, pad,
    positive, power, prod, ravel, reciprocal, repeat, reshape, roll, sign, sin, sinh, sqrt,
    square, squeeze, stack, std, stop_gradient, subtract, sum, swapaxes, take, tan, tanh,
    tensordot, tile, trace, transpose, true_divide, var, vdot, vstack, where, zeros_like,
)
from .ad.numpy_api import (  # noqa: F401  (sorting, order statistics, splitting, grids)
    append, argmax, argmin, argpartition, argsort, array_split, atleast_3d, average,
    column_stack, cumprod, dsplit, fftshift, fliplr, flipud, gradient, hsplit, ifftshift,
    linspace, median, nanmean, nansum, partition, percentile, quantile, rot90, sort, split,
    take_along_axis, vsplit,
)
from .ad.numpy_api import getitem  # noqa: F401
from .ad.numpy_linalg import cross, kron, linalg, tril, triu  # noqa: F401
from .ad.numpy_special import (  # noqa: F401  (elementwise functions built on primitives)
    arccosh, arcsinh, arctanh, around, cbrt, deg2rad, fix, floor_divide, fmod, logaddexp2,
    nan_to_num, rad2deg, remainder, rint, sinc, trunc,
)
from .ad.numpy_special import divmod_ as divmod  # noqa: F401

abs = absolute
divide = true_divide
amax = max
amin = min
concat = concatenate
round = around
radians = deg2rad
degrees = rad2deg
mod = remainder
