"""Step records: plain data about a run. They never hold a live tensor."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from tcopy_cli.trace.layout import byte_span


@dataclass(frozen=True)
class TensorRecord:
    """What one named tensor looked like after a step (spec: jsonl-v1 tensor record)."""

    shape: list[int]
    dtype: str
    device: str
    values: Any
    preview: str
    data_ptr: int
    storage: str
    storage_offset: int
    shares_memory_with: list[str]
    requires_grad: bool
    is_leaf: bool
    grad_fn: str | None
    grad: TensorRecord | None
    version: int
    # Facts beyond the v1 fields (also written to JSON as additional fields).
    stride: list[int] = field(default_factory=list)
    element_size: int = 0
    storage_nbytes: int = 0
    shares_version_with: list[str] = field(default_factory=list)
    reaches: list[str] = field(default_factory=list)
    # Identities for relating records of one run (never serialised, never references).
    object_id: int = 0
    node_id: int = 0
    reach_ids: frozenset[int] = frozenset()

    def to_json(self) -> dict[str, Any]:
        """The JSON object for this record (spec field names, grads nested)."""
        return {
            "shape": self.shape,
            "dtype": self.dtype,
            "device": self.device,
            "values": self.values,
            "preview": self.preview,
            "data_ptr": self.data_ptr,
            "storage": self.storage,
            "storage_offset": self.storage_offset,
            "shares_memory_with": self.shares_memory_with,
            "requires_grad": self.requires_grad,
            "is_leaf": self.is_leaf,
            "grad_fn": self.grad_fn,
            "grad": self.grad.to_json() if self.grad is not None else None,
            "version": self.version,
            "stride": self.stride,
            "element_size": self.element_size,
            "storage_nbytes": self.storage_nbytes,
            "shares_version_with": self.shares_version_with,
            "reaches": self.reaches,
        }

    def byte_span(self) -> tuple[int, int]:
        """[start, end) bytes the elements cover inside the storage."""
        return byte_span(self.shape, self.stride, self.storage_offset, self.element_size)


@dataclass(frozen=True)
class ArrayRecord:
    """A NumPy array bound to a name."""

    shape: list[int]
    dtype: str
    values: Any
    preview: str
    data_ptr: int
    shares_memory_with: list[str]
    storage: str | None = None
    """Label of the tensor storage the array's memory lies in, if any."""

    def to_json(self) -> dict[str, Any]:
        """The JSON object for this record."""
        return {
            "shape": self.shape,
            "dtype": self.dtype,
            "values": self.values,
            "preview": self.preview,
            "data_ptr": self.data_ptr,
            "shares_memory_with": self.shares_memory_with,
            "storage": self.storage,
        }


@dataclass(frozen=True)
class SavedInfo:
    """A tensor a graph node saved for backward."""

    attr: str
    tensor: str
    saved_version: int
    stale: bool

    def to_json(self) -> dict[str, Any]:
        """JSON object."""
        return {"attr": self.attr, "tensor": self.tensor, "saved_version": self.saved_version, "stale": self.stale}


@dataclass(frozen=True)
class GraphNode:
    """One autograd node: its class name and where its gradients go next."""

    label: str
    op: str
    next: list[str | None]
    variable: list[str] = field(default_factory=list)
    tensors: list[str] = field(default_factory=list)
    saved: list[SavedInfo] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """JSON object."""
        return {
            "label": self.label,
            "op": self.op,
            "next": self.next,
            "variable": self.variable,
            "tensors": self.tensors,
            "saved": [s.to_json() for s in self.saved],
        }


@dataclass(frozen=True)
class GraphRecord:
    """The autograd graph behind the named tensors after a step."""

    roots: dict[str, str]
    nodes: dict[str, GraphNode]
    views: dict[str, str]

    def signature(self) -> tuple[Any, ...]:
        """What identifies the structure (for 'did this step change the graph?')."""
        return (
            tuple(sorted(self.roots.items())),
            tuple(
                (n.label, n.op, tuple(n.next), tuple(n.variable), tuple((s.attr, s.stale) for s in n.saved))
                for n in self.nodes.values()
            ),
            tuple(sorted(self.views.items())),
        )

    def to_json(self) -> dict[str, Any]:
        """JSON object."""
        return {
            "roots": self.roots,
            "nodes": {k: v.to_json() for k, v in self.nodes.items()},
            "views": self.views,
        }


@dataclass(frozen=True)
class SavedEvent:
    """Something that happened to a tensor autograd saved for backward (made in trace.graph)."""

    kind: str  # "bumped": in-place change torch will catch; "silent": changed, no version bump; "unchecked": too large
    node: str
    attr: str
    tensor: str
    saved_version: int
    affects: tuple[str, ...] = ()


@dataclass(frozen=True)
class ErrorInfo:
    """A failing statement: exception class name, message and a plain explanation.

    The run records only the type and message; the explain pass fills ``explanation``
    and sets ``explained`` when it knows more than the message says.
    """

    type: str
    message: str
    explanation: str = ""
    explained: bool = False

    @property
    def headline(self) -> str:
        """``Type: first line of the message``, for one-line reports."""
        first = self.message.splitlines()[0] if self.message else ""
        return f"{self.type}: {first}"

    def to_json(self) -> dict[str, str]:
        """The JSON object for this error."""
        return {"type": self.type, "message": self.message, "explanation": self.explanation}


