"""Var and Op: the eager expression graph (define-by-run, as in autograd), and
:func:`bind`, through which every primitive is applied.

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

This module is the bottom of the AD core: it imports only the IR, the dispatch tables
and helpers that import nothing else of newtonad either: :mod:`.array_methods` (NumPy's
array methods, a mixin of Var), :mod:`.tracer_errors` (what tracing says when code asks
a tracer for its value), :mod:`.object_arrays` (a traced array as an object array of
scalars) and :mod:`.lifting` (captured values entering a trace as inputs). Var's
operators and NumPy protocols are defined on the class; they and the methods look their
implementations up in :mod:`.dispatch` (NumPy's ``np.add`` reaches
``Var.__array_ufunc__``, ``np.sum`` ``Var.__array_function__``); the NumPy layer above
fills those tables. The pull-back of one Op (``Op.backward``) is the vjp of a one-step
program, registered there by :mod:`.eager`.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any, Callable, Iterable, Protocol

import numpy as np

from .array_methods import ArrayMethods
from .branches import Recording
from .branches import owner as branch_owner
from .dispatch import (
    FUNCTIONS,
    METHODS,
    UFUNC_REDUCE,
    UFUNCS,
    is_spmatrix,
    method,
    qualified_name,
)
from .lifting import lifted_input, lifting
from .object_arrays import as_objects
from .program import Slot, dtype_name, output_slot
from .tracer_errors import (
    BranchOnTracer,
    TracerBoolError,
    concrete_message,
    conversion_message,
    library_asked,
    with_scipy_hint,
)

_ids = itertools.count()
_NUMBERS = (float, int)  # operands of * that are never scipy.sparse matrices: no test
_F64_SCALAR = Slot((), "float64")


def next_id() -> int:
    """The id the next Var will have after this one: Vars made later have larger ids."""
    return next(_ids)


class Primitive(Protocol):
    """What :func:`bind` needs of a primitive (:class:`newtonad.ad.primitives.core.Primitive`,
    defined above this module, is one)."""

    name: str
    impl: Callable[..., Any]

    def abstract_eval(self, *avals: Slot, **params: Any) -> Slot: ...


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
        """Pull ``out_grad`` back to each argument (reverse mode, one Op at a time).

        Returns the cotangent of each argument, ``None`` for constants. The pull-back
        is derived, not written by hand: vjp of a one-step program (:mod:`.eager`).
        """
        return method("op_backward")(self, out_grad)


class Var(ArrayMethods):
    """A traced array: a node of the expression graph (see the module docstring).

    Users make eager leaves, ``Var(value)``; NumPy code on them records the graph and
    computes values as it goes, and :meth:`backward` pulls gradients into ``.grad``.
    Inside ``newtonad.grad`` and the other transforms, the traced arguments are Vars
    without values (tracers). A Var supports NumPy's operators, ufuncs, the functions of
    :mod:`newtonad.numpy` and NumPy's array methods (``x.sum()``, ``x.T``, ...; defined
    on :class:`~newtonad.ad.array_methods.ArrayMethods`).

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
            aval = Slot(tuple(value.shape), dtype_name(value.dtype))
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

    # ---- concrete value: branches recorded, numbers refused while tracing ------------
    def _in_trace(self) -> Recording | None:
        """The guarded trace this Var is a traced value of (``None``: eager or constant)."""
        return None if self.const else branch_owner(self.id)

    def _concrete(self, what: str) -> np.ndarray:
        """The value behind a conversion to a Python number: an eager Var's or a constant's;
        a traced value's is refused (the number would lose its derivative)."""
        if self.value is None or self._in_trace() is not None:
            raise TracerBoolError(with_scipy_hint(conversion_message(what, self.shape)))
        return np.asarray(self.value)

    def __bool__(self) -> bool:
        # a branch: in a guarded trace, the path taken at the point, recorded as a guard
        if self.value is None or self._in_trace() is not None:
            if library_asked():  # NumPy / SciPy code on traced values: name that function
                return bool(self._concrete("bool(x) or `if x`"))
            if self.value is None:
                raise BranchOnTracer(concrete_message("bool(x) or `if x`", self.shape))
            return self._in_trace().decide(self, np.asarray(self.value))  # type: ignore[union-attr]
        return bool(np.asarray(self.value))

    def __float__(self) -> float:
        return float(self._concrete("float(x)"))

    def __int__(self) -> int:
        return int(self._concrete("int(x)"))

    def __index__(self) -> int:
        return int(self._concrete("using a traced value as an index or count").__index__())

    def item(self) -> Any:
        """Traced version of numpy.ndarray.item: eager Vars only.

        A traced value's number would lose its derivative: refused.
        """
        return self._concrete("x.item()").item()

    def tolist(self) -> Any:
        """Traced version of numpy.ndarray.tolist: eager Vars only.

        A traced value's numbers would lose their derivative: refused.
        """
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
            return np.asarray(self._concrete("np.asarray(x, dtype=...)"), dtype=dtype)
        return as_objects(self)

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __hash__(self) -> int:
        return id(self)

    # ---- NumPy protocols (NEP 13 / NEP 18) and operators ---------------------------
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
    def __mul__(self, other):
        if other.__class__ not in _NUMBERS and is_spmatrix(other):
            return UFUNCS["matmul"](self, other)  # a scipy.sparse matrix's * is @
        return UFUNCS["multiply"](self, other)

    def __rmul__(self, other):
        if other.__class__ not in _NUMBERS and is_spmatrix(other):
            return UFUNCS["matmul"](other, self)
        return UFUNCS["multiply"](other, self)
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

    # ---- eager reverse mode --------------------------------------------------------
    def backward(self, grad: Any = None) -> None:
        """Accumulate d(self)/d(v) into ``v.grad`` for every non-constant Var ``v`` above.

        Runs the graph's Ops in reverse topological order, each pulling its output's
        cotangent back to its arguments, and adds cotangents arriving at one Var along
        several paths. Gradients add up over calls, as in autograd libraries:
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


def lifted_var(value: Any) -> Var | None:
    """The input Var standing for a captured value met by ``bind``, or ``None``.

    Only the innermost trace lifts; the Var is made once per value, so every use of a
    captured array shares one program input. The Var holds the guard's snapshot, which
    equals the user's value for as long as the guard passes (see :mod:`.lifting`).
    """
    return lifted_input(value, _captured_input)


def _captured_input(snapshot: np.ndarray) -> Var:
    return Var(snapshot, aval=Slot(snapshot.shape, dtype_name(snapshot.dtype)), captured=True)


def is_float(aval: Slot) -> bool:
    return np.dtype(aval.dtype).kind == "f"


def const_var(value: Any, like: Var | None = None) -> Var:
    """Wrap a non-differentiated value; Python scalars take a float Var's dtype.

    An object array holding Vars (NumPy's make of a list of traced values) is folded
    into one traced array instead.
    """
    if value.__class__ in _NUMBERS and like is not None and like.aval.dtype == "float64":
        # the usual constant of traced code (a Python number beside a float Var), without
        # the dtype tests below
        return Var(np.asarray(value, dtype=np.float64), aval=_F64_SCALAR, const=True)
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


class _Rewriting(threading.local):
    #: ``hook(primitive, vargs, aval, params, all_const) -> Var or None``, consulted by
    #: :func:`bind` before it folds or records a step; per thread, so a transform that
    #: simplifies as it binds leaves other threads' traces as they are
    hook: Callable[..., Any] | None = None


REWRITING = _Rewriting()


def bind(primitive: Primitive, *args: Any, **params: Any) -> Any:
    """Apply ``primitive`` to ``args``; record an Op when any argument is a Var.

    With no Var among the arguments this is plain NumPy evaluation. Arguments that
    are all constants fold to a constant.
    """
    if not args:  # a constant step, re-bound by a transform
        return Var(primitive.impl(**params), const=True)
    # One pass over the arguments (this runs once per step of every pass over a program).
    like = None
    all_vars = all_const = all_valued = True
    for a in args:
        if isinstance(a, Var):
            if like is None:
                like = a
            if not a.const:
                all_const = False
            if a.value is None:
                all_valued = False
        else:
            all_vars = False
    if like is None:
        return primitive.impl(*args, **params)
    if all_vars:
        vargs = args
    else:
        vargs = tuple([a if isinstance(a, Var) else _input_var(a, like) for a in args])
        all_const = all([a.const for a in vargs])
        all_valued = all([a.value is not None for a in vargs])
    aval = output_slot(primitive, tuple([a.aval for a in vargs]), params)
    hook = REWRITING.hook
    if hook is not None:
        rewritten = hook(primitive, vargs, aval, params, all_const)
        if rewritten is not None:
            return rewritten
    if all_const and aval.size <= max([1] + [a.size for a in vargs]):
        # Constant folding; expansions (broadcasts of a scalar zero, say) stay steps so
        # that large constant arrays are never baked into programs.
        return Var(primitive.impl(*(a.value for a in vargs), **params), const=True)
    value = None
    if all_valued:
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


__all__ = ["Op", "REWRITING", "TracerBoolError", "Var", "bind", "const_var", "is_float",
           "lifted_var", "lifting", "new_tracer", "next_id", "toposort"]
