"""The ``auto`` engine (the default): NumPy at once, numba when its kernel is ready.

A program's calls run on the NumPy reference evaluator from the first one; once the
program has proved hot, its numba kernel is compiled by the background compiler
(:mod:`.background`: a worker process, off the caller's path) and the calls switch to
the kernel when it is ready. Nobody above the engine can tell which tier ran a call:

* results agree to rounding (the kernel fuses the same operations; sums may round
  differently);
* outputs follow the numba engine's contract in both tiers: fresh, writeable,
  C-contiguous arrays per call; ``out=(a, b, ...)`` writes into (and returns) the given
  arrays, checked the same way; ``run.reusing_outputs()`` gives a sibling that returns
  the *same* arrays on every call — the same ones before and after the switch;
* inputs are checked and converted as the numba engine does;
* no warnings: a program the numba engine cannot lower simply stays on NumPy, and
  the NumPy tier computes infinities and NaNs silently (``np.errstate``), as the
  compiled kernel does;
* once switched, a call costs exactly what a call of the numba engine's runner costs:
  the runner takes over the compiled runner's code (``__code__``) and names, so there
  is no wrapper left in between.

When the background compiler cannot run (``NEWTONAD_BACKGROUND=0``, no worker process
can be started, the program cannot be sent to one), a hot program is compiled in the
caller's process instead, after :data:`HOT_SECONDS` of NumPy time (the earlier
``auto`` engine). Explicit ``engine="numba"`` always compiles before its first call
returns; ``engine="numpy"`` never compiles.

Thresholds (measured on a shared 2-core machine, numba 0.68; see ``docs/performance.rst``)
----------------------------------------------------------------------------------------

``SUBMIT_CALLS = 2``
    A program is never compiled for one call. One-off derivatives (a first ``grad``, a
    test, a doc example) then cost only the NumPy evaluation: 4-30 ms for the first
    gradient of vectorised Rosenbrock at n = 100 (tracing included), where compiling
    its kernel costs 1-3 s. The second call of any program starts the worker process
    (:func:`.background.prewarm`), so that its start-up (Python, newtonad and numba:
    1-2 s) overlaps the calls that make a program hot.
``SUBMIT_SECONDS = 0.05``
    ... and only after 50 ms of NumPy time on it. What a switch costs the caller is
    loading the finished kernel from the disk cache in this process: 5-100 ms per
    kernel (plus numba's import, 0.3-0.8 s, once per process), so a program that has
    not used that much time yet is not likely to repay it. Rosenbrock's value and
    gradient at n = 100 (25 steps: 23 µs per call on NumPy, 0.7 µs compiled) gets there
    after about 2 000 calls; a 2 600-step program (a 100-term Python loop the re-roller
    cannot fold: 27 ms per call, 1 µs compiled, 21 s to compile) at its second call.
``MAX_STEPS = 100_000``
    Programs with more steps stay on NumPy: numba compiles about 8 ms per step of a
    long program (the 2 600-step one above), so beyond this a background compile would
    take a quarter of an hour or more.
``HOT_SECONDS = 0.2``
    The synchronous fallback's budget (``NEWTONAD_HOT_SECONDS``): about a fifth of a
    small kernel's compile.

Each is read from the environment at import: ``NEWTONAD_TIER_CALLS``,
``NEWTONAD_TIER_SECONDS``, ``NEWTONAD_TIER_MAX_STEPS``.
"""

from __future__ import annotations

import os
import threading
import time
import warnings
import weakref
from typing import Any, Callable

import numpy as np

from ..program import Program
from . import compile_program, numpy_eval, register
from .runner_contract import check_outputs, coerce_input

#: Seconds of NumPy evaluation of one program after which it is compiled in the caller's
#: process, when the background compiler cannot run.
HOT_SECONDS = float(os.environ.get("NEWTONAD_HOT_SECONDS", "0.2"))
#: Calls of a program before it may be sent to the background compiler.
SUBMIT_CALLS = int(os.environ.get("NEWTONAD_TIER_CALLS", "2"))
#: Seconds of NumPy evaluation of a program before it is sent to the background compiler.
SUBMIT_SECONDS = float(os.environ.get("NEWTONAD_TIER_SECONDS", "0.05"))
#: Programs with more steps than this are never compiled by this engine.
MAX_STEPS = int(os.environ.get("NEWTONAD_TIER_MAX_STEPS", "100000"))

_DTYPES = {"float64": np.dtype(np.float64), "int64": np.dtype(np.int64), "bool": np.dtype(np.bool_)}

