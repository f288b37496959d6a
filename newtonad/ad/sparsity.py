"""Structural sparsity as a program transform.

Each slot of a program gets a *pattern*: a sparse boolean matrix from the slot's
entries (rows, in C order) to the entries of input 0 (columns); ``True`` where the
entry may depend on that input entry. Patterns flow through the steps: a step's
output pattern is the union over its operands of ``L_i @ P_i``, where ``L_i`` is the
step's *local map* -- which operand entries each output entry may depend on.

Local maps come from the primitive's ``sparsity`` rule when it has one, otherwise
from a generic rule chosen by its ``kind``. A rule receives
``(in_avals, out_aval, consts, **params)`` (``consts[i]`` the value of operand ``i``
when it is a program constant, else ``None``) and returns, per operand, ``None``
(no dependence), :data:`DENSE` (every output entry on every operand entry) or a pair
``(out_index, in_index)`` of flat integer arrays: the COO entries of ``L_i``. Rules
use NumPy only, so the primitives' modules need not import scipy.

The Jacobian pattern is the pattern of the outputs; the Hessian pattern is the
Jacobian pattern of the gradient program. Both are conservative (an entry the
pattern leaves out is zero at every point) and depend on the program only, so they
are cached by program.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

from .program import Program, Slot

#: A local map on which every output entry depends on every operand entry.
DENSE = "dense"

LocalMap = Any  # None, DENSE or (out_index, in_index)
#: Products of letter sizes above this make an einsum's local map dense (conservative).
EINSUM_ENUMERATION_LIMIT = 4_000_000


def is_float(slot: Slot) -> bool:
    """Only floating slots carry derivatives; integer and boolean ones carry none."""
    return np.dtype(slot.dtype).kind in "fc"


def _positions(slot: Slot) -> np.ndarray:
    """Entry number + 1 of every entry (0 is left free to mean "no entry")."""
    return np.arange(1, slot.size + 1, dtype=np.float64).reshape(slot.shape)


def copy_map(values: Any) -> tuple[np.ndarray, np.ndarray]:
    """The local map of an output whose entries are copies of operand entries.

    ``values`` is the operation applied to :func:`_positions` of the operand: each
    output entry holds the number + 1 of the entry it copies, or 0 (no entry).
    """
    flat = np.asarray(values, dtype=np.float64).ravel()
    out_index = np.flatnonzero(flat)
    return out_index, flat[out_index].astype(np.int64) - 1


# ---- generic rules by kind ------------------------------------------------------------------

def elementwise_rule(in_avals: Sequence[Slot], out_aval: Slot, consts: Sequence[Any],
                     **params: Any) -> list[LocalMap]:
    """Each output entry depends on the operands' entries at its broadcast index."""
    maps: list[LocalMap] = []
    for aval in in_avals:
        if not is_float(aval):
            maps.append(None)
            continue
        try:
            maps.append(copy_map(np.broadcast_to(_positions(aval), out_aval.shape)))
        except ValueError:  # not a broadcast after all: stay conservative
            maps.append(DENSE)
    return maps


def _linear_operands(primitive: Any, n: int) -> range | tuple[int, ...]:
    return range(n) if primitive.linear_in == "all" else primitive.linear_in


def copy_rule(primitive: Any) -> Callable[..., list[LocalMap]]:
    """Structural and gather steps that copy entries: run the operation on entry numbers.

    Each operand the step is linear in is replaced by its entry numbers (the others
    linear operands by zeros, integer operands by their constant values). A step that
    turns out to add entries (an output of ones above 1) or whose indices are not
    constants gets a dense map: conservative, never wrong.
    """
    def rule(in_avals, out_aval, consts, **params):
        maps: list[LocalMap] = [None] * len(in_avals)
        linear = _linear_operands(primitive, len(in_avals))
        for i in linear:
            if not is_float(in_avals[i]):
                continue
            args: list[Any] = []
            for j, aval in enumerate(in_avals):
                if j == i:
                    args.append(_positions(aval))
                elif j in linear:
                    args.append(np.zeros(aval.shape))
                elif consts[j] is not None:
                    args.append(consts[j])
                else:
                    args = []
                    break
            if not args:
                maps[i] = DENSE
                continue
            ones = list(args)
            ones[i] = np.ones(in_avals[i].shape)
            if np.any(np.asarray(primitive.impl(*ones, **params)) > 1):
                maps[i] = DENSE  # it sums entries: not a copy
                continue
            maps[i] = copy_map(primitive.impl(*args, **params))
        return maps
    return rule


def _lines(aval: Slot, axes: Sequence[int]) -> np.ndarray:
    """For each entry (flat), the number of its line when ``axes`` are summed out."""
    axes = {a % aval.ndim for a in axes} if aval.ndim else set()
    coords = np.unravel_index(np.arange(aval.size), aval.shape)
    kept = [c for ax, c in enumerate(coords) if ax not in axes]
    kept_shape = tuple(n for ax, n in enumerate(aval.shape) if ax not in axes)
    if not kept:
        return np.zeros(aval.size, dtype=np.int64)
    return np.ravel_multi_index(kept, kept_shape).astype(np.int64)


