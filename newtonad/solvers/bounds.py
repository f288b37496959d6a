"""Box bounds ``l <= x <= u`` for the bound-constrained native methods.

:func:`parse_bounds` reads ``bounds`` as ``scipy.optimize.minimize`` takes them (a
:class:`scipy.optimize.Bounds`, or a sequence of ``(min, max)`` pairs with ``None``
for no bound) and refuses what scipy refuses, with scipy's messages. The other
functions are the projected-search helpers of Lin & Moré's method (:mod:`.tron`):
the projection ``P[x]`` onto the box, the projected gradient, and the breakpoints
of the projected path ``x(α) = P[x + α d]``.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
from scipy.optimize import Bounds

__all__ = ["parse_bounds", "project", "projected_gradient", "breakpoints", "free_mask",
           "neighbourhood", "LOWER_ABOVE_UPPER", "WRONG_LENGTH"]

#: scipy's messages (``scipy.optimize._minimize._validate_bounds``)
LOWER_ABOVE_UPPER = "An upper bound is less than the corresponding lower bound."
WRONG_LENGTH = "The number of bounds is not compatible with the length of `x0`."


def _pairs(bounds: Any) -> tuple[np.ndarray, np.ndarray]:
    try:
        pairs = [(-np.inf if lo is None else lo, np.inf if hi is None else hi)
                 for lo, hi in bounds]
    except (TypeError, ValueError) as exc:
        raise ValueError(f"bounds must be a scipy.optimize.Bounds or a sequence of "
                         f"(min, max) pairs, one per variable (None for no bound); got "
                         f"{type(bounds).__name__}: {exc}") from None
    if not pairs:
        return np.empty(0), np.empty(0)
    arr = np.asarray(pairs, dtype=float)
    return arr[:, 0], arr[:, 1]


def parse_bounds(bounds: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds as two new float64 arrays of ``n`` entries.

    Parameters
    ----------
    bounds : scipy.optimize.Bounds or sequence of (min, max) or None
        ``None`` (or ``None`` in a pair) is no bound; ``±inf`` are allowed. A
        ``Bounds`` whose ``lb`` / ``ub`` are scalars applies them to every variable.
    n : int
        The number of variables (``x0.size``).

    Raises
    ------
    ValueError
        If a lower bound is above its upper bound or the number of bounds is not
        ``n`` (scipy's messages), or a bound is nan, or a lower bound is ``+inf`` or an
        upper bound ``-inf``.
    """
    if bounds is None:
        return np.full(n, -np.inf), np.full(n, np.inf)
    if isinstance(bounds, Bounds):
        lb = np.asarray(bounds.lb, dtype=float)
        ub = np.asarray(bounds.ub, dtype=float)
    else:
        lb, ub = _pairs(bounds)
    if np.isnan(lb).any() or np.isnan(ub).any():
        bad = np.flatnonzero(np.isnan(np.broadcast_arrays(lb, ub)[0])
                             | np.isnan(np.broadcast_arrays(lb, ub)[1]))[:5].tolist()
        raise ValueError(f"bounds have nan entries (first at variables {bad}); use -inf or "
                         f"inf (or None in a pair) for a variable without that bound")
    if np.any(ub < lb):
        raise ValueError(LOWER_ABOVE_UPPER)
    if np.any(lb == np.inf) or np.any(ub == -np.inf):
        # no finite point satisfies it: x0 would be projected onto inf
        raise ValueError("bounds have a lower bound of +inf or an upper bound of -inf, which "
                         "no finite point satisfies; use -inf / inf (or None in a pair) for "
                         "a variable without that bound")
    try:
        lb = np.broadcast_to(lb.reshape(-1) if lb.ndim > 1 else lb, (n,))
        ub = np.broadcast_to(ub.reshape(-1) if ub.ndim > 1 else ub, (n,))
    except ValueError:
        raise ValueError(f"{WRONG_LENGTH} (x0 has {n} entries, bounds give "
                         f"{np.size(lb)}; give one (min, max) pair per entry of x0, or "
                         f"scalars in Bounds)") from None
    return np.array(lb, dtype=np.float64), np.array(ub, dtype=np.float64)


