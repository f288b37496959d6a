"""The table of native methods: one :class:`NativeMethod` entry per method.

Everything the rest of newtonad needs to know about a native method is its entry
here: the module that runs it, the options it accepts (scipy's names for scipy's
method of the same name, plus newtonad's own) and those it accepts and ignores,
what it asks of the objective (gradient, Hessian-vector products, a Hessian
matrix, bounds), whether scipy has a method of the same name, and how it reports
a failed run. :func:`newtonad.minimize`, option validation
(:mod:`.options`), the command line (:mod:`newtonad.cli.runs`) and the
documentation's method table (:func:`method_table_rst`) all read :data:`METHODS`.

Adding a method is its own module, with a function
``run_native(problem, x0, opts, callback, bounds=None) -> OptimizeResult``, and one
entry below. The modules are named, not imported: nothing is imported until a
method runs, and the method modules never import this table.

The default for ``method=None`` (:func:`default_method`, then :func:`refine_default`):

* with constraints, ``"SLSQP"``; with bounds only, ``"L-BFGS-B"``: scipy's choices, so
  that code written for scipy gets what it got there (``"tron"`` is available by name;
  on the MINPACK-2 grid problems at n = 10 000 it took 0.5-1.2 s against L-BFGS-B's
  4-15 s, at a smaller projected gradient);
* otherwise ``"newton-cg"`` with ``preconditioner="ichol"`` when ``n`` is at least
  :data:`PRECONDITION_FROM`, the objective gives sparse Hessians (a newtonad
  ``Objective``) with at most :data:`PRECONDITION_MAX_NNZ` ``× n`` non-zeros, and the
  caller's options are all newton-cg's and name no preconditioner;
* else :data:`DEFAULT_METHOD` (``"trust-ncg"``), scipy's radius rules and no
  preconditioner.

Measured with ``benchmarks/preconditioner_report.py`` (exact derivatives, numba engine,
this 2-core machine under load, so times are rough): on minimal-surface trust-ncg takes
1485 iterations at n = 10 000 (7.2 s) and its products per Newton step grow with the
grid, while newton-cg with ichol takes 10 (0.35 s, 19 products per step), and 13 at
n = 65 536 (36 products per step against 578 for unpreconditioned newton-cg); on
broyden-tridiagonal at n = 10 000, 5 iterations against trust-ncg's 11 in about the same
time. On chained Rosenbrock at n = 10 000 none of trust-ncg, newton-cg or newton-cg with
ichol converged within 3000 iterations, and the factorisation made each iteration about
8 times dearer. On the small problems (n <= 1000: arwhead, bard, beale, biggs-exp6,
box-3d) the factorisation never paid, hence the threshold.
Each method, the scipy ones included, stays available by name.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable, Optional

__all__ = ["NativeMethod", "METHODS", "NATIVE_METHODS", "DEFAULT_METHOD", "method",
           "is_native", "default_method", "refine_default", "method_table_rst",
           "method_rows", "PRECONDITIONERS", "PRECONDITION_FROM", "PRECONDITION_MAX_NNZ"]

#: values of the ``preconditioner`` option of the Newton-CG-type methods
PRECONDITIONERS = (None, "diagonal", "ichol")

#: options every native method takes
_COMMON = frozenset({"gtol", "maxiter", "disp", "return_all", "max_time"})
#: options of scipy's trust-region methods (each accepts the others' silently)
_TRUST = _COMMON | {"initial_trust_radius", "max_trust_radius", "eta", "inexact",
                    "subproblem_maxiter", "workers"}


@dataclass(frozen=True)
class NativeMethod:
    """One native method: how it runs and what it needs.

    Attributes
    ----------
    name : str
        The name ``minimize`` takes (lower case).
    summary : str
        One line for the documentation's table.
    module : str
        The module (under ``newtonad.solvers``) whose ``run_native`` runs it.
    driver : str
        The outer iteration: ``"line search"`` or ``"trust region"``.
    subproblem : str
        How a step is found (for the documentation).
    accepted : frozenset of str
        Option names taken without a warning.
    ignored : frozenset of str
        Accepted names that have no effect (dropped before the solver sees them).
    needs : frozenset of str
        What the method asks of the objective: ``"gradient"``, ``"products"``
        (Hessian-vector products), ``"hessian"`` (a Hessian matrix).
    bounds : bool
        Whether it handles ``bounds`` (the others warn and ignore them, as scipy's do).
    scipy_peer : bool
        Whether ``scipy.optimize.minimize`` has a method of the same name (the command
        line's demo compares the two).
    dense_hessian_count : bool
        Whether ``nhev`` counts Hessian matrices formed (as scipy counts for
        trust-exact) rather than products.
    failure_warning : str
        The category of the warning a failed run gives under ``disp``, as scipy's
        method gives it: ``"OptimizeWarning"`` or ``"RuntimeWarning"``.
    constraints : bool
        Whether it handles ``constraints``. Such a method works on the function itself
        (it builds its own objective, such as an augmented Lagrangian): its module has
        ``run_constrained(fun, x0, args, constraints, bounds, callback, opts)`` instead
        of ``run_native``.
    """

    name: str
    summary: str
    module: str
    driver: str
    subproblem: str
    accepted: frozenset
    ignored: frozenset
    needs: frozenset
    bounds: bool = False
    scipy_peer: bool = True
    dense_hessian_count: bool = False
    failure_warning: str = "RuntimeWarning"
    constraints: bool = False

    @property
    def uses_products(self) -> bool:
        """Whether the method works with Hessian-vector products."""
        return "products" in self.needs

    def runner(self) -> Callable[..., Any]:
        """The method's ``run_native``, or ``run_constrained`` for a method of
        constraints (its module imported on first use)."""
        module = importlib.import_module(f"{__package__}.{self.module}")
        return module.run_constrained if self.constraints else module.run_native


_ENTRIES = (
    NativeMethod(
        "newton-cg", "truncated Newton: CG on H p = -g with quadratic forcing and negative "
        "curvature, then a strong Wolfe line search",
        "newton_cg", "line search", "truncated CG (optionally preconditioned)",
        accepted=_COMMON | {"xtol", "eps", "c1", "c2", "workers", "preconditioner"},
        ignored=frozenset({"eps", "workers"}), needs=frozenset({"gradient", "products"}),
        failure_warning="OptimizeWarning"),
    NativeMethod(
        "trust-ncg", "trust region, Steihaug–Toint truncated CG subproblem",
        "steihaug", "trust region", "Steihaug–Toint CG (optionally preconditioned)",
        accepted=_TRUST | {"preconditioner"},
        ignored=frozenset({"workers", "inexact", "subproblem_maxiter"}),
        needs=frozenset({"gradient", "products"})),
    NativeMethod(
        "trust-krylov", "trust region, generalised Lanczos (GLTR) subproblem",
        "gltr", "trust region", "GLTR Lanczos (optionally preconditioned)",
        accepted=_TRUST | {"preconditioner"},
        ignored=frozenset({"workers", "subproblem_maxiter"}),
        needs=frozenset({"gradient", "products"})),
    NativeMethod(
        "trust-exact", "trust region, Moré–Sorensen on the dense or sparse Hessian",
        "sparse_exact", "trust region", "Moré–Sorensen (Cholesky of H + λI)",
        accepted=_TRUST, ignored=frozenset({"workers", "inexact"}),
        needs=frozenset({"gradient", "hessian"}), dense_hessian_count=True),
    NativeMethod(
        "tron", "bound-constrained trust-region Newton (Lin & Moré 1999): projected "
        "Cauchy point, subspace CG, projected search",
        "tron", "trust region", "projected Cauchy search + Steihaug CG on the free variables",
        accepted=_COMMON | {"initial_trust_radius", "max_trust_radius", "preconditioner",
                            "workers"},
        ignored=frozenset({"workers"}), needs=frozenset({"gradient", "products"}),
        bounds=True, scipy_peer=False),
    NativeMethod(
        "auglag", "augmented Lagrangian for equality and inequality constraints "
        "(ALGENCAN's outer iteration, Andreani et al. 2007); bounds kept as bounds",
        "auglag", "augmented Lagrangian", "tron over the bounds (incomplete Cholesky when "
        "the Hessian is sparse)",
        accepted=_COMMON | {"ctol", "inner_maxiter", "inner_method", "inner_options",
                            "initial_penalty", "max_penalty"},
        ignored=frozenset({"return_all"}), needs=frozenset({"gradient", "products"}),
        bounds=True, scipy_peer=False, constraints=True),
)

#: every native method by name, in the order the documentation lists them
METHODS: dict[str, NativeMethod] = {entry.name: entry for entry in _ENTRIES}
#: the names of the native methods
NATIVE_METHODS: tuple[str, ...] = tuple(METHODS)
#: newtonad's choice when neither bounds nor constraints are given (scipy's is BFGS)
DEFAULT_METHOD = "trust-ncg"


def method(name: str) -> NativeMethod:
    """The entry of the native method ``name`` (lower case), or ``KeyError``."""
    return METHODS[name]


def is_native(name: str) -> bool:
    """Whether ``name`` (lower case) is a native method."""
    return name in METHODS


def default_method(bounds: Any = None, constraints: Any = ()) -> str:
    """What ``method=None`` runs (see the module docstring for the rule).

    ``constraints`` must already be a plain truth value or sequence (``minimize``
    turns an array of them into a list first).
    """
    if constraints:
        return "SLSQP"
    if bounds is not None:
        return "L-BFGS-B"
    return DEFAULT_METHOD


#: from this many variables ``method=None`` may choose preconditioned newton-cg
PRECONDITION_FROM = 10_000
#: ... when the Hessian has at most this many non-zeros per variable
PRECONDITION_MAX_NNZ = 64


def refine_default(problem: Any, x0: Any, options: Any) -> tuple[str, dict]:
    """The method and the extra options ``method=None`` runs without bounds or
    constraints, given the :class:`.FlatProblem`, the flat ``x0`` and the caller's
    ``options`` (see the module docstring for the rule).
    """
    opts = dict(options or {})
    if problem.n < PRECONDITION_FROM or "preconditioner" in opts:
        return DEFAULT_METHOD, {}
    if any(name not in METHODS["newton-cg"].accepted for name in opts):
        return DEFAULT_METHOD, {}
    if not problem.sparse_hessian_fits(x0, PRECONDITION_MAX_NNZ * problem.n):
        return DEFAULT_METHOD, {}
    return "newton-cg", {"preconditioner": "ichol"}


def method_rows() -> list[dict[str, str]]:
    """One row per native method for a documentation table.

    Returns
    -------
    list of dict
        Keys ``method``, ``driver``, ``subproblem``, ``needs``, ``bounds``,
        ``scipy``, ``options`` and ``summary``, all strings.
    """
    rows = []
    for entry in METHODS.values():
        effective = sorted(entry.accepted - entry.ignored)
        rows.append({
            "method": entry.name, "driver": entry.driver, "subproblem": entry.subproblem,
            "needs": ", ".join(sorted(entry.needs)), "bounds": "yes" if entry.bounds else "no",
            "scipy": entry.name if entry.scipy_peer else "",
            "options": ", ".join(effective), "summary": entry.summary})
    return rows


def method_table_rst(columns: Optional[tuple[str, ...]] = None) -> str:
    """The native methods as an reStructuredText ``list-table`` (for the docs).

    Parameters
    ----------
    columns : tuple of str, optional
        Keys of :func:`method_rows` to show; default all but ``summary``.

    Examples
    --------
    >>> print(method_table_rst(("method", "bounds")).splitlines()[0])
    .. list-table:: Native methods
    """
    columns = columns or ("method", "driver", "subproblem", "needs", "bounds", "scipy",
                          "options")
    lines = [".. list-table:: Native methods", "   :header-rows: 1", ""]
    for row in [{c: c for c in columns}, *method_rows()]:
        for j, column in enumerate(columns):
            lead = "   * - " if j == 0 else "     - "
            lines.append(lead + (row[column] or "—"))
    return "\n".join(lines) + "\n"
