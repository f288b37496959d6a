"""``scipy.linalg`` functions that trace (see :mod:`newtonad.scipy`): those
:mod:`newtonad.ad.numpy_linalg` implements, as SciPy's own functions, routed."""

import scipy.linalg as _linalg

from ._exports import routed_exports as _routed_exports

globals().update(_routed_exports(_linalg))

__all__ = sorted(_routed_exports(_linalg))
