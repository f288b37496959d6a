"""NumPy's products and diagonals on traced arrays: everything is an einsum.

``np.einsum`` (explicit and implicit output, ``...``, repeated indices, the interleaved
form) contracts its operands pairwise, left to right, with the ``einsum`` primitive;
``dot``, ``matmul``, ``vdot``, ``inner``, ``outer`` and ``tensordot`` write their
subscripts and call it (a ``scipy.sparse`` operand of ``dot`` / ``matmul`` is a CSR
product instead, :mod:`.sparse_operands`). ``diagonal`` / ``diag`` / ``trace`` gather or scatter the
diagonal; ``np.linalg.norm`` (every vector and matrix order) is sums, maxima and, for
orders 2, -2 and 'nuc', singular values.
"""

from __future__ import annotations

import builtins
import string
from typing import Any

import numpy as np

from .dispatch import numpy_function
from .numpy_base import (
    astype,
    asvar_or_array,
    check_no_kwargs,
    is_var,
    ndim_of,
    normalize_axis,
    to_float,
)
from .numpy_elementwise import absolute, power, sqrt, square
from .numpy_reductions import max, min, sum
from .numpy_shapes import moveaxis, ravel
from .primitives import elementwise as ew
from .primitives import linalg as la
from .primitives import reductions as rd
from .primitives import structural as st
from .primitives.core import shape_of
from .primitives.decompositions import svdvals as _svdvals
from .sparse_operands import is_sparse_operand
from .sparse_operands import matmul as _sparse_matmul

# ---- einsum ------------------------------------------------------------------------------

_LETTERS = string.ascii_letters


@numpy_function(np.einsum)
def einsum(*operands, out=None, optimize=False, **kwargs):
    """Traced version of numpy.einsum.

    Explicit and implicit output, ``...`` (broadcast), repeated indices within an
    operand (traces, diagonals: ``'ii->'``, ``'ii->i'``, ``'ij,jj->i'``) and the
    interleaved ``einsum(a, [0, 1], b, [1, 2])`` form.
    """
    check_no_kwargs("einsum", {"out": out, **kwargs})
    if not operands:
        raise ValueError("einsum: no input operands")
    if isinstance(operands[0], str):
        subscripts, operands = operands[0], operands[1:]
    else:
        subscripts, operands = _einsum_sublists(operands)
    operands = [asvar_or_array(x) for x in operands]
    terms, out = _einsum_parse(subscripts.replace(" ", ""), [shape_of(x) for x in operands])
    pairs = [_einsum_diagonals(t, x) for t, x in zip(terms, operands)]
    terms, operands = [t for t, _ in pairs], _einsum_broadcast(pairs)
    if len(operands) == 1:
        return _einsum_single(terms[0], out, operands[0])
    # Contract left to right, keeping the indices that are still needed later.
    acc, acc_terms = operands[0], terms[0]
    for i in range(1, len(operands)):
        later = out + "".join(terms[i + 1:])
        keep = "".join(dict.fromkeys(c for c in acc_terms + terms[i] if c in later))
        spec = f"{acc_terms},{terms[i]}->{out if i == len(operands) - 1 else keep}"
        acc, acc_terms = la.einsum(spec, acc, operands[i]), spec.split("->")[1]
    return acc


_SUBLIST_LETTERS = string.ascii_uppercase + string.ascii_lowercase  # NumPy's label order


def _einsum_sublists(args) -> tuple[str, list]:
    """The interleaved form ``(op, sublist, op, sublist, ..., [out_sublist])`` as a string."""
    def letters(sublist) -> str:
        return "".join("..." if s is Ellipsis else _SUBLIST_LETTERS[int(s)] for s in sublist)

    operands, terms = list(args[0::2]), [letters(s) for s in args[1::2]]
    out = None
    if len(args) % 2:  # a trailing output sublist
        out = letters(operands.pop())
    spec = ",".join(terms[:len(operands)])
    return (spec if out is None else f"{spec}->{out}"), operands