def project(x: np.ndarray, lb: np.ndarray, ub: np.ndarray,
            out: np.ndarray | None = None) -> np.ndarray:
    """``P[x]``: the nearest point of the box ``[lb, ub]`` (componentwise clip)."""
    return np.clip(x, lb, ub, out=out)


def projected_gradient(x: np.ndarray, g: np.ndarray, lb: np.ndarray, ub: np.ndarray
                       ) -> np.ndarray:
    """The projected gradient ``P[x - g] - x`` negated, entry by entry.

    ``g_i`` where ``x_i`` is free, ``min(g_i, 0)`` at a lower bound and
    ``max(g_i, 0)`` at an upper bound (Lin & Moré 1999, section 2: its norm is zero
    exactly at a first-order point of the bound-constrained problem).
    """
    pg = g.copy()
    at_lower = (x <= lb) & (g > 0.0)
    at_upper = (x >= ub) & (g < 0.0)
    pg[at_lower | at_upper] = 0.0
    return pg


def free_mask(x: np.ndarray, lb: np.ndarray, ub: np.ndarray) -> np.ndarray:
    """The variables strictly inside their bounds (Lin & Moré's free set at ``x``)."""
    return (x > lb) & (x < ub)


def breakpoints(x: np.ndarray, d: np.ndarray, lb: np.ndarray, ub: np.ndarray
                ) -> tuple[float, float]:
    """The first and the last ``α > 0`` at which ``P[x + α d]`` meets a new bound.

    ``x`` is feasible. Below the first breakpoint the path is the straight line
    ``x + α d``; beyond the last it no longer moves. Both are ``inf`` when no
    variable that ``d`` moves meets a finite bound, and 0 when a variable sits at a
    bound ``d`` pushes into.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        up = np.where(d > 0.0, (ub - x) / d, np.inf)
        down = np.where(d < 0.0, (lb - x) / d, np.inf)
    steps = np.minimum(up, down)
    moving = d != 0.0
    if not moving.any():
        return np.inf, 0.0
    steps = steps[moving]
    return float(steps.min()), float(steps.max())


def _neighbourhood_loop(indptr: np.ndarray, indices: np.ndarray, mask: np.ndarray,
                        hops: int, out: np.ndarray) -> None:
    """Breadth-first search from every variable of ``mask`` over the graph of a symmetric
    CSR pattern, ``hops`` levels deep: ``out`` marks the variables reached, ``mask``'s
    own included."""
    n = mask.size
    queue = np.empty(n, np.int64)
    tail = 0
    for i in range(n):
        out[i] = mask[i]
        if mask[i]:
            queue[tail] = i
            tail += 1
    head = 0
    for _ in range(hops):
        stop = tail
        if head == stop:
            break
        while head < stop:
            i = queue[head]
            head += 1
            for t in range(indptr[i], indptr[i + 1]):
                j = indices[t]
                if not out[j]:
                    out[j] = True
                    queue[tail] = j
                    tail += 1


_KERNEL: list[Any] = []


def neighbourhood(pattern: Any, mask: np.ndarray, hops: int,
                  out: Optional[np.ndarray] = None) -> np.ndarray:
    """The variables within ``hops`` edges of ``mask`` in the graph of the symmetric sparse
    ``pattern`` (a CSR array: an edge ``i - j`` for each stored entry), ``mask`` included,
    as a new boolean mask (or in ``out``). Compiled by numba; O(the edges of the
    variables reached)."""
    if not _KERNEL:
        import numba

        _KERNEL.append(numba.njit(cache=True, nogil=True)(_neighbourhood_loop))
    result = np.empty(mask.size, dtype=np.bool_) if out is None else out
    _KERNEL[0](pattern.indptr, pattern.indices, np.ascontiguousarray(mask, dtype=np.bool_),
               int(hops), result)
    return result
