"""Finite differences for derivatives the caller asked to be estimated.

``minimize(..., jac="2-point")`` or ``hess="3-point"`` on a native method, and
Hessian products when an objective with a user-supplied gradient cannot be
traced, are estimated here — always by scipy's own estimator
(``scipy.optimize._numdiff.approx_derivative``, the routine behind scipy's
``"2-point"``, ``"3-point"`` and ``"cs"`` keywords), so a step and a scheme
mean what they mean in scipy. scipy does not export that routine publicly; it
is imported in this one module, and a scipy without it raises an
``ImportError`` naming the problem instead of falling back silently.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

__all__ = ["FD_METHODS", "gradient_by_differences", "hessian_by_differences",
           "hessian_product_by_differences"]

#: the finite-difference keywords scipy accepts for ``jac`` and ``hess``
FD_METHODS = ("2-point", "3-point", "cs")


def _approx_derivative() -> Callable:
    try:
        from scipy.optimize._numdiff import approx_derivative
    except ImportError as exc:  # pragma: no cover - every scipy >= 1.1 has it
        raise ImportError("newtonad estimates finite-difference derivatives with scipy's "
                          "scipy.optimize._numdiff.approx_derivative, which this scipy lacks "
                          f"({exc}); give jac / hess as callables instead") from None
    return approx_derivative


def gradient_by_differences(fun: Callable[[np.ndarray], float], x: np.ndarray, method: str,
                            f0: float) -> np.ndarray:
    """Gradient of ``fun`` at flat ``x`` by scipy's scheme ``method`` (relative step).

    Parameters
    ----------
    fun : callable
        ``fun(x) -> float`` on flat vectors.
    x : ndarray
        Point, shape (n,).
    method : {"2-point", "3-point", "cs"}
        scipy's finite-difference scheme.
    f0 : float
        ``fun(x)``, already known (saves one evaluation).

    Returns
    -------
    ndarray
        Shape (n,).
    """
    f0 = None if method == "cs" else f0  # scipy's complex step takes no f0
    return np.asarray(_approx_derivative()(fun, x, method=method, f0=f0),
                      dtype=np.float64).reshape(x.shape)


def hessian_by_differences(grad: Callable[[np.ndarray], np.ndarray], x: np.ndarray,
                           method: str, g0: np.ndarray) -> np.ndarray:
    """Dense Hessian at flat ``x`` as the Jacobian of ``grad`` by scipy's ``method``.

    This is what scipy does for ``hess="2-point"`` (n or 2n gradient evaluations
    besides ``g0 = grad(x)``). The result is not symmetrised; callers that need
    symmetry do it.
    """
    n = x.size
    f0 = None if method == "cs" else g0
    return np.asarray(_approx_derivative()(grad, x, method=method, f0=f0),
                      dtype=np.float64).reshape(n, n)


def hessian_product_by_differences(grad: Callable[[np.ndarray], np.ndarray], x: np.ndarray,
                                   p: np.ndarray, g0: np.ndarray) -> np.ndarray:
    """``H(x) p`` as the forward difference of ``grad`` along ``p`` (one gradient).

    The derivative of ``t -> grad(x + t u)`` at 0 for the unit vector
    ``u = p / ||p||`` is taken by scipy's "2-point" scheme (so scipy picks the
    step), then scaled by ``||p||``; ``g0`` is ``grad(x)``, already known.
    """
    norm = math.sqrt(float(p @ p))
    if norm == 0.0:
        return np.zeros_like(x)
    u = p / norm

    def along(t: np.ndarray) -> np.ndarray:
        return grad(x + t[0] * u)

    column = _approx_derivative()(along, np.zeros(1), method="2-point", f0=g0)
    return norm * np.asarray(column, dtype=np.float64).reshape(x.shape)
