"""The ``auto`` engine (the default): NumPy at once, numba when its kernel is ready.

A program's calls run on the NumPy reference evaluator from the first one; once the
program has proved hot, its numba kernel is compiled by the background compiler
(:mod:`.background`: a worker process, off the caller's path) and the calls switch to
the kernel at a *hand-over call* fixed when the program was sent. Nobody above the
engine can tell which tier ran a call:

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

Same bits on every run
----------------------
Which tier runs a call is decided by counting calls, never by a clock: the two tiers
round differently in the last bits, so a switch that came a few calls earlier or later
would change every later iterate of a solve. A program is sent to the compiler at a
call fixed by its modelled NumPy cost (:mod:`.tier_costs`), and switches at the call
where its modelled NumPy time since then equals its modelled compile time — or, for an
*expensive* program (a modelled call of :data:`EXPENSIVE_CALL_SECONDS` or more: large
arrays), :data:`HANDOVER_SHARE` of it. A kernel that is ready sooner waits for that
call; at that call a kernel already in the disk cache is loaded in this process (no
worker needed: a program whose kernel is on disk when it is sent, once numba is
imported here, is never sent to one), and otherwise the caller waits for the worker (at
most :data:`WAIT_SECONDS`, recorded as ``Timings.handover_wait_seconds`` and logged to
the ``newtonad`` logger). So a script gives the same bits on every run, cold or warm
disk cache, quiet or busy machine. Only a compile that outlasts the wait, or fails,
leaves its program on NumPy (the same on every run for a failure; logged as a warning
for a wait).

When the background compiler cannot run (``NEWTONAD_BACKGROUND=0``, no worker process
can be started, the program cannot be sent to one), the program is compiled in the
caller's process at its hand-over call instead. Explicit ``engine="numba"`` always
compiles before its first call returns; ``engine="numpy"`` never compiles.

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
    ... and only after 50 ms of modelled NumPy time on it. What a switch costs the
    caller is loading the finished kernel from the disk cache in this process: 5-100 ms
    per kernel (plus numba's import, 0.3-0.8 s, once per process), so a program that has
    not used that much time yet is not likely to repay it.
``MAX_STEPS = 100_000``
    Programs with more steps stay on NumPy: numba compiles about 8 ms per step of a
    long program, so beyond this a background compile would take a quarter of an hour
    or more.
``WAIT_SECONDS = 120``
    The longest a caller waits at a hand-over call (``NEWTONAD_TIER_WAIT_SECONDS``).
``EXPENSIVE_CALL_SECONDS = 0.005``, ``HANDOVER_SHARE = 1``
    A program whose modelled NumPy call takes 5 ms or more hands over after
    ``HANDOVER_SHARE`` of its modelled compile time (``NEWTONAD_TIER_EXPENSIVE_SECONDS``,
    ``NEWTONAD_TIER_HANDOVER_SHARE``). By default the whole of it, as for every program.
    Such programs are called a few times per solve (at n = 1e5 the augmented Lagrangian's
    sparse-Hessian frame of chained Rosenbrock with trig-exp constraints: 7 calls of
    75-190 ms in a 1-3 s solve), so they seldom switch within one solve, even with their
    kernels in the disk cache, where they load in 20-50 ms. A share of 0.25 made that
    solve 0.46 s instead of 1.09 s the second time in a process with a warm cache, but
    13-15 s instead of 2.8 s with an empty one (the caller waits at the hand-over call for
    the rest of the compile): the first run of a script, which every user makes, is not
    made four times slower for the runs after it.

Each is read from the environment at import: ``NEWTONAD_TIER_CALLS``,
``NEWTONAD_TIER_SECONDS``, ``NEWTONAD_TIER_MAX_STEPS``.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import threading
import time
import warnings
import weakref
from typing import Any, Callable

import numpy as np

from ..program import Program
from . import compile_program, numpy_eval, record, register, tier_costs
from .runner_contract import check_outputs, coerce_input

#: Calls of a program before it may be sent to the background compiler.
SUBMIT_CALLS = int(os.environ.get("NEWTONAD_TIER_CALLS", "2"))
#: Modelled seconds of NumPy evaluation of a program before it is sent to the compiler.
SUBMIT_SECONDS = float(os.environ.get("NEWTONAD_TIER_SECONDS", "0.05"))
#: Programs with more steps than this are never compiled by this engine.
MAX_STEPS = int(os.environ.get("NEWTONAD_TIER_MAX_STEPS", "100000"))
#: Seconds a caller waits at a hand-over call for a kernel that is not ready.
WAIT_SECONDS = float(os.environ.get("NEWTONAD_TIER_WAIT_SECONDS", "120"))
#: Modelled seconds of one NumPy call from which a program is *expensive*: it hands over
#: after :data:`HANDOVER_SHARE` of its modelled compile time, not all of it.
EXPENSIVE_CALL_SECONDS = float(os.environ.get("NEWTONAD_TIER_EXPENSIVE_SECONDS", "0.005"))
#: The share of its modelled compile time an expensive program spends on NumPy after it
#: was sent (``NEWTONAD_TIER_HANDOVER_SHARE``).
HANDOVER_SHARE = float(os.environ.get("NEWTONAD_TIER_HANDOVER_SHARE", "1"))
#: Calls from sending a program to its hand-over; ``None``: from the cost models. (A test
#: sets 1, to switch at the call after the one that sent it.)
HANDOVER_CALLS: int | None = None

_DTYPES = {"float64": np.dtype(np.float64), "int64": np.dtype(np.int64), "bool": np.dtype(np.bool_)}

_log = logging.getLogger("newtonad")

# The states of a tier.
COLD = "cold"          # on NumPy, not yet worth compiling
QUEUED = "queued"      # on NumPy, its kernel compiled in the background until the hand-over
READY = "ready"        # switched: the runners run the compiled kernel
NUMPY = "numpy"        # on NumPy for good (no numba lowering, a failed compile)
IN_PROCESS = "in-process"  # on NumPy until the hand-over call, then compiled in this process
CACHED = "cached"      # on NumPy until the hand-over call, then loaded from the disk cache


class Tier:
    """One program's tiered state, shared by its runners (see the module docstring).

    Attributes
    ----------
    program : Program
    state : str
        ``"cold"``, ``"queued"``, ``"cached"``, ``"ready"``, ``"numpy"`` or
        ``"in-process"``.
    cost : float
        Modelled seconds of one NumPy call (:func:`.tier_costs.numpy_seconds`).
    work : float
        Modelled seconds of NumPy evaluation so far (``calls * cost``).
    calls : int
        Calls evaluated with NumPy so far.
    handover : int or None
        The call (counted from 1) that runs the kernel first, once the program was sent.
    reason : str
        Why the program is not (or not yet) compiled, when it is not.
    compiled : callable or None
        The numba engine's runner, from the hand-over call on.
    """

    def __init__(self, program: Program):
        self.program = program
        self.state = COLD
        self.cost = tier_costs.numpy_seconds(program)
        self.work = 0.0
        self.calls = 0
        self.handover: int | None = None
        self.reason = ""
        self.compiled: Callable[..., tuple] | None = None
        self._reference: Callable[..., tuple] | None = None
        self._finished: Callable[..., tuple] | None = None  # compiled, not yet handed over
        self._worker_seconds = 0.0
        self._outcome = threading.Event()  # set once the background compile has an outcome
        self.waiting = False  # a caller waits for this program at its hand-over call
        slots = program.in_slots
        self.in_specs = tuple((tuple(s.shape), _DTYPES.get(s.dtype, np.dtype(s.dtype)))
                              for s in slots)
        self.out_specs = tuple((tuple(s.shape), _DTYPES.get(s.dtype, np.dtype(s.dtype)))
                               for s in program.out_slots)
        self._lock = threading.Lock()
        if len(program.steps) > MAX_STEPS:
            self.state, self.reason = NUMPY, f"more than {MAX_STEPS} steps"

    # ---- the background compiler's callbacks (from its thread) ---------------------------
    def ready(self, runner: Callable[..., tuple], seconds: float) -> None:
        """The compiled runner is there (after ``seconds`` in the worker): the runners
        switch to it at the hand-over call."""
        self._finished, self._worker_seconds = runner, seconds
        self._outcome.set()

    def stay_on_numpy(self, reason: str) -> None:
        """This program is not compiled (the numba engine would not, or could not)."""
        self.state, self.reason = NUMPY, reason
        self._outcome.set()

    def compile_when_hot(self, reason: str) -> None:
        """No background compilation: compile in this process at the hand-over call."""
        self.state, self.reason = IN_PROCESS, reason
        self._outcome.set()

    # ---- the NumPy tier ----------------------------------------------------------------
    def due(self) -> bool:
        """Whether the next call is the hand-over call of a program sent to be compiled."""
        return (self.handover is not None and self.calls + 1 >= self.handover
                and self.state in (QUEUED, IN_PROCESS, CACHED))

    def hand_over(self) -> None:
        """At the hand-over call: switch to the kernel, waiting for it if need be."""
        if self.state == QUEUED and not self._outcome.is_set() and self._load_cached():
            from . import background

            background.withdraw(self)  # on disk already: no wait for the worker
            return
        if self.state == CACHED and self._load_cached():
            return
        if self.state == CACHED:  # the entry went away (or does not load): compile it here
            self.state = IN_PROCESS
        if self.state == QUEUED and not self._outcome.is_set():
            self._wait()
        if self.state == IN_PROCESS:
            self._compile_here()
        elif self.state == QUEUED and self._finished is not None:
            self.compiled, self.state = self._finished, READY
            record(switches=1, switched_compile_seconds=self._worker_seconds)
        elif self.state == QUEUED:  # the wait ran out: on NumPy for good
            self.state = NUMPY
            self.reason = f"not compiled within {WAIT_SECONDS:g} s of its hand-over call"
            _log.warning("a %d-step program stays on NumPy: its kernel was not compiled "
                         "within %g s of its hand-over call (a busy machine?); results "
                         "may differ in the last bits from a run where it was",
                         len(self.program.steps), WAIT_SECONDS)

    def _load_cached(self) -> bool:
        """Switch to the kernel in the disk cache, loaded in this process; ``False`` when
        it is not there (the same kernel a worker or an in-process compile would give)."""
        from . import background
        from .numba_engine import load_cached

        start = time.perf_counter()
        try:
            with background.numba_in_use():
                runner = load_cached(self.program)
        except Exception:  # noqa: BLE001  (a damaged entry: the worker or a compile repairs it)
            runner = None
        if runner is None:
            return False
        self.compiled, self.state = runner, READY
        record(switches=1, handover_seconds=time.perf_counter() - start)
        return True

    def _wait(self) -> None:
        self.waiting = True
        from . import background

        background.hurry()
        start = time.perf_counter()
        while not self._outcome.wait(0.05) and time.perf_counter() - start < WAIT_SECONDS:
            if not background.tracking(self) and not self._outcome.is_set():
                # shut down, or a forked child's copy of its parent's queue: nobody will
                # compile it in the background
                self.compile_when_hot("the background compiler let it go")
        waited = time.perf_counter() - start
        self.waiting = False
        record(handover_wait_seconds=waited)
        _log.info("waited %.3f s at the hand-over call for the kernel of a %d-step program",
                  waited, len(self.program.steps))

    def evaluate(self, args: tuple) -> tuple:
        """Run the program on NumPy, count the call, and send it to the compiler when hot."""
        reference = self._reference
        if reference is None:
            reference = self._reference = numpy_eval.compile_program(self.program)
        with np.errstate(all="ignore"):  # IEEE results without warnings, as the kernel
            outs = reference(*args)
        self.calls += 1
        self.work += self.cost
        if self.state == COLD and self.calls >= SUBMIT_CALLS:
            if self.work >= SUBMIT_SECONDS:
                self._submit()
            elif not _prewarmed:
                _prewarm()
        return outs

    def _handover_calls(self) -> int:
        """Calls from now to the hand-over: NumPy time that matches the compile's."""
        if HANDOVER_CALLS is not None:
            return HANDOVER_CALLS
        seconds = tier_costs.compile_seconds(self.program)
        if self.cost >= EXPENSIVE_CALL_SECONDS:
            # Few calls of such a program make a solve (at n = 1e5 a sparse-Hessian frame
            # is called 7 times in a 1 s solve), so waiting a whole compile time on NumPy
            # means never switching while its kernel sits in the disk cache, where it
            # loads in milliseconds. The price: without that entry, the caller may wait
            # at the hand-over call for the rest of the compile.
            seconds *= HANDOVER_SHARE
        return max(1, math.ceil(seconds / max(self.cost, 1e-9)))

    def _submit(self) -> None:
        with self._lock:
            if self.state != COLD:
                return
            self.state = QUEUED
            self.handover = self.calls + self._handover_calls()
        if _on_disk(self.program):
            self.state = CACHED  # loaded here at the hand-over call: no worker needed
            _log.debug("a %d-step program's kernel is in the disk cache: loaded at call %d",
                       len(self.program.steps), self.handover)
            return
        _log.debug("a %d-step program sent to the background compiler at call %d; it "
                   "switches to the kernel at call %d", len(self.program.steps), self.calls,
                   self.handover)
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
            self.compiled, self.state = runner, READY
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
        if tier.compiled is None and tier.due():
            with tier._lock:  # one caller hands over; others at the same call wait here
                if tier.compiled is None and tier.due():
                    tier.hand_over()
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


def _on_disk(program: Program) -> bool:
    """Whether the disk cache has ``program``'s kernel for this process's lowering options.

    Asked only once numba is imported (the solvers' vector kernels import it at large
    sizes): importing it just to look would cost a solve that ends before its hand-over
    0.3-0.8 s. Where the kernel comes from never changes the call that switches to it.
    """
    if "numba" not in sys.modules:
        return False
    try:
        from .numba_cache import meta_path
        from .options import LoweringOptions

        return meta_path(program, LoweringOptions.current()).is_file()
    except Exception:  # noqa: BLE001  (any doubt: let the worker find out)
        return False


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


register("auto", compile_auto)

__all__ = ["EXPENSIVE_CALL_SECONDS", "HANDOVER_SHARE", "MAX_STEPS", "WAIT_SECONDS",
           "SUBMIT_CALLS", "SUBMIT_SECONDS", "Tier", "compile_auto"]
