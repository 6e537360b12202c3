"""The operation record: what each call, index, operator and attribute write of a step did.

The engine hands every operation to an ``OpRecorder`` where it happens (``begin``
before it runs, ``end`` or ``fail`` after), so provenance is measured, never guessed
from values afterwards: each tensor (or NumPy array) result's relation to each input
comes from ``trace.relate``. In-place effects are the version counters that moved.

The recorder holds its inputs and results only while the operation runs and through
weak references until the step ends (to learn the names results were bound to); the
records it returns are plain data.
"""

from __future__ import annotations

import ast
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch

from tcopy_cli.trace.graph import grad_of, safe_grad_fn, safe_is_leaf
from tcopy_cli.trace.records import RESET_CALLS, OpInput, OpRecord, OpRelation, OpResult, evolve
from tcopy_cli.trace.relate import moves_values, relation, storage_ptr, version

# Items of a returned tuple/list or parameters of a returned module that are recorded.
MAX_RESULT_ITEMS = 16
# Operations recorded per step (a comprehension over a long list stops recording there).
MAX_OPS_PER_STEP = 200
# Temporaries followed back to named tensors (a.t().contiguous().view(-1) is three).
MAX_CHAIN = 4

_ARRAY = np.ndarray


@dataclass
class _Input:
    role: str
    expr: str
    obj: Any
    record: OpInput


@dataclass
class Pending:
    """An operation that has begun."""

    kind: str
    call: str
    function: str
    line: int
    inputs: list[_Input]
    detail: dict[str, Any] = field(default_factory=dict)
    before: dict[str, Any] = field(default_factory=dict)
    target: Any = None


@dataclass
class _Step:
    ops: list[OpRecord] = field(default_factory=list)
    # (op index, result index, weak reference or the object for non-weakrefable arrays)
    results: list[tuple[int, int, Any]] = field(default_factory=list)
    produced: dict[int, tuple[int, Any]] = field(default_factory=dict)
    # Inputs of each operation until the step ends: named ones held (names hold them
    # anyway), temporaries by weak reference, so a chain a.clone().detach() can be
    # related back to a without keeping temporaries alive.
    held: dict[int, list[tuple[OpInput, Any]]] = field(default_factory=dict)
    # id of each tensor and array the table can name → its names (built on first need).
    table: dict[int, tuple[Any, list[str]]] | None = None


def _weak(obj: Any) -> Any:
    try:
        return weakref.ref(obj)
    except TypeError:  # pragma: no cover - tensors and arrays both take weak references
        return None


def index_kind(index: Any) -> str:
    """``basic`` (ints, slices, None, Ellipsis), ``boolean`` (a bool mask) or ``advanced``."""
    parts = index if isinstance(index, tuple) else (index,)
    kind = "basic"
    for p in parts:
        if isinstance(p, torch.Tensor):
            if p.dtype == torch.bool:
                return "boolean"
            if p.dim() > 0 or not p.dtype.is_floating_point:
                kind = "advanced" if p.dim() > 0 else kind
        elif isinstance(p, _ARRAY):
            if p.dtype == np.bool_:
                return "boolean"
            kind = "advanced" if p.ndim > 0 else kind
        elif isinstance(p, (list, range)):
            if any(isinstance(x, bool) for x in p):
                return "boolean"
            kind = "advanced"
        elif isinstance(p, bool):
            kind = "advanced"
    return kind


def _attr_facts(t: torch.Tensor) -> dict[str, Any]:
    """What an attribute write can replace: the memory, the gradient, the flag."""
    grad = grad_of(t)
    return {
        "storage": storage_ptr(t),
        "shape": list(t.shape),
        "dtype": _dtype(t),
        "grad": id(grad) if grad is not None else None,
        "has_grad": grad is not None,
        "requires_grad": bool(t.requires_grad),
    }


FLAG_CALLS = frozenset({"requires_grad_"})
"""In-place calls that change a flag of their receiver (recorded like ``x.requires_grad = ...``)."""


def _dtype(t: Any) -> str:
    return str(t.dtype).removeprefix("torch.")


