"""Engines run Programs: a Program in, arrays out.

``numpy`` is the reference evaluator, ``numba`` compiles fused kernels, and ``auto``
(the default) starts on the first and moves a program to the second once it is hot.
Engines are looked up by name so the API can take ``engine="numpy"`` and a compiled
engine can plug in under the same programs.
"""

from __future__ import annotations

import importlib
from typing import Callable

from ..program import Program

Runner = Callable[..., tuple]

ENGINES: dict[str, Callable[[Program], Runner]] = {}


def register(name: str, compile_fn: Callable[[Program], Runner]) -> None:
    """Make ``compile_fn(program) -> run(*inputs) -> tuple of outputs`` available by name."""
    ENGINES[name] = compile_fn


# Engines whose modules are imported on first use (numba's import is not free).
LAZY_ENGINES = {"numba": "newtonad.ad.engine.numba_engine",
                "auto": "newtonad.ad.engine.auto"}


def compile_program(program: Program, engine: str = "numpy") -> Runner:
    """Compile ``program`` with the named engine."""
    if engine not in ENGINES and engine in LAZY_ENGINES:
        importlib.import_module(LAZY_ENGINES[engine])
    if engine not in ENGINES:
        known = sorted(set(ENGINES) | set(LAZY_ENGINES))
        raise ValueError(f"unknown engine {engine!r}; available: {known}")
    return ENGINES[engine](program)


from . import numpy_eval  # noqa: E402  (registers the reference engine)

__all__ = ["compile_program", "register", "ENGINES", "numpy_eval"]
