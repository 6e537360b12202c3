"""The operation record: each step lists its operations, as plain data that crosses the wire."""

from __future__ import annotations

import json

from tcopy_cli.engine import run_source
from tcopy_cli.render.jsonl import step_json
from tcopy_cli.trace import decoders, frames, records, wire
from tcopy_cli.trace.records import OpRecord


def ops_of(src: str, step: int = -1) -> list[OpRecord]:
    return run_source("import torch\nimport numpy as np\n" + src, keep_going=True).steps[step].ops


def test_call_records_inputs_results_and_relation() -> None:
    (op,) = ops_of("w = torch.ones(3)\ny = w.to(torch.float32)")
    assert (op.kind, op.call, op.function) == ("call", "w.to(torch.float32)", "to")
    assert [(i.role, i.name) for i in op.inputs] == [("self", "w")]
    (res,) = op.results
    assert res.name == "y" and sorted(res.names) == ["w", "y"]
    assert [(r.input, r.relation) for r in res.relations] == [(0, "same-object")]


def test_nested_calls_link_temporaries_by_op_index() -> None:
    ops = ops_of("u = torch.arange(6.0).reshape(2, 3).t()")
    assert [o.function for o in ops] == ["arange", "reshape", "t"]
    assert [o.call for o in ops] == ["torch.arange(6.0)", "torch.arange(6.0).reshape(2, 3)", ops[2].call]
    assert ops[1].inputs[0].from_op == 0 and ops[1].inputs[0].expr == "torch.arange(6.0)"
    assert ops[2].inputs[0].from_op == 1 and ops[2].inputs[0].name is None
    assert ops[2].results[0].name == "u"


def test_indexing_kinds() -> None:
    assert ops_of("s = torch.arange(5.0)\np = s[1:3]")[0].detail["index"] == "basic"
    assert ops_of("s = torch.arange(5.0)\np = s[[0, 2]]")[0].detail["index"] == "advanced"
    assert ops_of("s = torch.arange(5.0)\np = s[s > 1]")[1].detail["index"] == "boolean"


def test_in_place_bumps_and_rebinding() -> None:
    (op,) = ops_of("a = torch.ones(2)\na += 1")
    assert op.kind == "augassign" and op.bumped == [0]
    ops = ops_of("a = torch.ones(2)\nb = a\na = a + 1")
    assert ops[-1].kind == "rebind" and ops[-1].detail["still_held_by"] == ["b"]


def test_attribute_write_says_what_was_replaced() -> None:
    ops = ops_of("q = torch.ones(3, requires_grad=True)\nq.data = torch.zeros(5)")
    op = ops[-1]
    assert op.kind == "setattr" and op.detail["replaced"] == ["storage"]
    assert op.detail["before"]["shape"] == [3] and op.detail["after"]["shape"] == [5]


def test_failed_operation_is_recorded_with_its_error() -> None:
    ops = ops_of("a = torch.ones(2)\nb = a.view(3)")
    assert ops[-1].error == "RuntimeError" and ops[-1].function == "view"


def test_ops_cross_the_wire_and_are_json() -> None:
    trace = run_source("import torch\na = torch.ones(2, requires_grad=True)\nb = a[0:1]\nb.data = torch.zeros(3)")
    for step in trace.steps:
        assert decoders.decode_as(records.Step, frames.parse(wire.dumps(step).encode())) == step
        json.loads(json.dumps(step_json(step), allow_nan=False))
    assert step_json(trace.steps[-1])["ops"][-1]["detail"]["replaced"] == ["storage"]


def test_version_counter_labels_tell_detach_from_data() -> None:
    steps = run_source(
        "import torch\na = torch.ones(3, requires_grad=True)\nb = a.detach()\nc = a.data\nd = a.clone()"
    ).steps
    t = steps[-1].tensors
    assert t["a"].version_counter == t["b"].version_counter  # detach() shares the counter
    assert t["c"].version_counter not in (t["a"].version_counter, t["d"].version_counter)  # .data has its own
    assert t["a"].storage == t["c"].storage  # ... on the same memory
    # Labels are stable from step to step.
    assert steps[2].tensors["a"].version_counter == t["a"].version_counter


def test_a_view_torch_refuses_to_describe_does_not_fail_the_statement() -> None:
    """Inside a custom Function's forward (no_grad), ``a[1:2] += b`` makes a view whose base
    changed in place; torch raises on that view's ``grad_fn``. Plain python runs the script,
    so recording the operation must not read it unguarded."""
    src = (
        "class AddInPlace(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, a, b):\n"
        "        a[1:2] += b\n"
        "        return a\n"
        "    @staticmethod\n"
        "    def backward(ctx, g):\n"
        "        return g, g[1:2].clone()\n"
        "x = torch.ones(2, requires_grad=True)\n"
        "y = torch.ones(1, requires_grad=True)\n"
        "c = AddInPlace.apply(x + 1, y)\n"
        "c.sum().backward()\n"
        "gx, gy, out = x.grad.tolist(), y.grad.tolist(), c.tolist()\n"
    )
    ns: dict[str, object] = {"torch": __import__("torch")}
    exec(src, ns)  # plain python
    trace = run_source(src)
    assert [s.error for s in trace.steps if s.error] == []
    last = trace.steps[-1]
    assert last.tensors["x"].grad is not None and last.tensors["x"].grad.values == ns["gx"]
    assert last.tensors["y"].grad is not None and last.tensors["y"].grad.values == ns["gy"]
    assert last.tensors["c"].values == ns["out"]


def test_a_range_loop_variable_that_held_a_tensor_is_still_a_rebinding() -> None:
    # Taking the next number of a range needs no header around it, but binding it to a
    # name that held a tensor is an operation: the loop's first step carries it.
    trace = run_source("import torch\ni = torch.ones(2)\nj = i\nfor i in range(2):\n    k = i\n", keep_going=True)
    first = next(s for s in trace.steps if s.line == 5)
    rebind = [o for o in first.ops if o.kind == "rebind"]
    assert len(rebind) == 1 and rebind[0].detail["still_held_by"] == ["j"]
    second = [s for s in trace.steps if s.line == 5][1]
    assert [o.kind for o in second.ops if o.kind == "rebind"] == []


def test_a_list_loop_over_tensors_still_records_each_binding() -> None:
    trace = run_source("import torch\nts = [torch.ones(1), torch.zeros(1)]\nfor t in ts:\n    u = t\n")
    turns = [s for s in trace.steps if s.line == 4]
    assert [next((o.kind, o.results[0].name) for o in s.ops) for s in turns] == [("bind", "t"), ("rebind", "t")]