def _einsum_parse(subscripts: str, shapes) -> tuple[list[str], str]:
    """Terms and output with ``...`` replaced by letters and implicit output made explicit."""
    lhs, arrow, out = subscripts.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"einsum {subscripts!r} names {len(terms)} operands, got {len(shapes)}")
    n_ell = []
    for i, (t, shape) in enumerate(zip(terms, shapes)):
        named = len(t.replace("...", ""))
        if ("..." in t and named > len(shape)) or ("..." not in t and named != len(shape)):
            raise ValueError(f"einsum {subscripts!r}: operand {i} has {len(shape)} dimensions "
                             f"but its subscripts {t!r} name {named}")
        n_ell.append(len(shape) - named if "..." in t else 0)
    for c in subscripts.replace("...", ""):
        if c not in ",->" and not c.isalpha():
            raise ValueError(f"einsum {subscripts!r}: invalid subscript {c!r}")
    free = [c for c in string.ascii_uppercase + string.ascii_lowercase if c not in subscripts]
    ell = "".join(free[:builtins.max(n_ell, default=0)])
    terms = [t.replace("...", ell[len(ell) - n:]) for t, n in zip(terms, n_ell)]
    if arrow:
        out = out.replace("...", ell)
    else:  # implicit mode: broadcast axes, then the indices used once, sorted
        counts = {c: "".join(terms).count(c) for c in "".join(terms) if c not in ell}
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1))
    missing = [c for c in out if c not in "".join(terms)]
    if missing or len(set(out)) != len(out):
        raise ValueError(f"einsum {subscripts!r}: output subscript(s) {missing or out!r} "
                         "are not found in the inputs or are repeated")
    return terms, out


def _einsum_diagonals(term: str, x) -> tuple[str, Any]:
    """Take the diagonal for each index repeated within one operand (``'ii'`` -> ``'i'``)."""
    while len(set(term)) != len(term):
        c = next(c for c in term if term.count(c) > 1)
        p, q = term.index(c), term.index(c, term.index(c) + 1)
        if shape_of(x)[p] != shape_of(x)[q]:
            raise ValueError(f"einsum: index {c!r} is repeated with sizes {shape_of(x)[p]} and "
                             f"{shape_of(x)[q]}")
        x = diagonal(x, 0, p, q)  # removes axes p, q; the diagonal comes last
        term = term[:p] + term[p + 1:q] + term[q + 1:] + c
    return term, x


def _einsum_broadcast(pairs) -> list:
    """Stretch size-1 axes to the size the same index has in another operand (broadcasting)."""
    sizes: dict[str, int] = {}
    for term, x in pairs:
        for c, n in zip(term, shape_of(x)):
            if n != 1:
                if sizes.setdefault(c, n) != n:
                    raise ValueError(f"einsum: index {c!r} has sizes {sizes[c]} and {n}")
    out = []
    for term, x in pairs:
        target = tuple(sizes.get(c, 1) for c in term)
        out.append(x if shape_of(x) == target else st.broadcast_to(x, target))
    return out


def _einsum_single(term: str, out: str, x):
    term, x = _einsum_diagonals(term, x)
    summed = tuple(i for i, c in enumerate(term) if c not in out)
    kept = "".join(c for c in term if c in out)
    x = rd.reduce_sum(x, axes=summed) if summed else x
    return st.transpose(x, tuple(kept.index(c) for c in out))


# ---- products written as einsums ---------------------------------------------------------

@numpy_function(np.dot, method="dot")
def dot(a, b, out=None):
    """Traced version of numpy.dot (a scipy.sparse operand: its matrix product)."""
    check_no_kwargs("dot", {"out": out})
    if is_sparse_operand(a) or is_sparse_operand(b):
        return _sparse_matmul(a, b)
    na, nb = ndim_of(a), ndim_of(b)
    if na == 0 or nb == 0:
        return ew.mul(a, b)
    la_ = _LETTERS[:na]
    if nb == 1:
        return la.einsum(f"{la_},{la_[-1]}->{la_[:-1]}", a, b)
    lb = _LETTERS[na:na + nb - 2] + la_[-1] + _LETTERS[na + nb - 2]
    return la.einsum(f"{la_},{lb}->{la_[:-1] + lb[:-2] + lb[-1]}", a, b)


