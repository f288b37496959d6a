"""Var and Op: seed 002's expression graph, and :func:`bind`, through which every
primitive is applied.

A :class:`Var` is a node of an expression graph. It holds an abstract value
(:class:`~newtonad.ad.program.Slot`: shape and dtype), optionally a concrete value,
and its ``creator``: the :class:`Op` (primitive, argument Vars, params) that made it.
Three kinds of Var exist:

* a *tracer* root has no value: tracing a function on tracers records its Ops
  without computing anything (abstract tracing, for compiled use);
* an *eager* Var (``newtonad.Var(value)``) has a value; Ops on it compute their value
  as they are recorded, and ``backward()`` pulls gradients through the graph;
* a *constant* Var wraps a value that is not differentiated (a NumPy array or a
  Python number met during tracing).

This module is the bottom of the AD core: it imports only the IR and the dispatch
tables. Var's operators, methods and NumPy protocols are defined on the class and look
their implementations up in :mod:`.dispatch` (NumPy's ``np.add`` reaches
``Var.__array_ufunc__``, ``np.sum`` ``Var.__array_function__``); the NumPy layer above
fills those tables. The pull-back of one Op (``Op.backward``) is the vjp of a one-step
program, registered there by :mod:`.eager`.
"""

from __future__ import annotations

import contextlib
import itertools
import sys
from types import FrameType
from typing import Any, Callable, Iterable, Iterator, Protocol

import numpy as np

from .dispatch import (
    FUNCTIONS,
    METHODS,
    UFUNC_REDUCE,
    UFUNCS,
    method,
    qualified_name,
    scipy_caller_hint,
)
from .program import Slot

_ids = itertools.count()


def next_id() -> int:
    """The id the next Var will have after this one: Vars made later have larger ids."""
    return next(_ids)


class Primitive(Protocol):
    """What :func:`bind` needs of a primitive (:class:`newtonad.ad.primitives.core.Primitive`,
    defined above this module, is one)."""

    name: str
    impl: Callable[..., Any]

    def abstract_eval(self, *avals: Slot, **params: Any) -> Slot: ...


class TracerBoolError(TypeError):
    """Raised when traced code asks for the concrete value of a tracer.

    ``bool(x)``, ``float(x)``, ``x.item()`` and ``if x > 0:`` need a value that a
    tracer does not have: newtonad traces a function once for every input of a shape.
    Write value-dependent branches with ``np.where(condition, a, b)``.

    Examples
    --------
    >>> import numpy as np, newtonad as nad
    >>> def f(x):
    ...     return x[0] if x[0] > 0 else -x[0]
    >>> try:
    ...     nad.grad(f)(np.array([1.0]))
    ... except nad.TracerBoolError:
    ...     print("use np.where")
    use np.where
    """


def _refused_in_place(name: str) -> Callable[..., Any]:
    """Var's method ``name``, which NumPy arrays run in place: refused with a hint."""
    def refuse(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"x.{name}() {name}s in place, which cannot be traced; use "
                        f"y = np.{name}(x, ...) instead")
    refuse.__name__ = name
    refuse.__qualname__ = f"Var.{name}"
    refuse.__doc__ = (f"Traced version of numpy.ndarray.{name}: refused, it works in place.\n\n"
                      f"Raises TypeError; use ``y = np.{name}(x, ...)`` instead.\n")
    return refuse


class Op:
    """The creator of a Var: a primitive applied to argument Vars with params."""

    __slots__ = ("primitive", "args", "params")

    def __init__(self, primitive: Primitive, args: tuple[Var, ...], params: dict[str, Any]):
        self.primitive = primitive
        self.args = args
        self.params = params

    def __repr__(self) -> str:
        return f"Op({self.primitive}, {len(self.args)} args)"

    def backward(self, out_grad: np.ndarray) -> list[np.ndarray | None]:
        """Pull ``out_grad`` back to each argument (seed 002's ``Op.backward``).

        Returns the cotangent of each argument, ``None`` for constants. The pull-back
        is derived, not written by hand: vjp of a one-step program (:mod:`.eager`).
        """
        return method("op_backward")(self, out_grad)


