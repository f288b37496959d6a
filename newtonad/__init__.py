"""newtonad: automatic differentiation embedded in Newton solvers.

Write an objective in plain NumPy; newtonad traces it into a program, derives its
gradient and Hessian-vector-product programs by transformation, and feeds them to
Newton solvers or to ``scipy.optimize``.

``import newtonad`` loads only the AD core. ``minimize`` (which needs scipy),
``FiniteSum`` (dask) and the ``problems`` catalogue are imported on first use (PEP 562
module ``__getattr__``), so a program that only differentiates starts without them;
type checkers read the same names from the ``TYPE_CHECKING`` imports below.

``import newtonad`` also routes SciPy's Python-level functions it differentiates
(``scipy.special.logsumexp``, ``scipy.stats.norm.logpdf``, ``scipy.linalg.cho_solve``, ...)
on traced values: see :func:`scipy_routing`, which turns that off (as does
``NEWTONAD_SCIPY_ROUTING=0`` at import).
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from . import numpy
from ._programs import PathsWarning
from ._settings import Settings, settings
from .ad import scipy_dispatch
from .ad.eager import Var  # Var's public home: the eager graph, whose backward lives there
from .ad.program import Program
from .ad.scipy_dispatch import scipy_routing
from .ad.tracer_errors import ImpureFunctionError
from .ad.var import TracerBoolError
from .api import (
    grad,
    hessian,
    hessian_sparsity,
    hvp,
    jacobian,
    jacobian_sparsity,
    jvp,
    linearize,
    trace,
    value_and_grad,
    vjp,
)
from .fallback import TraceFallbackWarning

# least_squares imports scipy only when called; the function shadows its module's name
from .least_squares import least_squares
from .objective import Objective

__version__ = "0.1.0"

# Route SciPy's Python-level functions on traced values (unless NEWTONAD_SCIPY_ROUTING=0):
# wrap the SciPy modules imported so far, and watch for the rest (newtonad.ad.scipy_dispatch).
scipy_dispatch.install()

if TYPE_CHECKING:  # what __getattr__ returns, for type checkers; imported lazily at run time
    from . import problems
    from .finite_sum import FiniteSum
    from .solvers.minimize import minimize

# public name -> (module, attribute or None for the module itself), imported on first use
_LAZY = {"minimize": ("newtonad.solvers", "minimize"),
         "FiniteSum": ("newtonad.finite_sum", "FiniteSum"),  # imports dask on first use
         "problems": ("newtonad.problems", None)}


def __getattr__(name: str) -> Any:
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'newtonad' has no attribute {name!r}") from None
    value = import_module(module)
    if attr is not None:
        value = getattr(value, attr)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = ["FiniteSum", "ImpureFunctionError", "Objective", "PathsWarning", "Program",
           "Settings", "TraceFallbackWarning", "TracerBoolError", "Var",
           "grad", "hessian", "hessian_sparsity", "hvp", "jacobian", "jacobian_sparsity", "jvp",
           "least_squares", "linearize", "minimize", "numpy", "problems", "scipy_routing",
           "settings", "trace", "value_and_grad", "vjp"]