class OpRecorder:
    """Collects the operations of each running step (steps nest: a stack of them)."""

    def __init__(self) -> None:
        self._stack: list[_Step] = []
        self._carried: list[OpRecord] = []
        self._texts: dict[int, str] = {}
        self.names: Callable[[Any], str | None] | None = None
        """The script name holding an object now (the interpreter's ``name_of``)."""
        self.holders: Callable[[Any], list[str]] | None = None
        """Every script name holding an object now (the interpreter's ``names_of``)."""
        self.named: Callable[[], Iterable[tuple[str, Any]]] | None = None
        """(table name, value) of every tensor and array the table shows now, such as
        ``fc1.weight`` or ``ts[0]``: names for inputs no plain name holds."""

    # --- steps ---------------------------------------------------------------------

    def push(self) -> int:
        """A step (or a block header) begins; returns the depth before it (for ``unwind``)."""
        self._stack.append(_Step())
        return len(self._stack) - 1

    def unwind(self, depth: int) -> None:
        """Drop the lists of steps that ended without ``pop`` (the run stopped inside them)."""
        del self._stack[depth:]

    def active(self) -> bool:
        """Whether a step is running (operations are recorded into it)."""
        return bool(self._stack)

    def forget(self, obj: Any) -> None:
        """Hold no weak reference to ``obj`` any more (``torch.utils.swap_tensors`` refuses a tensor that has
        one): an operation's result or input that was ``obj`` is no longer related to it."""

        def kept(ref: Any) -> Any:
            return None if isinstance(ref, weakref.ref) and ref() is obj else ref

        for step in self._stack:
            step.results = [(o, r, kept(ref)) for o, r, ref in step.results]
            if id(obj) in step.produced and kept(step.produced[id(obj)][1]) is None:
                del step.produced[id(obj)]
            for index, inputs in step.held.items():
                step.held[index] = [(record, kept(ref)) for record, ref in inputs]

    def full(self) -> bool:
        """Whether the running step holds as many operations as one records (``MAX_OPS_PER_STEP``)."""
        return len(self._stack[-1].ops) >= MAX_OPS_PER_STEP

    def has_results(self) -> bool:
        """Whether the running step's operations returned tensors or arrays (names to resolve)."""
        return bool(self._stack and self._stack[-1].results)

    def pop(self, names: dict[int, list[str]] | None = None, targets: frozenset[str] = frozenset()) -> list[OpRecord]:
        """The step's records, result names resolved from ``names`` (id of a live object → its
        names); where several names hold a result, one of ``targets`` (the statement's) first."""
        if not self._stack:
            return []
        step = self._stack.pop()
        ops = step.ops
        if names and step.results:
            resolved: dict[tuple[int, int], list[str]] = {}
            for op_i, res_i, ref in step.results:
                obj = ref() if isinstance(ref, weakref.ref) else ref
                if obj is not None and id(obj) in names:
                    held = names[id(obj)]
                    resolved[(op_i, res_i)] = sorted(held, key=lambda n: n not in targets)
            if resolved:
                by_op: dict[int, dict[int, list[str]]] = {}
                for (o, r), n in resolved.items():
                    by_op.setdefault(o, {})[r] = n
                ops = [_with_names(op, by_op[op.index]) if op.index in by_op else op for op in ops]
        if self._carried:
            carried, self._carried = self._carried, []
            shift = len(carried)
            ops = carried + [_shifted(op, shift) for op in ops]
        return ops

    def carry(self, ops: list[OpRecord]) -> None:
        """Records of a block header that succeeded: they open the next step's list."""
        self._carried.extend(ops)

    # --- operations ----------------------------------------------------------------

    def text(self, node: ast.AST) -> str:
        """The node as written (cached per node)."""
        key = id(node)
        t = self._texts.get(key)
        if t is None:
            try:
                t = ast.unparse(node)
            except Exception:  # pragma: no cover - any parsed node unparses
                t = "?"
            if len(t) > 120:
                t = t[:117] + "..."
            self._texts[key] = t
        return t

    def begin(
        self,
        node: ast.AST | None,
        kind: str,
        function: str,
        inputs: Sequence[tuple[str, ast.AST | None, Any]],
        call: str | None = None,
        extra: Any = None,
        line: int = 0,
    ) -> Pending | None:
        """An operation starts; ``inputs`` are (role, node or None, value). None: not recorded.

        ``extra``: the index of an indexing or item write, the tensor of an attribute
        write, the old value of a rebinding.
        """
        if not self._stack or len(self._stack[-1].ops) >= MAX_OPS_PER_STEP:
            return None
        recorded: list[_Input] = []
        for role, sub, value in inputs:
            self._add_input(recorded, role, sub, value)
        text = call if call is not None else self.text(node) if node is not None else ""
        p = Pending(kind, text, function, getattr(node, "lineno", line), recorded)
        if kind in ("index", "setitem"):
            p.detail["index"] = index_kind(extra)
        elif kind == "setattr" and isinstance(extra, torch.Tensor):
            p.target = extra
            p.before = _attr_facts(extra)
        elif kind == "call" and function in FLAG_CALLS and recorded and recorded[0].role == "self":
            receiver = recorded[0].obj
            if isinstance(receiver, torch.Tensor):  # x.requires_grad_(): what the flag was before
                p.target = receiver
                p.before = _attr_facts(receiver)
        elif kind == "rebind":
            p.target = extra
        return p

    def _add_input(self, out: list[_Input], role: str, sub: ast.AST | None, value: Any) -> None:
        if traceable(value):
            out.append(
                _Input(role, self.text(sub) if sub is not None else role, value, self._input_record(role, sub, value))
            )
        elif isinstance(value, (list, tuple)) and len(value) <= MAX_RESULT_ITEMS:
            elts = sub.elts if isinstance(sub, (ast.List, ast.Tuple)) and len(sub.elts) == len(value) else None
            for i, item in enumerate(value):
                if traceable(item):
                    node = elts[i] if elts is not None else None
                    self._add_input(out, f"{role}[{i}]", node, item)

    def _input_record(self, role: str, sub: ast.AST | None, value: Any) -> OpInput:
        step = self._stack[-1]
        produced = step.produced.get(id(value))
        from_op = produced[0] if produced is not None and _alive(produced[1]) is value else None
        name = self.names(value) if self.names is not None else None
        if name is None and from_op is None:
            name = self._table_name(step, value, role)
        if sub is not None:
            expr = self.text(sub)
        elif from_op is not None and from_op < len(step.ops):
            expr = step.ops[from_op].call  # a temporary: the call that made it, as written
        else:
            expr = name or role
        if isinstance(value, _ARRAY):
            return input_record(role, expr, name, value)
        base = value._base if value._is_view() else None
        base_name = self.names(base) if base is not None and self.names is not None else None
        return input_record(role, expr, name, value, from_op, version(value), base_name)

    def _table_name(self, step: _Step, value: Any, hint: str) -> str | None:
        """The table's name for an input held only inside a module or a container
        (``fc1.weight``, ``ts[0]``); ``hint`` first where it is one of them."""
        if self.named is None:
            return None
        if step.table is None:
            step.table = {}
            for n, v in self.named():
                step.table.setdefault(id(v), (v, []))[1].append(n)
        found = step.table.get(id(value))
        if found is None or found[0] is not value:
            return None
        return hint if hint in found[1] else found[1][0]

    def end(self, p: Pending | None, result: Any) -> None:
        """The operation returned ``result``."""
        if p is None or not self._stack:
            return
        items = _result_items(result)
        if not items and not p.inputs and p.kind not in ("setattr", "rebind") and p.function not in RESET_CALLS:
            return
        step = self._stack[-1]
        index = len(step.ops)
        if p.kind in ("setattr", "call") and p.target is not None:
            after = _attr_facts(p.target)
            p.detail["is_leaf"] = safe_is_leaf(p.target)
            p.detail["replaced"] = [k for k in ("storage", "grad", "requires_grad") if p.before[k] != after[k]]
            p.detail["before"] = {k: v for k, v in p.before.items() if k not in ("storage", "grad")}
            p.detail["after"] = {k: v for k, v in after.items() if k not in ("storage", "grad")}
        elif p.kind == "rebind" and self.holders is not None and p.target is not None:
            p.detail["still_held_by"] = self.holders(p.target)
        results = [self._result(p, item, obj, step) for item, obj in items]
        bumped = [
            i
            for i, inp in enumerate(p.inputs)
            if inp.record.kind == "tensor" and inp.record.version >= 0 and version(inp.obj) != inp.record.version
        ]
        for j, (_, obj) in enumerate(items):
            step.results.append((index, j, _weak(obj)))
            step.produced[id(obj)] = (index, _weak(obj))
        step.held[index] = [(i.record, i.obj if i.record.name is not None else _weak(i.obj)) for i in p.inputs]
        step.ops.append(
            OpRecord(
                index=index,
                kind=p.kind,
                call=p.call,
                function=p.function,
                line=p.line,
                inputs=[i.record for i in p.inputs],
                results=results,
                bumped=bumped,
                detail=p.detail,
            )
        )

    def fail(self, p: Pending | None, exc: BaseException) -> None:
        """The operation raised ``exc``: recorded with its inputs (error explanations use it)."""
        if p is None or not self._stack:
            return
        step = self._stack[-1]
        step.ops.append(
            OpRecord(
                index=len(step.ops),
                kind=p.kind,
                call=p.call,
                function=p.function,
                line=p.line,
                inputs=[i.record for i in p.inputs],
                detail=p.detail,
                error=type(exc).__name__,
            )
        )

    def _result(self, p: Pending, item: str, obj: Any, step: _Step) -> OpResult:
        rels = []
        moving = moves_values(p.kind, p.function)
        for i, inp in enumerate(p.inputs):
            if isinstance(obj, _ARRAY) and isinstance(inp.obj, _ARRAY):
                continue
            # What a rebound name held before is not where its new value came from: equal values
            # there make no copy (``c = torch.ones(2)`` twice).
            kind, graph = relation(obj, inp.obj, moving and inp.record.role != "old")
            rels.append(OpRelation(i, kind, graph))
            if inp.record.from_op is not None:
                # Values reach back through a temporary only if this operation kept them.
                kept = kind in ("same-object", "view", "alias", "copy", "shares-memory")
                rels += self._through(obj, inp.record.from_op, step, MAX_CHAIN, kept)
        return result_record(item, obj, rels)

    def _through(self, obj: Any, op: int, step: _Step, depth: int, kept: bool) -> list[OpRelation]:
        """Relations of ``obj`` to the inputs of the earlier operation ``op`` (and theirs, for
        temporaries). ``kept``: every later operation of the chain kept the values (a copy of
        the input is then possible; otherwise only memory and graph relations are)."""
        out: list[OpRelation] = []
        earlier = step.ops[op] if op < len(step.ops) else None
        moving = kept and earlier is not None and moves_values(earlier.kind, earlier.function)
        for j, (rec, held) in enumerate(step.held.get(op, [])):
            src = _alive(held)
            if rec.name is not None:
                if src is None or (isinstance(obj, _ARRAY) and isinstance(src, _ARRAY)):
                    continue
                kind, graph = relation(obj, src, moving)
                out.append(OpRelation(j, kind, graph, op))
            elif rec.from_op is not None and depth > 1:
                out += self._through(obj, rec.from_op, step, depth - 1, moving)
        return out