class Var:
    """A traced array: a node of the expression graph (see the module docstring).

    Users make eager leaves, ``Var(value)``; NumPy code on them records the graph and
    computes values as it goes, and :meth:`backward` pulls gradients into ``.grad``.
    Inside ``newtonad.grad`` and the other transforms, the traced arguments are Vars
    without values (tracers). A Var supports NumPy's operators, ufuncs, the functions of
    :mod:`newtonad.numpy` and the array methods below.

    Parameters
    ----------
    value : array_like, optional
        The concrete value of a new eager leaf, e.g. ``Var(np.array([0.5, 2.0]))``.
        Integer values are converted to float64 (unless ``const``).
    aval : Slot, optional
        The abstract value (shape and dtype); internal: given by tracers and steps,
        taken from ``value`` when omitted.
    creator : Op, optional
        The Op that made this Var (internal); ``None`` for leaves.
    const : bool, optional
        A constant, not differentiated (internal).
    captured : bool, optional
        A value ``f`` read outside its arguments, lifted to a program input (internal).

    Attributes
    ----------
    value : ndarray or None
        The concrete value; ``None`` for a tracer.
    grad : ndarray or None
        The gradient accumulated by :meth:`backward`.

    Examples
    --------
    >>> import numpy as np, newtonad as nad
    >>> x = nad.Var(np.array([1.0, 2.0]))
    >>> y = np.sum(x ** 2)
    >>> y.backward()
    >>> x.grad
    array([2., 4.])
    """

    __slots__ = ("aval", "value", "creator", "grad", "const", "captured", "id", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, value: Any = None, *, aval: Slot | None = None,
                 creator: Op | None = None, const: bool = False, captured: bool = False):
        if aval is None:
            value = np.asarray(value)
            if not const and value.dtype.kind in "biu":
                value = value.astype(np.float64)
            aval = Slot(tuple(value.shape), value.dtype.name)
        self.aval = aval
        self.value = value
        self.creator = creator
        self.grad: np.ndarray | None = None
        self.const = const
        self.captured = captured  # a value f read outside its arguments, lifted to an input
        self.id = next(_ids)

    # ---- abstract value ----------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        """Traced version of numpy.ndarray.shape (known while tracing)."""
        return self.aval.shape

    @property
    def dtype(self) -> np.dtype:
        """Traced version of numpy.ndarray.dtype (known while tracing)."""
        return np.dtype(self.aval.dtype)

    @property
    def ndim(self) -> int:
        """Traced version of numpy.ndarray.ndim (known while tracing)."""
        return len(self.aval.shape)

    @property
    def size(self) -> int:
        """Traced version of numpy.ndarray.size (known while tracing)."""
        return self.aval.size

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __repr__(self) -> str:
        if self.value is not None:
            return f"Var({np.array2string(np.asarray(self.value), threshold=8)})"
        return f"Var<{self.aval}>"

    # ---- concrete value: refused while tracing ------------------------------------
    def _concrete(self, what: str) -> np.ndarray:
        if self.value is None:
            raise TracerBoolError(_with_scipy_hint(_concrete_message(what, self.shape)))
        return np.asarray(self.value)

    def __bool__(self) -> bool:
        return bool(self._concrete("bool(x) or `if x`"))

    def __float__(self) -> float:
        return float(self._concrete("float(x)"))

    def __int__(self) -> int:
        return int(self._concrete("int(x)"))

    def __index__(self) -> int:
        return int(self._concrete("using an array as an index").__index__())

    def item(self) -> Any:
        """Traced version of numpy.ndarray.item: eager Vars only (a tracer has no value)."""
        return self._concrete("x.item()").item()

    def tolist(self) -> Any:
        """Traced version of numpy.ndarray.tolist: eager Vars only (a tracer has no value)."""
        return self._concrete("x.tolist()").tolist()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """An object array of this Var's entries, so ``np.array([x[0], x[1]])`` keeps them.

        NumPy builds lists of traced values into object arrays of Vars; the first
        primitive they reach folds them back into one traced array
        (:func:`newtonad.ad.numpy_api.fold_objects`, found through the dispatch table).
        When NumPy asks for numbers instead (``np.asarray(x, dtype=float)``, storing into a
        float array) only an eager Var's value can give them.
        """
        if dtype is not None and np.dtype(dtype) != np.dtype(object):
            if self.value is None:
                raise TracerBoolError(_with_scipy_hint(
                    _concrete_message("np.asarray(x, dtype=...)", self.shape)))
            return np.asarray(self.value, dtype=dtype)
        return _as_objects(self)

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __hash__(self) -> int:
        return id(self)

    # ---- NumPy protocols (NEP 13 / NEP 18) and operators: see _NUMPY_METHODS below ----
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if kwargs.get("out") is not None:
            raise NotImplementedError(f"np.{ufunc.__name__}(..., out=...) writes in place, which "
                                      "cannot be traced; use the returned value")
        kwargs.pop("out", None)
        if method == "reduce" and ufunc.__name__ in UFUNC_REDUCE:
            kwargs.setdefault("axis", 0)  # ufunc.reduce reduces the first axis by default
            return UFUNC_REDUCE[ufunc.__name__](*inputs, **kwargs)
        name = qualified_name(ufunc)
        if method != "__call__" or ufunc.__name__ not in UFUNCS:
            what = name if method == "__call__" else f"{name}.{method}"
            raise NotImplementedError(f"newtonad cannot trace {what}: it has no derivative "
                                      "rule here. Supported ufuncs: " + ", ".join(sorted(UFUNCS)))
        if kwargs:
            raise NotImplementedError(f"{name} with arguments {sorted(kwargs)} "
                                      "is not supported while tracing")
        return UFUNCS[ufunc.__name__](*inputs)

    def __array_function__(self, func: Any, types: Any, args: tuple, kwargs: dict) -> Any:
        impl = FUNCTIONS.get(func)
        if impl is None:
            raise NotImplementedError(
                f"newtonad cannot trace {qualified_name(func)}: no derivative rule is "
                "defined for it. Write it with supported operations, or see newtonad.numpy "
                "for the functions that trace.")
        return impl(*args, **kwargs)

    # Operators go straight to the ufunc table (not through np.add & co.: tracing a
    # 5 000-step program would pay NumPy's override machinery on every step).
    def __add__(self, other): return UFUNCS["add"](self, other)
    def __radd__(self, other): return UFUNCS["add"](other, self)
    def __sub__(self, other): return UFUNCS["subtract"](self, other)
    def __rsub__(self, other): return UFUNCS["subtract"](other, self)
    def __mul__(self, other): return UFUNCS["multiply"](self, other)
    def __rmul__(self, other): return UFUNCS["multiply"](other, self)
    def __truediv__(self, other): return UFUNCS["true_divide"](self, other)
    def __rtruediv__(self, other): return UFUNCS["true_divide"](other, self)
    def __pow__(self, other): return UFUNCS["power"](self, other)
    def __rpow__(self, other): return UFUNCS["power"](other, self)
    def __matmul__(self, other): return UFUNCS["matmul"](self, other)
    def __rmatmul__(self, other): return UFUNCS["matmul"](other, self)
    def __mod__(self, other): return UFUNCS["remainder"](self, other)
    def __rmod__(self, other): return UFUNCS["remainder"](other, self)
    def __floordiv__(self, other): return UFUNCS["floor_divide"](self, other)
    def __rfloordiv__(self, other): return UFUNCS["floor_divide"](other, self)
    def __divmod__(self, other): return UFUNCS["divmod"](self, other)
    def __rdivmod__(self, other): return UFUNCS["divmod"](other, self)
    def __lt__(self, other): return UFUNCS["less"](self, other)
    def __le__(self, other): return UFUNCS["less_equal"](self, other)
    def __gt__(self, other): return UFUNCS["greater"](self, other)
    def __ge__(self, other): return UFUNCS["greater_equal"](self, other)
    def __eq__(self, other): return UFUNCS["equal"](self, other)
    def __ne__(self, other): return UFUNCS["not_equal"](self, other)
    def __and__(self, other): return UFUNCS["logical_and"](self, other)
    def __or__(self, other): return UFUNCS["logical_or"](self, other)
    def __invert__(self): return UFUNCS["logical_not"](self)
    def __neg__(self): return UFUNCS["negative"](self)
    def __pos__(self): return self
    def __abs__(self): return UFUNCS["absolute"](self)

    def __getitem__(self, key: Any) -> Any:
        return METHODS["getitem"](self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        raise TypeError("newtonad arrays cannot be assigned into (x[i] = v) while tracing: build "
                        "the result instead, e.g. np.where(mask, v, x), np.concatenate of pieces, "
                        "or np.pad")

    def __getattr__(self, name: str) -> Any:
        # NumPy runs a ufunc on an object array (np.exp(np.array([a, b]))) by calling each
        # entry's method of that name: every unary ufunc that traces is such a method.
        ufunc = getattr(np, name, None)
        if name in UFUNCS and isinstance(ufunc, np.ufunc) and ufunc.nin == 1:
            impl = UFUNCS[name]
            return lambda: impl(self)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # ---- array methods: NumPy's functions of the same name -------------------------
    @property
    def T(self) -> Any:
        """Traced version of numpy.ndarray.T."""
        return FUNCTIONS[np.transpose](self)

    @property
    def mT(self) -> Any:
        """Traced version of numpy.ndarray.mT."""
        return FUNCTIONS[np.swapaxes](self, -1, -2)

    @property
    def real(self) -> Var:
        """Traced version of numpy.ndarray.real: the Var itself (values are real)."""
        return self

    def conjugate(self) -> Var:
        """Traced version of numpy.ndarray.conjugate: the Var itself (values are real)."""
        return self

    conj = conjugate

    def copy(self) -> Var:
        """Traced version of numpy.ndarray.copy: the Var itself (Vars are immutable)."""
        return self

    # Methods whose parameters come in the order of their np.* function: forwarded whole.
    def sum(self, *args: Any, **kwargs: Any) -> Any:
        """Traced version of numpy.ndarray.sum."""
        return FUNCTIONS[np.sum](self, *args, **kwargs)

    def mean(self, *args: Any, **kwargs: Any) -> Any:
        """Traced version of numpy.ndarray.mean."""
        return FUNCTIONS[np.mean](self, *args, **kwargs)

    def prod(self, *args: Any, **kwargs: Any) -> Any:
        """Traced version of numpy.ndarray.prod."""
        return FUNCTIONS[np.prod](self, *args, **kwargs)

    def max(self, *args: Any, **kwargs: Any) -> Any:
        """Traced version of numpy.ndarray.max."""
        return FUNCTIONS[np.max](self, *args, **kwargs)

    def min(self, *args: Any, **kwargs: Any) -> Any:
        """Traced version of numpy.ndarray.min."""
        return FUNCTIONS[np.min](self, *args, **kwargs)

    def var(self, *args: Any, **kwargs: Any) -> Any:
        """Traced version of numpy.ndarray.var."""
        return FUNCTIONS[np.var](self, *args, **kwargs)

    def std(self, *args: Any, **kwargs: Any) -> Any:
        """Traced version of numpy.ndarray.std."""
        return FUNCTIONS[np.std](self, *args, **kwargs)

    def cumsum(self, *args: Any, **kwargs: Any) -> Any:
        """Traced version of numpy.ndarray.cumsum."""
        return FUNCTIONS[np.cumsum](self, *args, **kwargs)

    def cumprod(self, *args: Any, **kwargs: Any) -> Any:
        """Traced version of numpy.ndarray.cumprod."""
        return FUNCTIONS[np.cumprod](self, *args, **kwargs)

    def argsort(self, *args: Any, **kwargs: Any) -> Any:
        """Traced version of numpy.ndarray.argsort."""
        return FUNCTIONS[np.argsort](self, *args, **kwargs)

    def argmax(self, *args: Any, **kwargs: Any) -> Any:
        """Traced version of numpy.ndarray.argmax."""
        return FUNCTIONS[np.argmax](self, *args, **kwargs)

    def argmin(self, *args: Any, **kwargs: Any) -> Any:
        """Traced version of numpy.ndarray.argmin."""
        return FUNCTIONS[np.argmin](self, *args, **kwargs)

    def argpartition(self, *args: Any, **kwargs: Any) -> Any:
        """Traced version of numpy.ndarray.argpartition."""
        return FUNCTIONS[np.argpartition](self, *args, **kwargs)

    def round(self, *args: Any, **kwargs: Any) -> Any:
        """Traced version of numpy.ndarray.round."""
        return FUNCTIONS[np.round](self, *args, **kwargs)

    def dot(self, other):
        """Traced version of numpy.ndarray.dot."""
        return FUNCTIONS[np.dot](self, other)

    def swapaxes(self, a, b):
        """Traced version of numpy.ndarray.swapaxes."""
        return FUNCTIONS[np.swapaxes](self, a, b)

    def squeeze(self, axis=None):
        """Traced version of numpy.ndarray.squeeze."""
        return FUNCTIONS[np.squeeze](self, axis)

    def clip(self, min=None, max=None):
        """Traced version of numpy.ndarray.clip."""
        return FUNCTIONS[np.clip](self, min, max)

    def repeat(self, repeats, axis=None):
        """Traced version of numpy.ndarray.repeat."""
        return FUNCTIONS[np.repeat](self, repeats, axis)

    def take(self, indices, axis=None):
        """Traced version of numpy.ndarray.take."""
        return FUNCTIONS[np.take](self, indices, axis)

    def ravel(self, order="C"):
        """Traced version of numpy.ndarray.ravel."""
        return FUNCTIONS[np.ravel](self, order)

    def flatten(self, order="C"):
        """Traced version of numpy.ndarray.flatten."""
        return FUNCTIONS[np.ravel](self, order)

    def diagonal(self, offset=0, axis1=0, axis2=1):
        """Traced version of numpy.ndarray.diagonal."""
        return FUNCTIONS[np.diagonal](self, offset, axis1, axis2)

    def trace(self, offset=0, axis1=0, axis2=1, dtype=None, out=None):
        """Traced version of numpy.ndarray.trace."""
        return FUNCTIONS[np.trace](self, offset, axis1, axis2, dtype, out)

    def astype(self, dtype, **kwargs):
        """Traced version of numpy.ndarray.astype (other keywords are accepted and ignored)."""
        return METHODS["astype"](self, dtype)

    def reshape(self, *shape, order="C"):
        """Traced version of numpy.ndarray.reshape."""
        one = len(shape) == 1 and not isinstance(shape[0], int)
        return FUNCTIONS[np.reshape](self, shape[0] if one else shape, order)

    def transpose(self, *axes):
        """Traced version of numpy.ndarray.transpose."""
        one = len(axes) == 1 and not isinstance(axes[0], int)
        return FUNCTIONS[np.transpose](self, None if not axes else (axes[0] if one else axes))

    sort = _refused_in_place("sort")
    partition = _refused_in_place("partition")

    def nonzero(self):
        """Traced version of numpy.ndarray.nonzero: refused, the result's size depends on values.

        Raises TypeError; use ``np.where(condition, a, b)`` or a constant mask instead.
        """
        raise TypeError("x.nonzero() returns indices whose number depends on the values; it "
                        "cannot be traced. Use np.where(condition, a, b) or a constant mask")

    # ---- seed 002: backward --------------------------------------------------------
    def backward(self, grad: Any = None) -> None:
        """Accumulate d(self)/d(v) into ``v.grad`` for every non-constant Var ``v`` above.

        Runs the graph's Ops in reverse topological order, each pulling its output's
        cotangent back to its arguments, and adds cotangents arriving at one Var along
        several paths (seed 002). Gradients add up over calls, as in autograd libraries:
        reset ``v.grad = None`` between them.

        Parameters
        ----------
        grad : array_like, optional
            The upstream cotangent, shaped like ``self``; 1 by default, for a scalar.

        Raises
        ------
        TypeError
            On a tracer (no value): use :func:`newtonad.grad` for traced functions.
        ValueError
            Without ``grad``, on a Var that is not a scalar.

        Examples
        --------
        >>> import numpy as np, newtonad as nad
        >>> x = nad.Var(np.array([1.0, 2.0, 3.0]))
        >>> (x * x).backward(grad=np.array([1.0, 0.0, 1.0]))
        >>> x.grad
        array([2., 0., 6.])
        """
        if self.value is None:
            raise TypeError("backward() needs an eager Var (made with newtonad.Var(value)); "
                            "use newtonad.grad for traced functions")
        if grad is None:
            if self.shape != ():
                raise ValueError(f"backward() without an explicit grad needs a scalar, got "
                                 f"shape {self.shape}; pass grad= of that shape")
            grad = np.ones(())
        cts: dict[int, np.ndarray] = {self.id: np.asarray(grad, dtype=np.float64)}
        for var in reversed(toposort([self])):
            ct = cts.pop(var.id, None)
            if ct is None or var.const:
                continue
            var.grad = ct if var.grad is None else var.grad + ct
            if var.creator is None:
                continue
            for arg, arg_ct in zip(var.creator.args, var.creator.backward(ct)):
                if arg_ct is not None and not arg.const:
                    cts[arg.id] = arg_ct if arg.id not in cts else cts[arg.id] + arg_ct


#: Entries beyond which a traced array is not split into an object array of scalars.
_MAX_OBJECT_ENTRIES = 4096


def _as_objects(var: Var) -> np.ndarray:
    """``var`` as an object array of scalar Vars (of itself, when it is a scalar)."""
    out = np.empty(var.shape, dtype=object)
    if var.shape == ():
        out[()] = var
        return out
    if var.size > _MAX_OBJECT_ENTRIES:
        raise TypeError(
            f"NumPy asked for a traced array of {var.size} entries as a NumPy array (np.array "
            "or np.asarray of a list holding it, or a NumPy function that does not dispatch to "
            "newtonad); build arrays from traced parts with np.stack or np.concatenate")
    for index in np.ndindex(var.shape):
        out[index] = var[index]
    return out


def _with_scipy_hint(message: str) -> str:
    """``message``, or what to do instead when a library's own code met the traced value:
    a routed SciPy function bound before routing, another SciPy function (not supported),
    or NumPy computing on an object array of traced values (build the array first)."""
    hint = scipy_caller_hint()
    if hint is not None:
        return f"{hint} ({message})"
    entry = _library_entry()
    if entry is None:
        return message
    package, name = entry
    if package == "scipy":
        return (f"newtonad cannot trace {name}: SciPy's own code ran on a traced value and "
                "needed its numbers, and newtonad has no derivative rule for this function. "
                "Write it with supported NumPy / SciPy functions (see 'What newtonad "
                f"traces' in the documentation). ({message})")
    return _numbers_asked_message(name)


def _library_entry() -> tuple[str, str] | None:
    """``(package, name)`` of the NumPy or SciPy function the user's code called, when the
    innermost frames outside newtonad are that library's (else ``None``)."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and _package(frame) == "newtonad":
        frame = frame.f_back
    entry = None
    while frame is not None and _package(frame) in ("numpy", "scipy"):
        entry = frame
        frame = frame.f_back
    if entry is None:
        return None
    module = entry.f_globals.get("__name__", "")
    name = entry.f_code.co_name
    if _package(entry) == "numpy":  # numpy._core.fromnumeric.max is numpy.max to users
        return "numpy", f"numpy{'.linalg' if 'linalg' in module else ''}.{name}"
    public = ".".join(part for part in module.split(".") if not part.startswith("_"))
    owner = entry.f_locals.get("self")
    if owner is not None and public.startswith("scipy.stats"):  # a distribution's method
        name = f"{type(owner).__name__.removesuffix('_gen')}.{name}"
    return "scipy", f"{public}.{name}"


def _package(frame: Any) -> str:
    return frame.f_globals.get("__name__", "").partition(".")[0]


def _concrete_message(what: str, shape: tuple[int, ...]) -> str:
    return (f"{what} needs the value of a traced array, but newtonad traces your function "
            f"once for all inputs of shape {shape}, without values. Value-dependent Python "
            "control flow (if/while on array values, float(x), bool(x), x.item()) cannot be "
            "traced: write the branch with np.where(condition, a, b) (or np.maximum / "
            "np.minimum / np.clip) so both sides are computed and selected elementwise.")


def _numbers_asked_message(where: str) -> str:
    """NumPy's ``where`` wants the numbers of a tracer: a list or object array of them."""
    return (f"NumPy's {where} computed on a Python list or an object array holding traced "
            "values and asked for their numbers, but newtonad traces your function without "
            "values. Build arrays from traced parts with np.stack([...]) or np.concatenate "
            "before calling NumPy on them, so that NumPy hands the call to newtonad: e.g. "
            "np.mean(np.stack([a, b])), not np.mean([a, b]).")


# ---- captured values lifted into program inputs (see captures.py) ----------------------------

_lifting: list[tuple[dict[int, Any], dict[int, Any]]] = []  # per trace level: (liftable, lifted)


@contextlib.contextmanager
def lifting(liftable: dict[int, Any]) -> Iterator[None]:
    """While tracing, let captured values (``id -> snapshot``) enter as data inputs."""
    _lifting.append((liftable, {}))
    try:
        yield
    finally:
        _lifting.pop()


def lifted_var(value: Any) -> Var | None:
    """The input Var standing for a captured value met by ``bind``, or ``None``.

    Only the innermost trace lifts; the Var is made once per value, so every use of a
    captured array shares one program input. The Var holds the guard's snapshot, which
    equals the user's value for as long as the guard passes.
    """
    if not _lifting:
        return None
    liftable, lifted = _lifting[-1]
    key = id(value)
    if key not in liftable:
        return None
    var = lifted.get(key)
    if var is None:
        snapshot = np.asarray(liftable[key])
        if snapshot.dtype.kind == "f":
            snapshot = snapshot.astype(np.float64, copy=snapshot.dtype != np.float64)
        elif snapshot.dtype.kind in "iu":
            snapshot = snapshot.astype(np.int64, copy=snapshot.dtype != np.int64)
        if snapshot.shape == ():
            snapshot = np.array(snapshot)  # a private 0-d array, not the user's scalar
        var = lifted[key] = Var(snapshot, aval=Slot(snapshot.shape, snapshot.dtype.name),
                                captured=True)
    return var


def is_float(aval: Slot) -> bool:
    return np.dtype(aval.dtype).kind == "f"


def const_var(value: Any, like: Var | None = None) -> Var:
    """Wrap a non-differentiated value; Python scalars take a float Var's dtype.

    An object array holding Vars (NumPy's make of a list of traced values) is folded
    into one traced array instead.
    """
    if isinstance(value, np.ndarray) and value.dtype == object:
        folded = method("fold_objects")(value)
        if folded is not None:
            return folded
    if isinstance(value, (bool, np.bool_)):
        arr = np.asarray(value)
    elif isinstance(value, (int, float)) and like is not None and like.dtype.kind == "f":
        arr = np.asarray(value, dtype=like.dtype)
    elif isinstance(value, float):
        arr = np.asarray(value, dtype=np.float64)
    else:
        arr = np.asarray(value)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"newtonad cannot use a value of dtype {arr.dtype} in a traced function")
    if arr.dtype.kind == "f" and arr.dtype != np.float64:
        arr = arr.astype(np.float64)
    if arr.dtype.kind in "iu" and arr.dtype != np.int64:
        arr = arr.astype(np.int64)
    return Var(arr, const=True)


