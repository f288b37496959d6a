"""Opaque steps as loop IR: contractions, gathers, scatters, cumulative sums, concatenation,
sparse (CSR) matrix products.

Each runs on whole arrays (or, in a row-blocked region, on the block's views): an
einsum that is one matrix product calls ``np.dot`` on 2-D views, any other einsum (and
a dot or elementwise product written as one) and the index steps are explicit loops
(indices wrap and are bounds-checked as in ``np.take``); a CSR product is the row loop
of scipy's ``csr_matvec`` (its adjoint scatters each row into the output, as
``csc_matvec`` does). Entries are found by the primitive object (:data:`LOWERINGS`,
whose keys are the engine's opaque primitives: :data:`.kinds.OPAQUE`). This module
imports no planner or code generator module, so that :mod:`.kinds` can read the table.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..primitives.linalg import einsum_p, is_vector_product
from ..primitives.reductions import cumsum_p
from ..primitives.sparse_matmul import sparse_matmul_p
from ..primitives.structural import concatenate_p, gather_p, scatter_add_p
from ..program import Step
from .loop_ir import For, If, Line, Text
from .matmul_forms import matmul_form
from .where import Where


def _spec(step: Step) -> tuple[str, str, str]:
    ins, so = step.kwargs["spec"].split("->")
    sa, sb = ins.split(",")
    return sa, sb, so


def _loops(names_extents: list[tuple[str, Any]], body: list[Any]) -> list[Any]:
    """Nested ``for name in range(extent)`` loops around ``body``."""
    for name, extent in reversed(names_extents):
        body = [For(Text(name), 0, extent, tuple(body))]
    return body


def einsum(at: Where, step: Step) -> list[Any]:
    a, b = step.inputs
    out = step.output
    sa, sb, so = _spec(step)
    shapes = at.slots[a].shape, at.slots[b].shape
    # a dot or elementwise product in a matrix product's clothes: serial loops, not BLAS
    # threads (see is_vector_product)
    blas = None if is_vector_product(f"{sa},{sb}->{so}", *shapes) else \
        _blas(at, a, b, sa, sb, so, out)
    if blas is not None:
        return blas
    sizes = {c: n for subs, i in ((sa, a), (sb, b)) for c, n in zip(subs, at.slots[i].shape)}
    letters = list(so) + [c for c in dict.fromkeys(sa + sb) if c not in so]
    var = {c: f"e_{c}" for c in letters}
    summed = len(letters) > len(so)
    lines: list[Any] = [at.fill(out, 0)] if summed else []
    ra = at.ref_text(a, ", ".join(var[c] for c in sa))
    rb = at.ref_text(b, ", ".join(var[c] for c in sb))
    op = "+=" if summed else "="
    reads = (*at.ref_reads(a, tuple(var[c] for c in sa)),
             *at.ref_reads(b, tuple(var[c] for c in sb)))
    if at.is_scalar(out):  # r<out> = ..., r<out> += ...
        writes: tuple[str, ...] = (f"r{out}",)
        reads += writes if summed else ()
    else:  # an element stored: reads the array and the index
        writes = ()
        reads += at.ref_reads(out, tuple(var[c] for c in so))
    body = Line(f"{at.ref_text(out, ', '.join(var[c] for c in so))} {op} {ra} * {rb}", reads,
                writes)
    return lines + _loops([(var[c], sizes[c]) for c in letters], [body])


def _blas(at: Where, a: int, b: int, sa: str, sb: str, so: str, out: int,
          target: str | None = None) -> list[Any] | None:
    """``np.dot`` on 2-D views when the contraction is one matrix product.

    In a row-blocked region the row axis of blocked operands counts ``nb`` rows;
    ``target`` replaces the output array (the temporary of a summed einsum).
    """
    slots = at.slots
    if any(slots[i].dtype != "float64" or slots[i].shape == () or slots[i].size == 0
           for i in (a, b, out)):
        return None
    form = matmul_form(sa, sb, so)
    if form is None:
        return None
    sizes: dict[str, Any] = {}
    for subs, i in ((sa, a), (sb, b), (so, out)):
        for n, (c, extent) in enumerate(zip(subs, slots[i].shape)):
            if n == 0 and at.blocked(i):
                sizes[c] = "nb"
            else:
                sizes.setdefault(c, extent)

    def count(letters: str) -> str:
        n = int(np.prod([sizes[c] for c in letters if sizes[c] != "nb"], dtype=np.int64))
        if any(sizes[c] == "nb" for c in letters):
            return "nb" if n == 1 else f"nb * {n}"
        return str(n)

    nc = count(form.contracted)
    left, right = (a, b) if form.left == 0 else (b, a)
    fl, fr = form.free
    ml = (f"{at.array(left)}.reshape(({nc}, {count(fl)})).T" if form.transposed[0]
          else f"{at.array(left)}.reshape(({count(fl)}, {nc}))")
    mr = (f"{at.array(right)}.reshape(({count(fr)}, {nc})).T" if form.transposed[1]
          else f"{at.array(right)}.reshape(({nc}, {count(fr)}))")
    dest = target or at.array(out)
    rows = ("nb",) if any(sizes[c] == "nb" for c in form.contracted + fl + fr) else ()
    return [Line(f"np.dot({ml}, {mr}, {dest}.reshape(({count(fl)}, {count(fr)})))",
                 (at.array(left), at.array(right), dest, *rows))]


def summed_einsum(at: Where, step: Step) -> list[Any]:
    """An einsum contracting the row axis, in a region: the first block's product is
    written to the output, the next ones' to a temporary added to it."""
    a, b = step.inputs
    out = step.output
    sa, sb, so = _spec(step)
    size = at.slots[out].size
    first = _blas(at, a, b, sa, sb, so, out)
    later = _blas(at, a, b, sa, sb, so, out, target=f"w{at.base(out)}")
    assert first is not None and later is not None  # the planner checked matmul_form
    temp = f"w{at.base(out)}"
    add = [Line(f"acc = b{out}.reshape({size})", (f"b{out}",), ("acc",)),
           Line(f"add = {temp}.reshape({size})", (temp,), ("add",)),
           For(Text("e"), 0, size, (Line("acc[e] += add[e]", ("acc", "e", "add")),))]
    return [If(Text("r0 == 0", ("r0",)), tuple(first), tuple(later + add))]


