"""newtonad: automatic differentiation embedded in Newton solvers.

Write an objective in plain NumPy; newtonad traces it into a program, derives its
gradient and Hessian-vector-product programs by transformation, and feeds them to
Newton solvers or to ``scipy.optimize``.

``import newtonad`` loads only the AD core. ``minimize`` (which needs scipy) and the
``problems`` catalogue are imported on first use (PEP 562 module ``__getattr__``), so
a program that only differentiates starts without them.
"""

from importlib import import_module

from . import numpy
from .ad import scipy_dispatch
from .ad.eager import Var  # Var's public home: the eager graph, whose backward lives there
from .ad.program import Program
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

# Route SciPy's Python-level functions on traced values: wrap the SciPy modules imported
# so far, and watch for the rest (see newtonad.ad.scipy_dispatch).
scipy_dispatch.install()

# public name -> (module, attribute or None for the module itself), imported on first use
_LAZY = {"minimize": ("newtonad.solvers", "minimize"),
         "FiniteSum": ("newtonad.finite_sum", "FiniteSum"),  # imports dask on first use
         "problems": ("newtonad.problems", None)}


def __getattr__(name: str):
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


__all__ = ["FiniteSum", "Objective", "Program", "TraceFallbackWarning", "TracerBoolError", "Var",
           "grad", "hessian", "hessian_sparsity", "hvp", "jacobian", "jacobian_sparsity", "jvp",
           "least_squares", "linearize", "minimize", "numpy", "problems", "trace",
           "value_and_grad", "vjp"]
