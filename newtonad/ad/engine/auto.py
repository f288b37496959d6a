"""The ``auto`` engine: NumPy evaluation first, numba once a program is hot.

Compiling a kernel costs about a second; evaluating a small program with NumPy costs
microseconds to milliseconds. So a program starts on the reference evaluator and is
compiled only when the time spent evaluating it passes a budget comparable to a
compile (a tiered JIT). Objectives a solver calls thousands of times, or large ones,
get compiled kernels after their first few calls; programs called a handful of times
(tests, small demos, one-off gradients) never pay a compile.
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable

from ..program import Program
from . import compile_program, numpy_eval, register

#: Seconds of NumPy evaluation of one program after which it is compiled with numba.
HOT_SECONDS = float(os.environ.get("NEWTONAD_HOT_SECONDS", "0.2"))


def compile_auto(program: Program, reuse: bool = False) -> Callable[..., tuple]:
    """A runner that evaluates with NumPy until the program is hot, then with numba.

    ``run.reusing_outputs()`` gives a sibling whose compiled tier reuses its output
    arrays (see the numba engine); the NumPy tier allocates as it must anyway.
    """
    reference = numpy_eval.compile_program(program)
    compiled: Callable[..., tuple] | None = None
    spent = 0.0

    def run(*args: Any) -> tuple:
        nonlocal compiled, spent
        if compiled is not None:
            return compiled(*args)
        start = time.perf_counter()
        out = reference(*args)
        spent += time.perf_counter() - start
        if spent > HOT_SECONDS:
            compiled = compile_program(program, "numba")
            if reuse and hasattr(compiled, "reusing_outputs"):
                compiled = compiled.reusing_outputs()
        return out

    run.program = program  # type: ignore[attr-defined]
    run.reusing_outputs = lambda: compile_auto(program, reuse=True)  # type: ignore[attr-defined]
    return run


register("auto", compile_auto)
