"""The objective interface the solvers read, declared once.

Every native solver and the scipy bridge see an objective through
:class:`.ObjectiveProtocol`: value, gradient, value and gradient in one pass,
Hessian-vector products, the Hessian linearised at a point, the dense Hessian and
counters, plus :class:`.Capabilities` saying which of these the objective computes
itself (the others are derived from them by ``CallableObjective``, or not
offered). An objective that gives sparse Hessians also follows
``SparseHessianObjective``. ``Objective``, ``UntracedObjective`` (the
finite-difference fallback), ``FiniteSum`` and the objectives ``minimize`` builds
from a caller's derivatives implement it; anything else -- an object with ``fun``,
``jac`` and ``hessp`` or ``hess``, or the plain callables themselves -- goes through
the one adapter, :func:`.as_objective` / ``CallableObjective``, so that no
solver asks an objective what it has.

``dense_hessian`` is the one place where a dense Hessian is assembled from
blocks of Hessian-vector products.

This module imports only NumPy: the solvers import it without the AD core.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Protocol

import numpy as np

__all__ = ["Capabilities", "ObjectiveProtocol", "SparseHessianObjective", "CallableObjective",
           "as_objective", "is_objective", "dense_hessian", "function_name", "COUNTERS",
           "HessOperator"]

#: a Hessian linearised at one point: ``V -> H V`` for a vector or a frame of columns
HessOperator = Callable[[np.ndarray], np.ndarray]
#: the counters an objective may keep, as :meth:`.ObjectiveProtocol.counters` names them
COUNTERS = ("nfev", "njev", "nhev", "nhvp")
#: elements of one block of identity columns in ``dense_hessian`` (32 MiB of float64)
BLOCK_ELEMENTS = 2**22


@dataclass(frozen=True)
class Capabilities:
    """What an objective computes itself (the rest of :class:`.ObjectiveProtocol` is
    derived from it, or, for the sparse Hessian, not offered).

    Attributes
    ----------
    gradient : bool
        ``jac`` is available. False only for the objective of the derivative-free
        scipy methods (``fun`` called as scipy calls it; scipy differences it itself).
    value_and_grad : bool
        ``value_and_grad`` is one pass (else it is ``fun`` then ``jac``).
    linearized_products : bool
        ``linearize_hessp`` is the objective's own (else it calls ``hessp``).
    reuse_output : bool
        ``linearize_hessp(x, reuse_output=True)`` is accepted: the returned map may
        write its products into arrays it reuses.
    products : bool
        ``hessp`` (and ``linearize_hessp``) are available.
    hess : bool
        ``hess`` is the objective's own (else it is assembled from products).
    sparse_hess : bool
        The objective follows ``SparseHessianObjective``.
    sparse_requested : bool
        The caller asked for sparse Hessians (``Objective(f, sparse=True)``).
    """

    gradient: bool = True
    value_and_grad: bool = False
    linearized_products: bool = False
    reuse_output: bool = False
    products: bool = False
    hess: bool = False
    sparse_hess: bool = False
    sparse_requested: bool = False


class ObjectiveProtocol(Protocol):
    """A scalar objective on arrays ``x`` of one shape, as the solvers read it.

    Arrays handed to these methods are never modified afterwards by the solvers, so an
    objective may cache on them. What :attr:`capabilities` does not declare is derived
    (``value_and_grad`` as ``fun`` then ``jac``, ``linearize_hessp`` from ``hessp``) or
    raises ``NotImplementedError`` (``hessp`` of an objective without products).
    """

    @property
    def capabilities(self) -> Capabilities:
        """What the objective computes itself."""
        ...

    def fun(self, x: Any) -> float:
        """The value at ``x``."""
        ...

    def jac(self, x: Any) -> np.ndarray:
        """The gradient at ``x``, shaped like ``x``."""
        ...

    def value_and_grad(self, x: Any) -> tuple[float, np.ndarray]:
        """``(fun(x), jac(x))``."""
        ...

    def hessp(self, x: Any, p: Any) -> np.ndarray:
        """``H(x) p`` for ``p`` of ``x``'s shape or a frame ``x.shape + (k,)``."""
        ...

    def linearize_hessp(self, x: Any) -> HessOperator:
        """The map ``V -> H(x) V``, with the work that depends only on ``x`` done once."""
        ...

    def hess(self, x: Any) -> Any:
        """The Hessian at ``x``: dense ``x.shape + x.shape`` or ``(n, n)``, or sparse."""
        ...

    def counters(self) -> dict[str, int]:
        """The evaluations the objective counts itself, by the names of ``COUNTERS``
        (a counter left out is counted by the solver's calls)."""
        ...


class SparseHessianObjective(ObjectiveProtocol, Protocol):
    """An objective that also gives its Hessian as a sparse matrix (``capabilities.
    sparse_hess``): the sparse trust-exact path and the preconditioners read it."""

    def sparse_hess(self, x: Any) -> Any:
        """The Hessian at ``x`` as a scipy sparse ``(n, n)`` matrix."""
        ...

    def hess_sparsity(self, x: Any, max_nnz: Optional[int] = None) -> Any:
        """The Hessian's structural pattern at ``x``'s shape (``max_nnz``: raise
        :class:`~newtonad.ad.sparsity.PatternTooDense` early above that many)."""
        ...


