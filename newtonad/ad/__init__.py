"""The AD core: IR, tracing, primitives and transforms.

Modules import one way, from the bottom up (``tests/test_imports_acyclic.py`` checks it
and prints the graph):

1. ``program`` (the IR) and ``dispatch`` (the tables NumPy calls reach);
2. ``var``: Var, Op and ``bind``, whose operators and NumPy protocols look up ``dispatch``,
   with the helpers it alone imports (``array_methods``, ``tracer_errors``,
   ``object_arrays``, ``lifting``);
3. ``primitives``: the Primitive objects with all their rules, family by family;
4. the NumPy layer (``numpy_api``, ``numpy_linalg``, ``numpy_special``), which fills the
   dispatch tables, and ``scipy_dispatch``, which routes SciPy's functions through them;
5. ``captures`` and ``trace`` (functions into Programs), ``remat`` and ``transforms``;
6. ``eager``: the pull-back of one eager Op, derived by the transforms.
"""