def reduction_rule(in_avals, out_aval, consts, *, axes, **params) -> list[LocalMap]:
    """Each output entry depends on the operand entries of its line (sum, max, prod)."""
    (aval,) = in_avals
    return [(_lines(aval, axes), np.arange(aval.size))]


def scan_rule(in_avals, out_aval, consts, *, axis, **params) -> list[LocalMap]:
    """Each output entry depends on every entry of its line along ``axis``."""
    maps: list[LocalMap] = []
    out_lines = _lines(out_aval, (axis,))
    for aval in in_avals:
        if not is_float(aval):
            maps.append(None)
        elif aval.shape != out_aval.shape:
            maps.append(DENSE)
        else:
            # out entry o ~ operand entry e when they share a line: join on line number
            order = np.argsort(out_lines, kind="stable")
            counts = np.bincount(out_lines)
            starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
            in_lines = _lines(aval, (axis,))
            reps = counts[in_lines]
            in_index = np.repeat(np.arange(aval.size), reps)
            offsets = np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)
            out_index = order[np.repeat(starts[in_lines], reps) + offsets]
            maps.append((out_index, in_index))
    return maps


def contraction_rule(in_avals, out_aval, consts, *, spec, **params) -> list[LocalMap]:
    """einsum: an output entry depends on the operand entries whose shared letters match."""
    lhs, out = spec.split("->")
    subs = lhs.split(",")
    sizes: dict[str, int] = {}
    for s, aval in zip(subs, in_avals):
        sizes.update(zip(s, aval.shape))
    letters = sorted(sizes)
    total = int(np.prod([sizes[c] for c in letters], dtype=np.int64))
    if total > EINSUM_ENUMERATION_LIMIT:
        return [DENSE if is_float(a) else None for a in in_avals]
    grid = np.indices([sizes[c] for c in letters]).reshape(len(letters), -1)
    coord = dict(zip(letters, grid))

    def flat(s: str) -> np.ndarray:
        if not s:
            return np.zeros(grid.shape[1], dtype=np.int64)
        return np.ravel_multi_index([coord[c] for c in s], [sizes[c] for c in s])

    out_index = flat(out)
    return [(out_index, flat(s)) if is_float(a) else None for s, a in zip(subs, in_avals)]


