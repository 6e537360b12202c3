"""Simple statements: ``on_<node>(interp, node)`` for each statement that is one step.

``interp.NODE_HANDLERS`` maps node types to these; blocks (if, for, while, with, try)
stay in ``interp.py`` because they decide what becomes a step.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from tcopy_cli.errors import NotAllowedError, TcopyError
from tcopy_cli.script import policy
from tcopy_cli.script.functions import make_class, make_function
from tcopy_cli.script.guards import check_container
from tcopy_cli.script.sandbox import (
    ClassProxy,
    Placeholder,
    check_store,
    get_attribute,
    is_storable,
    set_attribute,
    type_name,
)

if TYPE_CHECKING:
    from tcopy_cli.script.interp import Interpreter


def on_expr(interp: Interpreter, stmt: ast.Expr) -> None:
    value = interp.eval(stmt.value)
    if interp.echo and interp.depth == 0 and value is not None:
        # The REPL answers like Python's: the value's repr (counted as output, like print).
        interp.echoed = interp.output.echo(repr(value))


def on_assign(interp: Interpreter, stmt: ast.Assign) -> None:
    value = interp.eval(stmt.value)
    for target in stmt.targets:
        assign(interp, target, value)


def on_annassign(interp: Interpreter, stmt: ast.AnnAssign) -> None:
    if stmt.value is not None:
        assign(interp, stmt.target, interp.eval(stmt.value))


def on_augassign(interp: Interpreter, stmt: ast.AugAssign) -> None:
    # Python's order: the target (and its current value) first, then the right side.
    target = stmt.target
    if isinstance(target, ast.Name):
        cur = interp.lookup(target.id)
        rhs = interp.eval(stmt.value)
        interp.bind(target.id, interp.guards.binop(stmt.op, cur, rhs, in_place=True))
    elif isinstance(target, ast.Subscript):
        base = interp.eval(target.value)
        check_container(base)
        idx = interp.eval(target.slice)
        cur = base[idx]
        rhs = interp.eval(stmt.value)
        new = interp.guards.binop(stmt.op, cur, rhs, in_place=True)
        check_store(base, idx, new, interp.limits)
        base[idx] = new
    elif isinstance(target, ast.Attribute):
        base = interp.eval(target.value)
        cur = get_attribute(base, target.attr)
        rhs = interp.eval(stmt.value)
        set_attribute(base, target.attr, interp.guards.binop(stmt.op, cur, rhs, in_place=True))
    else:  # pragma: no cover
        raise NotAllowedError("can't assign to this target")


def on_delete(interp: Interpreter, stmt: ast.Delete) -> None:
    for target in stmt.targets:
        delete(interp, target)


def _module(interp: Interpreter, name: str) -> Any:
    """An offered module's proxy, or a placeholder for any other (the validator sorted them)."""
    return interp.modules.get(name) or Placeholder(name)


def on_import(interp: Interpreter, stmt: ast.Import) -> None:
    for alias in stmt.names:
        if alias.asname:
            interp.bind(alias.asname, _module(interp, alias.name))
        else:  # import torch.nn binds torch
            top = alias.name.split(".")[0]
            interp.bind(top, _module(interp, top))


def on_importfrom(interp: Interpreter, stmt: ast.ImportFrom) -> None:
    mod = interp.modules.get(stmt.module or "")
    if mod is None:
        for alias in stmt.names:
            interp.bind(alias.asname or alias.name, Placeholder(f"{stmt.module}.{alias.name}"))
        return
    for alias in stmt.names:
        if alias.name not in mod.members:
            raise NotAllowedError(f"'{alias.name}' is not available from {stmt.module} in this torch")
        interp.bind(alias.asname or alias.name, mod.members[alias.name])


def on_return(interp: Interpreter, stmt: ast.Return) -> None:
    interp.frame.returned = interp.eval(stmt.value) if stmt.value is not None else None


def on_raise(interp: Interpreter, stmt: ast.Raise) -> None:
    if stmt.exc is None:
        if not interp.handling:
            raise RuntimeError("No active exception to reraise")
        raise interp.handling[-1]
    exc = interp.eval(stmt.exc, allow_proxy=True)
    if isinstance(exc, ClassProxy) and exc.qualname in policy.SAFE_EXCEPTIONS:
        exc = exc.cls()
    if not isinstance(exc, Exception) or isinstance(exc, TcopyError):
        raise TypeError("exceptions must derive from BaseException")
    raise exc


def on_assert(interp: Interpreter, stmt: ast.Assert) -> None:
    if not bool(interp.eval(stmt.test)):
        if stmt.msg is not None:
            raise AssertionError(interp.eval(stmt.msg))
        raise AssertionError()


def on_functiondef(interp: Interpreter, stmt: ast.FunctionDef) -> None:
    interp.bind(stmt.name, make_function(interp, stmt))


def on_classdef(interp: Interpreter, stmt: ast.ClassDef) -> None:
    interp.bind(stmt.name, make_class(interp, stmt))


def assign(interp: Interpreter, target: ast.expr, value: Any) -> None:
    if isinstance(target, ast.Name):
        if not is_storable(value):
            raise NotAllowedError(f"{type_name(value)} can't be stored in a variable")
        interp.bind(target.id, value)
    elif isinstance(target, (ast.Tuple, ast.List)):
        items = unpack(interp, value, len(target.elts))
        for sub, item in zip(target.elts, items):
            assign(interp, sub, item)
    elif isinstance(target, ast.Attribute):
        set_attribute(interp.eval(target.value), target.attr, value)
    elif isinstance(target, ast.Subscript):
        base = interp.eval(target.value)
        check_container(base)
        if not is_storable(value):
            raise NotAllowedError(f"{type_name(value)} can't be stored")
        index = interp.eval(target.slice)
        check_store(base, index, value, interp.limits)
        base[index] = value
    else:  # pragma: no cover
        raise NotAllowedError(f"can't assign to {type(target).__name__}")


def unpack(interp: Interpreter, value: Any, n: int) -> list[Any]:
    try:
        iter(value)
    except TypeError:
        raise TypeError(f"cannot unpack non-iterable {type(value).__name__} object") from None
    interp.guards.size(value)
    items = list(value)
    if len(items) > n:
        raise ValueError(f"too many values to unpack (expected {n})")
    if len(items) < n:
        raise ValueError(f"not enough values to unpack (expected {n}, got {len(items)})")
    return items


def delete(interp: Interpreter, target: ast.expr) -> None:
    if isinstance(target, ast.Name):
        scope = interp.scope_of(target.id)
        if target.id not in scope:
            raise NameError(f"name '{target.id}' is not defined")
        del scope[target.id]
    elif isinstance(target, ast.Subscript):
        base = interp.eval(target.value)
        check_container(base)
        del base[interp.eval(target.slice)]
    elif isinstance(target, (ast.Tuple, ast.List)):
        for sub in target.elts:
            delete(interp, sub)
    else:
        raise NotAllowedError("only names and items can be deleted (del x, del lst[0])")
