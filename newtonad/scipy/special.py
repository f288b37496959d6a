"""``scipy.special`` functions that trace (see :mod:`newtonad.scipy`).

Ufuncs (``erf``, ``expit``, ``gammaln``, ...) are SciPy's own objects: NumPy hands
their calls on traced values to newtonad. ``logsumexp`` (``b=``, ``axis=``,
``keepdims=``, ``return_sign=``), ``softmax``, ``log_softmax`` and ``polygamma``
(constant integer order) are SciPy's functions, routed on traced values.
"""

import scipy.special as _special

from ..ad import numpy_special as _numpy_special
from ._exports import routed_exports as _routed_exports

_UFUNCS = sorted(name for name in _numpy_special.UFUNCS if isinstance(
    getattr(_special, name, None), type(_special.erf)))
globals().update({name: getattr(_special, name) for name in _UFUNCS})
digamma = _special.digamma  # the ufunc is named psi
globals().update(_routed_exports(_special))

__all__ = sorted(set(_UFUNCS) | {"digamma"} | set(_routed_exports(_special)))
