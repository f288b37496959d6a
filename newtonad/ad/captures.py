"""Values a traced function reads from outside its arguments, and a guard on them.

A trace records what ``f(x, *args)`` computes for the values it read. Values that are
not arguments -- a module global ``lam``, a closure cell, ``self.lam`` of a bound
method, a default argument, an array a closure captured and the user later changes in
place -- can change between calls; a cached trace would then answer for the old ones.
JAX's ``grad`` re-traces every call to stay current; ``jax.jit`` keeps its trace and
goes stale. newtonad keeps its trace *and* stays current:

* :func:`find_captures` walks ``f`` before tracing -- its globals, closure cells and
  defaults, the attributes of ``self`` or of captured objects that its code names, the
  Python functions it reaches that way, and the items of captured lists, tuples and
  dicts -- and records each value with a snapshot (scalars by value, arrays by a copy of
  their contents, everything else by identity);
* :meth:`Guard.changed` re-reads every recorded place on each call: a different object
  (equal scalars excepted), changed array contents or a changed container length means
  the trace is stale and is made again;
* captured float scalars and numeric arrays that reach a primitive are *lifted*: they
  enter the program as data inputs rather than constants baked into it (``bind`` does
  it: :func:`~newtonad.ad.var.lifted_var`), so a new value re-traces to the same
  program and reuses its compiled kernels.

Library code (NumPy, SciPy, newtonad itself, the standard library) is not walked, and
modules and classes are taken as fixed. Data passed as ``args`` is an input of the
program and needs no guard at all; a large captured array costs one comparison of its
contents per call, so pass large data as ``args``.
"""

from __future__ import annotations

import functools
import random
import sysconfig
import types
from typing import Any, Callable

import numpy as np

from .sparse_operands import defining_arrays, is_sparse
from .var import Var

#: Top-level packages whose functions are not walked: their state is not the user's.
_LIBRARIES = frozenset({"numpy", "scipy", "newtonad", "numba", "llvmlite", "builtins", "math",
                        "cmath", "operator", "functools", "itertools", "collections", "typing",
                        "abc", "warnings", "contextlib", "dask", "distributed", "pandas"})
_LIBRARY_DIRS = tuple({sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib",
                                                           "platlib")})
#: Containers longer than this are guarded by identity and length only.
_MAX_ITEMS = 1024
#: Objects and containers nested deeper than this are guarded by identity only.
_MAX_DEPTH = 4
_SCALARS = (bool, int, float, complex, str, bytes, type(None), np.generic)
#: Random number generators: library objects, but their draws make a function impure
_GENERATORS = (np.random.Generator, np.random.RandomState, np.random.BitGenerator,
               random.Random)


# ---- where a value is read from ------------------------------------------------------------

#: The key of a closure cell's place: its contents (any other key is ``holder[key]``).
_CELL = object()


# What a guard entry compares: the object's identity only, a scalar's value, an array's
# contents, or a list's or dict's length (their items have entries of their own).
# A scipy.sparse matrix is compared by the arrays that define it (_SPARSE).
_IDENTITY, _SCALAR, _ARRAY, _LENGTH, _SPARSE = range(5)


class Guard:
    """The places a trace read outside its arguments, with what they held then.

    Attributes
    ----------
    liftable : dict
        ``id(value) -> value`` of the captured float scalars and numeric arrays that
        may enter the program as data inputs (see :func:`~newtonad.ad.var.lifted_var`).
    """

    __slots__ = ("entries", "liftable")

    def __init__(self) -> None:
        # (holder, key, the object there at trace time, what to compare, snapshot)
        self.entries: list[tuple[Any, Any, Any, int, Any]] = []
        self.liftable: dict[int, Any] = {}

    def __len__(self) -> int:
        return len(self.entries)

    def __repr__(self) -> str:
        return f"Guard({len(self.entries)} captured places)"

    def settle(self) -> None:
        """Record what the places hold *after* tracing: a trace that appends to a captured
        list (a call counter, a log) must not look stale on the next call."""
        for i, (holder, key, then, kind, snapshot) in enumerate(self.entries):
            try:
                now = holder.cell_contents if key is _CELL else holder[key]
            except (KeyError, IndexError, ValueError):
                continue  # deleted while tracing: changed() reports it
            if kind == _LENGTH:
                self.entries[i] = (holder, key, now, kind, len(now))
            elif kind == _ARRAY and (now is not then or not same_contents(now, snapshot)):
                self.entries[i] = (holder, key, now, kind, now.copy())
            elif kind == _SPARSE and (now is not then or not _same_matrix(now, snapshot)):
                self.entries[i] = (holder, key, now, kind, _matrix_copy(now))
            elif now is not then:
                self.entries[i] = (holder, key, now, kind, snapshot)

    def changed(self) -> bool:
        """Whether any recorded place now holds something else than at trace time."""
        for holder, key, then, kind, snapshot in self.entries:
            try:
                now = holder.cell_contents if key is _CELL else holder[key]
            except (KeyError, IndexError, ValueError):  # deleted: a global, an item, a cell
                return True
            if now is not then:
                if kind == _SCALAR and now.__class__ is then.__class__ and _same_scalar(now, then):
                    continue  # an equal number in another object
                return True
            if kind == _ARRAY:
                if not same_contents(now, snapshot):
                    return True
            elif kind == _LENGTH and len(now) != snapshot:
                return True
            elif kind == _SPARSE and not _same_matrix(now, snapshot):
                return True
        return False


