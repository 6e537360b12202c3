"""An operation record for ``--trust`` steps, measured when the statement has ended.

Trusted runs execute the script with CPython itself, so no call passes through the
interpreter's call site and nothing is recorded while it runs. What can still be
measured without per-op dispatch hooks is the statement's outcome: for ``name = value``,
the tensor the target names now and the tensors the expression named, compared
directly (the same object, storage, version-counter sharing, graph reach; see
``ops.relation``), with the call as written taken from the statement's AST.

Calls are recorded for any statement where the tracer saw them run: a backward pass
(``torch.autograd.backward``, which ``x.backward()`` calls) and ``zero_grad`` of an
optimizer or module (see ``tracked_op``).

Limits, by construction: only a single-name assignment is recorded; an input the
statement rebound (``x = x.t()``) is left out (its old object is gone); versions before
the statement are unknown (``version`` is -1 and ``bumped`` is empty); names met deeper in
the expression than the outermost call are related through an ``expr`` operation, and
never called a copy (only memory and graph relations are measured for them).
"""

from __future__ import annotations

import ast
from typing import Any

import numpy as np
import torch

from tcopy_cli.trace.observe import iter_named
from tcopy_cli.trace.ops import _index_kind, _traceable, input_record, moves_values, relation, result_record
from tcopy_cli.trace.records import OpInput, OpRecord, OpRelation

# Parameters of a called module recorded as inputs (as the sandbox does).
MODULE_INPUTS = 32


def statement_ops(node: ast.stmt, names: dict[str, Any], function: str | None) -> list[OpRecord]:
    """The record of ``target = value`` after it ran (empty for any other statement).

    ``names``: the table's names now (``fn:x`` for the running function's locals);
    ``function``: that function (None at module level)."""
    value, target = _assignment(node)
    if value is None or target is None or isinstance(value, (ast.Name, ast.Constant)):
        return []
    key = _key(target, function)
    value_now = names.get(key)
    # The value itself, or the items of a returned tuple or list (parts = a.chunk(2)).
    results = (
        [("", key, value_now)]
        if _traceable(value_now)
        else [(f"[{i}]", f"{key}[{i}]", v) for i, v in enumerate(value_now[:MODULE_INPUTS]) if _traceable(v)]
        if isinstance(value_now, (list, tuple))
        else []
    )
    if not results:
        return []
    kind, fn, direct = _outer(value)
    table = _Table(names)
    inputs: list[tuple[OpInput, Any]] = []
    seen: set[int] = set()
    for role, sub in direct:
        _add(inputs, seen, role, sub, names, function, target, table)
    deeper: list[tuple[OpInput, Any]] = []
    for part in ast.walk(value):
        if isinstance(part, ast.Call) and (module := _module(part.func, names, function)) is not None:
            # A module called here: its parameters are inputs (of the outer call if it is this one).
            _params(inputs if part is value else deeper, seen, part.func, module, function, table)
    for part in ast.walk(value):
        if isinstance(part, ast.Name) and not any(part is d for _, d in direct):
            _add(deeper, seen, "name", part, names, function, target, table)
    ops: list[OpRecord] = []
    if deeper:
        ops.append(OpRecord(0, "expr", ast.unparse(value), "", node.lineno, [i for i, _ in deeper]))
    moving = moves_values(kind, fn)
    made = []
    for item, name, result in results:
        relations = []
        for j, (_, obj) in enumerate(inputs):
            if not (isinstance(result, np.ndarray) and isinstance(obj, np.ndarray)):
                rel, graph = relation(result, obj, moving)
                relations.append(OpRelation(j, rel, graph))
        for j, (_, obj) in enumerate(deeper):
            if not (isinstance(result, np.ndarray) and isinstance(obj, np.ndarray)):
                rel, graph = relation(result, obj, False)
                relations.append(OpRelation(j, rel, graph, 0))
        made.append(result_record(item, result, relations, name))
    detail: dict[str, Any] = {}
    if kind == "index" and isinstance(value, ast.Subscript):
        index = _index_detail(value.slice, names, function)
        if index is not None:
            detail["index"] = index
    ops.append(
        OpRecord(
            len(ops),
            kind,
            ast.unparse(value),
            fn,
            node.lineno,
            [i for i, _ in inputs],
            made,
            detail=detail,
        )
    )
    return ops


_TRACKED_CALLS = {"backward": "torch.autograd.backward(...)", "zero_grad": "zero_grad()"}


def tracked_op(index: int, line: int, function: str) -> OpRecord:
    """The record of a call the tracer saw run during a statement (``backward`` or ``zero_grad``),
    without inputs: it may have run inside library code the statement called."""
    return OpRecord(index=index, kind="call", call=_TRACKED_CALLS[function], function=function, line=line)


def _assignment(node: ast.stmt) -> tuple[ast.expr | None, str | None]:
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.value, node.targets[0].id
    if isinstance(node, ast.AnnAssign) and node.value is not None and isinstance(node.target, ast.Name):
        return node.value, node.target.id
    return None, None