# The states of a tier.
COLD = "cold"          # on NumPy, not yet worth compiling
QUEUED = "queued"      # on NumPy, its kernel being compiled in the background
READY = "ready"        # the compiled runner is there: runners switch on their next call
NUMPY = "numpy"        # on NumPy for good (no numba lowering, a failed compile)
IN_PROCESS = "in-process"  # on NumPy until HOT_SECONDS, then compiled in this process


class Tier:
    """One program's tiered state, shared by its runners (see the module docstring).

    Attributes
    ----------
    program : Program
    state : str
        ``"cold"``, ``"queued"``, ``"ready"``, ``"numpy"`` or ``"in-process"``.
    spent : float
        Seconds of NumPy evaluation so far.
    calls : int
        Calls evaluated with NumPy so far.
    reason : str
        Why the program is not (or not yet) compiled, when it is not.
    compiled : callable or None
        The numba engine's runner, once ready.
    """

    def __init__(self, program: Program):
        self.program = program
        self.state = COLD
        self.spent = 0.0
        self.calls = 0
        self.reason = ""
        self.compiled: Callable[..., tuple] | None = None
        self._reference: Callable[..., tuple] | None = None
        slots = program.in_slots
        self.in_specs = tuple((tuple(s.shape), _DTYPES.get(s.dtype, np.dtype(s.dtype)))
                              for s in slots)
        self.out_specs = tuple((tuple(s.shape), _DTYPES.get(s.dtype, np.dtype(s.dtype)))
                               for s in program.out_slots)
        self._lock = threading.Lock()
        if len(program.steps) > MAX_STEPS:
            self.state, self.reason = NUMPY, f"more than {MAX_STEPS} steps"

    # ---- the background compiler's callbacks (from its thread) ---------------------------
    def ready(self, runner: Callable[..., tuple]) -> None:
        """The compiled runner is there: runners switch to it on their next call."""
        self.compiled = runner
        self.state = READY

    def stay_on_numpy(self, reason: str) -> None:
        """This program is not compiled (the numba engine would not, or could not)."""
        self.state, self.reason = NUMPY, reason

    def compile_when_hot(self, reason: str) -> None:
        """No background compilation: compile in this process after HOT_SECONDS."""
        self.state, self.reason = IN_PROCESS, reason

    # ---- the NumPy tier ----------------------------------------------------------------
    def evaluate(self, args: tuple) -> tuple:
        """Run the program on NumPy, count the time, and move it up when it is hot."""
        reference = self._reference
        if reference is None:
            reference = self._reference = numpy_eval.compile_program(self.program)
        start = time.perf_counter()
        with np.errstate(all="ignore"):  # IEEE results without warnings, as the kernel
            outs = reference(*args)
        self.spent += time.perf_counter() - start
        self.calls += 1
        if self.state == COLD and self.calls >= SUBMIT_CALLS:
            if self.spent >= SUBMIT_SECONDS:
                self._submit()
            elif not _prewarmed:
                _prewarm()
        if self.state == IN_PROCESS and self.spent >= HOT_SECONDS:
            self._compile_here()
        return outs

    def _submit(self) -> None:
        with self._lock:
            if self.state != COLD:
                return
            self.state = QUEUED
        from . import background  # (not imported before a program is hot)

        if not background.submit(self):
            self.compile_when_hot("background compilation is off")

    def _compile_here(self) -> None:
        """Compile synchronously (counted as compile time by the engine registry)."""
        from .numba_engine import NumbaFallbackWarning

        self.state = NUMPY  # whatever happens, once
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NumbaFallbackWarning)  # the tier is silent
            runner = compile_program(self.program, "numba")
        if getattr(runner, "dispatcher", None) is not None:
            self.ready(runner)
        else:
            self.reason = "no numba kernel"

    def check_inputs(self, args: tuple) -> tuple:
        """``args`` checked and converted as the numba engine's runner does."""
        if len(args) == len(self.in_specs):
            for a, (shape, dtype) in zip(args, self.in_specs):
                if a.__class__ is not np.ndarray or a.dtype != dtype or a.shape != shape:
                    break
            else:
                return args
        return tuple(coerce_input(a, shape, dtype, f"input {j}")
                     for j, (a, (shape, dtype)) in enumerate(zip(args, self.in_specs)))


