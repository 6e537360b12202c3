"""Simple statements: ``on_<node>(interp, node)`` for each statement that is one step.

``interp.NODE_HANDLERS`` maps node types to these; blocks (if, for, while, with, try)
stay in ``interp.py`` because they decide what becomes a step.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

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

TENSORS = (torch.Tensor, np.ndarray)
"""Values whose operations the operation record keeps."""


def on_expr(interp: Interpreter, stmt: ast.Expr) -> None:
    value = interp.eval(stmt.value)
    if interp.echo and interp.depth == 0 and value is not None:
        # The REPL answers like Python's: the value's repr (counted as output, like print).
        interp.echoed = interp.output.echo(repr(value))


def on_assign(interp: Interpreter, stmt: ast.Assign) -> None:
    value = interp.eval(stmt.value)
    for target in stmt.targets:
        assign(interp, target, value, stmt.value)


def on_annassign(interp: Interpreter, stmt: ast.AnnAssign) -> None:
    if stmt.value is not None:
        assign(interp, stmt.target, interp.eval(stmt.value), stmt.value)


def on_augassign(interp: Interpreter, stmt: ast.AugAssign) -> None:
    # Python's order: the target (and its current value) first, then the right side.
    target = stmt.target
    if isinstance(target, ast.Name):
        cur = interp.lookup(target.id)
        rhs = interp.eval(stmt.value)
        interp.bind(target.id, _in_place_binop(interp, stmt, cur, rhs))
    elif isinstance(target, ast.Subscript):
        base = interp.eval(target.value)
        check_container(base)
        idx = interp.eval(target.slice)
        cur = base[idx]
        rhs = interp.eval(stmt.value)
        new = _in_place_binop(interp, stmt, cur, rhs)
        check_store(base, idx, new, interp.limits)
        base[idx] = new
    elif isinstance(target, ast.Attribute):
        base = interp.eval(target.value)
        cur = get_attribute(base, target.attr)
        rhs = interp.eval(stmt.value)
        set_attribute(base, target.attr, _in_place_binop(interp, stmt, cur, rhs))
    else:  # pragma: no cover
        raise NotAllowedError("can't assign to this target")


def _in_place_binop(interp: Interpreter, stmt: ast.AugAssign, cur: Any, rhs: Any) -> Any:
    """``cur OP= rhs``, reported to the operation record when a tensor takes part."""
    if interp.ops is None or not (isinstance(cur, TENSORS) or isinstance(rhs, TENSORS)):
        return interp.guards.binop(stmt.op, cur, rhs, in_place=True)
    inputs = [("self", stmt.target, cur), ("arg1", stmt.value, rhs)]
    return interp.recorded(
        stmt, "augassign", type(stmt.op).__name__, inputs, lambda: interp.guards.binop(stmt.op, cur, rhs, in_place=True)
    )


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


# Values whose binding to a name records no operation, whatever the name held unless a tensor.
_QUIET_VALUES = frozenset({int, float, bool})


def binds_quietly(interp: Interpreter, target: ast.expr, value: Any) -> bool:
    """Whether ``assign(interp, target, value)`` only binds a name: ``value`` is a plain
    number and the name holds no tensor or array, so there is nothing to refuse, record
    or report (a ``for`` over a ``range`` binds its variable without a header's care)."""
    if type(value) not in _QUIET_VALUES or not isinstance(target, ast.Name):
        return False
    return not isinstance(_binding_scope(interp).get(target.id), TENSORS)


def _binding_scope(interp: Interpreter) -> dict[str, Any]:
    """The scope ``assign`` reads a name's old value from, to tell a rebinding: the innermost
    one (a comprehension's, a function's locals), or the module's names."""
    scopes = interp.frame.scopes
    return scopes[-1] if scopes else interp.ns


def assign(interp: Interpreter, target: ast.expr, value: Any, value_node: ast.expr | None = None) -> None:
    if isinstance(target, ast.Name):
        if not is_storable(value):
            raise NotAllowedError(f"{type_name(value)} can't be stored in a variable")
        scope = _binding_scope(interp)
        # A comprehension's variable is no table name: binding it is no operation to explain.
        if interp.ops is not None and (scope is interp.ns or scope is interp.frame.locals):
            old = scope.get(target.id)
            rebinds = isinstance(old, TENSORS) and old is not value
            if rebinds or isinstance(value, TENSORS):
                _record_bind(interp, target, value, value_node, old if rebinds else None)
                return
        interp.bind(target.id, value)
    elif isinstance(target, (ast.Tuple, ast.List)):
        items = unpack(interp, value, len(target.elts))
        for sub, item in zip(target.elts, items):
            assign(interp, sub, item)
    elif isinstance(target, ast.Attribute):
        obj = interp.eval(target.value)
        if interp.ops is not None and isinstance(obj, torch.Tensor):
            inputs = [("self", target.value, obj), ("value", value_node, value)]
            call = _assignment_text(interp, target, value_node)
            interp.recorded(
                target, "setattr", target.attr, inputs, lambda: set_attribute(obj, target.attr, value), call, obj
            )
        else:
            set_attribute(obj, target.attr, value)
    elif isinstance(target, ast.Subscript):
        base = interp.eval(target.value)
        check_container(base)
        if not is_storable(value):
            raise NotAllowedError(f"{type_name(value)} can't be stored")
        index = interp.eval(target.slice)
        check_store(base, index, value, interp.limits)
        if interp.ops is not None and isinstance(base, TENSORS):
            inputs = [("self", target.value, base), ("value", value_node, value), ("index", target.slice, index)]

            def store() -> None:
                base[index] = value

            interp.recorded(
                target, "setitem", "[]=", inputs, store, _assignment_text(interp, target, value_node), index
            )
        else:
            base[index] = value
    else:  # pragma: no cover
        raise NotAllowedError(f"can't assign to {type(target).__name__}")


def _assignment_text(interp: Interpreter, target: ast.expr, value_node: ast.expr | None) -> str:
    sink: Any = interp.ops
    return f"{sink.text(target)} = {sink.text(value_node) if value_node is not None else '...'}"


def _record_bind(interp: Interpreter, target: ast.Name, value: Any, value_node: ast.expr | None, old: Any) -> None:
    """``a = value``: a name bound to a tensor (``bind``), or a name that held a tensor now
    bound to another object (``rebind``: which names still hold the old one)."""

    def bind() -> Any:
        interp.bind(target.id, value)
        return value

    call = _assignment_text(interp, target, value_node)
    inputs: list[tuple[str, ast.AST | None, Any]] = [("value", value_node, value)]
    if old is not None:
        inputs.append(("old", target, old))
    interp.recorded(target, "bind" if old is None else "rebind", target.id, inputs, bind, call, old)


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
