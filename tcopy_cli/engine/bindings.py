"""Operation records for what a statement did that no torch call shows: bindings of names.

The dispatch record (``engine.recorder``) sees every torch call; it does not see a name bound to a
tensor (``b = a``), a name that held a tensor bound to another object (``y = y + 1``: which names
still hold the old one), calls torch does not dispatch (``torch.from_numpy``, building an
``nn.Module``), or writes into NumPy arrays (``n += 1``). For those, the statement's names are read
before it runs (``before``) and after it ended, and the records are measured then (``relate.relation``):
the same object, storage, version-counter sharing, graph reach.
"""

from __future__ import annotations

import ast
import contextlib
import weakref
from dataclasses import dataclass
from types import FrameType
from typing import Any

import numpy as np
import torch

from tcopy_cli.engine.frames import CodeKinds, display_name
from tcopy_cli.program import Program
from tcopy_cli.trace.names import iter_named
from tcopy_cli.trace.ops import index_kind, input_record, result_record, traceable
from tcopy_cli.trace.records import OpInput, OpRecord, OpRelation
from tcopy_cli.trace.relate import moves_values, relation, version

MODULE_INPUTS = 32
"""Parameters of a called module, and items of a list, recorded as inputs."""


@dataclass
class Bound:
    """A name a statement assigns, and what it held before the statement ran (by weak reference)."""

    name: str
    key: str
    """The table's name: ``fn:x`` for a function's local."""
    old: Any = None
    was: OpInput | None = None
    """The record of what it held, as it was (kept if the statement frees the object itself)."""

    def held(self) -> Any:
        """The object the name held before, if it is still alive."""
        return self.old() if isinstance(self.old, weakref.ref) else self.old


def _assigned(node: ast.stmt) -> list[str]:
    """The plain names a statement binds (``a = b = ...``, ``a, b = ...``, ``x += 1``, ``for i in``)."""
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For)):
        targets = [node.target]
    names: list[str] = []
    while targets:
        target = targets.pop(0)
        if isinstance(target, (ast.Tuple, ast.List)):
            targets[:0] = target.elts
        elif isinstance(target, ast.Starred):
            targets.insert(0, target.value)
        elif isinstance(target, ast.Name):
            names.append(target.id)
    return names


def targets(node: ast.stmt, function: str | None) -> frozenset[str]:
    """Names a statement assigns, as tables show them."""
    found = set(_assigned(node))
    if function:
        found |= {f"{function}:{n}" for n in found}
    return frozenset(found)


_ASSIGNED: dict[ast.stmt, list[str]] = {}


def before(node: ast.stmt, frame: FrameType, kinds: CodeKinds) -> list[Bound]:
    """The names ``node`` assigns and the tensors or arrays they hold as it starts."""
    names = _ASSIGNED.get(node)
    if names is None:
        names = _ASSIGNED[node] = _assigned(node)
    if not names:
        return []
    module = kinds(frame.f_code) == "module"
    scope = frame.f_globals if module else frame.f_locals
    prefix = "" if module else display_name(frame.f_code) + ":"
    out = []
    for name in names:
        value = scope.get(name)
        if traceable(value):
            was = input_record("old", name, None, value, version=_version_of(value))
            out.append(Bound(name, prefix + name, weakref.ref(value), was))
        else:
            out.append(Bound(name, prefix + name))
    return out


def statement_ops(
    node: ast.stmt,
    bound: list[Bound],
    names: dict[str, Any],
    function: str | None,
    ops: list[OpRecord],
    program: Program,
) -> list[OpRecord]:
    """Records of the bindings and untraced calls of a statement that ended (numbered after ``ops``).

    ``names``: the table's names now; ``ops``: what the dispatch record has for the statement."""
    if not bound and not _may_record(node):
        return []
    named = {n for op in ops for r in op.results for n in r.names}
    call = program.statement_source(node)
    out: list[OpRecord] = []
    table = _Table(names)
    sources = _sources(node, names, function)
    for b in bound:
        old, new, source = b.held(), names.get(b.key), sources.get(b.name)
        if source is None and traceable(new) and (b.was is not None or isinstance(node, ast.For)):
            source = table.get(new, b.key, other_than=b.key)  # an item of a container: the table's name for it
        if b.was is not None and new is not old:
            out.append(_rebind(len(ops) + len(out), node, call, b, old, new, names, source))
        elif b.key not in named and traceable(new) and source is not None and _holds(names, source, new):
            out.append(_bind(len(ops) + len(out), node, call, b, new, names, source))
    value, target = _assignment(node)
    built = target is not None and isinstance(names.get(_key(target, function)), torch.nn.Module)
    if value is not None and target is not None and (built or not _covered(_key(target, function), named)):
        # (a module built: the calls its constructor made are its insides; the record names the module)
        text = ast.get_source_segment(program.source, value) or ast.unparse(value)
        out += _untraced(len(ops) + len(out), node, value, text, target, names, function, table)
    out += _array_writes(len(ops) + len(out), node, call, names, function)
    out += _container_adds(len(ops) + len(out), node, call, names, function, program)
    return out


