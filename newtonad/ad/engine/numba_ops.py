"""Scalar expressions for the elementwise primitives, as numba-compilable source.

Each entry turns the source of the operands (temporaries, loads or literals) into the
source of one scalar value that reproduces the primitive's NumPy ``impl``, including
NaN propagation in ``maximum`` / ``minimum`` and true division. Kernels compile with
``error_model="numpy"`` so division by zero gives ``inf`` / ``nan`` as in NumPy.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from ..primitives import REGISTRY
from .loop_ir import Lit

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


def is_plain_literal(value: Any, dtype: str) -> bool:
    """Whether :func:`literal` gives one token (a name or an unsigned number, or an int)."""
    if dtype == "bool":
        return True
    if dtype == "int64":
        return abs(int(value)) < 2**31
    v = float(value)
    return math.isfinite(v) and v >= 0 and "e" not in repr(v)  # (-0.0 prints as -0.0)


def literal_atom(value: Any, dtype: str) -> Lit:
    """A scalar constant of ``dtype`` as a loop IR literal."""
    return Lit(literal(value, dtype), is_plain_literal(value, dtype))


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


def _math(fn: str) -> Callable[..., str]:
    return lambda a, dt, out, kw: f"math.{fn}({as_float(a[0], dt[0])})"


def _np_float(fn: str) -> Callable[..., str]:
    return lambda a, dt, out, kw: f"np.{fn}({', '.join(as_float(x, d) for x, d in zip(a, dt))})"


# Special functions as SciPy evaluates them (numpy_only primitives have no entry).
_SPECIAL = {
    "erf": _math("erf"),
    "erfc": _math("erfc"),
    # lgamma(-inf) is +inf in C, SciPy's gammaln(-inf) is -inf
    "gammaln": lambda a, dt, out, kw: (
        f"(-np.inf if {a[0]} == -np.inf else math.lgamma({as_float(a[0], dt[0])}))"),
    # logit(x) = 2 artanh(2x - 1): 2x - 1 is exact for x >= 1/4 (no cancellation near 1/2)
    "logit": lambda a, dt, out, kw: (
        f"(np.log({a[0]}) - np.log1p(-{a[0]}) if {a[0]} < 0.25 "
        f"else 2.0 * np.arctanh(2.0 * {a[0]} - 1.0))"),
    # exp of a non-positive number only: no overflow either way
    "expit": lambda a, dt, out, kw: (
        f"(1.0 / (1.0 + np.exp(-{a[0]})) if {a[0]} >= 0.0 "
        f"else np.exp({a[0]}) / (1.0 + np.exp({a[0]})))"),
    "log_expit": lambda a, dt, out, kw: (
        f"(-np.log1p(np.exp(-{a[0]})) if {a[0]} >= 0.0 "
        f"else {a[0]} - np.log1p(np.exp({a[0]})))"),
    "entr": lambda a, dt, out, kw: (
        f"(-{a[0]} * np.log({a[0]}) if {a[0]} > 0.0 else (0.0 if {a[0]} == 0.0 "
        f"else ({a[0]} if {a[0]} != {a[0]} else -np.inf)))"),
    # 0 where x == 0, unless y is NaN
    "xlogy": lambda a, dt, out, kw: (
        f"(0.0 if ({a[0]} == 0 and {a[1]} == {a[1]}) else {a[0]} * np.log({a[1]}))"),
    "xlog1py": lambda a, dt, out, kw: (
        f"(0.0 if ({a[0]} == 0 and {a[1]} == {a[1]}) else {a[0]} * np.log1p({a[1]}))"),
    "hypot": _np_float("hypot"),
    "arcsinh": _np_float("arcsinh"),
    "arccosh": _np_float("arccosh"),
    "arctanh": _np_float("arctanh"),
    "cbrt": _np_float("cbrt"),
    "rint": _np_float("rint"),
    "trunc": _round("trunc"),
    "remainder": lambda a, dt, out, kw: f"np.remainder({a[0]}, {a[1]})",
    "fmod": lambda a, dt, out, kw: f"np.fmod({a[0]}, {a[1]})",
    # NumPy: an infinite numerator gives NaN (numba's floor gives inf)
    "floor_divide": lambda a, dt, out, kw: (
        f"np.floor_divide({a[0]}, {a[1]})" if out != "float64" else
        f"(np.floor_divide({a[0]}, {a[1]}) if abs({a[0]}) != np.inf else np.nan)"),
}


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


def _extremum(a: list[str], keeps: str) -> str:
    """``a[0]`` when it ``keeps`` against ``a[1]`` or is NaN (NaN propagates, as in NumPy)."""
    return f"({a[0]} if ({a[0]} {keeps} {a[1]} or {a[0]} != {a[0]}) else {a[1]})"


def _template(tpl: str) -> Callable[[list[str], list[str], str, dict], str]:
    """The expression writer that fills ``tpl`` with the argument names."""
    return lambda a, dt, out, kw: tpl.format(*a)


_BY_NAME: dict[str, Callable[[list[str], list[str], str, dict], str]] = {
    **{name: _template(tpl) for name, tpl in _NP_UNARY.items()},
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
    "maximum": lambda a, dt, out, kw: _extremum(a, ">="),
    "minimum": lambda a, dt, out, kw: _extremum(a, "<="),
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
    **_SPECIAL,
}

#: Primitive -> ``rule(operand sources, operand dtypes, output dtype, params) -> source``.
EXPRESSIONS: dict[Any, Callable[[list[str], list[str], str, dict], str]] = {
    REGISTRY[name]: rule for name, rule in _BY_NAME.items()}

# Index-only steps and identities: no statement, the operand's source is reused.
PASS_THROUGH = frozenset(REGISTRY[name] for name in
                         ("broadcast_to", "slice", "transpose", "reshape", "stop_gradient"))
