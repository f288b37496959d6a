"""Derivatives the caller gives to ``minimize``, with AD supplying the rest.

``minimize(fun, x0, jac=..., hess=..., hessp=...)`` takes every derivative
option ``scipy.optimize.minimize`` takes. What the caller gives wins, for that
derivative only; :class:`CombinedObjective` presents the result in the
objective protocol the solvers read (``fun``, ``jac``, ``value_and_grad``,
``hessp``, ``linearize_hessp``, ``hess`` and counters):

* the gradient: a callable ``jac(x, *args)``; ``jac=True`` (``fun`` returns
  ``(f, g)``); a finite-difference keyword (:data:`.FD_METHODS`, estimated by
  scipy's estimator); otherwise AD.
* Hessian-vector products: a callable ``hessp(x, p, *args)``, else ``H(x) @ p``
  from a callable ``hess``, finite differences of the gradient
  (``hess="2-point"``, ...) or a quasi-Newton :class:`~scipy.optimize.HessianUpdateStrategy`,
  else AD (forward-over-reverse on ``fun``; with ``jac=True`` on ``fun``'s
  first output). If that AD pass cannot trace ``fun`` and the caller gave the
  gradient, products become forward differences of that gradient, with a
  :class:`HessianFallbackWarning`.
* the dense Hessian (trust-exact): a callable ``hess``, else the estimated or
  quasi-Newton matrix, else the columns ``hessp(x, e_i)``, else AD.

Counters follow scipy: ``nfev`` / ``njev`` count evaluations of the value and the
gradient (finite-difference evaluations included), ``nhev`` counts Hessian
matrices evaluated plus Hessian-vector products asked of ``hessp`` or of AD,
and ``nhvp`` counts every Hessian-vector product, however it was formed.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, Optional

import numpy as np
from scipy.optimize import HessianUpdateStrategy
from scipy.sparse import issparse
from scipy.sparse.linalg import LinearOperator

from ..objective_protocol import Capabilities, as_objective, dense_hessian, function_name
from .finite_diff import (
    FD_METHODS,
    gradient_by_differences,
    hessian_by_differences,
    hessian_product_by_differences,
)

__all__ = ["CombinedObjective", "DirectObjective", "HessianFallbackWarning", "jac_kind",
           "hess_kind", "check_hessp", "gives_derivatives", "given_derivatives",
           "differences_gradient", "NO_DERIVATIVES"]

#: ``given`` of an objective the caller gave no derivative for
NO_DERIVATIVES: dict[str, Any] = {"jac": None, "hess": None, "hessp": None}


class HessianFallbackWarning(UserWarning):
    """Warn that Hessian products are differences of the caller's gradient.

    :func:`newtonad.minimize` issues it when the caller gave the gradient
    (``jac`` callable, ``jac=True`` or a finite-difference keyword) but no
    ``hess`` or ``hessp``, and ``fun`` cannot be traced for exact AD
    Hessian-vector products (``float(x[0])``, a value-dependent ``if``). The
    message gives the first line of the tracing error. The run goes on with
    forward differences of the gradient, as scipy's own methods would.

    See Also
    --------
    ConstraintFallbackWarning : The same fallback for a constraint's Jacobian.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np, newtonad as nad
    >>> from newtonad.solvers import HessianFallbackWarning
    >>> def f(x):
    ...     return float(x[0]) ** 2 + float(x[1]) ** 2  # float() cannot be traced
    >>> def g(x):
    ...     return 2 * x
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     res = nad.minimize(f, np.array([1.0, 2.0]), jac=g, method="trust-ncg")
    >>> [w.category is HessianFallbackWarning for w in caught]
    [True]
    >>> bool(res.success), bool(np.abs(res.x).max() < 1e-6)
    (True, True)
    """


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def jac_kind(jac: Any) -> str:
    """How the gradient is given: ``"ad"``, ``"callable"``, ``"with_fun"`` or ``"fd"``.

    Raises
    ------
    ValueError
        For anything scipy does not document for ``jac`` (a misspelt keyword,
        an array of values): scipy would silently estimate the gradient instead.
    """
    if jac is None or (isinstance(jac, (bool, np.bool_)) and not jac):
        return "ad"
    if isinstance(jac, (bool, np.bool_)):
        return "with_fun"
    if callable(jac):
        return "callable"
    if isinstance(jac, str) and jac in FD_METHODS:
        return "fd"
    raise ValueError(f"jac must be a callable jac(x, *args), True (fun returns (f, g)), one of "
                     f"{', '.join(map(repr, FD_METHODS))}, or None (newtonad's AD gradient); "
                     f"got {_short(jac)}")


def hess_kind(hess: Any) -> str:
    """How the Hessian is given: ``"ad"``, ``"callable"``, ``"fd"`` or ``"update"``.

    Raises
    ------
    ValueError
        For anything else (a misspelt keyword, a matrix instead of a function).
    """
    if hess is None:
        return "ad"
    if isinstance(hess, HessianUpdateStrategy):
        return "update"
    if callable(hess):
        return "callable"
    if isinstance(hess, str) and hess in FD_METHODS:
        return "fd"
    raise ValueError(f"hess must be a callable hess(x, *args), one of "
                     f"{', '.join(map(repr, FD_METHODS))}, a scipy.optimize.HessianUpdateStrategy "
                     f"such as BFGS() or SR1(), or None (newtonad's AD Hessian); got {_short(hess)}"
                     + ("; pass a function that returns the matrix" if isinstance(
                         hess, np.ndarray) else ""))


def check_hessp(hessp: Any) -> None:
    """Raise ``TypeError`` unless ``hessp`` is ``None`` or callable."""
    if hessp is not None and not callable(hessp):
        raise TypeError(f"hessp must be a callable hessp(x, p, *args) -> H(x) @ p, or None "
                        f"(newtonad's AD product); got {type(hessp).__name__} {_short(hessp)}")


def gives_derivatives(jac: Any, hess: Any, hessp: Any) -> bool:
    """Whether the caller gave any derivative (else AD supplies all of them)."""
    return jac_kind(jac) != "ad" or hess is not None or hessp is not None


def _scalar(value: Any, shape: tuple) -> float:
    """``value`` as a float, or a ``ValueError`` naming the shape it had."""
    if np.size(value) != 1:
        raise ValueError(f"fun must return a scalar, but at x of shape {shape} it returned "
                         f"shape {np.shape(value)}; is x0 shaped as fun expects?")
    return float(np.asarray(value, dtype=np.float64).reshape(()))


class _PointCache:
    """The last point and what was computed there (points compared by value)."""

    def __init__(self) -> None:
        self.key: Optional[tuple] = None
        self.items: dict[str, Any] = {}

    def at(self, x: np.ndarray) -> dict[str, Any]:
        key = (x.shape, x.tobytes())
        if key != self.key:
            self.key, self.items = key, {}
        return self.items


class CombinedObjective:
    """The objective protocol from a caller's derivatives plus AD for the missing ones.

    Parameters
    ----------
    fun : callable or objective
        ``fun(x, *args)`` (returning ``(f, g)`` when ``jac`` is True), or an
        object with the objective protocol (``args`` then empty).
    args : tuple
        Extra arguments of ``fun``, ``jac``, ``hess`` and ``hessp``.
    jac, hess, hessp
        As for :func:`newtonad.minimize`; already checked by :func:`jac_kind`,
        :func:`hess_kind` and :func:`check_hessp`.
    make_ad : callable
        ``make_ad(value_fun) -> objective`` builds the AD objective of a plain
        function ``value_fun(x, *args) -> float`` (called once, when AD is first
        needed); unused when ``fun`` already is an objective.
    protocol : bool
        Whether ``fun`` is an objective (has ``fun``, ``jac`` and ``hessp`` or
        ``hess``) rather than a plain function.

    Notes
    -----
    ``x`` has the user's shape throughout; ``hess`` may return a dense array of
    shape ``x.shape + x.shape`` or ``(n, n)``, a scipy sparse matrix or a
    :class:`~scipy.sparse.linalg.LinearOperator`.
    """

    def __init__(self, fun: Any, args: tuple, jac: Any, hess: Any, hessp: Any,
                 make_ad: Callable[[Callable], Any], protocol: bool = False) -> None:
        self.given = {"jac": jac, "hess": hess, "hessp": hessp}
        self.jac_kind = jac_kind(jac)
        self.hess_kind = hess_kind(hess)
        check_hessp(hessp)
        self.args = tuple(args)
        self._protocol = protocol
        if self._protocol and self.jac_kind == "with_fun":
            raise ValueError("jac=True means fun(x) returns (f, gradient), but fun is an "
                             "objective with its own jac; drop jac=True")
        self._make_ad = make_ad
        if self._protocol:  # a hand-written objective: read through the declared interface
            fun = as_objective(fun)
        self._fun = fun
        self._ad: Any = fun if self._protocol else None
        self._values = _PointCache()
        self._matrix = _PointCache()
        self._updates: Optional[tuple[np.ndarray, np.ndarray]] = None  # (x, g) last updated at
        if self.hess_kind == "update":
            self._strategy: Optional[HessianUpdateStrategy] = hess
            self._strategy_ready = False
        #: None until the first Hessian product from AD; then False (AD works) or
        #: True (AD could not trace fun: differences of the caller's gradient)
        self.ad_fallback: Optional[bool] = None
        self._calls = {"nfev": 0, "njev": 0, "nhess": 0, "nhessp": 0, "nhvp": 0}

    # ---- AD ----------------------------------------------------------------------
    def _value_fun(self) -> Callable:
        """The plain function whose AD derivatives are taken."""
        fun = self._fun
        if self.jac_kind != "with_fun":
            return fun

        def first_output(x: Any, *args: Any) -> Any:
            return fun(x, *args)[0]
        first_output.__name__ = function_name(fun)
        return first_output

    @property
    def ad(self) -> Any:
        """The AD objective (built on first use)."""
        if self._ad is None:
            self._ad = self._make_ad(self._value_fun())
        return self._ad

    def _ad_count(self, name: str) -> int:
        if self._ad is None:
            return 0
        return int(self._ad.counters().get(name, 0))

    # ---- value and gradient --------------------------------------------------------
    def _user_value(self, x: np.ndarray) -> float:
        """``f(x)`` from the caller's function (not AD), counted."""
        self._calls["nfev"] += 1
        if self._protocol:
            return float(self._fun.fun(x))
        # a copy, as scipy passes (a fun that writes into x must not move the iterate)
        return _scalar(self._fun(x.copy(), *self.args), x.shape)

    def _with_fun(self, x: np.ndarray, cache: dict) -> None:
        out = self._fun(x.copy(), *self.args)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise ValueError(f"with jac=True, fun(x) must return a tuple (f, gradient); it "
                             f"returned {type(out).__name__} {_short(out)}")
        self._calls["nfev"] += 1
        self._calls["njev"] += 1
        f, g = out
        cache["f"] = _scalar(f, x.shape)
        cache["g"] = np.array(g, dtype=np.float64)

    def value_and_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """``(f(x), ∇f(x))``, each from its source; cached per point."""
        kind = self.jac_kind
        if kind == "ad":
            return self.ad.value_and_grad(x)
        cache = self._values.at(x)
        if "g" not in cache:
            if kind == "with_fun":
                self._with_fun(x, cache)
            else:
                if "f" not in cache:
                    cache["f"] = self._user_value(x)
                self._calls["njev"] += 1
                if kind == "callable":
                    cache["g"] = np.array(self.given["jac"](x.copy(), *self.args),
                                          dtype=np.float64)
                else:
                    cache["g"] = self._fd_gradient(x, cache["f"])
        g = cache["g"]  # a wrong size is reported by the solver, naming both shapes
        return cache["f"], (g.reshape(x.shape) if g.size == x.size else g).copy()

    def _fd_gradient(self, x: np.ndarray, f0: float) -> np.ndarray:
        shape = x.shape

        def flat_fun(z: np.ndarray) -> Any:
            if self._protocol or not np.iscomplexobj(z):
                return self._user_value(z.reshape(shape))
            self._calls["nfev"] += 1  # complex step: keep the imaginary part
            return np.asarray(self._fun(z.reshape(shape), *self.args)).reshape(())
        return gradient_by_differences(flat_fun, x.reshape(-1).astype(np.float64),
                                       self.given["jac"], f0).reshape(shape)

    def fun(self, x: np.ndarray) -> float:
        """``f(x)``."""
        if self.jac_kind == "ad":
            return float(self.ad.fun(x))
        cache = self._values.at(x)
        if "f" not in cache:
            if self.jac_kind == "with_fun":
                self._with_fun(x, cache)
            else:
                cache["f"] = self._user_value(x)
        return cache["f"]

    def seed(self, x: np.ndarray, value: Any) -> None:
        """Take ``value = fun(x)``, already called by the caller, as the value at ``x``
        (counted once), so the solver's first evaluation there costs no call."""
        if self.jac_kind in ("callable", "fd") and not self._protocol and np.size(value) == 1:
            self._calls["nfev"] += 1
            self._values.at(np.array(x, dtype=np.float64))["f"] = _scalar(value, x.shape)

    def jac(self, x: np.ndarray) -> np.ndarray:
        """``∇f(x)``, shaped like ``x``."""
        if self.jac_kind == "ad":
            return self.ad.jac(x)
        return self.value_and_grad(x)[1]

    def _flat_grad(self, shape: tuple) -> Callable[[np.ndarray], np.ndarray]:
        def grad(z: np.ndarray) -> np.ndarray:
            return np.asarray(self.jac(np.reshape(z, shape)), dtype=np.float64).reshape(-1)
        return grad

    # ---- Hessian matrices (callable hess, differences, quasi-Newton) -----------------
    def _matrix_at(self, x: np.ndarray) -> Any:
        """``H(x)`` as the caller's ``hess`` defines it, evaluated once per point."""
        cache = self._matrix.at(x)
        if "H" not in cache:
            n = x.size
            kind = self.hess_kind
            if kind == "callable":
                h = self.given["hess"](x.copy(), *self.args)
                if not (issparse(h) or isinstance(h, LinearOperator)):
                    h = np.asarray(h, dtype=np.float64)
                    if h.size != n * n:
                        raise ValueError(f"hess(x) must return an (n, n) = ({n}, {n}) matrix "
                                         f"for x of shape {x.shape}; it returned shape "
                                         f"{h.shape}")
                    h = h.reshape(n, n)
            elif kind == "fd":
                if self.given["hess"] == "cs" and self.jac_kind not in ("callable", "with_fun"):
                    raise ValueError("hess='cs' differentiates the gradient at complex points; "
                                     "that needs your own complex-safe jac=callable (or use "
                                     "hess='2-point' / '3-point')")
                xf = x.reshape(-1).astype(np.float64)
                h = hessian_by_differences(self._flat_grad(x.shape), xf, self.given["hess"],
                                           np.asarray(self.jac(x)).reshape(-1))
                h = 0.5 * (h + h.T)
            else:
                h = self._quasi_newton(x)
            self._calls["nhess"] += 1
            cache["H"] = h
        return cache["H"]

    def _quasi_newton(self, x: np.ndarray) -> Any:
        """The strategy's matrix, updated with the secant pair from the last point asked."""
        strategy = self._strategy
        assert strategy is not None  # hess_kind "update" set it
        if not self._strategy_ready:
            strategy.initialize(x.size, "hess")
            self._strategy_ready = True
        g = np.asarray(self.jac(x), dtype=np.float64).reshape(-1)
        xf = x.reshape(-1).astype(np.float64)
        if self._updates is not None:
            dx, dg = xf - self._updates[0], g - self._updates[1]
            if np.any(dx):
                strategy.update(dx, dg)
        self._updates = (xf.copy(), g.copy())
        return strategy

    @staticmethod
    def _apply(h: Any, v: np.ndarray, n: int) -> np.ndarray:
        vf = v.reshape(n, -1) if v.size != n else v.reshape(n)
        out = h.dot(vf) if isinstance(h, HessianUpdateStrategy) else h @ vf
        return np.asarray(out, dtype=np.float64).reshape(v.shape)

    @staticmethod
    def _dense(h: Any, n: int) -> np.ndarray:
        if isinstance(h, HessianUpdateStrategy):
            return np.array(h.get_matrix(), dtype=np.float64)
        if issparse(h):
            return h.toarray()
        if isinstance(h, LinearOperator):
            return np.asarray(h @ np.eye(n), dtype=np.float64)
        return np.asarray(h, dtype=np.float64)

    # ---- Hessian-vector products -------------------------------------------------------
    def _user_products(self, x: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        hessp, args, calls = self.given["hessp"], self.args, self._calls

        def apply(v: np.ndarray) -> np.ndarray:
            if v.shape == x.shape:
                calls["nhessp"] += 1
                return np.asarray(hessp(x.copy(), v, *args),
                                  dtype=np.float64).reshape(v.shape)
            columns = [apply(np.ascontiguousarray(v[..., j])) for j in range(v.shape[-1])]
            return np.stack(columns, axis=-1)
        return apply

    def _ad_products(self, x: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        """AD products at ``x``, or differences of the caller's gradient if AD cannot trace.

        Whether AD can trace ``fun`` is learnt from the first product asked for
        (tracing happens there); only a failure then switches to differences, and
        only when the caller gave the gradient (else the gradient fails too).
        """
        if self.ad_fallback:
            return self._difference_products(x)
        try:
            op = self._ad_operator(x)
        except Exception as exc:  # noqa: BLE001 - a tracing failure of user code
            self._fall_back(exc)
            return self._difference_products(x)
        if self.ad_fallback is False:
            return op

        def first_use(v: np.ndarray) -> np.ndarray:
            if self.ad_fallback:
                return self._difference_products(x)(v)
            try:
                out = op(v)
            except Exception as exc:  # noqa: BLE001 - a tracing failure of user code
                self._fall_back(exc)
                return self._difference_products(x)(v)
            self.ad_fallback = False
            return out
        return first_use

    def _fall_back(self, exc: Exception) -> None:
        """Switch Hessian products to differences of the caller's gradient, or re-raise."""
        if self.jac_kind == "ad" or self._protocol or self.ad_fallback is False:
            raise exc
        self.ad_fallback = True
        lines = str(exc).strip().splitlines()
        warnings.warn(
            f"newtonad cannot trace fun for Hessian-vector products "
            f"({type(exc).__name__}: {lines[0] if lines else ''}); they are forward "
            "differences of your gradient instead. For exact products write fun in "
            "traceable NumPy, or pass hessp= or hess=.", HessianFallbackWarning, stacklevel=2)

    def _difference_products(self, x: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        grad = self._flat_grad(x.shape)
        xf = x.reshape(-1).astype(np.float64)
        g0 = np.asarray(self.jac(x), dtype=np.float64).reshape(-1)
        calls = self._calls

        def differences(v: np.ndarray) -> np.ndarray:
            if v.shape == x.shape:
                calls["nhessp"] += 1
                return hessian_product_by_differences(grad, xf, v.reshape(-1),
                                                      g0).reshape(v.shape)
            return np.stack([differences(np.ascontiguousarray(v[..., j]))
                             for j in range(v.shape[-1])], axis=-1)
        return differences

    def _ad_operator(self, x: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        ad = self.ad
        if ad.capabilities.products:
            return ad.linearize_hessp(x)
        h = np.asarray(ad.hess(x), dtype=np.float64).reshape(x.size, x.size)
        return lambda v: self._apply(h, v, x.size)

    def linearize_hessp(self, x: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        """``V -> H(x) V`` for ``V`` of ``x``'s shape or a frame ``x.shape + (k,)``."""
        x = np.array(x, dtype=np.float64)
        if self.given["hessp"] is not None:
            op = self._user_products(x)
        elif self.hess_kind != "ad":
            def op(v: np.ndarray) -> np.ndarray:
                return self._apply(self._matrix_at(x), v, x.size)
        else:
            op = self._ad_products(x)
        calls = self._calls

        def counted(v: np.ndarray) -> np.ndarray:
            v = np.asarray(v, dtype=np.float64)
            calls["nhvp"] += 1 if v.shape == x.shape else v.shape[-1]
            return op(v)
        return counted

    def hessp(self, x: np.ndarray, p: np.ndarray) -> np.ndarray:
        """``H(x) p`` (``p`` of ``x``'s shape, or a frame)."""
        return self.linearize_hessp(x)(p)

    def hess(self, x: np.ndarray) -> np.ndarray:
        """Dense Hessian at ``x``, shape ``x.shape + x.shape``."""
        x = np.array(x, dtype=np.float64)
        n = x.size
        if self.hess_kind != "ad":
            h = self._dense(self._matrix_at(x), n)
        else:  # identity columns, a block at a time: AD frames, or the caller's products
            h = dense_hessian(self.linearize_hessp(x), x.shape)
        return h.reshape(x.shape + x.shape)

    # ---- the objective protocol's declaration and counters -----------------------------------
    #: every method is given (``hess`` from products where the caller gave no matrix)
    capabilities = Capabilities(value_and_grad=True, linearized_products=True, products=True,
                                hess=True)

    def counters(self) -> dict[str, int]:
        """``nfev``, ``njev``, ``nhev`` and ``nhvp`` as the properties below count them."""
        return {"nfev": self.nfev, "njev": self.njev, "nhev": self.nhev, "nhvp": self.nhvp}

    @property
    def nfev(self) -> int:
        """Evaluations of ``f`` (the caller's function, or AD passes when AD gives values)."""
        own = self._calls["nfev"]
        return own + self._ad_count("nfev") if self.jac_kind == "ad" else own

    @property
    def njev(self) -> int:
        """Evaluations of the gradient (the caller's, estimated, or AD's)."""
        own = self._calls["njev"]
        return own + self._ad_count("njev") if self.jac_kind == "ad" else own

    @property
    def nhev(self) -> int:
        """scipy's count: Hessian matrices evaluated plus products asked of hessp or AD."""
        ad = self._ad_count("nhev") if self.hess_kind == "ad" else 0
        return self._calls["nhess"] + self._calls["nhessp"] + ad

    @property
    def nhvp(self) -> int:
        """Hessian-vector products formed, however (columns of dense Hessians included)."""
        return self._calls["nhvp"]


class DirectObjective:
    """``fun`` called directly, as scipy calls it: the objective of the methods that use
    no derivative (Nelder-Mead, Powell, COBYLA, COBYQA), and of scipy's methods that
    difference an untraceable ``fun`` themselves.

    Nothing is traced, so counters, random draws and any Python code in ``fun`` behave
    as under scipy. Each call gets a copy of ``x``. The value at the start, asked for by
    newtonad's start check before scipy runs, is kept for scipy's own first evaluation
    there, which then costs no call: the caller's count of calls equals scipy's ``nfev``.
    """

    given = NO_DERIVATIVES
    #: only ``fun``: scipy differences it itself (its jac=None default)
    capabilities = Capabilities(gradient=False)

    def __init__(self, fun: Callable, args: tuple) -> None:
        self._fun = fun
        self.args = tuple(args)
        self._kept: Optional[list] = None  # [point's bytes, value, uses left]
        self._first = True
        self.nfev = 0

    def counters(self) -> dict[str, int]:
        """``nfev``: the calls of ``fun``."""
        return {"nfev": self.nfev}

    def seed(self, x: np.ndarray, value: Any) -> None:
        """Take ``value = fun(x)``, already called by the caller, as the value at the
        start, for the start check and scipy's first evaluation."""
        self.nfev += 1
        self._first = False
        self._kept = [np.asarray(x, dtype=np.float64).tobytes(), value, 2]

    def fun(self, x: np.ndarray) -> Any:
        """``fun(x, *args)`` as ``fun`` returns it (scipy checks it is a scalar)."""
        x = np.asarray(x)
        kept = self._kept
        if kept is not None:
            if kept[0] == x.tobytes():
                kept[2] -= 1
                if kept[2] == 0:
                    self._kept = None
                return kept[1]
            self._kept = None
        self.nfev += 1
        value = self._fun(x.copy(), *self.args)
        if self._first:
            self._first = False
            self._kept = [x.tobytes(), value, 1]
        return value


def given_derivatives(objective: Any) -> dict[str, Any]:
    """The ``jac``, ``hess`` and ``hessp`` the caller gave for ``objective`` (all ``None``
    unless ``minimize`` built it from the caller's derivatives)."""
    if isinstance(objective, (CombinedObjective, DirectObjective)):
        return objective.given
    return NO_DERIVATIVES


def differences_gradient(objective: Any) -> bool:
    """Whether the gradient of ``objective`` is differenced by newtonad (a
    finite-difference ``jac`` keyword for a method that takes only a callable)."""
    return isinstance(objective, CombinedObjective) and objective.jac_kind == "fd"