def _fresh(outs: tuple, args: tuple) -> tuple:
    """Outputs the caller owns, as the numba engine's: new writeable C-contiguous arrays
    (the evaluator may hand back an input, a constant or a view, or one array twice)."""
    result: list[np.ndarray] = []
    for o in outs:
        if (o.base is not None or not o.flags.writeable or not o.flags.c_contiguous
                or any(o is a for a in args) or any(o is r for r in result)):
            o = np.array(o, order="C", copy=True)
        result.append(o)
    return tuple(result)


class _Runner:
    """The NumPy-tier body of one runner function, and its switch to the kernel."""

    def __init__(self, tier: Tier, outputs: tuple[np.ndarray, ...] | None):
        self.tier = tier
        self.outputs = outputs  # the reused output arrays of a reusing_outputs() sibling
        self.fn: Callable[..., tuple] | None = None

    def __call__(self, args: tuple, out: Any) -> tuple:
        tier = self.tier
        if tier.compiled is not None:
            return self._switch()(*args, out=out)
        args = tier.check_inputs(args)
        if out is not None:
            out = check_outputs(out, tier.out_specs)  # checked before any work, as numba does
        outs = tier.evaluate(args)
        if out is None and self.outputs is None:
            return _fresh(outs, args)
        dest = out if out is not None else self.outputs
        for d, o in zip(dest, outs):  # type: ignore[arg-type]
            np.copyto(d, o)
        return tuple(dest)  # type: ignore[arg-type]

    def _switch(self) -> Callable[..., tuple]:
        """Make this runner's function the compiled runner (its code and names)."""
        fn, compiled = self.fn, self.tier.compiled
        assert fn is not None and compiled is not None
        target = (compiled.reusing_outputs(outputs=self.outputs)  # type: ignore[attr-defined]
                  if self.outputs is not None else compiled)
        fn.__globals__.update(target.__globals__)
        fn.__kwdefaults__ = target.__kwdefaults__
        fn.__code__ = target.__code__
        for name in ("kernel", "dispatcher", "path", "source"):
            setattr(fn, name, getattr(target, name, None))
        return fn


_prewarmed = False


def _prewarm() -> None:
    """A program is being reused: start the background worker (1-2 s of start-up, in
    another process) so that it is ready when a program gets hot."""
    global _prewarmed
    _prewarmed = True
    from . import background

    background.prewarm()


_TEMPLATE = '''
def run({params}*, out=None):
    return _tier_body(({args}), out)
'''

#: Tiers by program, while some runner of the program is alive: one background compile
#: per program however many runners it has.
_TIERS: "weakref.WeakValueDictionary[Program, Tier]" = weakref.WeakValueDictionary()
_TIERS_LOCK = threading.Lock()


def _tier_of(program: Program) -> Tier:
    with _TIERS_LOCK:
        tier = _TIERS.get(program)
        if tier is None:
            tier = _TIERS[program] = Tier(program)
        return tier


def _runner(tier: Tier, outputs: tuple[np.ndarray, ...] | None) -> Callable[..., tuple]:
    body = _Runner(tier, outputs)
    n_in = len(tier.in_specs)
    names = [f"x{j}" for j in range(n_in)]
    src = _TEMPLATE.format(params="".join(f"{n}, " for n in names),
                           args="".join(f"{n}, " for n in names))
    ns: dict[str, Any] = {"_tier_body": body}
    exec(compile(src, "<newtonad auto runner>", "exec"), ns)
    run = body.fn = ns["run"]
    run.program = tier.program
    run.tier = tier
    if tier.compiled is not None:
        body._switch()

    def reusing_outputs() -> Callable[..., tuple]:
        from .numba_buffers import aligned_array

        buffers = tuple(aligned_array(shape, dtype) for shape, dtype in tier.out_specs)
        return _runner(tier, buffers)

    run.reusing_outputs = reusing_outputs
    return run


def compile_auto(program: Program) -> Callable[..., tuple]:
    """A runner of ``program`` on NumPy now and on its numba kernel once it is ready.

    ``run(*inputs, out=None)`` and ``run.reusing_outputs()`` behave as the numba
    engine's (see the module docstring); ``run.tier`` tells which tier runs it.
    """
    return _runner(_tier_of(program), None)


def wait_compiled(timeout: float | None = None) -> bool:
    """Block until every program sent to the background compiler is compiled (or given
    up); ``False`` on timeout. For benchmarks and tests that want the compiled tier."""
    from . import background

    return background.wait(timeout)


register("auto", compile_auto)

__all__ = ["HOT_SECONDS", "MAX_STEPS", "SUBMIT_CALLS", "SUBMIT_SECONDS", "Tier", "compile_auto",
           "wait_compiled"]