def input_record(
    role: str,
    expr: str,
    name: str | None,
    value: Any,
    from_op: int | None = None,
    version: int = -1,
    base_name: str | None = None,
) -> OpInput:
    """An operation's tensor or array input as recorded (``version`` -1: not known before the operation)."""
    if isinstance(value, _ARRAY):
        return OpInput(role, expr, name, "ndarray", from_op, -1, bool(value.flags.c_contiguous), dtype=str(value.dtype))
    return OpInput(
        role,
        expr,
        name,
        "tensor",
        from_op,
        version,
        bool(value.is_contiguous()),
        bool(value._is_view()),
        base_name,
        bool(value.requires_grad),
        _dtype(value),
        str(value.device),
    )


def result_record(item: str, obj: Any, relations: list[OpRelation], name: str | None = None) -> OpResult:
    """The record of one tensor or array an operation returned (``name``: known already)."""
    names = [name] if name is not None else []
    if isinstance(obj, _ARRAY):
        return OpResult(
            name, "ndarray", item, relations, dtype=str(obj.dtype), contiguous=bool(obj.flags.c_contiguous), names=names
        )
    fn = safe_grad_fn(obj)
    return OpResult(
        name,
        "tensor",
        item,
        relations,
        version(obj),
        type(fn).__name__ if fn is not None else None,
        bool(obj.requires_grad),
        bool(obj.is_contiguous()),
        _dtype(obj),
        str(obj.device),
        names,
    )


