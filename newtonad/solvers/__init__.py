"""Newton solvers: newton-cg, trust-ncg, trust-krylov, trust-exact and the scipy bridge.

Only :func:`minimize` is public here. The solvers see an objective through the
protocol of ``newtonad.objective.Objective`` and never import the AD core at
module import time.
"""

from .minimize import minimize

__all__ = ["minimize"]