def _three(at: Where, i: int, axis: int) -> str:
    """Slot ``i`` viewed as ``(before axis, axis, after axis)``."""
    shape = at.slots[i].shape
    a = int(np.prod(shape[:axis], dtype=np.int64))
    b = int(np.prod(shape[axis + 1:], dtype=np.int64))
    return f"b{i}.reshape(({a}, {shape[axis]}, {b}))"


def _indexed_loops(A: int, m: int, B: int, ix: Text, n: int, what: str, body: Line
                   ) -> list[Any]:
    """Loops over (outer, index, inner) with the index ``ix`` wrapped and bounds-checked,
    as np.take."""
    inner = [Line(f"j = {ix.text}", ix.reads, ("j",)),
             If(Text("j < 0", ("j",)), (Line(f"j += {n}", ("j",), ("j",)),)),
             If(Text(f"j < 0 or j >= {n}", ("j",)),
                (Line(f"raise IndexError(\"{what}: index out of range\")"),)),
             For(Text("e2"), 0, B, (body,))]
    return _loops([("e0", A), ("e1", m)], inner)


def _index(at: Where, idx: int) -> Text:
    """The index of the (e0, e1, e2) loops: a scalar index, or element ``e1`` of ``ig``."""
    return Text(f"r{idx}", (f"r{idx}",)) if at.is_scalar(idx) else Text("ig[e1]", ("ig", "e1"))


