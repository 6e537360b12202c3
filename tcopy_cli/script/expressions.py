"""Expression handlers: ``on_<node>(interp, node)`` for each expression node type.

``interp.NODE_HANDLERS`` maps node types to these; each evaluates its sub-expressions
through ``interp.eval`` and its sizes through ``interp.guards``.
"""

from __future__ import annotations

import ast
import functools
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tcopy_cli.errors import NotAllowedError
from tcopy_cli.script.functions import elements, make_function
from tcopy_cli.script.sandbox import (
    ClassProxy,
    SafeFunction,
    ScriptFunction,
    check_text,
    get_attribute,
    is_storable,
    type_name,
)
from tcopy_cli.script.statements import TENSORS, assign

if TYPE_CHECKING:
    from tcopy_cli.script.interp import Interpreter

UNARY_OPERATORS: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
    ast.Not: operator.not_,
    ast.Invert: operator.invert,
}
TENSOR_VALUED = frozenset({"data", "T", "mT", "H", "mH", "real", "imag", "grad"})
"""Tensor attributes whose value is a tensor related to the receiver (recorded as operations)."""
COMPARISONS: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}


def on_constant(interp: Interpreter, node: ast.Constant) -> Any:
    if isinstance(node.value, str):
        interp.guards.text(node.value, "string literal is too long")
    return node.value


def on_name(interp: Interpreter, node: ast.Name) -> Any:
    return interp.lookup(node.id)


def on_attribute(interp: Interpreter, node: ast.Attribute, allow_proxy: bool = False) -> Any:
    base = interp.eval(node.value, allow_proxy=True)
    if isinstance(base, (SafeFunction,)):
        raise NotAllowedError(f"attributes of {base!r} are not allowed")
    if interp.ops is not None and node.attr in TENSOR_VALUED and isinstance(base, TENSORS):
        run = functools.partial(get_attribute, base, node.attr, allow_proxy)
        return interp.recorded(node, "attribute", node.attr, [("self", node.value, base)], run)
    return get_attribute(base, node.attr, allow_proxy)


def on_subscript(interp: Interpreter, node: ast.Subscript) -> Any:
    base = interp.eval(node.value)
    index = interp.eval(node.slice)
    interp.guards.index(base, index)
    if interp.ops is not None and isinstance(base, TENSORS):
        inputs = [("self", node.value, base), ("index", node.slice, index)]
        result = interp.recorded(node, "index", "[]", inputs, lambda: base[index], extra=index)
    else:
        result = base[index]
    interp.guards.result(result)
    return result


def on_slice(interp: Interpreter, node: ast.Slice) -> slice:
    return slice(
        interp.eval(node.lower) if node.lower else None,
        interp.eval(node.upper) if node.upper else None,
        interp.eval(node.step) if node.step else None,
    )


def on_tuple(interp: Interpreter, node: ast.Tuple) -> tuple[Any, ...]:
    return tuple(elements(interp, node.elts))


def on_list(interp: Interpreter, node: ast.List) -> list[Any]:
    return elements(interp, node.elts)


def on_set(interp: Interpreter, node: ast.Set) -> set[Any]:
    return set(elements(interp, node.elts))


def on_dict(interp: Interpreter, node: ast.Dict) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for k, v in zip(node.keys, node.values):
        if k is None:
            value = interp.eval(v)
            if not isinstance(value, dict):
                raise TypeError(f"'{type_name(value)}' object is not a mapping")
            out.update(value)
        else:
            out[interp.eval(k)] = interp.eval(v)
    return out


def on_boolop(interp: Interpreter, node: ast.BoolOp) -> Any:
    value: Any = None
    for sub in node.values:
        value = interp.eval(sub)
        truth = bool(value)
        if isinstance(node.op, ast.And) and not truth:
            return value
        if isinstance(node.op, ast.Or) and truth:
            return value
    return value


def on_unaryop(interp: Interpreter, node: ast.UnaryOp) -> Any:
    value = interp.eval(node.operand)
    if isinstance(node.op, ast.Not):
        return not bool(value)
    op = UNARY_OPERATORS[type(node.op)]
    if interp.ops is not None and isinstance(value, TENSORS):
        return interp.recorded(
            node, "unary", type(node.op).__name__, [("arg0", node.operand, value)], lambda: op(value)
        )
    return op(value)


def on_binop(interp: Interpreter, node: ast.BinOp) -> Any:
    left = interp.eval(node.left)
    right = interp.eval(node.right)
    if interp.ops is not None and (isinstance(left, TENSORS) or isinstance(right, TENSORS)):
        inputs = [("arg0", node.left, left), ("arg1", node.right, right)]
        return interp.recorded(
            node, "binop", type(node.op).__name__, inputs, lambda: interp.guards.binop(node.op, left, right)
        )
    return interp.guards.binop(node.op, left, right)


