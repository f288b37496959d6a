"""What a method costs at size n, and the up-front warning ``newtonad solve`` prints.

The Newton methods that take Hessian-vector products (newton-cg, trust-ncg,
trust-krylov) cost a few gradients' worth per product at any n. The others carry
something that grows faster:

* trust-exact and dogleg build the dense n x n Hessian at every iterate (n
  Hessian-vector products, 8 n^2 bytes) and factorise it, O(n^3), several times
  when the trust region shrinks -- unless ``newtonad.minimize``'s trust-exact takes
  its sparse path (a large n and a sparse Hessian pattern), which the caller says
  (``hessian="sparse"``); on the NumPy reference engine the n products of a dense
  Hessian are slow from a few hundred variables on;
* BFGS keeps a dense n x n inverse-Hessian approximation, O(n^2) per iteration;
* the derivative-free methods need a number of evaluations that grows with n.
"""

from __future__ import annotations

from typing import Optional

from .table import fmt_bytes

__all__ = ["DENSE_HESSIAN", "cost_warning"]

#: methods (scipy's names) that build and factorise the dense Hessian
DENSE_HESSIAN = frozenset({"trust-exact", "dogleg"})
_DENSE_QUASI_NEWTON = frozenset({"bfgs"})
_DERIVATIVE_FREE = frozenset({"nelder-mead", "powell", "cobyla", "cobyqa"})

# sizes above which each kind of method is slow enough to warn about
DENSE_HESSIAN_N = 2_000
#: the same on the NumPy reference engine (the demo's), whose products are slower
DENSE_HESSIAN_N_NUMPY = 200
DENSE_QUASI_NEWTON_N = 5_000
DERIVATIVE_FREE_N = 50

_CHEAP = "trust-krylov, trust-ncg and newton-cg need only Hessian-vector products"


def cost_warning(method: str, n: int, *, hessian: Optional[str] = "dense",
                 engine: Optional[str] = None) -> Optional[str]:
    """A sentence on why ``method`` is slow at size ``n``, or ``None`` when it is not.

    Parameters
    ----------
    method : str
        A method as :func:`newtonad.cli.methods.resolve_method` returns it
        (``"scipy:"`` prefix allowed).
    n : int
        Number of variables.
    hessian : {"dense", "sparse", None}
        The Hessian the run forms (:func:`newtonad.cli.runs.hessian_kind`): a sparse
        one is cheap, and no warning is given for it.
    engine : str, optional
        The AD engine; ``"numpy"`` makes a dense Hessian slow at a smaller n.

    Examples
    --------
    >>> cost_warning("trust-ncg", 10**6) is None
    True
    >>> print(cost_warning("trust-exact", 5000))  # doctest: +ELLIPSIS
    trust-exact at n = 5000 builds a dense 5000 x 5000 Hessian at every iterate (200 MB, ...
    """
    meth = method.removeprefix("scipy:")
    dense_n = DENSE_HESSIAN_N_NUMPY if engine == "numpy" else DENSE_HESSIAN_N
    if meth in DENSE_HESSIAN and hessian != "sparse" and n > dense_n:
        return (f"{meth} at n = {n} builds a dense {n} x {n} Hessian at every iterate "
                f"({fmt_bytes(8 * n * n)}, {n} Hessian-vector products) and factorises it "
                f"(~{n ** 3 / 3:.1e} flops per factorisation, several per iteration when the "
                f"trust region shrinks): expect seconds to minutes per iteration; {_CHEAP}")
    if meth in _DENSE_QUASI_NEWTON and n > DENSE_QUASI_NEWTON_N:
        return (f"{meth} at n = {n} updates a dense {n} x {n} inverse-Hessian approximation "
                f"({fmt_bytes(8 * n * n)}, ~{2.0 * n * n:.1e} flops per iteration); "
                f"l-bfgs-b keeps a few vectors instead, and {_CHEAP}")
    if meth in _DERIVATIVE_FREE and n > DERIVATIVE_FREE_N:
        return (f"{meth} uses no derivatives: the evaluations it needs grow quickly with "
                f"n = {n}; a method using newtonad's exact gradient (l-bfgs-b, trust-krylov) "
                "needs far fewer")
    return None
