"""The ``numba`` engine: Programs lowered to fused, cached, nopython kernels.

``compile_program(program)`` plans the program (:mod:`.numba_plan`: fusion into loop
nests), generates readable source (:mod:`.numba_codegen`), writes it to the disk cache
and compiles or loads it (:mod:`.numba_cache`), and returns a runner::

    run = compile_program(program)
    outputs = run(*inputs)                  # a tuple of fresh arrays, one per output

Intermediates live in arenas allocated once per runner (:mod:`.numba_buffers`).
Outputs are new arrays on every call, so a caller may keep them. Callers that do not
keep them can avoid the allocation:

* ``run(*inputs, out=(a, b, ...))`` writes into the given C-contiguous arrays;
* ``run.reusing_outputs()`` returns a runner of the same kernel whose every call
  returns the *same* arrays, overwritten by the next call (the opt-in for hot loops
  such as a CG iteration); ``run`` itself keeps returning fresh arrays.

A runner may be called from several threads at once: a call that finds its arenas in
use by another thread runs in arenas of its own (a ``reusing_outputs()`` sibling still
returns its one set of arrays: one per thread). A program with a primitive
this engine does not lower runs on the NumPy engine, with one warning per primitive.

A warm start is kept short: when the disk cache holds the program's kernel and its
metadata, the program is not planned or lowered again (the planner and code generator
are not even imported), and the kernel's machine code is loaded for its one signature
without numba's first-compile set-up (see :func:`load_overload`).
"""

from __future__ import annotations

import collections
import functools
import os
import sys
import threading
import types
import warnings
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ..program import Program
from . import numba_cache as cache
from . import numba_threads, numpy_eval, register
from .numba_buffers import aligned_array
from .options import LoweringOptions
from .runner_contract import check_outputs
from .runner_contract import coerce_input as _coerce

if TYPE_CHECKING:  # the planner and code generator are imported only to lower a program
    from .numba_codegen import Kernel

_DTYPES = {"float64": np.dtype(np.float64), "int64": np.dtype(np.int64), "bool": np.dtype(np.bool_)}


class NumbaFallbackWarning(RuntimeWarning):
    """A program ran on the NumPy engine because the numba engine could not lower it."""


_warned: set[str] = set()


def _fallback(program: Program, reason: str) -> Callable[..., tuple]:
    if reason not in _warned:
        _warned.add(reason)
        warnings.warn(f"numba engine: {reason}; running this program with the numpy engine",
                      NumbaFallbackWarning, stacklevel=3)
    return numpy_eval.compile_program(program)


def lower(program: Program, options: LoweringOptions | None = None) -> Kernel:
    """Plan and generate the kernel of ``program`` (no compilation).

    ``options`` (default: :meth:`LoweringOptions.current`) fix every choice the
    planner and code generator make that the program does not.
    """
    from .numba_codegen import generate
    from .numba_plan import make_plan
    from .rolls import rolls_as_shifted_copies
    from .row_blocks import form_regions

    options = options or LoweringOptions.current()
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20000))  # fused chains are walked recursively
    try:  # plan, then group row-blocked regions, then generate
        plan = make_plan(rolls_as_shifted_copies(program))
        return generate(form_regions(plan, options), options)
    finally:
        sys.setrecursionlimit(limit)


def source(program: Program, options: LoweringOptions | None = None) -> str:
    """The generated Python source of ``program``'s kernel, for reading and debugging."""
    return lower(program, options).source


def _numba_signature(kernel: Kernel, arena_sizes: list[tuple[str, int]]):
    from numba import types

    scalar = {"float64": types.float64, "int64": types.int64, "bool": types.boolean}

    def arr(shape, dtype):
        return types.Array(scalar[dtype], len(shape), "C")

    return tuple([arr(s, d) for s, d in kernel.in_specs] + [arr(s, d) for s, d in kernel.out_specs]
                 + [arr(c.shape, c.dtype.name) for c in kernel.consts]
                 + [arr((n,), d) for d, n in arena_sizes])


#: numba versions whose cache loading :func:`load_overload` reproduces (checked by the tests).
FAST_LOAD_NUMBA = ("0.68",)
#: Set to 0 to always load through ``dispatcher.compile`` (numba's public path).
FAST_LOAD_ENV = "NEWTONAD_NUMBA_FAST_LOAD"


