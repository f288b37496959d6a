"""Newton solvers: newton-cg, trust-ncg, trust-krylov, trust-exact, tron and the scipy bridge.

Only :func:`minimize`, :class:`ConstraintFallbackWarning` (issued when a
constraint cannot be traced and scipy's finite differences take over) and
:class:`HessianFallbackWarning` (issued when ``fun`` cannot be traced for
Hessian products and differences of the caller's gradient take over) are
public here. The solvers see an objective through the
protocol of ``newtonad.objective.Objective`` and never import the AD core at
module import time.
"""

from .derivatives import HessianFallbackWarning
from .minimize import minimize
from .scipy_bridge import ConstraintFallbackWarning

__all__ = ["minimize", "ConstraintFallbackWarning", "HessianFallbackWarning"]