def dense_hessian(products: HessOperator, shape: tuple[int, ...],
                  block_elements: int = BLOCK_ELEMENTS) -> np.ndarray:
    """Return the dense Hessian from products with blocks of identity columns.

    Parameters
    ----------
    products : callable
        ``V -> H V`` for frames ``V`` of shape ``shape + (k,)`` (the Hessian linearised
        at the point).
    shape : tuple of int
        The shape of the objective's argument; ``n`` is its size.
    block_elements : int, optional
        Elements of one block of columns (``n * k``): a block has at least one column
        and at most ``n``.

    Returns
    -------
    ndarray, shape (n, n)
        ``H``, as the products give it (not symmetrised).

    Examples
    --------
    >>> import numpy as np
    >>> from newtonad.objective_protocol import dense_hessian
    >>> A = np.array([[2.0, 1.0], [1.0, 3.0]])
    >>> dense_hessian(lambda V: A @ V, (2,), block_elements=2)
    array([[2., 1.],
           [1., 3.]])
    """
    n = int(np.prod(shape, dtype=np.int64))
    h = np.empty((n, n))
    block = max(1, min(n, block_elements // max(n, 1)))
    for start in range(0, n, block):
        stop = min(n, start + block)
        eye = np.zeros((n, stop - start))
        eye[np.arange(start, stop), np.arange(stop - start)] = 1.0
        h[:, start:stop] = np.asarray(
            products(eye.reshape(tuple(shape) + (stop - start,)))).reshape(n, stop - start)
    return h


def function_name(fun: Any) -> str:
    """The name of a user's function for messages: its ``__name__``, else its type's."""
    return str(getattr(fun, "__name__", type(fun).__name__))


class CallableObjective:
    """The objective protocol from plain callables, as scipy takes them.

    Parameters
    ----------
    fun : callable
        ``fun(x) -> float``.
    jac : callable
        ``jac(x) -> gradient``.
    hessp : callable, optional
        ``hessp(x, p) -> H(x) p`` (``p`` a vector or a frame).
    hess : callable, optional
        ``hess(x) -> H(x)``; without it the Hessian is assembled from ``hessp``.
    value_and_grad : callable, optional
        ``value_and_grad(x) -> (f, g)`` in one pass; without it ``fun`` then ``jac``.
    linearize_hessp : callable, optional
        ``linearize_hessp(x) -> (V -> H(x) V)``; without it each product calls ``hessp``.
    reuse_output : bool, optional
        ``linearize_hessp`` takes ``reuse_output=True``.
    sparse_requested : bool, optional
        The caller asked for sparse Hessians.
    counters : callable, optional
        ``counters() -> dict`` of the evaluations the callables count themselves.

    Raises
    ------
    TypeError
        When neither ``hessp`` nor ``hess`` is given.

    Examples
    --------
    >>> import numpy as np
    >>> from newtonad.objective_protocol import CallableObjective
    >>> obj = CallableObjective(lambda x: x @ x, lambda x: 2 * x, hessp=lambda x, p: 2 * p)
    >>> obj.hess(np.zeros(2))
    array([[2., 0.],
           [0., 2.]])
    >>> obj.capabilities.hess, obj.capabilities.products
    (False, True)
    """

    def __init__(self, fun: Callable, jac: Callable, hessp: Optional[Callable] = None,
                 hess: Optional[Callable] = None, *,
                 value_and_grad: Optional[Callable] = None,
                 linearize_hessp: Optional[Callable] = None, reuse_output: bool = False,
                 sparse_requested: bool = False,
                 counters: Optional[Callable[[], dict[str, int]]] = None) -> None:
        if hessp is None and hess is None and linearize_hessp is None:
            raise TypeError("an objective needs hessp(x, p) or hess(x) beside fun and jac")
        self._fun, self._jac, self._hessp, self._hess = fun, jac, hessp, hess
        self._value_and_grad = value_and_grad
        self._linearize = linearize_hessp
        self._counters = counters
        self._capabilities = Capabilities(
            value_and_grad=value_and_grad is not None,
            linearized_products=linearize_hessp is not None,
            reuse_output=reuse_output and linearize_hessp is not None,
            products=hessp is not None or linearize_hessp is not None,
            hess=hess is not None, sparse_requested=sparse_requested)

    @property
    def capabilities(self) -> Capabilities:
        """What the callables compute (see :class:`.Capabilities`)."""
        return self._capabilities

    def fun(self, x: Any) -> float:
        """``fun(x)``."""
        return self._fun(x)

    def jac(self, x: Any) -> np.ndarray:
        """``jac(x)``."""
        return self._jac(x)

    def value_and_grad(self, x: Any) -> tuple[float, np.ndarray]:
        """``value_and_grad(x)``, or ``(fun(x), jac(x))``."""
        if self._value_and_grad is None:
            return self._fun(x), self._jac(x)
        return self._value_and_grad(x)

    def hessp(self, x: Any, p: Any) -> np.ndarray:
        """``hessp(x, p)``, or a product of the linearised Hessian."""
        if self._hessp is None:
            if self._linearize is None:
                raise NotImplementedError("this objective gives a Hessian, not products")
            return self._linearize(x)(p)
        return self._hessp(x, p)

    def linearize_hessp(self, x: Any, **kwargs: Any) -> HessOperator:
        """``linearize_hessp(x)``, or ``V -> hessp(x, V)``."""
        if self._linearize is not None:
            return self._linearize(x, **kwargs)
        if self._hessp is None:
            raise NotImplementedError("this objective gives a Hessian, not products")
        hessp = self._hessp
        return lambda v: hessp(x, v)

    def hess(self, x: Any) -> Any:
        """``hess(x)``, or the dense Hessian from products (``dense_hessian``)."""
        if self._hess is not None:
            return self._hess(x)
        x = np.asarray(x)
        return dense_hessian(self.linearize_hessp(x), x.shape).reshape(x.shape + x.shape)

    def counters(self) -> dict[str, int]:
        """The callables' own counts (none unless ``counters`` was given)."""
        return {} if self._counters is None else self._counters()


class _SparseCallableObjective(CallableObjective):
    """A ``CallableObjective`` that also gives sparse Hessians."""

    def __init__(self, *args: Any, sparse_hess: Callable, hess_sparsity: Callable,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._sparse_hess, self._hess_sparsity = sparse_hess, hess_sparsity
        caps = self._capabilities
        self._capabilities = Capabilities(**{**caps.__dict__, "sparse_hess": True})

    def sparse_hess(self, x: Any) -> Any:
        """``sparse_hess(x)``."""
        return self._sparse_hess(x)

    def hess_sparsity(self, x: Any, max_nnz: Optional[int] = None) -> Any:
        """``hess_sparsity(x)`` (with ``max_nnz`` when given)."""
        if max_nnz is None:
            return self._hess_sparsity(x)
        return self._hess_sparsity(x, max_nnz=max_nnz)


def is_objective(f: Any) -> bool:
    """Whether ``f`` is an objective rather than a plain function: it declares
    :class:`.Capabilities`, or has callable ``fun``, ``jac`` and ``hessp`` or ``hess``."""
    if isinstance(getattr(f, "capabilities", None), Capabilities):
        return True
    return (callable(getattr(f, "fun", None)) and callable(getattr(f, "jac", None))
            and (callable(getattr(f, "hessp", None)) or callable(getattr(f, "hess", None))))


def _takes_keyword(fn: Any, name: str) -> bool:
    """Whether the callable ``fn`` accepts the keyword argument ``name``."""
    import inspect

    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # a builtin or an odd callable: do not guess
        return False
    return name in params and params[name].kind in (inspect.Parameter.KEYWORD_ONLY,
                                                     inspect.Parameter.POSITIONAL_OR_KEYWORD)


def as_objective(f: Any) -> Any:
    """Return ``f`` in the objective protocol: itself when it declares its
    :class:`.Capabilities`, else a ``CallableObjective`` of its methods.

    The one place where an objective written by hand is asked what it has: ``fun``,
    ``jac``, ``hessp`` or ``hess``; optionally ``value_and_grad``, ``linearize_hessp``
    (with ``reuse_output=``), ``sparse_hess`` with ``hess_sparsity``, ``sparse``, and the
    counters ``nfev``, ``njev``, ``nhev``, ``nhvp`` (integers).

    Parameters
    ----------
    f : object
        An objective (see ``is_objective``).

    Returns
    -------
    ObjectiveProtocol

    Raises
    ------
    TypeError
        When ``f`` has no ``fun`` and ``jac``, or neither ``hessp`` nor ``hess``.
    """
    if isinstance(getattr(f, "capabilities", None), Capabilities):
        return f
    if not is_objective(f):
        raise TypeError(f"{type(f).__name__} is not an objective: it needs fun(x), jac(x) "
                        "and hessp(x, p) or hess(x)")

    def method(name: str) -> Optional[Callable]:
        value = getattr(f, name, None)
        return value if callable(value) else None

    def counters() -> dict[str, int]:
        out = {}
        for name in COUNTERS:
            value = getattr(f, name, None)
            if isinstance(value, (int, np.integer)):
                out[name] = int(value)
        return out

    linearize = method("linearize_hessp")
    kwargs: dict[str, Any] = dict(
        value_and_grad=method("value_and_grad"), linearize_hessp=linearize,
        reuse_output=linearize is not None and _takes_keyword(linearize, "reuse_output"),
        sparse_requested=bool(getattr(f, "sparse", False)), counters=counters)
    sparse_hess, pattern = method("sparse_hess"), method("hess_sparsity")
    args = (f.fun, f.jac, method("hessp"), method("hess"))
    if sparse_hess is not None and pattern is not None:
        return _SparseCallableObjective(*args, sparse_hess=sparse_hess, hess_sparsity=pattern,
                                        **kwargs)
    return CallableObjective(*args, **kwargs)
