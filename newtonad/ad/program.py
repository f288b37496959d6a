"""The IR: straight-line programs of slots and steps.

A :class:`Program` has slots, each holding an array of a fixed shape and dtype, and
runs a sequence of steps, each writing one slot from slots written earlier. The
slots no step writes are the program's inputs (the roots of its computation graph);
the slots it returns are its outputs (the targets). Constants are steps with no
inputs. A program is immutable and hashable by structure, so compiled code can be
keyed by it.

The IR knows nothing of tracing, differentiation or compilation.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

Shape = tuple[int, ...]


class Slot(NamedTuple):
    """The abstract value held by a slot: a shape and a dtype name.

    A named tuple: every pass hashes and compares the slots of every step (shape-rule memo
    keys, common subexpressions), and a tuple does both in C.
    """

    shape: Shape
    dtype: str = "float64"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def __str__(self) -> str:
        short = {"float64": "f64", "bool": "bool", "int64": "i64"}.get(self.dtype, self.dtype)
        return f"{short}[{','.join(map(str, self.shape))}]"


#: dtype -> its name: NumPy works ``dtype.name`` out in Python on every access, and tracing
#: and the transforms ask for it on every constant.
_DTYPE_NAMES: dict[np.dtype, str] = {}


def dtype_name(dtype: np.dtype) -> str:
    """``dtype.name``, remembered per dtype.

    Parameters
    ----------
    dtype : numpy.dtype
        Any NumPy dtype.

    Returns
    -------
    str
        Its name, as ``dtype.name`` gives it (``"float64"``).
    """
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = dtype.name
    return name


class ArrayConst:
    """A constant array carried in a step's params, hashed by its bytes."""

    __slots__ = ("array", "_digest")

    def __init__(self, array: np.ndarray):
        array = np.array(array, order="C")  # a private copy: the user's array stays theirs
        array.setflags(write=False)
        self.array = array
        h = hashlib.blake2b(digest_size=16)
        h.update(str((array.shape, array.dtype.str)).encode())
        h.update(array.tobytes())
        self._digest = h.hexdigest()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ArrayConst) and other._digest == self._digest

    def __hash__(self) -> int:
        return hash(self._digest)

    def __repr__(self) -> str:
        a = self.array
        if a.size <= 4:
            return np.array2string(a, separator=",").replace("\n", "")
        return f"<{a.dtype}{list(a.shape)} {self._digest[:8]}>"


def _feed_params(h: "hashlib.blake2b", value: Any) -> None:
    """Hash step params exactly: array constants by their bytes' digest, not their repr."""
    if isinstance(value, ArrayConst):
        h.update(b"A" + value._digest.encode())
    elif isinstance(value, (tuple, list)):
        h.update(b"(")
        for v in value:
            _feed_params(h, v)
        h.update(b")")
    else:
        h.update(repr(value).encode())
    h.update(b",")


def _tagged(values: tuple) -> tuple:
    """``values`` with the type of every entry beside it, nested tuples included: ``1``,
    ``1.0`` and ``True`` are equal dictionary keys, but may give different dtypes."""
    tagged = []  # a loop, not a generator: this runs on every step with params, nested
    for v in values:
        kind = v.__class__
        tagged.append((kind, _tagged(v) if kind is tuple else v))
    return tuple(tagged)


#: Memoised shape rules: (primitive, input slots, tagged params) -> output slot. Shape
#: rules are pure functions of these; tracing and every transform re-apply the same few
#: rules to the same few slots thousands of times in a long program (a Python loop
#: traced term by term), and a rule costs microseconds (NumPy's broadcasting helpers).
SHAPE_MEMO: dict[tuple, Slot] = {}
SHAPE_MEMO_MAX = 1 << 16


def output_slot(primitive: Any, in_slots: tuple[Slot, ...], params: Any) -> Slot:
    """The slot ``primitive`` makes from ``in_slots`` under ``params`` (its shape rule).

    ``params`` is a dict or a tuple of ``(name, value)`` pairs. Results are memoised
    when the params are hashable (not for steps without inputs, nor params holding
    constant arrays, which the cache would keep alive); errors of the rule are raised,
    never cached.
    """
    if not params and in_slots:  # most steps: no params, one dictionary lookup
        hit = SHAPE_MEMO.get((primitive, in_slots))
        if hit is not None:
            return hit
    items = tuple(params.items()) if isinstance(params, dict) else params
    holds_array = False
    for _, v in items:
        if v.__class__ is ArrayConst:
            holds_array = True
            break
    if not in_slots or holds_array:
        # constants: a cheap rule, and the cache must not keep their arrays alive
        return primitive.abstract_eval(*in_slots, **dict(items))
    try:
        key = (primitive, in_slots, _tagged(items)) if items else (primitive, in_slots)
        hit = SHAPE_MEMO.get(key)
    except TypeError:  # unhashable params: evaluate the rule every time
        return primitive.abstract_eval(*in_slots, **dict(items))
    if hit is None:
        hit = primitive.abstract_eval(*in_slots, **dict(items))
        if len(SHAPE_MEMO) >= SHAPE_MEMO_MAX:
            SHAPE_MEMO.clear()
        SHAPE_MEMO[key] = hit
    return hit