def load_overload(dispatcher, sig) -> Any | None:
    """Load ``sig``'s compiled code from numba's disk cache into ``dispatcher``.

    ``dispatcher.compile(sig)`` does the same, but first refreshes numba's typing and
    target contexts: it imports and installs every typing and lowering registry numba
    has, about 0.4 s in a fresh process, which compiling needs and loading machine code
    does not (a cached overload is rebuilt from object code; it only needs numba's
    runtime, NRT, initialised). This is the body of ``Dispatcher.compile`` for a cache
    hit without that refresh, so the dispatcher afterwards holds the overload and counts
    the hit exactly as after ``compile``. Any later compilation refreshes the contexts
    itself.

    Returns the compile result, or ``None`` when there is no cached entry or this numba
    is not one whose internals this follows (the caller then uses ``compile``).
    Raises what numba raises on a corrupt entry.
    """
    import numba

    if (os.environ.get(FAST_LOAD_ENV, "1") == "0"
            or ".".join(numba.__version__.split(".")[:2]) not in FAST_LOAD_NUMBA):
        return None
    try:
        from numba.core.compiler_lock import global_compiler_lock
        from numba.core.runtime import nrt

        disk = dispatcher._cache
        targetctx = dispatcher.targetctx
        disk_load = disk._load_overload
    except (ImportError, AttributeError):
        return None
    with global_compiler_lock:
        existing = dispatcher.overloads.get(tuple(sig))
        if existing is not None:
            return existing
        nrt.rtsys.initialize(targetctx)
        cres = disk_load(sig, targetctx)
        if cres is None or cres.objectmode:
            return None
        dispatcher._cache_hits[sig] += 1
        targetctx.insert_user_function(cres.entry_point, cres.fndesc, [cres.library])
        dispatcher.add_overload(cres)
        return cres


class ChunkDispatchers:
    """The numba dispatchers of a split kernel's chunks, in the order the driver calls
    them; ``stats`` adds up their cache hits and misses (as one dispatcher's would)."""

    def __init__(self, dispatchers: list[Any]) -> None:
        self.dispatchers = dispatchers

    @property
    def stats(self) -> Any:
        hits: collections.Counter = collections.Counter()
        misses: collections.Counter = collections.Counter()
        for d in self.dispatchers:
            hits.update(d.stats.cache_hits)
            misses.update(d.stats.cache_misses)
        path = self.dispatchers[0].stats.cache_path if self.dispatchers else None
        return types.SimpleNamespace(cache_path=path, cache_hits=hits, cache_misses=misses)


#: A split kernel with a Python driver (:data:`.kernel_split.PYTHON_DRIVER_FROM_CHUNKS`
#: chunks or more) of more chunks than this is compiled in child processes, this many
#: chunks each, and then loaded from the disk cache. Each chunk compiled in a process
#: keeps about 2.5 MB there (its LLVM module and numba's records of it; measured on the
#: Rosenbrock loop's gradient, 250-line chunks), on top of ~70 MB for numba's first
#: compile, so the 2 000-term loop's 168 chunks compiled in one process peaked at 650 MB;
#: a chunk loaded from the cache keeps about 1 MB. With 40 chunks a child peaked at
#: 338 MB (VmHWM), the loading parent at 291-338 MB; the compile's CPU time is the same
#: as in one process (98-106 s against 107 s, plus about a second per child).
CHUNKS_PER_PROCESS = 40

_CHILD = """
import pickle, sys
sys.path.insert(0, {root!r})  # the parent's newtonad
from newtonad.ad.engine import numba_engine
sys.stdout.buffer.write(pickle.dumps(numba_engine.compile_chunk_range(
    *pickle.loads(sys.stdin.buffer.read()))))
"""


def _chunk_signature(module: ModuleType, sig: tuple) -> dict[str, Any]:
    """numba types of the driver's arguments, by name."""
    code = module.kernel.__code__
    return dict(zip(code.co_varnames[:code.co_argcount], sig))


def _compile_chunk(module: ModuleType, name: str, params: tuple, returns: tuple,
                   typed: dict[str, Any]) -> tuple[Any, Any]:
    """Load (or compile) one chunk for the types of ``params`` in ``typed``; records the
    types of its ``returns`` there. Returns its dispatcher and overload."""
    from numba.core import types as nbtypes

    dispatcher = getattr(module, name)
    chunk_sig = tuple(typed[p] for p in params)
    overload = load_overload(dispatcher, chunk_sig)
    if overload is None:
        dispatcher.compile(chunk_sig)
        overload = dispatcher.overloads[chunk_sig]
    if returns:
        result = overload.signature.return_type
        typed.update(zip(returns, (nbtypes.unliteral(t) for t in result.types)))
    return dispatcher, overload


