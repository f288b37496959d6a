"""Engines run Programs: a Program in, arrays out.

``numba`` compiles fused kernels and is the API's default (``newtonad.api.DEFAULT_ENGINE``,
set by the ``NEWTONAD_ENGINE`` environment variable); ``numpy`` is the reference
evaluator (and :func:`compile_program`'s own default); ``auto`` starts a program on the
reference evaluator and moves it to numba once it is hot. Engines are looked up by name
so the API can take ``engine="numpy"`` and a compiled engine can plug in under the same
programs.

Registration runs one way: this package knows the reference evaluator directly and the
other engines by module name, imported on first use; an engine module registers itself
here when imported (:func:`register`), and nothing here imports it back.
"""

from __future__ import annotations

import importlib
from typing import Callable

from ..program import Program
from . import numpy_eval

Runner = Callable[..., tuple]

#: Engine name -> ``compile_fn(program) -> run(*inputs) -> tuple of outputs``.
ENGINES: dict[str, Callable[[Program], Runner]] = {"numpy": numpy_eval.compile_program}

#: Engines whose modules are imported on first use (numba's import is not free); each
#: registers itself when imported.
LAZY_ENGINES = {"numba": "newtonad.ad.engine.numba_engine",
                "auto": "newtonad.ad.engine.auto"}


def register(name: str, compile_fn: Callable[[Program], Runner]) -> None:
    """Make ``compile_fn(program) -> run(*inputs) -> tuple of outputs`` available by name."""
    ENGINES[name] = compile_fn


def compile_program(program: Program, engine: str = "numpy") -> Runner:
    """Compile ``program`` with the named engine."""
    if engine not in ENGINES and engine in LAZY_ENGINES:
        importlib.import_module(LAZY_ENGINES[engine])
    if engine not in ENGINES:
        known = sorted(set(ENGINES) | set(LAZY_ENGINES))
        raise ValueError(f"unknown engine {engine!r}; available: {known}")
    return ENGINES[engine](program)


__all__ = ["ENGINES", "LAZY_ENGINES", "Runner", "compile_program", "register"]