@numpy_function(np.matmul)
def matmul(a, b, out=None, **kwargs):
    """Traced version of numpy.matmul (a scipy.sparse operand: a CSR product)."""
    check_no_kwargs("matmul", {"out": out, **kwargs})
    if is_sparse_operand(a) or is_sparse_operand(b):
        return _sparse_matmul(a, b)
    na, nb = ndim_of(a), ndim_of(b)
    if na == 0 or nb == 0:
        raise ValueError("matmul: input operand does not have enough dimensions")
    if na == 1 and nb == 1:
        return la.einsum("i,i->", a, b)
    if na == 1:
        return la.einsum(f"j,{_batch(nb - 2)}jk->{_batch(nb - 2)}k", a, b)
    if nb == 1:
        return la.einsum(f"{_batch(na - 2)}ij,j->{_batch(na - 2)}i", a, b)
    batch = np.broadcast_shapes(shape_of(a)[:-2], shape_of(b)[:-2])
    a = st.broadcast_to(a, batch + shape_of(a)[-2:])
    b = st.broadcast_to(b, batch + shape_of(b)[-2:])
    p = _batch(len(batch))
    return la.einsum(f"{p}ij,{p}jk->{p}ik", a, b)


def _batch(n: int) -> str:
    return _LETTERS[26 - n:26] if n else ""  # upper letters of the lowercase range end


@numpy_function(np.vdot)
def vdot(a, b):
    """Traced version of numpy.vdot."""
    return la.einsum("i,i->", ravel(a), ravel(b))


@numpy_function(np.inner)
def inner(a, b):
    """Traced version of numpy.inner."""
    if ndim_of(a) == 0 or ndim_of(b) == 0:
        return ew.mul(a, b)
    na, nb = ndim_of(a), ndim_of(b)
    sa = _LETTERS[:na - 1] + "z"
    sb = _LETTERS[na - 1:na + nb - 2] + "z"
    return la.einsum(f"{sa},{sb}->{sa[:-1] + sb[:-1]}", a, b)


@numpy_function(np.outer)
def outer(a, b, out=None):
    """Traced version of numpy.outer."""
    check_no_kwargs("outer", {"out": out})
    return la.einsum("i,j->ij", ravel(a), ravel(b))


@numpy_function(np.tensordot)
def tensordot(a, b, axes=2):
    """Traced version of numpy.tensordot."""
    na, nb = ndim_of(a), ndim_of(b)
    if isinstance(axes, int):
        axes_a, axes_b = list(range(na - axes, na)), list(range(axes))
    else:
        axes_a, axes_b = ([axes[0]] if isinstance(axes[0], int) else list(axes[0]),
                          [axes[1]] if isinstance(axes[1], int) else list(axes[1]))
    axes_a = [normalize_axis(i, na) for i in axes_a]
    axes_b = [normalize_axis(i, nb) for i in axes_b]
    sa = list(_LETTERS[:na])
    sb = list(_LETTERS[na:na + nb])
    for i, j in zip(axes_a, axes_b):
        sb[j] = sa[i]
    out = ([c for i, c in enumerate(sa) if i not in axes_a]
           + [c for j, c in enumerate(sb) if j not in axes_b])
    return la.einsum(f"{''.join(sa)},{''.join(sb)}->{''.join(out)}", a, b)


# ---- diagonals ---------------------------------------------------------------------------

@numpy_function(np.trace, method="trace")
def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """``np.trace``: the sum of the ``offset`` diagonal over ``axis1``, ``axis2``."""
    check_no_kwargs("trace", {"out": out})
    d = diagonal(a, offset, axis1, axis2)
    return sum(d if dtype is None else astype(d, dtype), axis=-1)


@numpy_function(np.diagonal, method="diagonal")
def diagonal(a, offset=0, axis1=0, axis2=1):
    """``np.diagonal``: axes ``axis1``, ``axis2`` removed, the diagonal appended last."""
    a = asvar_or_array(a)
    shape = shape_of(a)
    nd = len(shape)
    if nd < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    i, j = normalize_axis(axis1, nd), normalize_axis(axis2, nd)
    if i == j:
        raise ValueError("axis1 and axis2 cannot be the same")
    offset = int(offset)
    rest = [d for d in range(nd) if d not in (i, j)]
    n, m = shape[i], shape[j]
    rows = np.arange(builtins.max(0, -offset), builtins.max(0, builtins.min(n, m - offset)))
    flat = st.reshape(st.transpose(a, rest + [i, j]), tuple(shape[d] for d in rest) + (n * m,))
    return st.gather(flat, (rows * m + rows + offset).astype(np.int64), len(rest))