def compile_chunk_range(name: str, path: str, typed: dict[str, Any], start: int, stop: int,
                        parallel: bool) -> dict[str, Any]:
    """In a child process: compile chunks ``start:stop`` of the split kernel module
    ``name`` (source ``path``) into the disk cache; ``typed`` holds the types of the names
    they read. Returns ``typed`` with the types of what they return."""
    if parallel:
        numba_threads.use_layer()
    module = cache.import_module(name, Path(path))
    for chunk_name, params, returns in module.CHUNKS[start:stop]:
        _compile_chunk(module, chunk_name, params, returns, typed)
    return typed


def _compile_in_children(module: ModuleType, path: Path, typed: dict[str, Any],
                         parallel: bool) -> None:
    """Compile a long split kernel's chunks into the disk cache in child processes of
    :data:`CHUNKS_PER_PROCESS` chunks each, one after the other (a child's chunks take
    their scalar types from the children before). Raises on a failed child."""
    import pickle
    import subprocess

    for start in range(0, len(module.CHUNKS), CHUNKS_PER_PROCESS):
        stop = start + CHUNKS_PER_PROCESS
        request = pickle.dumps((module.__name__, str(path), typed, start, stop, parallel))
        root = str(Path(__file__).resolve().parents[3])
        done = subprocess.run([sys.executable, "-c", _CHILD.format(root=root)], input=request,
                              capture_output=True, check=True)
        typed = pickle.loads(done.stdout)


def _load_chunks(module: ModuleType, sig: tuple, path: Path,
                 parallel: bool) -> tuple[Callable, ChunkDispatchers]:
    """Compile (or load from the cache) each chunk of a split kernel's ``module`` on its
    own, and bind the module's Python driver to their compiled entry points.

    numba links the code of every function a jitted function calls into the caller's
    module and optimises it as a whole, so a jitted driver compiled the whole kernel at
    once after all (20 000 steps: 700 MB). Compiled separately, each chunk is its own
    LLVM module, and the driver costs a Python call per chunk per evaluation (about a
    microsecond). A chunk's scalar parameters are typed by the return types of the
    chunks before it, in the driver's order (``module.CHUNKS``); arrays by ``sig``.
    Kernels of more than :data:`CHUNKS_PER_PROCESS` chunks not all in the cache are
    compiled in child processes first, which bounds the memory any process needs.
    """
    chunks = module.CHUNKS
    if len(chunks) > CHUNKS_PER_PROCESS and not _all_cached(module, sig):
        try:
            _compile_in_children(module, path, _chunk_signature(module, sig), parallel)
        except Exception:  # no child processes here: compile them all in this one
            pass
    typed = _chunk_signature(module, sig)
    entries: dict[str, Callable] = {}
    dispatchers = []
    for name, params, returns in chunks:
        dispatcher, overload = _compile_chunk(module, name, params, returns, typed)
        entries[name] = getattr(overload, "entry_point", None) or dispatcher
        dispatchers.append(dispatcher)
    driver = types.FunctionType(module.kernel.__code__, {**vars(module), **entries}, "kernel")
    return driver, ChunkDispatchers(dispatchers)


def _all_cached(module: ModuleType, sig: tuple) -> bool:
    """Whether numba's disk cache has the last chunk (chunks are compiled in order, so
    then all of them), for the types the chunks before it give."""
    typed = _chunk_signature(module, sig)
    try:
        for name, params, returns in module.CHUNKS:
            dispatcher = getattr(module, name)
            chunk_sig = tuple(typed[p] for p in params)
            overload = load_overload(dispatcher, chunk_sig)
            if overload is None:
                return False
            if returns:
                from numba.core import types as nbtypes
                result = overload.signature.return_type
                typed.update(zip(returns, (nbtypes.unliteral(t) for t in result.types)))
    except Exception:
        return False
    return True


def load(kernel: Kernel, name_path: tuple[str, Any] | None = None):
    """Compile ``kernel`` (or load it from the disk cache).

    Returns the fastest callable of the compiled kernel, its numba dispatcher (whose
    ``stats`` tell cache hits from misses) and the path of its source file.
    ``name_path`` is the module name and path of a source file already known to hold
    ``kernel.source`` (from the cache's metadata); otherwise the source is written.
    """
    if kernel.parallel:  # numba starts its threads to compile or load it
        numba_threads.use_layer()
    name, path = name_path or cache.ensure_source(kernel.source)
    sig = _numba_signature(kernel, kernel.arenas)
    for attempt in range(2):
        dispatcher = None
        try:
            module = cache.import_module(name, path)
            if hasattr(module, "CHUNKS"):  # a split kernel: chunks compiled one by one
                driver, dispatcher = _load_chunks(module, sig, path, kernel.parallel)
                return driver, dispatcher, path
            dispatcher = module.kernel
            overload = load_overload(dispatcher, sig)
            if overload is None:
                dispatcher.compile(sig)
                overload = dispatcher.overloads[sig]
            return getattr(overload, "entry_point", None) or dispatcher, dispatcher, path
        except Exception:
            if attempt:
                raise
            # a corrupt cache entry: drop it (and the source) and compile afresh
            numba_dir = getattr(getattr(dispatcher, "_cache", None), "cache_path", None)
            cache.purge(name, path, numba_dir)
            name, path = cache.ensure_source(kernel.source)
    raise AssertionError("unreachable")


