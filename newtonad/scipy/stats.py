"""``scipy.stats`` distributions whose methods trace (see :mod:`newtonad.scipy`).

``norm``: ``logpdf``, ``pdf``, ``cdf``, ``logcdf``, ``sf``, ``logsf`` with ``loc`` and
``scale`` constant or traced; ``t``: ``logpdf``, ``pdf`` (``df``, ``loc``, ``scale``
constant or traced); ``multivariate_normal``: ``logpdf``, ``pdf`` (``mean`` and ``cov``
constant or traced). These are SciPy's own distribution objects: the methods above are
routed on traced values, the others are SciPy's and need concrete numbers.
"""

import scipy.stats as _stats

from ._exports import routed_exports as _routed_exports

globals().update(_routed_exports(_stats))

__all__ = sorted(_routed_exports(_stats))
