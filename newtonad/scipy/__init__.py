"""SciPy functions that trace: ``newtonad.scipy.special``, ``.stats`` and ``.linalg``.

Each submodule imports its SciPy namesake and re-exports the functions newtonad
differentiates. They are SciPy's own functions, routed: on traced values (inside
``newtonad.grad`` and friends) newtonad's version runs, on plain arrays SciPy's. Plain
``scipy.special.logsumexp(x)`` calls route the same way once newtonad is imported (see
:mod:`newtonad.ad.scipy_dispatch`); these namespaces are the spelling that works
whatever the order of imports, and list what is supported.

Nothing here is imported by ``import newtonad`` (SciPy takes 0.2-0.5 s to import).
"""
