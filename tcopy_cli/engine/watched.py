"""Library calls the tracer watches for by code object: a few it tells the Stepper of, and the
functions ``torch.compile`` made and torch's tracers, which run without tcopy's mode.

A function ``torch.compile`` made runs without tcopy's mode (torch would compile the mode's
``__torch_function__`` into the function's graph, and its ops are the graph's, not the script's), and
so does a tracer: ``torch.jit.trace`` takes each node's source location from the innermost Python
frame, and names values from that frame's locals (with the mode on, that frame is the mode's, and
``traced.graph`` and ``traced.code`` would print tcopy's file and lose the script's names), and
``torch.fx`` records the Python stack in a node's ``stack_trace``, which then names the mode. The
mode is popped when the function is called and pushed back when it returns. The call is then one
operation of its statement, recorded from what it was given and what it bound. torch is told never
to compile tcopy's trace functions, which run for every frame the compiled function calls (it
compiled them, and failed on a guard over a dict keyed by code objects).
"""

from __future__ import annotations

import inspect
from types import FrameType
from typing import Any

import torch

from tcopy_cli.engine.recorder import OpMode

TRACKED = {
    code: name
    for fn, name in (
        (torch.optim.Optimizer.zero_grad, "zero_grad"),
        (torch.nn.Module.zero_grad, "zero_grad"),
        (torch.autograd.graph.saved_tensors_hooks.__init__, "saved_tensors_hooks"),
        (getattr(torch.utils, "swap_tensors", None), "swap_tensors"),  # torch 2.3+
    )
    if fn is not None and (code := getattr(inspect.unwrap(fn), "__code__", None)) is not None
}
"""Library functions no torch dispatch sees whose call the Stepper is told of (by code object):
``zero_grad`` of an optimizer or a module (recorded in its place among the statement's operations,
which the notes tell from a backward's gradient), and hooks that pack saved tensors (from then on the
observer leaves saved tensors unread: reading one would run the script's unpack hook), and
``torch.utils.swap_tensors``, which refuses tensors with weak references (the observer drops its own)."""


UNRECORDED = frozenset(
    code
    for fn in (
        getattr(torch.jit._trace, "trace", None),
        getattr(torch.jit._trace, "trace_module", None),
        getattr(torch.jit._trace, "_get_trace_graph", None),
        torch.fx.Tracer.trace,
    )
    if fn is not None and (code := getattr(inspect.unwrap(fn), "__code__", None)) is not None
)
"""``torch.jit``'s tracers (``trace``, ``trace_module``, and ``_get_trace_graph`` under the old ONNX
export) and ``torch.fx``'s (``Tracer.trace``, under ``symbolic_trace``), by code object: they run
without tcopy's mode (see the module's docstring)."""


class CompiledCalls:
    """What the tracer does when a function ``torch.compile`` made, or a ``torch.jit`` tracer, is called."""

    def __init__(self) -> None:
        self.seen = False

    def called(self, *trace_functions: Any) -> Any:
        """Pop tcopy's mode for the call; the local trace function that pushes it back (None: no mode)."""
        if not self.seen:
            self.seen = True
            _keep_out_of_compiles(*trace_functions, _Restore.__call__)
        stack = torch._C._len_torch_function_stack()
        top = torch._C._get_function_stack_at(stack - 1) if stack else None
        if not isinstance(top, OpMode):
            return None
        torch._C._pop_torch_function_stack()
        top.recording.unchanged.all_touched = True  # (what it writes, no record sees: trace.unchanged)
        return _Restore(top)


class _Restore:
    """The local trace function of a compiled function's call: puts tcopy's mode back when it returns."""

    def __init__(self, mode: OpMode) -> None:
        self.mode = mode

    def __call__(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "return":
            torch._C._push_on_torch_function_stack(self.mode)
            return None
        return self


def _keep_out_of_compiles(*functions: Any) -> None:
    """Tell torch.compile never to compile these functions or what they call (where this torch can)."""
    try:
        from torch._dynamo.eval_frame import set_code_exec_strategy  # type: ignore[attr-defined]
        from torch._dynamo.types import FrameAction, FrameExecStrategy  # type: ignore[attr-defined]
    except ImportError:
        return
    for fn in functions:
        set_code_exec_strategy(fn.__code__, FrameExecStrategy(FrameAction.SKIP, FrameAction.SKIP))