def gather(at: Where, step: Step) -> list[Any]:
    x, idx = step.inputs
    axis, out = step.kwargs["axis"], step.output
    xs = at.slots[x].shape
    n = xs[axis]
    m = max(at.slots[idx].size, 1)
    A = int(np.prod(xs[:axis], dtype=np.int64))
    B = int(np.prod(xs[axis + 1:], dtype=np.int64))
    ix = _index(at, idx)
    value = ("xg", "e0", "j", "e2")
    body = (Line(f"r{out} = xg[e0, j, e2]", value, (f"r{out}",)) if at.is_scalar(out)
            else Line("og[e0, e1, e2] = xg[e0, j, e2]", ("og", "e0", "e1", "e2", *value)))
    lines: list[Any] = [Line(f"xg = {_three(at, x, axis)}", (f"b{x}",), ("xg",))]
    if not at.is_scalar(idx):
        lines.append(Line(f"ig = {at.flat_view(idx)}", at.view_reads(idx), ("ig",)))
    if not at.is_scalar(out):
        lines.append(Line(f"og = b{out}.reshape(({A}, {m}, {B}))", (f"b{out}",), ("og",)))
    return lines + _indexed_loops(A, m, B, ix, n, "gather", body)


def scatter_add(at: Where, step: Step) -> list[Any]:
    y, idx = step.inputs
    axis, out = step.kwargs["axis"], step.output
    zs = at.slots[out].shape
    n = zs[axis]
    A = int(np.prod(zs[:axis], dtype=np.int64))
    B = int(np.prod(zs[axis + 1:], dtype=np.int64))
    m = max(at.slots[idx].size, 1)
    ix = _index(at, idx)
    src, src_reads = ((f"r{y}", (f"r{y}",)) if at.is_scalar(y)
                      else ("yg[e0, e1, e2]", ("yg", "e0", "e1", "e2")))
    body = Line(f"og[e0, j, e2] += {src}", (*src_reads, "og", "e0", "j", "e2"))
    lines: list[Any] = [at.fill(out, 0),
                        Line(f"og = b{out}.reshape(({A}, {n}, {B}))", (f"b{out}",), ("og",))]
    if not at.is_scalar(y):
        lines.append(Line(f"yg = b{y}.reshape(({A}, {m}, {B}))", (f"b{y}",), ("yg",)))
    if not at.is_scalar(idx):
        lines.append(Line(f"ig = {at.flat_view(idx)}", at.view_reads(idx), ("ig",)))
    return lines + _indexed_loops(A, m, B, ix, n, "scatter_add", body)


def cumsum(at: Where, step: Step) -> list[Any]:
    (x,), out = step.inputs, step.output
    axis, reverse = step.kwargs["axis"], step.kwargs["reverse"]
    shape = at.slots[x].shape
    n = shape[axis]
    A = int(np.prod(shape[:axis], dtype=np.int64))
    B = int(np.prod(shape[axis + 1:], dtype=np.int64))
    prev = "e1 + 1" if reverse else "e1 - 1"
    first = n - 1 if reverse else 0
    names = ("og", "e0", "e1", "e2", "xg")
    body = If(Text(f"e1 == {first}", ("e1",)), (Line("og[e0, e1, e2] = xg[e0, e1, e2]", names),),
              (Line(f"og[e0, e1, e2] = og[e0, {prev}, e2] + xg[e0, e1, e2]", names),))
    along = (For(Text("e1"), Text(f"{n} - 1"), -1, (For(Text("e2"), 0, B, (body,)),), step=-1)
             if reverse else For(Text("e1"), 0, n, (For(Text("e2"), 0, B, (body,)),)))
    return [Line(f"xg = {_three(at, x, axis)}", (f"b{x}",), ("xg",)),
            Line(f"og = {_three(at, out, axis)}", (f"b{out}",), ("og",)),
            For(Text("e0"), 0, A, (along,))]