def traceable(x: Any) -> bool:
    """A tensor or array the record can describe (a lazy module's parameter has no data yet)."""
    return isinstance(x, _ARRAY) or (isinstance(x, torch.Tensor) and not torch.nn.parameter.is_lazy(x))


def _alive(ref: Any) -> Any:
    return ref() if isinstance(ref, weakref.ref) else ref


def _result_items(result: Any) -> list[tuple[str, Any]]:
    if isinstance(result, (torch.Tensor, _ARRAY)):
        return [("", result)] if traceable(result) else []
    if isinstance(result, (list, tuple)) and not isinstance(result, torch.Size):
        return [(f"[{i}]", x) for i, x in enumerate(result[:MAX_RESULT_ITEMS]) if traceable(x)]
    if isinstance(result, torch.nn.Module):
        out = []
        for pname, param in list(torch.nn.Module.named_parameters(result))[:MAX_RESULT_ITEMS]:
            if traceable(param):
                out.append((f".{pname}", param))
        return out
    return []


def _with_names(op: OpRecord, names: dict[int, list[str]]) -> OpRecord:
    results = [evolve(r, name=names[j][0], names=names[j]) if j in names else r for j, r in enumerate(op.results)]
    return evolve(op, results=results)


def _shifted(op: OpRecord, shift: int) -> OpRecord:
    inputs = [i if i.from_op is None else replace(i, from_op=i.from_op + shift) for i in op.inputs]
    results = [
        replace(r, relations=[x if x.op is None else replace(x, op=x.op + shift) for x in r.relations])
        for r in op.results
    ]
    return replace(op, index=op.index + shift, inputs=inputs, results=results)