def _input_var(value: Any, like: Var) -> Var:
    """A non-Var argument of a primitive: a captured value lifted to an input, or a constant."""
    lifted = lifted_var(value)
    return const_var(value, like) if lifted is None else lifted


def bind(primitive: Primitive, *args: Any, **params: Any) -> Any:
    """Apply ``primitive`` to ``args``; record an Op when any argument is a Var.

    With no Var among the arguments this is plain NumPy evaluation. Arguments that
    are all constants fold to a constant.
    """
    if not args:  # a constant step, re-bound by a transform
        return Var(primitive.impl(**params), const=True)
    if not any(isinstance(a, Var) for a in args):
        return primitive.impl(*args, **params)
    like = next(a for a in args if isinstance(a, Var))
    vargs = tuple(a if isinstance(a, Var) else _input_var(a, like) for a in args)
    aval = primitive.abstract_eval(*(a.aval for a in vargs), **params)
    if all(a.const for a in vargs) and aval.size <= max([1] + [a.size for a in vargs]):
        # Constant folding; expansions (broadcasts of a scalar zero, say) stay steps so
        # that large constant arrays are never baked into programs.
        return Var(primitive.impl(*(a.value for a in vargs), **params), const=True)
    value = None
    if all(a.value is not None for a in vargs):
        value = np.asarray(primitive.impl(*(a.value for a in vargs), **params))
    return Var(value, aval=aval, creator=Op(primitive, vargs, params))


def new_tracer(aval: Slot) -> Var:
    """A fresh abstract root."""
    return Var(aval=aval)


def toposort(outputs: Iterable[Var], stop: int = -1) -> list[Var]:
    """Vars reachable from ``outputs`` in an order where arguments come first.

    Vars with ``id < stop`` are treated as leaves (they belong to an enclosing trace).
    Iterative, so deep graphs do not hit Python's recursion limit.
    """
    order: list[Var] = []
    seen: set[int] = set()
    for root in outputs:
        if root.id in seen:
            continue
        stack: list[tuple[Var, bool]] = [(root, False)]
        while stack:
            var, expanded = stack.pop()
            if expanded:
                order.append(var)
                continue
            if var.id in seen:
                continue
            seen.add(var.id)
            stack.append((var, True))
            if var.creator is not None and var.id >= stop:
                for arg in reversed(var.creator.args):
                    if arg.id not in seen:
                        stack.append((arg, False))
    return order


__all__ = ["Op", "TracerBoolError", "Var", "bind", "const_var", "is_float", "lifted_var",
           "lifting", "new_tracer", "next_id", "toposort"]