@dataclass(frozen=True)
class CaughtInfo:
    """An error a statement raised that a surrounding ``try`` handles (the step is ok)."""

    error: ErrorInfo
    except_line: int


@dataclass(frozen=True)
class LoopContext:
    """One loop around a step: where it is, which turn this is, and how many turns it has.

    ``entry`` numbers the times any loop was entered in the run (1, 2, ...), so turns of
    one run of a loop can be told from turns of the same loop entered again (a loop
    inside another loop, or inside a function called twice).
    """

    line: int
    iteration: int
    total: int | None = None
    """Turns the loop will make when known (``len`` of what a ``for`` walks); None for ``while``."""
    entry: int = 0

    def to_json(self) -> dict[str, Any]:
        """JSON object."""
        return {"line": self.line, "iteration": self.iteration, "total": self.total}


@dataclass(frozen=True)
class CallSite:
    """A running call of a script function and the line that called it."""

    function: str
    line: int


Severity = Literal["info", "warning"]
WARNING_MARK = "⚠ "


@dataclass(frozen=True)
class Note:
    """One plain-language note about a step, made by an explain rule from its facts.

    ``kind`` names the rule's finding (``relation.view``, ``grad.accumulated`` ...),
    ``tensors`` the names it is about. ``severity`` is ``warning`` for a note that
    means wrong results or a coming failure the user may not see otherwise.
    """

    kind: str
    severity: Severity
    text: str
    tensors: tuple[str, ...] = ()

    @property
    def line(self) -> str:
        """The note as one line of text (the JSON ``notes`` entry): warnings carry a ⚠ mark."""
        return WARNING_MARK + self.text if self.severity == "warning" else self.text

    def to_json(self) -> dict[str, Any]:
        """The JSON object (an entry of ``explanations``)."""
        return {"kind": self.kind, "severity": self.severity, "text": self.text, "tensors": list(self.tensors)}


@dataclass(frozen=True)
class Step:
    """One executed statement and the state after it.

    A run emits facts only (``explanations`` empty, errors unexplained); the explain
    pass returns a copy with notes and error explanations filled in.
    """

    index: int
    line: int
    source: str
    status: str
    error: ErrorInfo | None
    stdout: str
    warnings: list[str]
    tensors: dict[str, TensorRecord]
    arrays: dict[str, ArrayRecord]
    narration: list[str] = field(default_factory=list)
    grad_enabled: bool = True
    saved_events: list[SavedEvent] = field(default_factory=list)
    graph: GraphRecord | None = None
    function: str | None = None
    depth: int = 0
    caught: CaughtInfo | None = None
    explanations: list[Note] = field(default_factory=list)
    loops: tuple[LoopContext, ...] = ()
    """Enclosing loops, outermost first (loops of calling code included)."""
    contexts: tuple[str, ...] = ()
    """Grad-mode blocks around the step, outermost first: ``no_grad``, ``inference_mode`` ..."""
    calls: tuple[CallSite, ...] = ()
    """Script-function calls running, outermost first (``function`` is the innermost's name)."""

    @property
    def notes(self) -> list[str]:
        """The notes as lines of text."""
        return [n.line for n in self.explanations]

    def to_json(self) -> dict[str, Any]:
        """The ``step`` event of the JSON Lines format."""
        return {
            "event": "step",
            "index": self.index,
            "line": self.line,
            "source": self.source,
            "status": self.status,
            "error": self.error.to_json() if self.error else None,
            "stdout": self.stdout,
            "warnings": self.warnings,
            "notes": self.notes,
            "explanations": [n.to_json() for n in self.explanations],
            "tensors": {k: v.to_json() for k, v in self.tensors.items()},
            "arrays": {k: v.to_json() for k, v in self.arrays.items()},
            "function": self.function,
            "depth": self.depth,
            "loops": [loop.to_json() for loop in self.loops],
        }


@dataclass(frozen=True)
class RunInfo:
    """Facts about a run, known before its first step."""

    tcopy: str
    torch: str
    device: str
    source: str
    title: str = ""
    # What the installed torch can't give tcopy (compat.degraded); empty on current releases.
    degraded: list[str] = field(default_factory=list)
    confinement: str = "none"
    """Kernel protections active in the process running the script (tcopy_cli.confine)."""

    def to_json(self) -> dict[str, Any]:
        """The ``start`` event (``degraded`` only where some fact is)."""
        out: dict[str, Any] = {
            "event": "start",
            "format": "tcopy.jsonl/1",
            "tcopy": self.tcopy,
            "torch": self.torch,
            "device": self.device,
            "source": self.source,
            "title": self.title,
            "confinement": self.confinement,
        }
        if self.degraded:
            out["degraded"] = self.degraded
        return out


@dataclass(frozen=True)
class RunSummary:
    """How a run ended."""

    steps: int
    errors: int
    stopped_by: str | None = None
    rejected: bool = False

    @property
    def status(self) -> str:
        """``ok`` when no step failed and the script was not refused."""
        return "ok" if self.errors == 0 and not self.rejected else "error"

    def to_json(self) -> dict[str, Any]:
        """The ``end`` event."""
        return {"event": "end", "status": self.status, "steps": self.steps, "errors": self.errors}