def _key(name: str, function: str | None) -> str:
    return f"{function}:{name}" if function else name


def _outer(value: ast.expr) -> tuple[str, str, list[tuple[str, ast.expr]]]:
    """(kind, function, [(role, node)]) of the expression's outermost operation."""
    if isinstance(value, ast.Call):
        direct: list[tuple[str, ast.expr]] = []
        func = value.func
        if isinstance(func, ast.Attribute):
            fn = func.attr
            direct.append(("self", func.value))
        else:
            fn = func.id if isinstance(func, ast.Name) else ""
        for i, arg in enumerate(value.args):
            if isinstance(arg, (ast.List, ast.Tuple)):
                direct += [(f"arg{i}[{k}]", e) for k, e in enumerate(arg.elts)]
            else:
                direct.append((f"arg{i}", arg))
        direct += [(f"{kw.arg}=", kw.value) for kw in value.keywords if kw.arg is not None]
        return "call", fn, direct
    if isinstance(value, ast.Subscript):
        return "index", "[]", [("self", value.value)]
    if isinstance(value, ast.BinOp):
        return "binop", type(value.op).__name__, [("arg0", value.left), ("arg1", value.right)]
    if isinstance(value, ast.UnaryOp):
        return "unary", type(value.op).__name__, [("arg0", value.operand)]
    if isinstance(value, ast.Attribute):
        return "attribute", value.attr, [("self", value.value)]
    return "expr", "", []


class _Table:
    """The table's names of each tensor and array (``fc1.weight``, ``ts[0]``), built on first need."""

    def __init__(self, names: dict[str, Any]) -> None:
        self.names = names
        self._by_id: dict[int, list[str]] | None = None

    def get(self, obj: Any, hint: str) -> str | None:
        if self._by_id is None:
            self._by_id = {}
            for n, v in iter_named(self.names):
                self._by_id.setdefault(id(v), []).append(n)
        held = self._by_id.get(id(obj), [])
        return hint if hint in held else (held[0] if held else None)


def _add(
    out: list[tuple[OpInput, Any]],
    seen: set[int],
    role: str,
    sub: ast.expr,
    names: dict[str, Any],
    function: str | None,
    target: str,
    table: _Table,
) -> None:
    """A plain name of the expression that holds a tensor or array, or a list or tuple of
    them (each item by its table name, ``ts[0]``); never the rebound target."""
    if not isinstance(sub, ast.Name) or sub.id == target:
        return
    key = _key(sub.id, function)
    if key not in names:
        key = sub.id
    obj = names.get(key)
    if _traceable(obj):
        if id(obj) not in seen:
            seen.add(id(obj))
            out.append((input_record(role, sub.id, key, obj), obj))
    elif isinstance(obj, (list, tuple)) and len(obj) <= MODULE_INPUTS:
        for i, item in enumerate(obj):
            name = table.get(item, f"{key}[{i}]") if _traceable(item) else None
            if name is not None and id(item) not in seen:
                seen.add(id(item))
                out.append((input_record(f"{role}[{i}]", f"{sub.id}[{i}]", name, item), item))


def _params(
    out: list[tuple[OpInput, Any]],
    seen: set[int],
    func: ast.expr,
    module: torch.nn.Module,
    function: str | None,
    table: _Table,
) -> None:
    owner = ast.unparse(func)
    for pname, param in list(torch.nn.Module.named_parameters(module))[:MODULE_INPUTS]:
        name = table.get(param, _key(f"{owner}.{pname}", function))
        if name is not None and id(param) not in seen:
            seen.add(id(param))
            out.append((input_record(f"{owner}.{pname}", f"{owner}.{pname}", name, param), param))


def _module(func: ast.expr, names: dict[str, Any], function: str | None) -> torch.nn.Module | None:
    """The module a call calls (``fc1(x)``, ``model.fc1(x)``), found through the table's
    names and modules' own registries only (no attribute of the script's objects is read)."""
    parts: list[str] = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return None
    obj = names.get(_key(func.id, function), names.get(func.id))
    for part in reversed(parts):
        if not isinstance(obj, torch.nn.Module):
            return None
        obj = obj._modules.get(part)
    return obj if isinstance(obj, torch.nn.Module) else None


def _index_detail(index: ast.expr, names: dict[str, Any], function: str | None) -> str | None:
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    kind = "basic"
    for p in parts:
        if isinstance(p, ast.Slice) or (isinstance(p, ast.Constant) and isinstance(p.value, int)):
            continue
        if isinstance(p, ast.Constant) and p.value in (None, Ellipsis):
            continue
        if isinstance(p, ast.List):
            kind = "advanced"
        elif isinstance(p, ast.Name):
            obj = names.get(_key(p.id, function), names.get(p.id))
            if isinstance(obj, (torch.Tensor, np.ndarray, list)):
                found = _index_kind(obj)
                if found == "boolean":
                    return found
                kind = "advanced" if found == "advanced" else kind
            elif not isinstance(obj, int):
                return None
        else:
            return None  # an expression: its value is not measured here
    return kind