#: Outputs of at least this many bytes are allocated cache-line aligned (see aligned_array).
_ALIGN_FROM_BYTES = 4096

_RUNNER_TEMPLATE = '''
def run({params}*, out=None):
{checks}
    if out is None:
{provide}
    else:
        {outs}, = check_out(out)
{call}
    return ({outs},)
'''

#: A serial kernel's call: in the runner's arenas, or when another thread's call is in
#: them, in new ones.
_ARENA_CALL = '''    if claim(False):
        try:
            kernel({args})
        finally:
            free()
    else:
        kernel({spare})'''


def make_runner(fn: Callable, kernel: Kernel, dispatcher: Any = None, path: Any = None,
                reuse: bool = False, arenas: list[np.ndarray] | None = None,
                outputs: tuple[np.ndarray, ...] | None = None,
                in_use: Any = None) -> Callable[..., tuple]:
    """The Python wrapper around a compiled kernel: checks inputs, provides outputs.

    Outputs are fresh arrays per call, or with ``reuse`` the same arrays every call
    (``outputs``, when given: arrays of the outputs' shapes and dtypes, C-contiguous).
    ``run.reusing_outputs(outputs=None)`` gives a second runner of the same kernel that
    reuses its own outputs, so opting in never changes what other holders of ``run``
    receive. ``arenas`` (the intermediates' buffers) are shared with such siblings, with
    ``in_use``, the lock a serial kernel's call holds while it runs in them;
    ``dispatcher`` and ``path`` (numba's dispatcher, the kernel's source file) are kept
    on the runner for inspection.
    """
    n_in, n_out = len(kernel.in_specs), len(kernel.out_specs)
    parallel = kernel.parallel  # its threading layer was chosen in load()
    ns: dict[str, Any] = {"kernel": fn, "ndarray": np.ndarray, "empty": np.empty,
                          "aligned": aligned_array, "coerce": _coerce}
    checks = []
    for j, (shape, dtype) in enumerate(kernel.in_specs):
        ns[f"S{j}"], ns[f"D{j}"] = tuple(shape), _DTYPES[dtype]
        ns[f"T{j}"] = np.empty(shape, _DTYPES[dtype]).strides  # C-contiguous strides
        checks.append(f"    if x{j}.__class__ is not ndarray or x{j}.dtype is not D{j} "
                      f"or x{j}.shape != S{j} or x{j}.strides != T{j}:\n"
                      f"        x{j} = coerce(x{j}, S{j}, D{j}, 'input {j}')")
    out_specs = [(tuple(s), _DTYPES[d]) for s, d in kernel.out_specs]
    provide = []
    for j, (shape, dtype) in enumerate(out_specs):
        ns[f"OS{j}"], ns[f"OD{j}"] = shape, dtype
        if reuse:
            ns[f"R{j}"] = aligned_array(shape, dtype) if outputs is None else outputs[j]
            provide.append(f"R{j}")
        elif int(np.prod(shape)) * dtype.itemsize >= _ALIGN_FROM_BYTES:
            provide.append(f"aligned(OS{j}, OD{j})")
        else:  # a small output: np.empty is the cheaper call, and alignment cannot matter
            provide.append(f"empty(OS{j}, OD{j})")
    extra = ([f"C{n}" for n in range(len(kernel.consts))]
             + [f"A{n}" for n in range(len(kernel.arenas))])
    for n, c in enumerate(kernel.consts):
        ns[f"C{n}"] = c
    if arenas is None:  # cache-line aligned, so the planner's 64-byte offsets are too
        arenas = [aligned_array((size,), _DTYPES[d], zero=True) for d, size in kernel.arenas]
    for n, a in enumerate(arenas):
        ns[f"A{n}"] = a
    if in_use is None:
        in_use = threading.Lock()
    # another thread's call in the arenas: this one gets its own (never waits)
    ns["claim"], ns["free"] = in_use.acquire, in_use.release
    ns["spare"] = lambda: [aligned_array((size,), _DTYPES[d], zero=True)
                           for d, size in kernel.arenas]

    ns["check_out"] = functools.partial(check_outputs, specs=tuple(out_specs))
    outs = ", ".join(f"o{j}" for j in range(n_out))
    operands = [f"x{j}" for j in range(n_in)] + [f"o{j}" for j in range(n_out)] + extra
    if parallel:  # one parallel kernel at a time, so its arenas are this call's
        ns["run_parallel"] = numba_threads.run_parallel
        call = "    run_parallel(kernel, {})".format(", ".join(operands))
    elif kernel.arenas:
        call = _ARENA_CALL.format(args=", ".join(operands), spare=", ".join(
            [f"x{j}" for j in range(n_in)] + [f"o{j}" for j in range(n_out)]
            + [f"C{n}" for n in range(len(kernel.consts))] + ["*spare()"]))
    else:
        call = "    kernel({})".format(", ".join(operands))
    src = _RUNNER_TEMPLATE.format(
        params="".join(f"x{j}, " for j in range(n_in)),
        checks="\n".join(checks) or "    pass",
        outs=outs,
        provide="\n".join(f"        o{j} = {p}" for j, p in enumerate(provide)),
        call=call)
    exec(compile(src, "<newtonad numba runner>", "exec"), ns)
    run = ns["run"]
    run.kernel, run.dispatcher, run.path = fn, dispatcher, path
    run.source = kernel.source
    run.n_inputs = n_in
    run.out_specs = tuple(out_specs)
    run.reusing_outputs = lambda outputs=None: make_runner(fn, kernel, dispatcher, path,
                                                           reuse=True, arenas=arenas,
                                                           outputs=outputs, in_use=in_use)
    return run


