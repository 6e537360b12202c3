"""The operation record, taken where torch dispatches: a ``TorchFunctionMode`` active while the script runs.

Every top-level torch call a statement makes passes through ``OpMode.__torch_function__``: Tensor
methods, operators, indexing and index assignment, ``+=`` (as ``add_``), the ``.data`` and ``.grad``
getters and setters, ``requires_grad_``, ``__deepcopy__``, factories, ``backward``, and the
functional calls inside an ``nn.Module``'s forward (so ``model(X)`` lists the module's parameters as
inputs). Calls torch makes inside a recorded call are not seen again (the mode is off while its
handler runs). Each call goes to ``trace.ops.OpRecorder``, which measures the relation of each result
to each input when the call returns.

The call as written comes from the script's frame: the position of the instruction it is running
(``co_positions``, 3.11+), so ``model(X)`` is the text of every operation its forward made. The kind
of operation (``binop``, ``index``, ``setattr`` ...) comes from the script's syntax at that position
where the script itself made the call, else ``call``.

Before a factory or a sized call runs, ``engine.alloc`` estimates its elements against
``--max-elements``; every result is checked right after the call.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from tcopy_cli.engine import alloc
from tcopy_cli.engine.frames import CodeKinds, display_name
from tcopy_cli.limits import Limits
from tcopy_cli.program import Program
from tcopy_cli.trace.ops import FLAG_CALLS, OpRecorder
from tcopy_cli.trace.unchanged import CALLING_BACK, Unchanged

SKIPPED = frozenset(
    """
    dim size numel nelement stride storage_offset is_contiguous data_ptr element_size __len__ __repr__
    __format__ __str__ __bool__ __index__ __int__ __float__ __complex__ __hash__ item tolist untyped_storage
    storage _typed_storage is_floating_point is_complex is_signed get_device __reduce_ex__ __getstate__
    __setstate__ __iter__ __contains__ __dir__ has_names is_set_to __array_priority__ ndimension dim_order
    is_pinned is_shared is_inference __torch_function__ _is_view __reversed__
    """.split()
)
"""Calls that return no tensor and change nothing: not recorded (a table would list nothing for them)."""
HOOK_CALLS = frozenset({"register_hook", "register_post_accumulate_grad_hook"})
"""Calls that register a function torch calls back during backward (recorded with its name)."""
SHOWN_ATTRIBUTES = frozenset({"data", "grad", "T", "mT", "H", "mH", "real", "imag"})
"""Attributes whose read gives a tensor worth recording (``w.data``); other getters (``shape``,
``grad_fn`` ...) are metadata."""
SYNTAX_KINDS: dict[type, str] = {
    ast.BinOp: "binop",
    ast.UnaryOp: "unary",
    ast.Compare: "compare",
    ast.AugAssign: "augassign",
    ast.For: "iterate",
}
"""The operation's kind where the script's own syntax at the running instruction made the call."""
STATEMENT_TEXT = frozenset({"setitem", "setattr", "augassign", "iterate"})
"""Kinds whose call is shown as the whole statement (``w[0] = 5``, ``w.data = z``, ``w += 1``)."""


_PLAIN_TYPES = frozenset({torch.Tensor, torch.nn.Parameter})
_jit_tracing = torch._C._get_tracing_state
_saved_tensors_hooks = torch._C._autograd._top_saved_tensors_default_hooks


@dataclass(frozen=True)
class _Spec:
    name: str
    kind: str
    method: bool
    skip: bool


def _spec(func: Any) -> _Spec:
    name = getattr(func, "__name__", "") or ""
    owner = getattr(func, "__self__", None)
    qualname = getattr(func, "__qualname__", "") or ""
    if name in ("__get__", "__set__", "__delete__") and owner is not None and hasattr(owner, "__name__"):
        attr = owner.__name__
        if name == "__get__":
            return _Spec(attr, "attribute", True, attr not in SHOWN_ATTRIBUTES)
        return _Spec(attr, "setattr", True, False)
    method = qualname.startswith(("TensorBase.", "Tensor.", "_TensorBase."))
    if name == "__getitem__":
        return _Spec("[]", "index", True, False)
    if name == "__setitem__":
        return _Spec("[]=", "setitem", True, False)
    if name == "__deepcopy__":
        return _Spec("deepcopy", "call", True, False)
    return _Spec(name, "call", method, name in SKIPPED)


class Recording:
    """What the mode needs from the running program: its recorder, source and names, and the limits."""

    def __init__(self, recorder: OpRecorder, program: Program, kinds: CodeKinds, limits: Limits) -> None:
        self.recorder = recorder
        self.program = program
        self.kinds = kinds
        self.limits = limits
        self.namespace: dict[str, Any] = {}
        self.frame: FrameType | None = None
        """The script frame whose instruction made the operation being recorded."""
        self.statement: Callable[[FrameType], ast.stmt | None] = lambda _frame: None
        self.on_limit: Callable[[BaseException], None] = lambda _exc: None
        self.unchanged = Unchanged()
        """Told of every call's tensors (the observer's, see trace.unchanged)."""
        self._nodes: dict[tuple[int, int, int, int], str] | None = None
        self._texts: dict[tuple[Any, int, bool, bool], tuple[str, str | None]] = {}
        recorder.names = self.name_of

    def load(self, program: Program) -> None:
        """Record ``program``'s operations next (the REPL's next entry)."""
        self.program = program
        self._nodes = None
        self._texts.clear()

    def name_of(self, obj: Any) -> str | None:
        """The table's name for ``obj`` now: the running script function's local (``fn:x``), else a
        module name (by identity; the function's ``self`` is shown through the names holding it)."""
        frame = self.frame
        while frame is not None and self.kinds(frame.f_code) in ("other", "library"):
            frame = frame.f_back  # a comprehension's variables are no table names
        if frame is not None and self.kinds(frame.f_code) != "module":
            prefix = display_name(frame.f_code)
            for k, v in frame.f_locals.items():
                if v is obj and k != "self":
                    return f"{prefix}:{k}"
        for k, v in self.namespace.items():
            if v is obj and not k.startswith("__"):
                return k
        return None

    def record_call(self, function: str, frame: FrameType) -> None:
        """A call no torch dispatch sees (``opt.zero_grad()``), recorded in its place among the operations."""
        self.frame = frame
        text, _ = self.where(True)
        pending = self.recorder.begin(None, "call", function, [], text, None, frame.f_lineno)
        if pending is not None:
            self.recorder.end(pending, None)

    def where(self, direct: bool, statement: bool = False) -> tuple[str, str | None]:
        """(text as written, kind from the syntax or None) of the running instruction of ``self.frame``
        (``statement``: the whole statement's text, as for ``w.data = z``)."""
        frame = self.frame
        if frame is None:
            return "", None
        key = (frame.f_code, frame.f_lasti, direct, statement)
        found = self._texts.get(key)
        if found is None:
            found = self._texts[key] = self._where(frame, direct, statement)
        return found

    def _where(self, frame: FrameType, direct: bool, statement: bool) -> tuple[str, str | None]:
        position = self.kinds.position(frame)
        node = self.statement(frame)
        whole = self.program.statement_source(node) if node is not None else ""
        if position is None or None in position:
            return whole, None
        line, end_line, col, end_col = position  # type: ignore[misc]
        kind = self._syntax().get((line, col, end_line, end_col)) if direct else None  # type: ignore[arg-type]
        if kind in STATEMENT_TEXT or statement:
            return whole, kind
        lines = self.program.lines
        if not 0 < line <= len(lines) or end_line is None:  # type: ignore[operator]
            return whole, kind
        if line == end_line:
            text = lines[line - 1].encode("utf-8")[col:end_col].decode("utf-8", "replace")  # type: ignore[index,operator]
        else:
            first = lines[line - 1].encode("utf-8")[col:].decode("utf-8", "replace")  # type: ignore[index,operator]
            middle = lines[line : end_line - 1]  # type: ignore[misc,operator]
            last = lines[end_line - 1].encode("utf-8")[:end_col].decode("utf-8", "replace")  # type: ignore[index,operator]
            text = " ".join(part.strip() for part in (first, *middle, last))
        return text or whole, kind

    def _syntax(self) -> dict[tuple[int, int, int, int], str]:
        if self._nodes is None:
            found: dict[tuple[int, int, int, int], str] = {}
            for node in ast.walk(self.program.tree):
                kind = SYNTAX_KINDS.get(type(node))
                if kind is not None and isinstance(node, (ast.expr, ast.stmt)):
                    found[(node.lineno, node.col_offset, node.end_lineno or 0, node.end_col_offset or 0)] = kind
            self._nodes = found
        return self._nodes


class OpMode(TorchFunctionMode):
    """Records each torch call the script makes (see the module's docstring)."""

    def __init__(self, recording: Recording) -> None:
        super().__init__()
        self.recording = recording
        self._specs: dict[Any, _Spec] = {}

    def __torch_function__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        spec = self._specs.get(func)
        if spec is None:
            spec = self._specs[func] = _spec(func)
        # What the call writes, by the version counters of the tensors it is given: the observer
        # summarises again only the large tensors something may have written (trace.unchanged).
        unchanged = self.recording.unchanged
        calls_back = (
            (spec.kind == "call" and spec.name in CALLING_BACK)
            or not _PLAIN_TYPES.issuperset(types)  # a subclass's __torch_function__
            or _saved_tensors_hooks(False) is not None  # (a pack hook runs as the call saves a tensor)
        )
        seen = unchanged.before(spec.name, (*args, *kwargs.values()), calls_back)
        try:
            return self._call(func, spec, args, kwargs)
        finally:
            unchanged.after(seen)

    def _call(self, func: Any, spec: _Spec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        recorder = self.recording.recorder
        if spec.skip or not recorder.active() or _jit_tracing():
            # (While torch.jit traces, every torch call would be traced into its graph: the
            # measurements of a record too. torch.jit.trace itself runs without this mode, see
            # engine.watched; this covers a trace started some other way.)
            return func(*args, **kwargs)
        if recorder.full():  # (a library's loop of calls: gradcheck's) the limits still hold
            self._check_size(spec, args, kwargs)
            result = func(*args, **kwargs)
            self._check_result(result)
            return result
        # The recording is tcopy's own code: the line tracer (the process's trace function, called for
        # every Python call) is off while it runs, and on while torch runs the call.
        tracer = sys.gettrace()
        sys.settrace(None)
        try:
            pending = self._begin(spec, args, kwargs, sys._getframe(2))  # (the caller of __torch_function__)
        finally:
            sys.settrace(tracer)
        if pending is None:
            return func(*args, **kwargs)
        try:
            result = func(*args, **kwargs)
        except BaseException as exc:
            sys.settrace(None)
            try:
                recorder.fail(pending, exc)
            finally:
                sys.settrace(tracer)
            raise
        sys.settrace(None)
        try:
            self._check_result(result)
            recorder.end(pending, result)
        finally:
            sys.settrace(tracer)
        return result

    def _begin(self, spec: _Spec, args: tuple[Any, ...], kwargs: dict[str, Any], caller: FrameType) -> Any:
        """The pending record of a call about to run (None: not recorded), after its size check."""
        rec = self.recording
        self._check_size(spec, args, kwargs)
        frame = rec.kinds.script_frame(caller)
        direct = caller is frame
        if not direct and (spec.kind in ("attribute", "setattr") or spec.name in FLAG_CALLS):
            # a library's own reads and writes of attributes and flags (an optimizer's p.grad, a module's
            # requires_grad_): the table shows what they changed
            return None
        rec.frame = frame
        text, syntax = rec.where(direct, direct and spec.kind in STATEMENT_TEXT)
        kind = spec.kind if spec.kind != "call" or not direct else syntax or "call"
        inputs = _inputs(spec, args, kwargs)
        extra = args[1] if spec.kind in ("index", "setitem") and len(args) > 1 else None
        if spec.kind == "setattr" and args:
            extra = args[0]
        line = frame.f_lineno if frame is not None else 0
        pending = rec.recorder.begin(None, kind, spec.name, inputs, text, extra, line)
        if pending is not None and spec.name in HOOK_CALLS:
            # which function the hook is (the step that runs it names it so)
            hook = args[1] if len(args) > 1 else kwargs.get("hook")
            code = getattr(hook, "__code__", None)
            if code is not None:
                pending.detail["hook"] = display_name(code)
        return pending

    def _check_size(self, spec: _Spec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """--max-elements before the call allocates, where its size can be told from the arguments (a
        call that broadcasts tensors of different shapes included: ``a[:, None] * a``)."""
        if spec.kind not in ("call", "binop") or (spec.name not in alloc.ESTIMATED and not _broadcasts(args)):
            return
        limits = self.recording.limits
        try:
            if spec.method and args and isinstance(args[0], torch.Tensor):
                numel = alloc.estimate_numel(spec.name, args[1:], kwargs, args[0])
            else:
                numel = alloc.estimate_numel(spec.name, args, kwargs)
        except Exception:  # an estimate never fails a call: torch decides
            return
        if numel is not None and numel > limits.max_elements:
            self._refuse(limits, f"{spec.name}(...) would make a tensor of {numel:,} elements")

    def _check_result(self, result: Any) -> None:
        limits = self.recording.limits
        if isinstance(result, torch.Tensor) and result.numel() > limits.max_elements:
            self._refuse(limits, f"a tensor of {result.numel():,} elements was made")

    def _refuse(self, limits: Limits, detail: str) -> None:
        exc = limits.exceeded("max_elements", detail)
        self.recording.on_limit(exc)
        raise exc


def _broadcasts(args: tuple[Any, ...]) -> bool:
    """Whether the positional arguments hold tensors of more than one shape (their result broadcasts)."""
    shape = None
    for a in args:
        if isinstance(a, torch.Tensor):
            if shape is None:
                shape = a.shape
            elif a.shape != shape:
                return True
    return False


def _inputs(spec: _Spec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[tuple[str, ast.AST | None, Any]]:
    """(role, None, value) for each argument: ``self`` for a method's receiver, ``arg0`` ..., ``key=``."""
    out: list[tuple[str, ast.AST | None, Any]] = []
    start = 0
    if spec.method and args:
        out.append(("self", None, args[0]))
        start = 1
    for i, value in enumerate(args[start:]):
        role = (
            "value" if spec.kind in ("setattr", "setitem") and i == (1 if spec.kind == "setitem" else 0) else f"arg{i}"
        )
        if spec.kind in ("index", "setitem") and i == 0:
            role = "index"
        out.append((role, None, value))
    out += [(f"{key}=", None, value) for key, value in kwargs.items()]
    return out
