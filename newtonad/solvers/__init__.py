"""Newton solvers: newton-cg, trust-ncg, trust-krylov, trust-exact, tron and the scipy bridge.

Only :func:`minimize`, :class:`ConstraintFallbackWarning` (issued when a
constraint cannot be traced and scipy's finite differences take over) and
:class:`HessianFallbackWarning` (issued when ``fun`` cannot be traced for
Hessian products and differences of the caller's gradient take over) are
public here. The solvers see an objective through the declared interface of
:mod:`newtonad.objective_protocol` (methods, counters and the capabilities that
say which it computes) and never import the AD core at module import time.
"""

from .derivatives import HessianFallbackWarning
from .minimize import minimize
from .scipy_bridge import ConstraintFallbackWarning

__all__ = ["minimize", "ConstraintFallbackWarning", "HessianFallbackWarning"]