@numpy_function(np.diag)
def diag(v, k=0):
    """``np.diag``: the ``k``-th diagonal of a matrix, or a matrix with ``v`` on it."""
    v = asvar_or_array(v)
    k = int(k)
    if ndim_of(v) == 2:
        return diagonal(v, k)
    if ndim_of(v) != 1:
        raise ValueError("Input must be 1- or 2-d.")
    n = shape_of(v)[0]
    size = n + builtins.abs(k)
    rows = np.arange(n) + builtins.max(0, -k)
    flat = st.scatter_add(v, (rows * size + rows + k).astype(np.int64), 0, (size * size,))
    return st.reshape(flat, (size, size))


# ---- norms -------------------------------------------------------------------------------

@numpy_function(np.linalg.norm, name=("norm", "linalg.norm"))
def norm(x, ord=None, axis=None, keepdims=False):
    """``np.linalg.norm``: every vector and matrix order, axis tuples and keepdims, as NumPy.

    Matrix orders 2, -2 and 'nuc' go through the singular values; vector order 0 counts the
    non-zero entries (a value with a zero derivative).
    """
    x = to_float(asvar_or_array(x))
    if not is_var(x) and x.dtype.kind != "f":
        x = x.astype(np.float64)
    nd = ndim_of(x)
    if axis is None:
        if ord is None or (isinstance(ord, str) and ord in ("f", "fro") and nd == 2) or \
                (not isinstance(ord, str) and ord == 2 and nd == 1):
            out = sqrt(sum(square(x)))
            return st.reshape(out, (1,) * nd) if keepdims else out
        axis = tuple(range(nd))
    elif not isinstance(axis, tuple):
        try:
            axis = (int(axis),)
        except TypeError as e:
            raise TypeError("'axis' must be None, an integer or a tuple of integers") from e
    if len(axis) == 1:
        return _vector_norm(x, ord, axis[0], keepdims)
    if len(axis) == 2:
        return _matrix_norm(x, ord, axis, keepdims)
    raise ValueError("Improper number of dimensions to norm.")


def _vector_norm(x, ord, axis: int, keepdims: bool):
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    if ord is None or ord == 2:
        return sqrt(sum(square(x), axis=axis, keepdims=keepdims))
    if ord == np.inf:
        return max(absolute(x), axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return min(absolute(x), axis=axis, keepdims=keepdims)
    if ord == 0:  # the number of non-zero entries
        return sum(ew.convert(ew.ne_p(x, 0.0), dtype="float64"), axis=axis, keepdims=keepdims)
    if ord == 1:
        return sum(absolute(x), axis=axis, keepdims=keepdims)
    return power(sum(power(absolute(x), ord), axis=axis, keepdims=keepdims), 1.0 / ord)


def _matrix_norm(x, ord, axis: tuple, keepdims: bool):
    nd = ndim_of(x)
    row, col = (normalize_axis(int(a), nd) for a in axis)
    if row == col:
        raise ValueError("Duplicate axes given.")
    by_string = isinstance(ord, str)
    if not by_string and ord in (2, -2) or ord == "nuc":
        s = _svdvals(moveaxis(x, (row, col), (-2, -1)))
        ret = sum(s, axis=-1) if ord == "nuc" else (max if ord == 2 else min)(s, axis=-1)
    elif not by_string and ord in (1, -1):  # largest / smallest column sum
        pick = max if ord == 1 else min
        ret = pick(sum(absolute(x), axis=row), axis=col - 1 if col > row else col)
    elif not by_string and ord in (np.inf, -np.inf):  # largest / smallest row sum
        pick = max if ord == np.inf else min
        ret = pick(sum(absolute(x), axis=col), axis=row - 1 if row > col else row)
    elif ord is None or ord in ("fro", "f"):
        ret = sqrt(sum(square(x), axis=(row, col)))
    else:
        raise ValueError("Invalid norm order for matrices.")
    if keepdims:
        ret = st.reshape(ret, tuple(1 if i in (row, col) else n for i, n in enumerate(shape_of(x))))
    return ret