def concatenate(at: Where, step: Step) -> list[Any]:
    axis, out = step.kwargs["axis"], step.output
    lines: list[Any] = [Line(f"og = {_three(at, out, axis)}", (f"b{out}",), ("og",))]
    start = 0
    for i in step.inputs:
        shape = at.slots[i].shape
        A = int(np.prod(shape[:axis], dtype=np.int64))
        B = int(np.prod(shape[axis + 1:], dtype=np.int64))
        lines.append(Line(f"xg = {_three(at, i, axis)}", (f"b{i}",), ("xg",)))
        lines += _loops([("e0", A), ("e1", shape[axis]), ("e2", B)],
                        [Line(f"og[e0, e1 + {start}, e2] = xg[e0, e1, e2]",
                              ("og", "e0", "e1", "e2", "xg"))])
        start += shape[axis]
    return lines


def sparse_matmul(at: Where, step: Step) -> list[Any]:
    """``A @ x`` by rows of the CSR arrays; ``A.T @ x`` (adjoint) scatters each row's
    entries into the output. Trailing axes of ``x`` (right-hand sides, frame columns)
    are the innermost loop; with none, a row's sum stays in a local."""
    indptr, indices, data, x = step.inputs
    out = step.output
    m = at.slots[indptr].size - 1
    adjoint = step.kwargs["adjoint"]
    width = int(np.prod(at.slots[x].shape[1:], dtype=np.int64))
    lines: list[Any] = [Line(f"sp = {at.flat_view(indptr)}", at.view_reads(indptr), ("sp",)),
                        Line(f"si = {at.flat_view(indices)}", at.view_reads(indices), ("si",)),
                        Line(f"sd = {at.flat_view(data)}", at.view_reads(data), ("sd",))]
    entries = (Text("sp[e0]", ("sp", "e0")), Text("sp[e0 + 1]", ("sp", "e0")))
    if width == 1:
        lines += [Line(f"xf = {at.flat_view(x)}", at.view_reads(x), ("xf",)),
                  Line(f"of = {at.flat_view(out)}", at.view_reads(out), ("of",))]
        if adjoint:
            body: list[Any] = [
                Line("yv = xf[e0]", ("xf", "e0"), ("yv",)),
                For(Text("e1"), *entries,
                    (Line("of[si[e1]] += sd[e1] * yv", ("of", "si", "sd", "e1", "yv")),))]
            return lines + [at.fill(out, 0), For(Text("e0"), 0, m, tuple(body))]
        body = [Line("acc = 0.0", (), ("acc",)),
                For(Text("e1"), *entries,
                    (Line("acc += sd[e1] * xf[si[e1]]", ("acc", "sd", "e1", "xf", "si"),
                          ("acc",)),)),
                Line("of[e0] = acc", ("of", "e0", "acc"))]
        return lines + [For(Text("e0"), 0, m, tuple(body))]
    rows_x, rows_out = at.slots[x].shape[0], at.slots[out].shape[0]
    lines += [Line(f"xg = {at.array(x)}.reshape(({rows_x}, {width}))", (at.array(x),), ("xg",)),
              Line(f"og = {at.array(out)}.reshape(({rows_out}, {width}))", (at.array(out),),
                   ("og",)),
              at.fill(out, 0)]
    names = ("og", "xg", "j", "v", "e0", "e2")
    update = (Line("og[j, e2] += v * xg[e0, e2]", names) if adjoint
              else Line("og[e0, e2] += v * xg[j, e2]", names))
    inner = (Line("j = si[e1]", ("si", "e1"), ("j",)), Line("v = sd[e1]", ("sd", "e1"), ("v",)),
             For(Text("e2"), 0, width, (update,)))
    return lines + [For(Text("e0"), 0, m, (For(Text("e1"), *entries, inner),))]


#: Primitive -> lowering of one opaque step; its keys are :data:`.kinds.OPAQUE`.
LOWERINGS = {einsum_p: einsum, gather_p: gather, scatter_add_p: scatter_add, cumsum_p: cumsum,
             concatenate_p: concatenate, sparse_matmul_p: sparse_matmul}

__all__ = ["LOWERINGS", "summed_einsum"]
