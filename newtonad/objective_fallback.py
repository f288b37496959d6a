"""An :class:`~newtonad.objective.Objective` whose function cannot be traced: called directly.

When tracing ``f`` raises at a point where calling it works (``float(x[0])``, random
draws, an unsupported library function, compiled code), the Objective warns once
(:class:`~newtonad.TraceFallbackWarning`, naming the reason and the line) and becomes
an ``UntracedObjective``: ``fun`` calls ``f`` as scipy calls it, the gradient is
scipy's ``'2-point'`` difference of ``f`` and Hessian products are forward differences
of that gradient (scipy's estimator, ``scipy.optimize._numdiff.approx_derivative``).
The counters count the calls of ``f``. The derivative functions (``nad.grad``, ...)
never do this: they promise exact derivatives.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ._programs import as_frame
from .objective_protocol import dense_hessian

__all__ = ["UntracedMethods"]

#: The relative step of the difference of gradients in a Hessian product (see _product).
_PRODUCT_STEP = 1e-4
#: What the warning says is done instead.
INSTEAD = ("scipy's '2-point' finite differences for the gradient and forward differences "
           "of that gradient for Hessian products")


def _approx_derivative() -> Callable:
    from scipy.optimize._numdiff import approx_derivative

    return approx_derivative


class UntracedMethods:
    """The methods of an Objective on finite differences of ``f`` called directly (see
    the module): :mod:`newtonad.objective` puts them before ``Objective``'s in the class
    ``UntracedObjective`` (so this module need not import that one)."""

    # provided by the Objective
    f: Callable
    args: tuple
    sparse: bool
    nfev: int
    njev: int
    nhev: int

    if TYPE_CHECKING:  # a stub here would come before Objective's in the class
        def _check(self, x: Any) -> np.ndarray: ...

    def _start_direct(self, x: np.ndarray, value: Any) -> None:
        """Keep ``value = f(x)`` from the call that showed ``f`` evaluates."""
        self.nfev += 1
        #: (shape, bytes, f, gradient or None) at the last point
        self._last: tuple[Any, bytes, float, Any] = (
            x.shape, x.tobytes(), float(np.asarray(value).reshape(())), None)

    def _value(self, x: np.ndarray) -> float:
        last = getattr(self, "_last", None)
        if last is not None and last[0] == x.shape and last[1] == x.tobytes():
            return last[2]
        value = float(np.asarray(self.f(x.copy(), *self.args)).reshape(()))
        self.nfev += 1
        self._last = (x.shape, x.tobytes(), value, None)
        return value

    def _gradient(self, x: np.ndarray) -> np.ndarray:
        value = self._value(x)
        last = self._last
        if last[3] is not None:
            return last[3].copy()
        flat = x.reshape(-1)
        grad = np.asarray(_approx_derivative()(
            lambda z: self._counted(z.reshape(x.shape)), flat, method="2-point", f0=value),
            dtype=np.float64).reshape(x.shape)
        self.njev += 1
        self._last = (*last[:3], grad)
        return grad.copy()

    def _counted(self, x: np.ndarray) -> float:
        self.nfev += 1
        return float(np.asarray(self.f(x.copy(), *self.args)).reshape(()))

    def fun(self, x: Any) -> float:  # noqa: D102 (Objective.fun's docstring)
        return self._value(self._check(x))

    def jac(self, x: Any) -> np.ndarray:  # noqa: D102
        return self._gradient(self._check(x))

    def value_and_grad(self, x: Any) -> tuple[float, np.ndarray]:  # noqa: D102
        x = self._check(x)
        return self._value(x), self._gradient(x)

    def _product(self, x: np.ndarray, g0: np.ndarray, p: np.ndarray) -> np.ndarray:
        """``H p`` as the forward difference of the differenced gradient along ``p``.

        The gradient carries an error of about sqrt(eps) (relative), so the step is the
        square root of that, 1e-4 relative to x: the truncation and the rounding errors
        balance there (a step of sqrt(eps) would difference the gradient's own noise).
        """
        norm = math.sqrt(float(np.vdot(p, p)))
        self.nhev += 1
        if norm == 0.0:
            return np.zeros_like(x)
        step = _PRODUCT_STEP * max(1.0, float(np.max(np.abs(x), initial=0.0)))
        moved = self._gradient_at(x + (step / norm) * p)
        return (moved.reshape(x.shape) - g0) * (norm / step)

    def _gradient_at(self, x: np.ndarray) -> np.ndarray:
        """The gradient at a point of a difference, without replacing the kept point."""
        kept = self._last
        try:
            return self._gradient(x).reshape(-1)
        finally:
            self._last = kept

    def hessp(self, x: Any, p: Any) -> np.ndarray:  # noqa: D102
        x = self._check(x)
        return self.linearize_hessp(x)(p)

    def linearize_hessp(self, x: Any, *, reuse_output: bool = False
                        ) -> Callable[[np.ndarray], np.ndarray]:  # noqa: D102
        x = self._check(x).copy()
        g0 = self._gradient(x)

        def hessp_at_x(V: Any) -> np.ndarray:
            V, k = as_frame(V, x.shape, "p")
            V = np.asarray(V, dtype=np.float64)
            if k is None:
                return self._product(x, g0, V)
            return np.stack([self._product(x, g0, V[..., j]) for j in range(k)], axis=-1)
        return hessp_at_x

    def hess(self, x: Any) -> Any:  # noqa: D102
        x = self._check(x)
        n = x.size
        # one frame of all n columns: the products are differences, no kernel to size
        H = dense_hessian(self.linearize_hessp(x), x.shape, block_elements=n * n)
        H = 0.5 * (H + H.T)
        if self.sparse:
            import scipy.sparse

            return scipy.sparse.csr_array(H)
        return H.reshape(x.shape + x.shape)

    def sparse_hess(self, x: Any) -> Any:  # noqa: D102
        import scipy.sparse

        x = self._check(x)
        return scipy.sparse.csr_array(np.asarray(self.hess(x)).reshape(x.size, x.size))

    def hess_sparsity(self, x: Any, max_nnz: int | None = None) -> Any:  # noqa: D102
        import scipy.sparse

        x = self._check(x)
        return scipy.sparse.csr_array(np.ones((x.size, x.size), dtype=bool))
