"""newtonad: automatic differentiation embedded in Newton solvers.

Write an objective in plain NumPy; newtonad traces it into a program, derives its
gradient and Hessian-vector-product programs by transformation, and feeds them to
Newton solvers or to ``scipy.optimize``.
"""

from . import numpy
from .ad.program import Program
from .ad.trace import TracerBoolError, Var
from .api import grad, hessian, hvp, jacobian, jvp, linearize, trace, value_and_grad, vjp
from .objective import Objective
from .solvers import minimize
from . import problems

__version__ = "0.1.0"

__all__ = ["Objective", "Program", "TracerBoolError", "Var", "grad", "hessian", "hvp",
           "jacobian", "jvp", "linearize", "minimize", "numpy", "problems", "trace",
           "value_and_grad", "vjp"]