_RECORDS: dict[ast.stmt, bool] = {}


def _may_record(node: ast.stmt) -> bool:
    """Whether a statement that binds no name may still make a record here: an item put into a list or
    dict, a write into a NumPy array (what the statement's syntax allows; kept per statement)."""
    found = _RECORDS.get(node)
    if found is None:
        call = node.value if isinstance(node, ast.Expr) else None
        adds = isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr in ADDING
        found = _RECORDS[node] = adds or isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign))
    return found


def _version_of(obj: Any) -> int:
    """A tensor's version counter now (-1 for an array, which has none)."""
    return version(obj) if isinstance(obj, torch.Tensor) else -1


def _holds(names: dict[str, Any], source: str, obj: Any) -> bool:
    """Whether the table's name ``source`` (a plain name, or an item ``ts[0]``) holds ``obj`` now."""
    if names.get(source) is obj:
        return True
    return "[" in source or "." in source  # an item or a parameter, named by the table itself


def _covered(key: str, named: set[str]) -> bool:
    """Whether the dispatch record named what ``key`` holds now (itself, or its items and parameters)."""
    return key in named or any(n.startswith((key + "[", key + ".")) for n in named)


def _sources(node: ast.stmt, names: dict[str, Any], function: str | None) -> dict[str, str]:
    """For each name a statement binds from a plain name, the table's name it came from (``b = a``,
    ``a, b = b, a``)."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target: ast.expr = node.targets[0]
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        target = node.target
    else:
        return {}
    value = node.value
    if value is None:
        return {}
    pairs: list[tuple[ast.expr, ast.expr]] = [(target, value)]
    if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)):
        pairs = list(zip(target.elts, value.elts)) if len(target.elts) == len(value.elts) else pairs
    out = {}
    for t, v in pairs:
        if isinstance(t, ast.Name) and isinstance(v, ast.Name):
            key = _key(v.id, function)
            out[t.id] = key if key in names else v.id
    return out


def _bind(index: int, node: ast.stmt, call: str, b: Bound, new: Any, names: dict[str, Any], source: str) -> OpRecord:
    """``b = a``: a name bound to a tensor another name holds (the same object)."""
    given = input_record("value", source, source, new, version=_version_of(new))
    result = result_record("", new, [OpRelation(0, "same-object", False)], b.key)
    return OpRecord(index, "bind", call, b.name, node.lineno, [given], [replace_names(result, names, new)])


def _rebind(
    index: int,
    node: ast.stmt,
    call: str,
    b: Bound,
    old: Any,
    new: Any,
    names: dict[str, Any],
    source: str | None,
) -> OpRecord:
    """A name that held a tensor now holds another object: which names still hold the old one."""
    inputs: list[OpInput] = []
    results = []
    if traceable(new):
        given = source if source is not None and source != b.key else None
        inputs.append(input_record("value", source or b.name, given, new, version=_version_of(new)))
    assert b.was is not None
    inputs.append(b.was)
    if traceable(new):
        rels = [OpRelation(0, "same-object", False)]
        if old is not None:  # (an old tensor the statement freed shares nothing with the new one)
            kind, graph = relation(new, old, False)
            rels.append(OpRelation(len(inputs) - 1, kind, graph))
        results.append(replace_names(result_record("", new, rels, b.key), names, new))
    held = [k for k, v in names.items() if old is not None and v is old and k != b.key]
    return OpRecord(index, "rebind", call, b.name, node.lineno, inputs, results, detail={"still_held_by": held})


def replace_names(result: Any, names: dict[str, Any], obj: Any) -> Any:
    """``result`` with every table name that holds ``obj`` now."""
    from tcopy_cli.trace.records import evolve

    held = [k for k, v in names.items() if v is obj]
    if result.name is not None and result.name not in held:
        held.insert(0, result.name)
    return evolve(result, names=held)


ADDING = frozenset({"append", "insert"})
"""List calls whose new item the record names (the notes tell a list that keeps graphs alive)."""


def _container_adds(
    index: int, node: ast.stmt, call: str, names: dict[str, Any], function: str | None, program: Program
) -> list[OpRecord]:
    """``xs.append(t)``, ``xs.insert(0, t)``, ``xs[i] = t``, ``d[k] = t``: a tensor put into a list or dict."""
    given: ast.expr | None = None
    kind, fn = "call", ""
    container: Any = None
    item: Any = None
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        func = node.value.func
        if isinstance(func, ast.Attribute) and func.attr in ADDING and isinstance(func.value, ast.Name):
            container = names.get(_key(func.value.id, function), names.get(func.value.id))
            args = node.value.args
            fn = func.attr
            if isinstance(container, list) and container and len(args) == (1 if fn == "append" else 2):
                given = args[-1]
                at = args[0] if fn == "insert" else None
                position = at.value if isinstance(at, ast.Constant) and isinstance(at.value, int) else -1
                item = container[position] if fn == "append" or position != -1 else None
    elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Subscript):
        target = node.targets[0]
        if isinstance(target.value, ast.Name) and isinstance(target.slice, ast.Constant):
            container = names.get(_key(target.value.id, function), names.get(target.value.id))
            if isinstance(container, (list, dict)):
                kind, fn, given = "setitem", "[]=", node.value
                with contextlib.suppress(LookupError, TypeError):
                    item = container[target.slice.value]  # type: ignore[index]
    if given is None or not traceable(item):
        return []
    text = ast.get_source_segment(program.source, given) or ast.unparse(given)
    name = None
    if isinstance(given, ast.Name):
        key = _key(given.id, function)
        name = key if key in names else given.id
    return [OpRecord(index, kind, call, fn, node.lineno, [input_record("arg0", text, name, item)])]


def _array_writes(index: int, node: ast.stmt, call: str, names: dict[str, Any], function: str | None) -> list[OpRecord]:
    """``n += 1``, ``n[0] = 5`` into a NumPy array: no torch call sees them, though the array may share a
    tensor's memory (the notes tell the write autograd can't see)."""
    if isinstance(node, ast.AugAssign):
        target, kind = node.target, "augassign"
    elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Subscript):
        target, kind = node.targets[0], "setitem"
    else:
        return []
    base = target.value if isinstance(target, ast.Subscript) else target
    if not isinstance(base, ast.Name):
        return []
    key = _key(base.id, function) if _key(base.id, function) in names else base.id
    array = names.get(key)
    if not isinstance(array, np.ndarray):
        return []
    given = input_record("self", base.id, key, array)
    return [OpRecord(index, kind, call, "[]=" if kind == "setitem" else "", node.lineno, [given])]


def _assignment(node: ast.stmt) -> tuple[ast.expr | None, str | None]:
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.value, node.targets[0].id
    if isinstance(node, ast.AnnAssign) and node.value is not None and isinstance(node.target, ast.Name):
        return node.value, node.target.id
    return None, None


def _key(name: str, function: str | None) -> str:
    return f"{function}:{name}" if function else name


def _untraced(
    index: int,
    node: ast.stmt,
    value: ast.expr,
    text: str,
    target: str,
    names: dict[str, Any],
    function: str | None,
    table: _Table,
) -> list[OpRecord]:
    """``target = value`` where no recorded torch call made what ``target`` holds now (``torch.from_numpy``,
    a module built, an item taken from a list): related to the names the expression reads."""
    if isinstance(value, (ast.Name, ast.Constant)):
        return []
    key = _key(target, function)
    value_now = names.get(key)
    results: list[tuple[str, Any]]
    if isinstance(value_now, torch.nn.Module):
        try:
            params = list(torch.nn.Module.named_parameters(value_now))[:MODULE_INPUTS]
        except AttributeError:  # a module whose __init__ never called Module.__init__
            params = []
        results = [(f".{p}", t) for p, t in params if traceable(t)]
    elif traceable(value_now):
        results = [("", value_now)]
    elif isinstance(value_now, (list, tuple)):
        results = [(f"[{i}]", v) for i, v in enumerate(value_now[:MODULE_INPUTS]) if traceable(v)]
    else:
        results = []
    if not results:
        return []
    kind, fn, direct = _outer(value)
    inputs: list[tuple[OpInput, Any]] = []
    seen: set[int] = set()
    for role, sub in direct:
        _add(inputs, seen, role, sub, names, function, target, table)
    moving = moves_values(kind, fn)
    made = []
    renamed = 0
    for item, result in results:
        relations = []
        other = table.get(result, "", other_than=None, outside=key)
        if other is not None and not any(obj is result for _, obj in inputs):
            # An object another name of the table held already (``params = list(model.parameters())``):
            # the statement made nothing new here, it named it again.
            inputs.append((input_record("value", other, other, result, version=_version_of(result)), result))
            relations.append(OpRelation(len(inputs) - 1, "same-object", False))
            renamed += 1
        else:
            for j, (_, obj) in enumerate(inputs):
                if not (isinstance(result, np.ndarray) and isinstance(obj, np.ndarray)):
                    rel, graph = relation(result, obj, moving)
                    relations.append(OpRelation(j, rel, graph))
        held = [k for k, v in names.items() if v is result]
        if item:
            held = [f"{key}{item}"] if item.startswith(".") else held or [f"{key}{item}"]
        made.append(result_record(item, result, relations, held[0] if held else None))
    if renamed == len(results):
        kind = "bind"  # every result was there before: a binding, not a call that made them
    detail: dict[str, Any] = {}
    if kind == "index" and isinstance(value, ast.Subscript):
        found = _index_detail(value.slice, names, function)
        if found is not None:
            detail["index"] = found
    return [OpRecord(index, kind, text, fn, node.lineno, [i for i, _ in inputs], made, detail=detail)]


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
    if isinstance(value, ast.Attribute):
        return "attribute", value.attr, [("self", value.value)]
    return "expr", "", []


class _Table:
    """The table's names of each tensor and array (``fc1.weight``, ``ts[0]``), built on first need."""

    def __init__(self, names: dict[str, Any]) -> None:
        self.names = names
        self._by_id: dict[int, list[str]] | None = None

    def get(self, obj: Any, hint: str, other_than: str | None = None, outside: str | None = None) -> str | None:
        """The table's name for ``obj`` (``hint`` where it is one), not ``other_than`` and not a name
        under ``outside`` (its items and parameters)."""
        if self._by_id is None:
            self._by_id = {}
            for n, v in iter_named(self.names):
                self._by_id.setdefault(id(v), []).append(n)
        held = [n for n in self._by_id.get(id(obj), []) if n != other_than]
        if outside is not None:
            held = [n for n in held if n != outside and not n.startswith((outside + "[", outside + "."))]
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
    """A plain name of the expression that holds a tensor or array, or a list or tuple of them (each item
    by its table name, ``ts[0]``); never the rebound target."""
    if not isinstance(sub, ast.Name) or sub.id == target:
        return
    key = _key(sub.id, function)
    if key not in names:
        key = sub.id
    obj = names.get(key)
    if traceable(obj):
        if id(obj) not in seen:
            seen.add(id(obj))
            out.append((input_record(role, sub.id, key, obj, version=_version_of(obj)), obj))
    elif isinstance(obj, (list, tuple)) and len(obj) <= MODULE_INPUTS:
        for i, item in enumerate(obj):
            name = table.get(item, f"{key}[{i}]") if traceable(item) else None
            if name is not None and id(item) not in seen:
                seen.add(id(item))
                out.append((input_record(f"{role}[{i}]", f"{sub.id}[{i}]", name, item), item))
    elif isinstance(obj, torch.nn.Module):  # ``copy.deepcopy(model)``: its parameters, by their table names
        try:
            params = list(torch.nn.Module.named_parameters(obj))[:MODULE_INPUTS]
        except AttributeError:  # a module whose __init__ never called Module.__init__
            params = []
        for pname, param in params:
            name = table.get(param, f"{key}.{pname}") if traceable(param) else None
            if name is not None and id(param) not in seen:
                seen.add(id(param))
                out.append((input_record(f"{role}.{pname}", f"{sub.id}.{pname}", name, param), param))


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
                found = index_kind(obj)
                if found == "boolean":
                    return found
                kind = "advanced" if found == "advanced" else kind
            elif not isinstance(obj, int):
                return None
        else:
            return None  # an expression: its value is not measured here
    return kind
