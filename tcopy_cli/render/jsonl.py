"""JSON Lines output (docs/jsonl-v1.md): one strict JSON object per line.

This module owns the format. The records of ``tcopy_cli.trace`` are plain data; the functions
here say which of their facts each event writes, under which names and in which order: the
events ``start_json``, ``step_json``, ``loop_json`` and ``end_json``, the objects inside them
(``tensor_json``, ``op_json``, ``note_json`` ...), and ``comparison_json`` for ``tcopy compare
--format json``. A field added to a record reaches the output only once it is written here.
"""

from __future__ import annotations

import json
import math
import re
from typing import TYPE_CHECKING, Any, TextIO

from tcopy_cli.render import ViewOptions
from tcopy_cli.trace.records import RunSummary
from tcopy_cli.trace.values import json_number

if TYPE_CHECKING:
    from tcopy_cli.render.folding import FoldedTurn, StepFlow
    from tcopy_cli.render.loops import Evolution, LoopFinding, LoopSummary
    from tcopy_cli.trace.compare import Comparison  # imports torch: a JSON run never needs it
    from tcopy_cli.trace.records import (
        ArrayRecord,
        ErrorInfo,
        GraphNode,
        GraphRecord,
        LoopContext,
        Note,
        OpInput,
        OpRecord,
        OpRelation,
        OpResult,
        RunInfo,
        SavedInfo,
        Step,
        TensorRecord,
    )


_STRICT = json.JSONEncoder(allow_nan=False, ensure_ascii=False)  # one for all lines: dumps() makes one per call
# What the encoder leaves as it is (it escapes only C0, quotes and backslashes) but a terminal
# showing the line would obey or a strict reader refuse: DEL, C1 (0x9b is CSI), the
# bidirectional controls and line separators, lone surrogates. Outside strings a line is ASCII.
_UNSAFE = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escape(m: re.Match[str]) -> str:
    return f"\\u{ord(m[0]):04x}"


def dumps(obj: dict[str, Any]) -> str:
    """Strict JSON (no NaN/Infinity literals) on one line; the exact text, with the characters of
    ``printable.UNPRINTABLE`` that JSON leaves raw written as ``\\uNNNN`` escapes."""
    line = _STRICT.encode(obj)
    return line if _UNSAFE.search(line) is None else _UNSAFE.sub(_escape, line)


# --- the events and what they hold -------------------------------------------------------


def start_json(info: RunInfo) -> dict[str, Any]:
    """The ``start`` event (``degraded`` only where some fact is, ``trusted`` only under --trust)."""
    out: dict[str, Any] = {
        "event": "start",
        "format": "tcopy.jsonl/1",
        "tcopy": info.tcopy,
        "torch": info.torch,
        "device": info.device,
        "source": info.source,
        "title": info.title,
        "confinement": info.confinement,
        "allow_read": info.allow_read,
    }
    if info.degraded:
        out["degraded"] = info.degraded
    if info.trusted:
        out["trusted"] = True
    return out


def step_json(step: Step) -> dict[str, Any]:
    """The ``step`` event (``hooks``, ``unlisted``, ``observed``, ``expect``/``expected`` only where set)."""
    out: dict[str, Any] = {
        "event": "step",
        "index": step.index,
        "line": step.line,
        "source": step.source,
        "status": step.status,
        "error": error_json(step.error) if step.error else None,
        "stdout": step.stdout,
        "warnings": step.warnings,
        "notes": step.notes,
        "explanations": [note_json(n) for n in step.explanations],
        "ops": [op_json(o) for o in step.ops],
        "tensors": {k: tensor_json(v) for k, v in step.tensors.items()},
        "arrays": {k: array_json(v) for k, v in step.arrays.items()},
        "function": step.function,
        "depth": step.depth,
        **({"hooks": step.hooks} if step.hooks else {}),
        **({"unlisted": step.unlisted} if step.unlisted else {}),
        **({"observed": False} if not step.observed else {}),
        "loops": [loop_context_json(loop) for loop in step.loops],
    }
    if step.expect is not None:
        out["expect"] = step.expect
        out["expected"] = step.expected
    return out


def end_json(summary: RunSummary) -> dict[str, Any]:
    """The ``end`` event (the expectation counts only where not zero)."""
    out: dict[str, Any] = {"event": "end", "status": summary.status, "steps": summary.steps, "errors": summary.errors}
    if summary.expected:
        out["expected_errors"] = summary.expected
    if summary.missing:
        out["missing_errors"] = summary.missing
    return out


