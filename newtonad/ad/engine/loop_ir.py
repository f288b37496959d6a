"""A small typed IR of the kernel body: expressions, statements and loops.

The code generator builds these records and :mod:`.printer` turns them into Python
source; nothing reads source text back. Expressions are atoms (locals, literals,
array elements) or an operation on atoms; statements are assignments, reductions,
guards (``if``) and loops. Names the generator makes inside a loop nest are
:class:`Var` (locals: renamed in a parallel loop, so that no thread shares one with
code outside it); names of arrays and of kernel-wide scalars are plain text.

Index maps come from the planner: an axis index is a :data:`Dim` ``(loop variable or
None, scale, offset)``, printed with the loop variables' names.

Inside one loop nest, before its loops are written, statements are :class:`Placed` at
the loop depth they need; a :class:`Columns` template holds those of the columns of a
short innermost axis. The passes over these (:mod:`.passes`) run before the nest
writer puts the statements into loops; the printer never sees them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

from ..primitives.reductions import REDUCTIONS

Dim = tuple[Union[int, None], int, int]  # (loop variable or None, scale, offset)
IMap = tuple[Dim, ...]


# ---- expressions -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Var:
    """A local of a loop nest (temporary, accumulator or loop variable).

    ``stem`` and ``slot`` tell a pass that copies the local's statements (the columns
    of :func:`.passes.write_out_columns`) how to name each copy, as the nest writer
    names its locals: the temporary of slot ``slot`` is ``t<slot>``, then
    ``t<slot>_<n>`` for its n-th computation in the nest; another local is ``stem``
    followed by the position of its first statement among the nest's placed
    statements. Only ``name`` tells locals apart.
    """

    name: str
    stem: str = field(default="", compare=False)
    slot: Union[int, None] = field(default=None, compare=False)


def slot_temp(slot: int, n: int) -> Var:
    """The temporary of the ``n``-th computation of ``slot`` in a nest (from 0)."""
    return Var(f"t{slot}" if n == 0 else f"t{slot}_{n}", "t", slot)


def placed_local(stem: str, position: int) -> Var:
    """A local first assigned by the nest's placed statements number ``position``."""
    return Var(f"{stem}{position}", stem)


@dataclass(frozen=True)
class LoopVar:
    """Loop variable ``i<n>`` of a loop nest."""

    n: int


@dataclass(frozen=True)
class Scalar:
    """A kernel-wide name: a scalar slot ``r<i>``, an extent ``n<v>``, ``nb``."""

    name: str


@dataclass(frozen=True)
class Lit:
    """A literal constant; ``plain`` when it is one token (a name or an unsigned number)."""

    text: str
    plain: bool


@dataclass(frozen=True)
class Load:
    """``array[index]``: one element of an array at an index map of the loop variables."""

    array: str
    index: IMap


@dataclass(frozen=True)
class FlatLoad:
    """``array[offset]`` of a flat view: ``terms`` are (axis index, stride), outermost first."""

    array: str
    terms: tuple[tuple[Dim, int], ...]


Atom = Union[Var, LoopVar, Scalar, Lit, Load, FlatLoad]


@dataclass(frozen=True)
class Apply:
    """An elementwise primitive on atoms (printed by its entry in :mod:`.numba_ops`)."""

    primitive: Any
    args: tuple[Atom, ...]
    in_dtypes: tuple[str, ...]
    out_dtype: str
    params: tuple


@dataclass(frozen=True)
class Mul:
    """``a * b`` (factors regrouped out of an inner loop)."""

    a: Atom
    b: Atom


@dataclass(frozen=True)
class Sum:
    """``a + b + ...`` (the terms of a gathered sum), ``zero`` when there are none."""

    terms: tuple[Atom, ...]
    zero: Lit


@dataclass(frozen=True)
class Text:
    """Source of an expression over whole arrays, made outside loop nests (not renamed).

    ``reads``: the kernel's names it reads (globals such as ``np`` left out), declared
    by whoever writes the text, so that liveness (:mod:`.liveness`) never reads source.
    As a loop variable (:attr:`For.var`) a Text is one bare name, which the loop writes.
    """

    text: str
    reads: tuple[str, ...] = field(default=(), compare=False)


Expr = Union[Atom, Apply, Mul, Sum, Text]


def is_simple(e: Expr) -> bool:
    """Safe to repeat in an expression: a name or a one-token literal."""
    if isinstance(e, Lit):
        return e.plain
    return isinstance(e, (Var, LoopVar, Scalar))


def atoms(e: Expr) -> tuple[Any, ...]:
    """The atoms ``e`` reads (the operands of an operation, ``e`` itself for an atom)."""
    if isinstance(e, Apply):
        return e.args
    if isinstance(e, Mul):
        return (e.a, e.b)
    if isinstance(e, Sum):
        return e.terms
    return (e,)


# ---- statements --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Comment:
    text: str


@dataclass(frozen=True)
class Assign:
    """``target op value`` with ``op`` one of ``=``, ``+=``, ``*=``."""

    target: Expr
    value: Expr
    op: str = "="