class Step(NamedTuple):
    """One step: ``output = primitive(*inputs, **params)``.

    ``params`` is a sorted tuple of ``(name, value)`` pairs with hashable values. A named
    tuple, because every pass over a program makes one per step: a tuple is made and
    hashed in C, a frozen dataclass through Python-level ``__init__`` and ``__hash__``.
    """

    primitive: Any  # a newtonad.ad.primitives.Primitive; kept untyped to stay a leaf module
    inputs: tuple[int, ...]
    params: tuple[tuple[str, Any], ...]
    output: int

    @property
    def kwargs(self) -> dict[str, Any]:
        return dict(self.params)


@dataclass(frozen=True)
class Program:
    """An immutable straight-line program.

    Programs are made by :func:`newtonad.trace` and by the transforms; the constructor
    checks the program (see :meth:`validate`).

    Parameters
    ----------
    slots : tuple of Slot
        The abstract value of every slot, indexed by slot number.
    steps : tuple of Step
        The steps in execution order; each writes a distinct slot.
    inputs : tuple of int
        The root slots, in call order.
    outputs : tuple of int
        The target slots, in return order (a slot may appear more than once).

    Raises
    ------
    ValueError
        When the program is malformed (see :meth:`validate`).

    Examples
    --------
    >>> import numpy as np, newtonad as nad
    >>> program = nad.trace(lambda x: np.sum(np.sin(x) * x), np.zeros(3))
    >>> print(program)
    program(s0:f64[3])
      s1:f64[3] = sin(s0)
      s2:f64[3] = mul(s1, s0)
      s3:f64[] = reduce_sum(s2, axes=(0,))
      return s3
    >>> program
    <Program 1 inputs, 3 steps, 1 outputs>
    """

    slots: tuple[Slot, ...]
    steps: tuple[Step, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.validate()

    @classmethod
    def checked_by_construction(cls, slots: tuple[Slot, ...], steps: tuple[Step, ...],
                                inputs: tuple[int, ...], outputs: tuple[int, ...]) -> Program:
        """A program whose every step's slot was given by its shape rule as it was made.

        :func:`~newtonad.ad.trace.to_program` builds programs from recorded Ops, whose
        output slots ``bind`` computed with the primitives' shape rules, writing each
        slot once and in order; validating them again costs a second pass over every
        step of every derived program. Anything else uses the checking constructor.

        Parameters
        ----------
        slots : tuple of Slot
            The abstract value of every slot.
        steps : tuple of Step
            The steps in execution order, already known to be well formed.
        inputs : tuple of int
            The root slots, in call order.
        outputs : tuple of int
            The target slots, in return order.

        Returns
        -------
        Program
            The program, not validated again.

        Examples
        --------
        >>> import numpy as np, newtonad as nad
        >>> p = nad.trace(lambda x: np.sum(np.sin(x) * x), np.zeros(3))
        >>> Program.checked_by_construction(p.slots, p.steps, p.inputs, p.outputs) == p
        True
        """
        program = object.__new__(cls)
        for name, value in (("slots", slots), ("steps", steps), ("inputs", inputs),
                            ("outputs", outputs)):
            object.__setattr__(program, name, value)
        object.__setattr__(program, "_hash", 0)
        return program

    def __hash__(self) -> int:
        # computed when first asked: most programs a derivation makes are intermediate,
        # read once by the next pass and never used as a cache key
        h = self._hash
        if h == 0:
            h = hash((self.slots, self.steps, self.inputs, self.outputs)) or 1
            object.__setattr__(self, "_hash", h)
        return h

    def __reduce__(self) -> tuple:
        # rebuilt without its hash: string hashes differ between processes
        return (Program.checked_by_construction, (self.slots, self.steps, self.inputs,
                                                  self.outputs))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Program):
            return NotImplemented
        if self is other:
            return True
        return (hash(self) == hash(other)
                and (self.slots, self.steps, self.inputs, self.outputs)
                == (other.slots, other.steps, other.inputs, other.outputs))

    @property
    def key(self) -> str:
        """A stable hex digest of the whole program, constants to the last bit.

        Disk caches of compiled kernels are keyed by it.

        Returns
        -------
        str
            32 hexadecimal digits; equal programs have equal keys.

        Examples
        --------
        >>> import numpy as np, newtonad as nad
        >>> program = nad.trace(lambda x: np.sum(np.sin(x) * x), np.zeros(3))
        >>> len(program.key)
        32
        """
        h = hashlib.blake2b(str(self).encode(), digest_size=16)
        for step in self.steps:
            _feed_params(h, step.params)
        return h.hexdigest()

    @property
    def in_slots(self) -> tuple[Slot, ...]:
        """The abstract values of the input slots, in call order.

        Returns
        -------
        tuple of Slot
            One per input.

        Examples
        --------
        >>> import numpy as np, newtonad as nad
        >>> program = nad.trace(lambda x: np.sum(np.sin(x) * x), np.zeros(3))
        >>> [str(slot) for slot in program.in_slots]
        ['f64[3]']
        """
        return tuple(self.slots[i] for i in self.inputs)

    @property
    def out_slots(self) -> tuple[Slot, ...]:
        """The abstract values of the output slots, in return order.

        Returns
        -------
        tuple of Slot
            One per output.

        Examples
        --------
        >>> import numpy as np, newtonad as nad
        >>> program = nad.trace(lambda x: np.sum(np.sin(x) * x), np.zeros(3))
        >>> [str(slot) for slot in program.out_slots]
        ['f64[]']
        """
        return tuple(self.slots[i] for i in self.outputs)

    def validate(self) -> None:
        """Check that every slot is written once, before it is read, with the right shape.

        Raises
        ------
        ValueError
            Naming the first slot or step at fault.

        Examples
        --------
        >>> import numpy as np, newtonad as nad
        >>> program = nad.trace(lambda x: np.sum(np.sin(x) * x), np.zeros(3))
        >>> program.validate()  # also run by the constructor
        """
        written = set(self.inputs)
        if len(written) != len(self.inputs):
            raise ValueError("a slot is listed twice among the program's inputs")
        for step in self.steps:
            for i in step.inputs:
                if i not in written:
                    raise ValueError(f"step {step.primitive} reads slot s{i} before it is written")
            if step.output in written:
                raise ValueError(f"slot s{step.output} is written twice")
            written.add(step.output)
            in_slots = tuple(self.slots[i] for i in step.inputs)
            expected = output_slot(step.primitive, in_slots, step.params)
            if expected != self.slots[step.output]:
                raise ValueError(f"step {step.primitive} writes {self.slots[step.output]} "
                                 f"but its shape rule gives {expected}")
        for i in self.outputs:
            if i not in written:
                raise ValueError(f"output slot s{i} is never written")

    def consumers(self) -> dict[int, list[int]]:
        """Map each slot to the indices of the steps that read it (fan-out).

        Returns
        -------
        dict of int to list of int
            Slot number -> indices (in ``steps``) of the steps reading it; slots no step
            reads are absent.

        Examples
        --------
        >>> import numpy as np, newtonad as nad
        >>> program = nad.trace(lambda x: np.sum(np.sin(x) * x), np.zeros(3))
        >>> program.consumers()
        {0: [0, 1], 1: [1], 2: [2]}
        """
        users: dict[int, list[int]] = {}
        for n, step in enumerate(self.steps):
            for i in step.inputs:
                users.setdefault(i, []).append(n)
        return users

    def __str__(self) -> str:
        def name(i: int) -> str:
            return f"s{i}:{self.slots[i]}"

        lines = [f"program({', '.join(name(i) for i in self.inputs)})"]
        for step in self.steps:
            args = ", ".join(f"s{i}" for i in step.inputs)
            params = ", ".join(f"{k}={v!r}" for k, v in step.params)
            call = ", ".join(x for x in (args, params) if x)
            lines.append(f"  {name(step.output)} = {step.primitive}({call})")
        lines.append(f"  return {', '.join(f's{i}' for i in self.outputs)}")
        return "\n".join(lines)

    def to_dot(self, name: str = "program", backward: bool = False) -> str:
        """Graphviz source of the computation graph (slots as nodes, steps as edges).

        Nodes are slots: inputs (roots) as double circles, outputs (targets) bold, each
        other slot labelled by the step that writes it. With ``backward=True`` every
        edge is reversed: the backpropagation graph, along which cotangents flow.

        Parameters
        ----------
        name : str, optional
            The graph's name in the Graphviz source.
        backward : bool, optional
            Reverse every edge (the backpropagation graph).

        Returns
        -------
        str
            Graphviz ``dot`` source; render it with ``dot -Tsvg``.

        Examples
        --------
        >>> import numpy as np, newtonad as nad
        >>> program = nad.trace(lambda x: np.sum(np.sin(x) * x), np.zeros(3))
        >>> print(program.to_dot())  # doctest: +ELLIPSIS
        digraph program {
          rankdir=LR;
        ...
          s2 -> s3;
        }
        """
        writer = {step.output: step for step in self.steps}
        lines = [f"digraph {name} {{", "  rankdir=LR;", '  node [fontname="monospace"];']
        for i, slot in enumerate(self.slots):
            if i in self.inputs:
                label, attrs = f"x{self.inputs.index(i)}\\n{slot}", "shape=doublecircle"
            elif i in writer:
                step = writer[i]
                label, attrs = f"s{i} = {step.primitive}\\n{slot}", "shape=box"
            else:
                continue
            if i in self.outputs:
                attrs += ", style=bold"
            lines.append(f'  s{i} [label="{label}", {attrs}];')
        for step in self.steps:
            for i in dict.fromkeys(step.inputs):
                a, b = (step.output, i) if backward else (i, step.output)
                lines.append(f"  s{a} -> s{b};")
        lines.append("}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"<Program {len(self.inputs)} inputs, {len(self.steps)} steps, "
                f"{len(self.outputs)} outputs>")