def tensor_json(rec: TensorRecord) -> dict[str, Any]:
    """A tensor record: the spec's fields, then the additional ones; a ``.grad`` nested as one."""
    return {
        "shape": rec.shape,
        "dtype": rec.dtype,
        "device": rec.device,
        "values": rec.values,
        "preview": rec.preview,
        "data_ptr": rec.data_ptr,
        "storage": rec.storage,
        "storage_offset": rec.storage_offset,
        "shares_memory_with": rec.shares_memory_with,
        "requires_grad": rec.requires_grad,
        "is_leaf": rec.is_leaf,
        "grad_fn": rec.grad_fn,
        "grad": tensor_json(rec.grad) if rec.grad is not None else None,
        "version": rec.version,
        "version_counter": rec.version_counter,
        "stride": rec.stride,
        "element_size": rec.element_size,
        "storage_nbytes": rec.storage_nbytes,
        "shares_version_with": rec.shares_version_with,
        "reaches": rec.reaches,
    }


def array_json(rec: ArrayRecord) -> dict[str, Any]:
    """A NumPy array record (an entry of a step's ``arrays``)."""
    return {
        "shape": rec.shape,
        "dtype": rec.dtype,
        "values": rec.values,
        "preview": rec.preview,
        "data_ptr": rec.data_ptr,
        "shares_memory_with": rec.shares_memory_with,
        "storage": rec.storage,
    }


def error_json(error: ErrorInfo) -> dict[str, Any]:
    """A step's ``error`` (``expected`` only on an expected one)."""
    out: dict[str, Any] = {"type": error.type, "message": error.message, "explanation": error.explanation}
    if error.expected:
        out["expected"] = True
    return out


def note_json(note: Note) -> dict[str, Any]:
    """An entry of a step's ``explanations`` (``fix`` only where the note gives one)."""
    return {
        "kind": note.kind,
        "severity": note.severity,
        "text": note.text,
        "tensors": list(note.tensors),
        "op": note.op,
        **({"fix": note.fix} if note.fix is not None else {}),
    }


def op_json(op: OpRecord) -> dict[str, Any]:
    """An entry of a step's ``ops``."""
    return {
        "index": op.index,
        "kind": op.kind,
        "call": op.call,
        "function": op.function,
        "line": op.line,
        "inputs": [op_input_json(i) for i in op.inputs],
        "results": [op_result_json(r) for r in op.results],
        "bumped": op.bumped,
        "detail": op.detail,
        "error": op.error,
    }


def op_input_json(given: OpInput) -> dict[str, Any]:
    """An entry of an operation's ``inputs``."""
    return {
        "role": given.role,
        "expr": given.expr,
        "name": given.name,
        "kind": given.kind,
        "from_op": given.from_op,
        "version": given.version,
        "contiguous": given.contiguous,
        "is_view": given.is_view,
        "base": given.base,
        "requires_grad": given.requires_grad,
    }


def op_result_json(result: OpResult) -> dict[str, Any]:
    """An entry of an operation's ``results``."""
    return {
        "name": result.name,
        "names": result.names,
        "kind": result.kind,
        "item": result.item,
        "relations": [op_relation_json(r) for r in result.relations],
        "version": result.version,
        "grad_fn": result.grad_fn,
        "requires_grad": result.requires_grad,
    }


def op_relation_json(relation: OpRelation) -> dict[str, Any]:
    """An entry of a result's ``relations``."""
    return {"input": relation.input, "relation": relation.relation, "graph": relation.graph, "op": relation.op}


def loop_context_json(loop: LoopContext) -> dict[str, Any]:
    """An entry of a step's ``loops`` or a ``loop`` event's ``enclosing``."""
    return {"line": loop.line, "iteration": loop.iteration, "total": loop.total}


def graph_json(graph: GraphRecord) -> dict[str, Any]:
    """A step's ``graph`` (written with --graph)."""
    return {
        "roots": graph.roots,
        "nodes": {k: graph_node_json(v) for k, v in graph.nodes.items()},
        "views": graph.views,
    }


def graph_node_json(node: GraphNode) -> dict[str, Any]:
    """An entry of a graph's ``nodes``."""
    return {
        "label": node.label,
        "op": node.op,
        "next": node.next,
        "variable": node.variable,
        "tensors": node.tensors,
        "saved": [saved_json(s) for s in node.saved],
    }


def saved_json(saved: SavedInfo) -> dict[str, Any]:
    """An entry of a graph node's ``saved``."""
    return {"attr": saved.attr, "tensor": saved.tensor, "saved_version": saved.saved_version, "stale": saved.stale}


def loop_json(summary: LoopSummary) -> dict[str, Any]:
    """The ``loop`` event (``unlisted`` and ``findings`` only where there are some)."""
    return {
        "event": "loop",
        "line": summary.line,
        "iterations": summary.iterations,
        "total": summary.total,
        "first_step": summary.first_step,
        "last_step": summary.last_step,
        "enclosing": [loop_context_json(c) for c in summary.enclosing],
        "tensors": {name: evolution_json(ev) for name, ev in summary.changed().items()},
        **({"unlisted": {n: list(pair) for n, pair in summary.unlisted.items()}} if summary.unlisted else {}),
        **(
            {"findings": [finding_json(f, summary.iterations) for f in summary.findings.values()]}
            if summary.findings
            else {}
        ),
    }