@dataclass(frozen=True)
class Reduce:
    """Fold ``value`` into ``target`` by reduction primitive ``op`` (the fold of its
    :class:`~..primitives.reductions.Reduction` record; NaN wins max and min)."""

    target: Expr
    value: Expr
    op: Any


@dataclass(frozen=True)
class Bound:
    """``i<var> >= value`` or ``i<var> < value``: one side of a box."""

    var: int
    op: str
    value: int


Guard = tuple[Bound, ...]


@dataclass(frozen=True)
class If:
    """``if cond: body else: orelse``; ``cond`` a guard (its bounds, and-ed) or text."""

    cond: Union[Guard, Text]
    body: tuple[Any, ...]
    orelse: tuple[Any, ...] = ()


@dataclass(frozen=True)
class For:
    """``for var in range(start, stop, step)`` (bounds: ints or expressions).

    ``stop_at_run_time``: the innermost loop of a nest whose literal ``stop`` is to be
    read at run time instead (:func:`.passes.run_time_extents`).
    """

    var: Union[Var, LoopVar, Text]
    start: Any
    stop: Any
    body: tuple[Any, ...]
    step: int = 1
    stop_at_run_time: bool = False


@dataclass(frozen=True)
class ForIn:
    """``for var in values`` over a literal tuple (the table of a nest's edge pieces)."""

    var: str
    values: tuple
    body: tuple[Any, ...]


@dataclass(frozen=True)
class ParallelFor:
    """``for i0 in range(lo, hi)`` in ``chunks`` chunks of ``size`` rows run on all threads."""

    lo: int
    hi: int
    chunks: int
    size: int
    body: tuple[Any, ...]


@dataclass(frozen=True)
class Threadable:
    """A loop nest whose outermost loop (its one top-level :class:`For`) writes no element
    twice across iterations: it may run on all threads (:func:`.passes.parallel_chunks`
    decides). ``rows``: the trip count of that loop; ``iterations``: of the whole nest."""

    rows: int
    iterations: int
    body: tuple[Any, ...]


@dataclass(frozen=True)
class Private:
    """Statements whose locals are their own (suffixed ``suffix``): a parallel loop's piece."""

    suffix: str
    body: tuple[Any, ...]


@dataclass(frozen=True)
class Line:
    """A statement given as source (calls on whole arrays, views, ``raise``).

    ``reads`` and ``writes``: the kernel's names it reads (globals such as ``np`` left
    out) and the names it assigns, declared by whoever writes the text (liveness,
    :mod:`.liveness`, never reads source). A line is one simple statement: it reads
    all of ``reads`` before it writes; an element stored into an array (``a[i] = v``,
    ``a[i] += v``) reads the array's name and writes no name.
    """

    text: str
    reads: tuple[str, ...] = field(default=(), compare=False)
    writes: tuple[str, ...] = field(default=(), compare=False)


Stmt = Union[Comment, Assign, Reduce, If, For, ForIn, ParallelFor, Threadable, Private, Line]


@dataclass
class Placed:
    """Statements of a loop nest placed at a loop depth, under a guard.

    ``depth`` counts loop variables (``i0`` .. ``i<depth-1>`` exist there); ``after``:
    below that level's inner loop instead of above it. ``common``: they compute a
    common subexpression (a temporary computed once and reused) that does not depend
    on the column of a :class:`Columns` template unless it reads one that does.
    """

    depth: int
    stmts: list[Any]
    guard: Guard = ()
    after: bool = False
    common: bool = False


@dataclass
class Columns:
    """Placed statements of the columns ``i<var>`` in ``range(start, stop)`` of a nest's
    innermost axis, with no loop over them: :func:`.passes.write_out_columns` writes
    ``template`` out once per column, ``i<var>`` replaced by the column's number.

    The template's depths count the loops written (``i<var>`` is not one of them);
    its statements read ``i<var>`` in their index maps.
    """

    var: int
    start: int
    stop: int
    template: list[Placed]


def walk(stmts: Any, parallel: bool = False):
    """Every statement in ``stmts``, nested ones included, as ``(statement, in_parallel)``:
    ``in_parallel`` tells whether it runs inside a :class:`ParallelFor`."""
    for s in stmts:
        yield s, parallel
        if isinstance(s, If):
            yield from walk(s.body, parallel)
            yield from walk(s.orelse, parallel)
        elif isinstance(s, (For, ForIn, Threadable, Private)):
            yield from walk(s.body, parallel)
        elif isinstance(s, ParallelFor):
            yield from walk(s.body, True)


def code_lines(stmts: list[Any]) -> int:
    """Lines of code (comments excluded) that flat statements print as."""
    n = 0
    for s in stmts:
        if isinstance(s, Reduce):
            n += len(REDUCTIONS[s.op].fold)  # a sum one, max / min a test and an assignment
        elif not isinstance(s, Comment):
            n += 1
    return n


def guard_depth(guard: Guard) -> int:
    """The loop depth at which all variables of ``guard`` exist."""
    return 1 + max(b.var for b in guard) if guard else 0
