"""An explicit NumPy-like namespace: ``import newtonad.numpy as nnp``.

The same functions that ``np.*`` calls reach on traced arrays, by name, plus a few
that NumPy lacks (``logsumexp``, ``stop_gradient``). On plain arrays they return plain
NumPy results.

The namespace is generated: every function of the NumPy layer names its place here where
it is defined (``@numpy_function(np.sum, ...)`` puts it in as ``sum``; ``name=("max",
"amax")`` under both names, ``name="linalg.solve"`` in ``linalg``), and this module copies
:data:`newtonad.ad.dispatch.NAMESPACE` once the layer is loaded. Type checkers cannot run
that, so they read the ``TYPE_CHECKING`` block below instead: star imports of the family
modules (a new function there is visible with no change here) and the aliases, which a
test keeps equal to the generated namespace.
"""

import types as _types
import typing as _typing

from .ad import numpy_api as _numpy_api  # noqa: F401  (loads the families: they register)
from .ad import numpy_linalg as _numpy_linalg  # noqa: F401
from .ad import numpy_special as _numpy_special  # noqa: F401
from .ad.dispatch import NAMESPACE as _NAMESPACE


def _generated() -> dict[str, _typing.Any]:
    """The registered names, dotted ones (``linalg.solve``) gathered into sub-namespaces."""
    names: dict[str, _typing.Any] = {}
    subs: dict[str, dict[str, _typing.Any]] = {}
    for name, fn in _NAMESPACE.items():
        home, _, attr = name.rpartition(".")
        if home:
            subs.setdefault(home, {})[attr] = fn
        else:
            names[name] = fn
    names.update({home: _types.SimpleNamespace(**fns) for home, fns in subs.items()})
    return names


globals().update(_generated())

if _typing.TYPE_CHECKING:  # what _generated() gives, as static imports for type checkers
    from .ad.numpy_base import *  # noqa: F403
    from .ad.numpy_contractions import *  # noqa: F403
    from .ad.numpy_elementwise import *  # noqa: F403
    from .ad.numpy_indexing import *  # noqa: F403
    from .ad.numpy_linalg import *  # noqa: F403
    from .ad.numpy_reductions import *  # noqa: F403
    from .ad.numpy_shapes import *  # noqa: F403

    # numpy_special's own logsumexp is scipy.special's (routed there); the namespace's is
    # numpy_reductions', which a type checker keeps as the first one imported
    from .ad.numpy_special import *  # type: ignore[assignment]  # noqa: F403
    from .ad.numpy_special import divmod_ as divmod  # noqa: F401
    from .ad.numpy_statistics import *  # noqa: F403

    linalg: _types.SimpleNamespace
    abs = absolute  # noqa: F405
    divide = true_divide  # noqa: F405
    amax = max  # noqa: F405
    amin = min  # noqa: F405
    concat = concatenate  # noqa: F405
    round = around  # noqa: F405
    radians = deg2rad  # noqa: F405
    degrees = rad2deg  # noqa: F405
    mod = remainder  # noqa: F405
    asarray = array  # noqa: F405