def load_cached(program: Program,
                options: LoweringOptions | None = None) -> Callable[..., tuple] | None:
    """The runner of ``program`` from the disk cache alone: never lowers or compiles.

    ``None`` if the cache has no usable entry for ``program`` and ``options`` (default:
    :meth:`LoweringOptions.current`). The background compiler's hand-over: a worker
    process compiles and writes the entry, this process loads it.
    """
    return _load_cached(program, options or LoweringOptions.current())


def _load_cached(program: Program, options: LoweringOptions) -> Callable[..., tuple] | None:
    """The runner of ``program`` from the cache's metadata, without lowering; ``None`` if
    there is no usable entry (the caller then lowers and compiles, repairing it)."""
    found = cache.read_meta(program, options)
    if found is None:
        return None
    name, path, kernel = found
    try:
        fn, dispatcher, path = load(kernel, (name, path))
        return make_runner(fn, kernel, dispatcher, path)
    except Exception:
        return None


def compile_program(program: Program,
                    options: LoweringOptions | None = None) -> Callable[..., tuple]:
    """Return ``run(*inputs, out=None) -> tuple of outputs`` for ``program``.

    ``options``: how to lower it (default: :meth:`LoweringOptions.current`); runners and
    cached kernels are kept per program and options. See the module docstring for the
    output-buffer contract (``out=`` and ``run.reusing_outputs()``).
    """
    return _remembered(program, options or LoweringOptions.current())


def compile_uncached(program: Program, options: LoweringOptions) -> Callable[..., tuple]:
    """:func:`compile_program` without the in-process memo of runners.

    The kernel is loaded from the disk cache or compiled and written there; the
    background compiler uses this, because its kernel must land on disk.
    """
    run = _load_cached(program, options)
    if run is not None:
        return run
    from .kinds import SUPPORTED
    from .numba_plan import Unsupported

    try:
        kernel = lower(program, options)
    except Unsupported as e:
        if all(s.primitive.numpy_only for s in program.steps
               if s.primitive not in SUPPORTED):
            return numpy_eval.compile_program(program)  # documented: NumPy-evaluated primitives
        return _fallback(program, f"primitive {e.args[0]!r} is not supported")
    except RecursionError:
        return _fallback(program, "the program is too deep to lower")
    try:
        fn, dispatcher, path = load(kernel)
    except Exception as e:  # a numba failure must not take the user's program down
        return _fallback(program, f"compilation failed ({type(e).__name__}: {e})")
    cache.write_meta(program, options, path.stem, kernel)
    return make_runner(fn, kernel, dispatcher, path)


# runners kept per (program, options) for this process
_remembered = functools.lru_cache(maxsize=256)(compile_uncached)

register("numba", compile_program)

__all__ = ["NumbaFallbackWarning", "check_outputs", "compile_program", "compile_uncached",
           "load_cached", "lower", "make_runner", "source"]