def on_compare(interp: Interpreter, node: ast.Compare) -> Any:
    # Classes may be compared (type(x) == torch.Tensor), nothing else about them.
    left = interp.eval(node.left, allow_proxy=True)
    result: Any = True
    last = len(node.ops) - 1
    for i, (op, comp) in enumerate(zip(node.ops, node.comparators)):
        right = interp.eval(comp, allow_proxy=True)
        for operand in (left, right):
            if not is_storable(operand) and not (
                isinstance(operand, ClassProxy) and isinstance(op, (ast.Eq, ast.NotEq, ast.Is, ast.IsNot))
            ):
                raise NotAllowedError(f"{type_name(operand)} can't be compared")
        compare = COMPARISONS[type(op)]
        if interp.ops is not None and last == 0 and (isinstance(left, TENSORS) or isinstance(right, TENSORS)):
            inputs = [("arg0", node.left, left), ("arg1", comp, right)]
            run = functools.partial(compare, left, right)
            result = interp.recorded(node, "compare", type(op).__name__, inputs, run)
        else:
            result = compare(left, right)
        # Python tests the truth of every result of a chain but the last.
        if i < last and not bool(result):
            return result
        left = right
    return result


def on_ifexp(interp: Interpreter, node: ast.IfExp) -> Any:
    return interp.eval(node.body) if bool(interp.eval(node.test)) else interp.eval(node.orelse)


def on_joinedstr(interp: Interpreter, node: ast.JoinedStr) -> str:
    parts: list[str] = []
    total = 0
    for value in node.values:
        if isinstance(value, ast.Constant):
            parts.append(str(value.value))
        elif isinstance(value, ast.FormattedValue):
            parts.append(format_value(interp, value))
        total += len(parts[-1]) if parts else 0
        if total > interp.limits.max_str_len:  # checked per field: each may be near the limit
            raise interp.limits.exceeded("max_str_len", "the formatted string is too long")
    text = "".join(parts)
    interp.guards.text(text, "the formatted string is too long")
    return text


def format_value(interp: Interpreter, node: ast.FormattedValue) -> str:
    value = interp.eval(node.value)
    check_text(value)
    interp.guards.formatted(value)
    if node.conversion == ord("r"):
        value = repr(value)
    elif node.conversion == ord("a"):
        value = ascii(value)
    elif node.conversion == ord("s"):
        value = str(value)
    spec = ""
    if node.format_spec is not None:
        spec = on_joinedstr(interp, node.format_spec)  # type: ignore[arg-type]
        interp.guards.format_spec(spec)
    return format(value, spec)


def on_lambda(interp: Interpreter, node: ast.Lambda) -> ScriptFunction:
    return make_function(interp, node)


def comprehension(interp: Interpreter, generators: list[ast.comprehension], emit: Callable[[], None]) -> None:
    """Run comprehension loops in their own scope, bounded like for loops."""
    scopes = interp.frame.scopes
    scopes.append({})
    try:
        comp_level(interp, generators, 0, emit, [0])
    finally:
        scopes.pop()


def comp_level(
    interp: Interpreter, gens: list[ast.comprehension], i: int, emit: Callable[[], None], count: list[int]
) -> None:
    if i == len(gens):
        emit()
        return
    gen = gens[i]
    if gen.is_async:
        raise NotAllowedError("async comprehensions are not supported")
    iterable = interp.iterable(interp.eval(gen.iter))
    interp.guards.size(iterable)
    for item in iterable:
        count[0] += 1
        interp.iterations += 1
        interp.guards.comprehension(count[0], interp.iterations)
        assign(interp, gen.target, item)
        if all(bool(interp.eval(cond)) for cond in gen.ifs):
            comp_level(interp, gens, i + 1, emit, count)


def on_listcomp(interp: Interpreter, node: ast.ListComp | ast.GeneratorExp) -> list[Any]:
    # A generator expression is evaluated eagerly (a list), bounded like the loops it replaces.
    out: list[Any] = []
    comprehension(interp, node.generators, lambda: out.append(interp.eval(node.elt)))
    return out


def on_setcomp(interp: Interpreter, node: ast.SetComp) -> set[Any]:
    out: set[Any] = set()
    comprehension(interp, node.generators, lambda: out.add(interp.eval(node.elt)))
    return out


def on_dictcomp(interp: Interpreter, node: ast.DictComp) -> dict[Any, Any]:
    out: dict[Any, Any] = {}

    def put() -> None:
        out[interp.eval(node.key)] = interp.eval(node.value)

    comprehension(interp, node.generators, put)
    return out