def _matrix_copy(a: Any) -> tuple:
    return (a.shape, tuple(np.array(part, copy=True) for part in defining_arrays(a)))


def _same_matrix(a: Any, snapshot: tuple) -> bool:
    shape, parts = snapshot
    now = defining_arrays(a)
    return a.shape == shape and len(now) == len(parts) and all(
        same_contents(np.asarray(p), q) for p, q in zip(now, parts))


#: Arrays are compared in two parts: this many first entries, then the rest. A point that
#: moved, or a parameter array rewritten, differs among its first entries: found at once.
_FIRST_CHUNK = 256


def same_contents(now: np.ndarray, then: np.ndarray) -> bool:
    """Whether two arrays have the same shape, dtype and values (nan equal to nan).

    The first entry, then the first :data:`_FIRST_CHUNK` entries, are compared first, so
    a difference there costs almost nothing; equal arrays cost one pass, as a whole
    comparison would.
    """
    if now.shape != then.shape or now.dtype != then.dtype:
        return False
    if now.dtype.kind not in "biufc":  # objects, strings, records: compared whole
        return bool(np.array_equal(now, then))
    nan_aware = now.dtype.kind in "fc"
    if now.size:
        # the first entries as Python numbers: a moved point differs there, told apart
        # in 0.1 µs where the first chunk's comparison costs about 10 µs
        u, v = now.item(0), then.item(0)
        if u != v and (u == u or v == v):  # unequal, and not both nan
            return False
    a, b = now.reshape(-1), then.reshape(-1)
    for part in (slice(0, _FIRST_CHUNK), slice(_FIRST_CHUNK, None)):
        pa, pb = a[part], b[part]
        if not (pa == pb).all() and not (nan_aware and np.array_equal(pa, pb, equal_nan=True)):
            return False
    return True


def _same_scalar(now: Any, then: Any) -> bool:
    try:
        return bool(now == then) or (now != now and then != then)  # NaN is NaN here
    except Exception:  # noqa: BLE001 (an odd __eq__: take it as changed)
        return False


# ---- walking a function ----------------------------------------------------------------------

def _is_library(fn: Any) -> bool:
    module = getattr(fn, "__module__", None) or ""
    if module.partition(".")[0] in _LIBRARIES:
        return True
    filename = getattr(getattr(fn, "__code__", None), "co_filename", "")
    return filename.startswith(_LIBRARY_DIRS) or filename.startswith("<frozen")


