"""What a line of the script shows without calling anything: names read in a frame, the number of
turns a ``for`` will make, the grad-mode blocks a ``with`` entered, the types an ``except`` names.

Only names, dotted names (read with ``inspect.getattr_static``), constants and a few builtins
(``len``, ``range``, ``enumerate``, ``reversed``, ``zip``) are evaluated: reading never runs the
script's code.
"""

from __future__ import annotations

import ast
import builtins
import inspect
from types import FrameType
from typing import Any

SIZED = (range, list, tuple, dict, str, set, frozenset)
"""Values whose length ``len`` gives without running the script's code."""

CONTEXTS = frozenset(
    {"no_grad", "enable_grad", "inference_mode", "set_grad_enabled", "detect_anomaly", "set_detect_anomaly"}
)
"""The context managers whose blocks a step's header names (grad and anomaly modes), by class name."""


def context_name(cm: Any) -> str:
    """``no_grad``, ``enable_grad``, ``inference_mode`` or ``set_grad_enabled(False)``."""
    name = type(cm).__name__
    if name == "set_grad_enabled":
        return f"set_grad_enabled({getattr(cm, 'mode', '?')})"
    if name == "inference_mode" and getattr(cm, "mode", True) is False:
        return "inference_mode(False)"
    return name


def matches(exc: BaseException, expr: ast.expr | None, frame: FrameType) -> bool:
    """Whether an ``except`` clause naming ``expr`` (None: a bare ``except``) catches ``exc`` in ``frame``."""
    if expr is None:
        return True
    parts = expr.elts if isinstance(expr, ast.Tuple) else [expr]
    types: list[type] = []
    for part in parts:
        value = read_name(part, frame)
        if isinstance(value, tuple):
            types.extend(t for t in value if isinstance(t, type))
        elif isinstance(value, type):
            types.append(value)
    return bool(types) and isinstance(exc, tuple(types))


def read_name(expr: ast.expr, frame: FrameType) -> Any:
    """The value of a name or dotted name in ``frame`` (None for anything else)."""
    if isinstance(expr, ast.Name):
        for scope in (frame.f_locals, frame.f_globals, vars(builtins)):
            if expr.id in scope:
                return scope[expr.id]
        return None
    if isinstance(expr, ast.Attribute):
        base = read_name(expr.value, frame)
        return inspect.getattr_static(base, expr.attr, None) if base is not None else None
    return None


def _literal(expr: ast.expr, frame: FrameType) -> Any:
    """A constant, or a (dotted) name's value in ``frame``; None for anything else (nothing is called)."""
    if isinstance(expr, ast.Constant):
        return expr.value
    return read_name(expr, frame)


def _count(expr: ast.expr, frame: FrameType) -> int | None:
    """An ``int`` written as a constant, a name, ``len(name)`` or arithmetic of those; None otherwise."""
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
        inner = _count(expr.operand, frame)
        return -inner if inner is not None else None
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)):
        a, b = _count(expr.left, frame), _count(expr.right, frame)
        if a is None or b is None or (isinstance(expr.op, ast.FloorDiv) and b == 0):
            return None
        ops = {ast.Add: int.__add__, ast.Sub: int.__sub__, ast.Mult: int.__mul__, ast.FloorDiv: int.__floordiv__}
        return ops[type(expr.op)](a, b)
    if isinstance(expr, ast.Call) and not expr.keywords and len(expr.args) == 1 and _builtin(expr.func, frame, len):
        value = _literal(expr.args[0], frame)
        return len(value) if isinstance(value, SIZED) else None
    value = _literal(expr, frame)
    return value if type(value) is int else None


def _builtin(func: ast.expr, frame: FrameType, fn: Any) -> bool:
    return isinstance(func, ast.Name) and read_name(func, frame) is fn


def loop_total(loop: ast.stmt, frame: FrameType) -> int | None:
    """Turns a ``for`` will make, read before it starts where that needs no call of the script's code.

    The length of what a ``for`` walks (a range, list, tuple, dict,
    string or set) is read from the ``for`` line as written:
    ``range(...)`` of constants, names and ``len(name)``, a name bound to such a value,
    or a list or tuple written out. Anything else (a call, a generator) counts as unknown.
    """
    if not isinstance(loop, ast.For):
        return None
    it = loop.iter
    if isinstance(it, (ast.List, ast.Tuple)) and not any(isinstance(e, ast.Starred) for e in it.elts):
        return len(it.elts)
    if isinstance(it, ast.Call) and not it.keywords and 1 <= len(it.args) <= 3 and _builtin(it.func, frame, range):
        args = [_count(a, frame) for a in it.args]
        if None in args or (len(args) == 3 and args[2] == 0):
            return None
        return len(range(*args))  # type: ignore[arg-type]
    return _length(it, frame)


def _length(expr: ast.expr, frame: FrameType) -> int | None:
    """``len`` of a name bound to a sized value, or of ``enumerate``/``reversed``/``zip`` of such names."""
    if isinstance(expr, ast.Call) and not expr.keywords and expr.args and isinstance(expr.func, ast.Name):
        fn = read_name(expr.func, frame)
        if (fn in (enumerate, reversed) and len(expr.args) == 1) or fn is zip:
            lengths = [_length(a, frame) for a in expr.args]
            return None if None in lengths else min(lengths)  # type: ignore[type-var]
        return None
    value = _literal(expr, frame)
    return len(value) if isinstance(value, SIZED) else None


def contexts(block: ast.stmt, frame: FrameType) -> list[str]:
    """The grad- and anomaly-mode blocks a ``with`` statement entered, named as step headers name them."""
    out: list[str] = []
    for item in getattr(block, "items", []):
        expr = item.context_expr
        if not isinstance(expr, ast.Call):  # ``with ctx:``: the object the name holds
            value = read_name(expr, frame)
            if type(value).__name__ in CONTEXTS:
                out.append(context_name(value))
            continue
        func = expr.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name not in CONTEXTS:
            continue
        arg = expr.args[0] if expr.args else next((k.value for k in expr.keywords if k.arg == "mode"), None)
        mode = _literal(arg, frame) if arg is not None else True
        if name == "set_grad_enabled":
            name = f"set_grad_enabled({bool(mode)})"
        elif name == "inference_mode" and mode is False:
            name = "inference_mode(False)"
        out.append(name)
    return out