def evolution_json(ev: Evolution) -> dict[str, Any]:
    """An entry of a ``loop`` event's ``tensors``."""
    out: dict[str, Any] = {}
    if ev.scalar:
        finite = [v for v in ev.values if math.isfinite(v)]
        out["values"] = [json_number(v) for v in ev.values]
        out["first"] = json_number(ev.values[0])
        out["last"] = json_number(ev.values[-1])
        out["min"] = min(finite) if finite else None
        out["max"] = max(finite) if finite else None
    out["version_before"] = ev.version_before
    out["version_after"] = ev.versions[-1] if ev.versions else None
    norms = [n for n in ev.grad_norms if n is not None]
    if norms:
        out["grad_norms"] = [json_number(n) for n in ev.grad_norms]
    if any(n is not None for n in ev.peak_norms):
        out["grad_norms_peak"] = [json_number(n) for n in ev.peak_norms]
    out["storages_made"] = ev.storages_made
    out["storages_new"] = ev.storages_new
    out["storages_freed"] = ev.storages_freed
    return out


def finding_json(finding: LoopFinding, iterations: int) -> dict[str, Any]:
    """An entry of a ``loop`` event's ``findings`` (``iterations``: the turns the loop ran)."""
    return {
        "kind": finding.kind,
        "severity": finding.severity,
        "tensors": finding.tensors,
        "turns": finding.turns,
        "fix": finding.fix,
        "line": finding.line,
        "text": finding.text(iterations),
    }


def comparison_json(row: Comparison) -> dict[str, Any]:
    """One line of ``tcopy compare --format json``: an expression and what was measured about it."""
    return {
        "expression": row.expression,
        "new_object": row.new_object,
        "shares_storage": row.shares_storage,
        "same_data_ptr": row.same_data_ptr,
        "shares_version_counter": row.shares_version_counter,
        "requires_grad": row.requires_grad,
        "is_leaf": row.is_leaf,
        "grad_fn": row.grad_fn,
        "device": row.device,
        "grad_flows_to_source": row.grad_flows_to_source,
        "inplace_visible_in_source": row.inplace_visible_in_source,
        "autograd_detects_inplace": row.autograd_detects_inplace,
        "warnings": row.warnings,
        "error": row.error,
    }


# --- the renderer ------------------------------------------------------------------------


class JsonRenderer:
    """Writes events to a text stream, flushing each line so pipes see steps as they run."""

    def __init__(self, out: TextIO, options: ViewOptions | None = None) -> None:
        self.out = out
        self.graph = (options or ViewOptions()).graph
        self.refs = (options or ViewOptions()).json_refs
        # name -> (the tensor record last written in full for it, its step index)
        self.written: dict[str, tuple[dict[str, Any], int]] = {}

    def _write(self, obj: dict[str, Any]) -> None:
        self.out.write(dumps(obj) + "\n")
        self.out.flush()

    def start(self, info: RunInfo) -> None:
        """The ``start`` event."""
        event = start_json(info)
        if self.refs:
            event["tensor_refs"] = True
        self._write(event)

    def step(self, step: Step, shown: bool = True) -> None:
        """A ``step`` event (every step: JSON consumers filter themselves)."""
        event = step_json(step)
        if self.graph and step.graph is not None:
            event["graph"] = graph_json(step.graph)
        if self.refs:
            self._refer(event["tensors"], step.index)
        self._write(event)

    def _refer(self, tensors: dict[str, Any], index: int) -> None:
        """--json-refs: replace each record identical to its name's last full record by a reference."""
        for name, record in tensors.items():
            last = self.written.get(name)
            if last is not None and last[0] == record:
                tensors[name] = {"unchanged_since": last[1]}
            else:
                self.written[name] = (record, index)

    def folded(self, turn: FoldedTurn) -> None:
        """JSON folds nothing: every step was written."""

    def loop(self, summary: LoopSummary) -> None:
        """A ``loop`` event: the loop's turns and how each tensor it changed evolved."""
        self._write(loop_json(summary))

    def rejected(self, info: RunInfo, line: int, column: int, message: str) -> None:
        """``start``, ``rejected`` and ``end`` for a script refused before running."""
        self.start(info)
        self._write({"event": "rejected", "line": line, "column": column, "message": message})
        self.end(RunSummary(steps=0, errors=0, rejected=True))

    def end(self, summary: RunSummary, flow: StepFlow | None = None) -> None:
        """The ``end`` event."""
        self._write(end_json(summary))
