"""``tcopy compare``: which copy operation shares memory, keeps the graph, passes gradients.

Every cell is measured by running a small script with the engine (the same tracer, operation
record and observer as ``tcopy run``) and reading the facts from its step records. Each
question gets a fresh run, so an in-place test cannot disturb another measurement.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tcopy_cli.errors import ScriptRejected
from tcopy_cli.limits import Limits
from tcopy_cli.trace import Trace, compat
from tcopy_cli.trace.records import Step, TensorRecord

STANDARD = [
    "x",
    "x.clone()",
    "x.detach()",
    "x.data",
    "x.clone().detach()",
    "x.detach().clone()",
    "copy.deepcopy(x)",
    "torch.empty_like(x).copy_(x)",
    "x.new_tensor(x)",
    "torch.tensor(x)",
    "x.view_as(x)",
]

SETUPS = {
    "leaf": "torch.manual_seed(0)\nx = torch.randn(3, requires_grad=True)",
    "nonleaf": "torch.manual_seed(0)\nx_leaf = torch.randn(3, requires_grad=True)\nx = x_leaf * 2\nx.retain_grad()",
}


@dataclass(frozen=True)
class Comparison:
    """Measured facts about ``y = expression`` for a source tensor ``x``."""

    expression: str
    new_object: bool | None = None
    shares_storage: bool | None = None
    same_data_ptr: bool | None = None
    shares_version_counter: bool | None = None
    requires_grad: bool | None = None
    is_leaf: bool | None = None
    grad_fn: str | None = None
    device: str | None = None
    grad_flows_to_source: bool | None = None
    inplace_visible_in_source: bool | None = None
    autograd_detects_inplace: bool | None = None
    warnings: list[str] = field(default_factory=list)
    error: dict[str, str] | None = None


Announce = Callable[[str, str], None]
"""Told (expression, which run) before each experiment script runs (the worker tells the parent)."""

RUNS = {
    "first": "run 1 of up to 4: y = the expression, after the setup",
    "grad": "run 2 of up to 4: does y.sum().backward() reach x",
    "inplace": "run 3 of up to 4: does y.add_(1) show in x",
    "autograd": "run 4 of up to 4: does autograd see that write",
}
"""The experiments of one expression, as a message names them (``EXPERIMENTS_PER_EXPRESSION`` in supervise)."""

Run = Callable[[str, str], Trace]
"""Runs one experiment script: (script, which of ``RUNS``)."""


def _runner(expression: str, device: str, limits: Limits | None, announce: Announce | None) -> Run:
    def run(script: str, what: str) -> Trace:
        if announce is not None:
            announce(expression, RUNS[what])
        from tcopy_cli.engine import run_source

        return run_source("import copy\n" + script, device=device, keep_going=False, limits=limits)

    return run


def _step_of(trace: Trace, marker: str) -> Step | None:
    for step in trace.steps:
        if step.source.startswith(marker):
            return step
    return None


def _error_of(trace: Trace) -> Step | None:
    return next((s for s in trace.steps if s.status == "error"), None)


def compare_one(
    expression: str,
    setup: str,
    device: str = "cpu",
    limits: Limits | None = None,
    announce: Announce | None = None,
) -> Comparison:
    """Measure one expression against the source ``x`` made by ``setup`` (``announce``: told before each run)."""
    run = _runner(expression, device, limits, announce)
    assign = f"y = {expression}"
    base = f"{setup}\n{assign}\n"
    first = run(base, "first")
    made = _step_of(first, assign)
    if made is None:
        err = _error_of(first)
        message = err.error.message if err and err.error else "the setup did not run"
        raise ScriptRejected(f"the setup failed: {message}", err.line if err else 1, 1)
    if made.error is not None:
        error = {"type": made.error.type, "message": made.error.message}
        return Comparison(expression, warnings=made.warnings, error=error)
    if "x" not in made.tensors or "y" not in made.tensors:
        missing = "the setup's x" if "x" not in made.tensors else f"y = {expression}"
        error = {"type": "TypeError", "message": f"{missing} is not a tensor: there is nothing to compare"}
        return Comparison(expression, warnings=made.warnings, error=error)
    x, y = made.tensors["x"], made.tensors["y"]
    facts: dict[str, Any] = {
        "new_object": x.object_id != y.object_id,
        "shares_storage": x.storage == y.storage,
        "same_data_ptr": x.data_ptr == y.data_ptr,
        # None (shown n/a) where the release can't measure counter sharing (compat.degraded).
        "shares_version_counter": x.object_id == y.object_id
        or ("x" in y.shares_version_with if compat.version_setter() is not None else None),
        "requires_grad": y.requires_grad,
        "is_leaf": y.is_leaf,
        "grad_fn": y.grad_fn,
        "device": y.device,
        "warnings": made.warnings,
    }
    facts["grad_flows_to_source"] = _grad_flows(base, x, run)
    visible = _inplace_visible(base, run)
    facts["inplace_visible_in_source"] = visible
    facts["autograd_detects_inplace"] = _autograd_detects(setup, assign, run) if visible else None
    return Comparison(expression, **facts)


def _grad_flows(base: str, x: TensorRecord, run: Run) -> bool:
    if not x.requires_grad:
        return False
    trace = run(base + "y.sum().backward()\n", "grad")
    step = _step_of(trace, "y.sum().backward()")
    if step is None or step.status == "error":
        return False
    g = step.tensors["x"].grad
    return g is not None and g.values is not None and any(v != 0 for v in _flat(g.values))


def _inplace_visible(base: str, run: Run) -> bool | None:
    trace = run(base + "with torch.no_grad():\n    y.add_(1)\n", "inplace")
    before = _step_of(trace, "y = ")
    after = _step_of(trace, "y.add_(1)")
    if before is None or after is None or after.status == "error":
        return None
    return bool(before.tensors["x"].values != after.tensors["x"].values)


def _autograd_detects(setup: str, assign: str, run: Run) -> bool | None:
    script = f"{setup}\nz = (x * x).sum()\n{assign}\nwith torch.no_grad():\n    y.add_(1)\nz.backward()\n"
    trace = run(script, "autograd")
    step = _step_of(trace, "z.backward()")
    if step is None:
        return None
    return step.status == "error" and step.error is not None and "inplace operation" in step.error.message


def _flat(v: Any) -> list[Any]:
    if isinstance(v, list):
        return [x for item in v for x in _flat(item)]
    return [v]


def compare(
    expressions: list[str],
    setup: str,
    device: str = "cpu",
    limits: Limits | None = None,
    announce: Announce | None = None,
) -> list[Comparison]:
    """Measure every expression (each in fresh runs, each run within ``limits``; ``announce`` is told
    which run starts, before it does)."""
    return [compare_one(e, setup, device, limits, announce) for e in expressions]