def _code_names(code: types.CodeType) -> set[str]:
    """Names (globals and attributes) read by ``code`` and the code nested in it."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


class _Walker:
    """Collects a :class:`Guard` for one function (see the module docstring)."""

    def __init__(self) -> None:
        self.guard = Guard()
        self.seen: set[int] = set()
        self.names: set[str] = set()
        self.keep: list[Any] = []  # holds walked objects alive, so their ids stay unique
        self.objects: list[tuple[Any, int]] = []  # (object, depth) whose attributes to read
        self.read_names: dict[int, set[str]] = {}
        self.generators: list[Any] = []  # captured random number generators

    def record(self, place: tuple[Any, Any], value: Any, kind: int = _IDENTITY,
               snapshot: Any = None) -> None:
        self.guard.entries.append((*place, value, kind, snapshot))

    def function(self, fn: types.FunctionType, depth: int) -> None:
        if id(fn) in self.seen or _is_library(fn):
            return
        self.seen.add(id(fn))
        self.keep.append(fn)
        code = fn.__code__
        names = _code_names(code)
        self.names |= names
        g = fn.__globals__
        for name in sorted(names):
            if name in g:
                self.value((g, name), g[name], depth)
        for cell in fn.__closure__ or ():
            try:
                self.value((cell, _CELL), cell.cell_contents, depth)
            except ValueError:  # an empty cell (a variable not yet assigned)
                pass
        if fn.__defaults__:
            for i, d in enumerate(fn.__defaults__):
                self.value((fn.__defaults__, i), d, depth)
        if fn.__kwdefaults__:
            for name, d in fn.__kwdefaults__.items():
                self.value((fn.__kwdefaults__, name), d, depth)

    def value(self, place: tuple[Any, Any], v: Any, depth: int) -> None:
        """Record where ``v`` was read and what it held, then walk into it."""
        if isinstance(v, (types.ModuleType, type, Var)):
            return  # fixed, or (a Var) an enclosing trace's value, passed to it as data
        if isinstance(v, _GENERATORS):
            if all(g is not v for g in self.generators):
                self.generators.append(v)  # watched for draws while tracing (.purity)
            return
        if is_sparse(v):  # a library object, but its entries are the user's data
            self.record(place, v, _SPARSE, _matrix_copy(v))
            self.keep.append(v)
            return
        if isinstance(v, _SCALARS):
            self.record(place, v, _SCALAR)
            if isinstance(v, (float, np.floating)):
                self.guard.liftable[id(v)] = v
            return
        if isinstance(v, np.ndarray):
            snapshot = v.copy()
            self.record(place, v, _ARRAY, snapshot)
            if v.ndim and v.dtype.kind in "biuf":
                self.guard.liftable[id(v)] = snapshot  # the lifted input is the snapshot
            self.keep.append(v)
            return
        if isinstance(v, (list, dict)):
            self.record(place, v, _LENGTH, len(v))
        elif isinstance(v, tuple) or not _is_library(v if callable(v) else type(v)):
            self.record(place, v)
        else:
            return  # a library function or object: not the user's state
        self.walk(v, depth)

    def walk(self, v: Any, depth: int) -> None:
        """Record the places inside ``v`` (items, cells, attributes) that a trace reads."""
        if isinstance(v, types.FunctionType):
            self.function(v, depth)
            return
        if depth >= _MAX_DEPTH or id(v) in self.seen:
            return
        self.seen.add(id(v))
        self.keep.append(v)
        if isinstance(v, (list, tuple)) and len(v) <= _MAX_ITEMS:
            for i, item in enumerate(v):
                self.value((v, i), item, depth + 1)
        elif isinstance(v, dict) and len(v) <= _MAX_ITEMS:
            for key, item in list(v.items()):
                self.value((v, key), item, depth + 1)
        elif isinstance(v, types.MethodType):  # __self__ and __func__ are read-only
            self.walk(v.__self__, depth + 1)
            self.walk(v.__func__, depth + 1)
        elif isinstance(v, functools.partial):  # so are func, args and keywords
            self.walk(v.func, depth + 1)
            self.walk(v.args, depth + 1)
            self.walk(v.keywords, depth + 1)
        elif hasattr(v, "__dict__") and not _is_library(type(v)):
            self.objects.append((v, depth + 1))
            # a callable instance: its class's __call__, walked when it is Python code
            call = type(v).__call__ if callable(v) else None
            if isinstance(call, types.FunctionType):
                self.function(call, depth + 1)

    def attributes(self) -> bool:
        """Walk the attributes of captured objects that the code walked so far names."""
        grew = False
        for obj, depth in self.objects:
            done = self.read_names.setdefault(id(obj), set())
            attrs = vars(obj)
            for name in sorted(self.names - done):
                done.add(name)
                if name in attrs:
                    self.value((attrs, name), attrs[name], depth)
                    grew = True
                method = getattr(type(obj), name, None)
                if isinstance(method, types.FunctionType) and id(method) not in self.seen:
                    self.function(method, depth)
                    grew = True
        return grew


def find_captures(fun: Callable) -> Guard | None:
    """The :class:`Guard` of what ``fun`` reads outside its arguments; ``None`` if nothing.

    Parameters
    ----------
    fun : callable
        A Python function, bound method, ``functools.partial`` or callable object.

    Returns
    -------
    Guard or None
        ``None`` when ``fun`` reads nothing that could change (only modules, library
        functions and classes): then there is nothing to check per call.
    """
    return walk_captures(fun)[0]


def walk_captures(fun: Callable) -> tuple[Guard | None, list[Any]]:
    """:func:`find_captures`'s guard, and the random number generators ``fun`` captures
    (NumPy ``Generator`` / ``RandomState`` / bit generators, ``random.Random``)."""
    walker = _Walker()
    walker.walk(fun, 0)  # fun itself is held by the caller: it cannot change
    while walker.attributes():
        pass
    generators = walker.generators
    for g in _generators_near(fun):  # also where the walk does not go (library code)
        if all(g is not seen for seen in generators):
            generators.append(g)
    return (walker.guard if walker.guard.entries else None), generators


def _generators_near(fun: Any) -> list[Any]:
    """Random number generators in ``fun``'s closure cells, defaults, the globals its code
    names and its bound instance's attributes (one level, whoever's code it is)."""
    fn = getattr(fun, "__func__", fun)
    found: list[Any] = []
    values: list[Any] = list(vars(fun.__self__).values()) if hasattr(
        getattr(fun, "__self__", None), "__dict__") else []
    if isinstance(fn, types.FunctionType):
        for cell in fn.__closure__ or ():
            try:
                values.append(cell.cell_contents)
            except ValueError:
                pass
        values += list(fn.__defaults__ or ())
        g = fn.__globals__
        values += [g[name] for name in _code_names(fn.__code__) if name in g]
    for v in values:
        if isinstance(v, _GENERATORS):
            found.append(v)
    return found


__all__ = ["Guard", "find_captures", "same_contents", "walk_captures"]
