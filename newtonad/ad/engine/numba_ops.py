"""Scalar expressions for the elementwise primitives, as numba-compilable source.

Each entry turns the source of the operands (temporaries, loads or literals) into the
source of one scalar value that reproduces the primitive's NumPy ``impl``, including
NaN propagation in ``maximum`` / ``minimum`` and true division. Kernels compile with
``error_model="numpy"`` so division by zero gives ``inf`` / ``nan`` as in NumPy.
"""

from __future__ import annotations

import math
from typing import Any, Callable

_NP_UNARY = {name: f"np.{name}({{0}})" for name in (
    "exp", "log", "log1p", "expm1", "sqrt", "sin", "cos", "tan", "arcsin", "arccos",
    "arctan", "sinh", "cosh", "tanh")}


def literal(value: Any, dtype: str) -> str:
    """Source of a scalar constant of ``dtype``."""
    if dtype == "bool":
        return "True" if value else "False"
    if dtype == "int64":
        return f"np.int64({int(value)})" if abs(int(value)) >= 2**31 else str(int(value))
    v = float(value)
    if math.isnan(v):
        return "np.nan"
    if math.isinf(v):
        return "np.inf" if v > 0 else "(-np.inf)"
    return repr(v) if v >= 0 else f"({v!r})"


def as_float(x: str, dtype: str) -> str:
    """Source converting ``x`` of ``dtype`` to float64 (numba has no ``float(bool)``)."""
    if dtype == "float64":
        return x
    return f"(1.0 if {x} else 0.0)" if dtype == "bool" else f"float({x})"


def _integer_pow(x: str, dtype: str, n: int) -> str:
    base = as_float(x, dtype)
    if n == 0:
        return "1.0"
    if 0 < abs(n) <= 4:
        prod = " * ".join([base] * abs(n))
        return f"({prod})" if n > 0 else f"(1.0 / ({prod}))"
    return f"({base} ** {float(n)!r})"


def _sign(x: str, dtype: str) -> str:
    if dtype == "float64":
        return f"(1.0 if {x} > 0 else (-1.0 if {x} < 0 else {x} * 0.0))"
    if dtype == "bool":
        return x
    return f"(1 if {x} > 0 else (-1 if {x} < 0 else 0))"


def _round(fn: str) -> Callable[..., str]:
    return lambda a, dt, out, kw: f"np.{fn}({a[0]})" if dt[0] == "float64" else a[0]


def _convert(a, dt, out, kw) -> str:
    target = kw["dtype"]
    if target == dt[0]:
        return a[0]
    if target == "float64":
        return as_float(a[0], dt[0])
    if target == "int64":
        return f"(1 if {a[0]} else 0)" if dt[0] == "bool" else f"np.int64({a[0]})"
    if target == "bool":
        return f"({a[0]} != 0)"
    raise ValueError(f"convert to {target} is not supported")


EXPRESSIONS: dict[str, Callable[[list[str], list[str], str, dict], str]] = {
    **{name: (lambda tpl: lambda a, dt, out, kw: tpl.format(*a))(tpl) for name, tpl in _NP_UNARY.items()},
    "neg": lambda a, dt, out, kw: f"(-{a[0]})",
    "square": lambda a, dt, out, kw: f"({a[0]} * {a[0]})",
    "reciprocal": lambda a, dt, out, kw: f"(1.0 / {a[0]})",
    "abs": lambda a, dt, out, kw: f"abs({a[0]})",
    "sign": lambda a, dt, out, kw: _sign(a[0], dt[0]),
    "floor": _round("floor"),
    "ceil": _round("ceil"),
    "stop_gradient": lambda a, dt, out, kw: a[0],
    "logical_not": lambda a, dt, out, kw: f"({a[0]} == 0)",
    "integer_pow": lambda a, dt, out, kw: _integer_pow(a[0], dt[0], kw["n"]),
    "add": lambda a, dt, out, kw: f"({a[0]} or {a[1]})" if out == "bool" else f"({a[0]} + {a[1]})",
    "sub": lambda a, dt, out, kw: f"({a[0]} - {a[1]})",
    "mul": lambda a, dt, out, kw: f"({a[0]} and {a[1]})" if out == "bool" else f"({a[0]} * {a[1]})",
    "div": lambda a, dt, out, kw: f"({a[0]} / {a[1]})",
    "pow": lambda a, dt, out, kw: f"({as_float(a[0], dt[0])} ** {as_float(a[1], dt[1])})",
    "maximum": lambda a, dt, out, kw: f"({a[0]} if ({a[0]} >= {a[1]} or {a[0]} != {a[0]}) else {a[1]})",
    "minimum": lambda a, dt, out, kw: f"({a[0]} if ({a[0]} <= {a[1]} or {a[0]} != {a[0]}) else {a[1]})",
    "arctan2": lambda a, dt, out, kw: f"np.arctan2({a[0]}, {a[1]})",
    "lt": lambda a, dt, out, kw: f"({a[0]} < {a[1]})",
    "le": lambda a, dt, out, kw: f"({a[0]} <= {a[1]})",
    "gt": lambda a, dt, out, kw: f"({a[0]} > {a[1]})",
    "ge": lambda a, dt, out, kw: f"({a[0]} >= {a[1]})",
    "eq": lambda a, dt, out, kw: f"({a[0]} == {a[1]})",
    "ne": lambda a, dt, out, kw: f"({a[0]} != {a[1]})",
    "logical_and": lambda a, dt, out, kw: f"(({a[0]} != 0) and ({a[1]} != 0))",
    "logical_or": lambda a, dt, out, kw: f"(({a[0]} != 0) or ({a[1]} != 0))",
    "select": lambda a, dt, out, kw: f"({a[1]} if {a[0]} else {a[2]})",
    "convert": _convert,
}

# Index-only steps and identities: no statement, the operand's source is reused.
PASS_THROUGH = frozenset({"broadcast_to", "slice", "transpose", "reshape", "stop_gradient"})