def matrix_rule(in_avals, out_aval, consts, **params) -> list[LocalMap]:
    """Factorisations and solves of stacks of matrices: dense within each matrix.

    The leading axes that every floating operand has besides its last two (and that
    the output shares) are batch axes: an output entry depends on every operand entry
    of its own batch element only. Without shared batch axes, dense.
    """
    floats = [a for a in in_avals if is_float(a)]
    batch = min((a.ndim - 2 for a in floats), default=0)
    shape = out_aval.shape[:batch] if batch > 0 else ()
    if batch <= 0 or any(a.shape[:batch] != shape for a in floats):
        return dense_rule(in_avals, out_aval, consts)
    count = int(np.prod(shape, dtype=np.int64))
    out_per = out_aval.size // count
    maps: list[LocalMap] = []
    for aval in in_avals:
        if not is_float(aval):
            maps.append(None)
            continue
        in_per = aval.size // count
        # every (output entry, operand entry) pair of the same batch element
        b = np.repeat(np.arange(count), out_per * in_per)
        within = np.arange(out_per * in_per)
        out_index = b * out_per + np.tile(within // in_per, count)
        in_index = b * in_per + np.tile(within % in_per, count)
        maps.append((out_index, in_index))
    return maps


def dense_rule(in_avals, out_aval, consts, **params) -> list[LocalMap]:
    """Every output entry on every entry of every floating operand (matrix factorisations,
    solves, and any primitive without a better rule)."""
    return [DENSE if is_float(a) else None for a in in_avals]


def rule_for(primitive: Any) -> Callable[..., list[LocalMap]]:
    """The primitive's own ``sparsity`` rule, else the generic rule of its kind."""
    own = getattr(primitive, "sparsity", None)
    if own is not None:
        return own
    kind = primitive.kind
    if kind == "elementwise":
        return elementwise_rule
    if kind in ("structural", "gather"):
        return copy_rule(primitive)
    if kind == "reduction":
        return reduction_rule
    if kind == "scan":
        return scan_rule
    if kind == "contraction":
        return contraction_rule
    if kind == "matrix":
        return matrix_rule
    return dense_rule


# ---- propagation ----------------------------------------------------------------------------

def _as_bool(matrix: Any) -> Any:
    from scipy import sparse

    out = sparse.csr_array(matrix, dtype=bool)
    out.sum_duplicates()
    out.eliminate_zeros()
    return out


class PatternTooDense(ValueError):
    """A pattern would have more non-zeros than the caller's ``max_nnz``: take it as dense."""


def _check_size(nnz: int, max_nnz: int | None) -> None:
    if max_nnz is not None and nnz > max_nnz:
        raise PatternTooDense(f"a slot's pattern has more than {max_nnz} non-zeros")


def _apply(local: LocalMap, pattern: Any, out_size: int, in_size: int,
           max_nnz: int | None = None) -> Any:
    """The pattern of a step's output from one operand's; sizes checked before building."""
    from scipy import sparse

    if local is DENSE:
        union = np.flatnonzero(np.asarray(pattern.sum(axis=0)).ravel())
        _check_size(out_size * union.size, max_nnz)
        rows = np.repeat(np.arange(out_size), union.size)
        cols = np.tile(union, out_size)
        return sparse.csr_array((np.ones(rows.size, dtype=bool), (rows, cols)),
                                shape=(out_size, pattern.shape[1]))
    out_index, in_index = np.asarray(local[0]), np.asarray(local[1])
    if out_index.size and np.all(np.diff(out_index) > 0):
        # A copy map (each output entry from at most one operand entry, the common case):
        # select rows instead of multiplying. A row read many times (a broadcast) can
        # multiply the non-zeros: count them before selecting.
        if max_nnz is not None:
            _check_size(int(np.diff(pattern.indptr)[in_index].sum()), max_nnz)
        picked = pattern[in_index]
        counts = np.zeros(out_size, dtype=np.int64)
        counts[out_index] = np.diff(picked.indptr)
        indptr = np.concatenate(([0], np.cumsum(counts)))
        return sparse.csr_array((picked.data, picked.indices, indptr),
                                shape=(out_size, pattern.shape[1]))
    L = sparse.csr_array((np.ones(len(out_index), dtype=np.int32), (out_index, in_index)),
                         shape=(out_size, in_size))
    L.data[:] = 1  # duplicates summed: back to ones
    if max_nnz is not None:  # an upper bound of the product's non-zeros, before forming it
        _check_size(int(L.sum(axis=0) @ np.diff(pattern.indptr)), max_nnz)
    return L @ pattern.astype(np.int32)


@functools.lru_cache(maxsize=128)
def jacobian_patterns(program: Program, wrt: int = 0,
                      max_nnz: int | None = None) -> tuple[Any, ...]:
    """The pattern of every output of ``program`` with respect to input ``wrt``.

    Parameters
    ----------
    program : Program
        Any program.
    wrt : int
        The input the columns refer to.
    max_nnz : int, optional
        Give up (:class:`PatternTooDense`) as soon as a slot's pattern would have more
        non-zeros than this: callers that only want a sparse pattern need not pay for
        a dense one (propagating a dense n x n pattern costs O(n^3)).

    Returns
    -------
    tuple of scipy.sparse.csr_array
        Per output, a boolean ``out.size x program.in_slots[wrt].size`` matrix: entry
        ``(i, j)`` is ``False`` only when output entry ``i`` cannot depend on input
        entry ``j``.
    """
    from scipy import sparse

    n = program.in_slots[wrt].size
    patterns: dict[int, Any] = {program.inputs[wrt]: sparse.eye_array(n, dtype=bool,
                                                                       format="csr")}
    consts: dict[int, Any] = {}
    for step in program.steps:
        out_aval = program.slots[step.output]
        values = [consts.get(i) for i in step.inputs]
        if all(v is not None for v in values) and step.primitive.kind != "positions":
            consts[step.output] = np.asarray(step.primitive.impl(*values, **step.kwargs))
            continue
        ins = [patterns.get(i) for i in step.inputs]
        if not is_float(out_aval) or all(p is None for p in ins):
            continue
        in_avals = [program.slots[i] for i in step.inputs]
        maps = rule_for(step.primitive)(in_avals, out_aval, values, **step.kwargs)
        total = None
        for local, pattern, aval in zip(maps, ins, in_avals):
            if local is None or pattern is None:
                continue
            term = _apply(local, pattern, out_aval.size, aval.size, max_nnz)
            total = term if total is None else total + term
        if total is not None:
            patterns[step.output] = _as_bool(total)
            _check_size(patterns[step.output].nnz, max_nnz)
    empty = [sparse.csr_array((program.slots[i].size, n), dtype=bool) for i in program.outputs]
    return tuple(patterns.get(i, e) for i, e in zip(program.outputs, empty))


def jacobian_pattern(program: Program) -> Any:
    """The pattern of output 0 with respect to input 0 (``y.size x x.size``)."""
    return jacobian_patterns(program, 0, None)[0]  # the key jacobian_sparsity uses: one entry


@functools.lru_cache(maxsize=128)
def hessian_pattern(program: Program, max_nnz: int | None = None) -> Any:
    """The Hessian pattern of a scalar program: the Jacobian pattern of its gradient.

    Parameters
    ----------
    program : Program
        A program with one scalar output.
    max_nnz : int, optional
        As for :func:`jacobian_patterns`: raise :class:`PatternTooDense` early rather
        than build a pattern with more non-zeros.

    Returns
    -------
    scipy.sparse.csr_array
        Boolean, ``x.size x x.size``, symmetric.
    """
    from .transforms import grad_program

    pattern = jacobian_patterns(grad_program(program), 0, max_nnz)[0]
    return _as_bool(pattern + pattern.T)  # the Hessian is symmetric: close it under transposition
