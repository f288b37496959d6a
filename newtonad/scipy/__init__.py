"""SciPy functions that trace: ``newtonad.scipy.special``, ``.stats`` and ``.linalg``.

Each submodule imports its SciPy namesake and re-exports the functions newtonad
differentiates. They are SciPy's own functions, routed: on traced values (inside
``newtonad.grad`` and friends) newtonad's version runs, on plain arrays SciPy's. Plain
``scipy.special.logsumexp(x)`` calls route the same way once newtonad is imported (see
:mod:`newtonad.ad.scipy_dispatch`); these namespaces are the spelling that works
whatever the order of imports, and list what is supported. Their functions are
newtonad's wrappers, which trace also while ``newtonad.scipy_routing(False)`` holds; the
methods of their distributions route only while it is on (they are SciPy's objects).

Nothing here is imported by ``import newtonad`` (SciPy takes 0.2-0.5 s to import).
"""
