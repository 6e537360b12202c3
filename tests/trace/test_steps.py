"""Steps and records: lines, sources, errors, and observation that changes nothing.

Most tests run a snippet twice, once through tcopy (``run_source``) and once with the
real ``exec`` in this test process, and compare what the script printed. The truth
for every fact tcopy reports is what the same statements do under plain Python.
"""

from __future__ import annotations

import gc
import re
import textwrap
import time
import types
from typing import Any

import numpy as np
import pytest
import torch
from snippets import (
    assert_error_like_python,
    assert_same_as_python,
    last,
    plain_run,
    run,
)

from tcopy_cli.engine import run_source
from tcopy_cli.engine.stepper import RunOptions, Stepper
from tcopy_cli.errors import ScriptRejected
from tcopy_cli.limits import Limits
from tcopy_cli.program import parse_program
from tcopy_cli.render.jsonl import step_json
from tcopy_cli.trace.records import Step

# --- steps: lines, source text, errors -----------------------------------------------


def test_steps_have_line_and_source_text() -> None:
    trace = run(
        """
        a = torch.ones(2); b = a * 2
        # a comment
        c = torch.tensor([1.0,
                          2.0])

        for i in range(2):
            x = i
            y = i * 2
        if c.sum() > 0:
            z = 1
        with torch.no_grad():
            w = a * 3
        for j in range(2): k = j
        """
    )
    got = [(s.index, s.line, s.source, s.status) for s in trace.steps]
    assert got == [
        (1, 1, "a = torch.ones(2)", "ok"),
        (2, 1, "b = a * 2", "ok"),
        (3, 3, "c = torch.tensor([1.0,\n                  2.0])", "ok"),
        (4, 7, "x = i", "ok"),
        (5, 8, "y = i * 2", "ok"),
        (6, 7, "x = i", "ok"),
        (7, 8, "y = i * 2", "ok"),
        (8, 10, "z = 1", "ok"),
        (9, 12, "w = a * 3", "ok"),
        (10, 13, "k = j", "ok"),
        (11, 13, "k = j", "ok"),
    ]
    assert trace.summary is not None
    assert (trace.summary.steps, trace.summary.errors, trace.summary.status) == (11, 0, "ok")


def test_one_step_per_loop_iteration_with_state_after_each() -> None:
    trace = run("acc = torch.zeros(1)\nfor i in range(3):\n    acc += i")
    assert [s.tensors["acc"].values for s in trace.steps] == [[0.0], [0.0], [1.0], [3.0]]
    assert [s.tensors["acc"].version for s in trace.steps] == [0, 1, 2, 3]


def test_error_step_stops_the_run() -> None:
    trace = run("a = torch.ones(2); b = a * 2\nx = 1 / 0\nc = 3")
    assert [s.status for s in trace.steps] == ["ok", "ok", "error"]
    step = last(trace)
    assert (step.line, step.source) == (2, "x = 1 / 0")
    assert step.error is not None
    assert (step.error.type, step.error.message) == ("ZeroDivisionError", "division by zero")
    assert step.error.explanation == ""  # the run records facts; the explain pass adds the why
    assert "a" in step.tensors  # the state after the failed statement is still reported
    assert trace.summary is not None
    assert (trace.summary.steps, trace.summary.errors, trace.summary.status) == (3, 1, "error")


def test_keep_going_runs_the_rest() -> None:
    trace = run("x = 1 / 0\ny = undefined_name\nprint('after')", keep_going=True)
    assert [s.status for s in trace.steps] == ["error", "error", "ok"]
    assert [s.error.type for s in trace.steps if s.error] == ["ZeroDivisionError", "NameError"]
    assert last(trace).stdout == "after\n"
    assert trace.summary is not None and trace.summary.errors == 2


def test_torch_error_message_is_torchs() -> None:
    src = "a = torch.ones(2)\nb = torch.ones(3)\nc = a + b"
    step = assert_error_like_python(src)
    assert step.error is not None and step.error.type == "RuntimeError"
    assert step.line == 3


def test_output_before_an_error_in_the_same_statement_is_kept() -> None:
    # print's text is written before the error; it belongs to the failing step.
    trace = run("x = [print('hi'), 1 / 0]")
    step = last(trace)
    assert step.status == "error"
    assert step.stdout == "hi\n"


@pytest.mark.parametrize(
    ("src", "line", "source"),
    [
        ("x = 1\nfor i in 5:\n    y = i", 2, "for i in 5:"),
        ("x = torch.ones(2)\nif x:\n    y = 1", 2, "if x:"),
        ("x = 1\nwith x:\n    y = 1", 2, "with x:"),
        ("for i in range(2):\n    for j in i:\n        y = 1", 2, "for j in i:"),
    ],
)
def test_errors_in_block_headers_are_steps(src: str, line: int, source: str) -> None:
    step = last(run(src))
    assert step.status == "error"
    assert (step.line, step.source) == (line, source)


def test_error_inside_a_loop_reports_the_iteration() -> None:
    trace = run("for i in range(3):\n    x = 1 / (1 - i)")
    assert [s.status for s in trace.steps] == ["ok", "error"]
    assert last(trace).line == 2


def test_what_python_cannot_parse_is_rejected_before_running() -> None:
    with pytest.raises(ScriptRejected) as info:
        run_source("x = 1\nnonlocal y")
    assert info.value.line == 2 and "nonlocal" in info.value.message
    with pytest.raises(ScriptRejected) as info:
        parse_program("x = (1,")
    assert info.value.line == 1 and "syntax" in info.value.message


# --- records hold no live tensor; observation changes nothing -----------------------

_MARK_SHAPE = (3, 5, 7, 11)  # a shape nothing else in the test process uses


def _live_marked_tensors() -> int:
    # type() rather than isinstance(): isinstance reads __class__, which warns on some torch objects.
    return sum(1 for o in gc.get_objects() if issubclass(type(o), torch.Tensor) and tuple(o.shape) == _MARK_SHAPE)


def _wait_until_freed() -> int:
    """Live marked tensors once garbage is collected (the run's watchdog thread may take a moment to end)."""
    deadline = time.monotonic() + 3.0
    while True:
        gc.collect()
        count = _live_marked_tensors()
        if count == 0 or time.monotonic() > deadline:
            return count
        time.sleep(0.02)


def test_step_records_hold_no_live_tensor() -> None:
    assert _wait_until_freed() == 0
    trace = run(
        """
        a = torch.ones(3, 5, 7, 11, requires_grad=True)
        b = a * 2
        v = a[0]
        l = [b, {"k": b}]
        n = v.detach().numpy()
        b.sum().backward()
        """
    )
    assert last(trace).tensors["a"].grad is not None
    # Nothing reachable from the records is a tensor, a storage, an array or a graph node.
    # (Walk data only: types, modules and functions lead to the whole process.)
    seen: set[int] = set()
    stack: list[Any] = [trace]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, (type, types.ModuleType, types.FunctionType)):
            continue
        seen.add(id(obj))
        assert not isinstance(obj, (torch.Tensor, torch.UntypedStorage, torch.autograd.graph.Node, np.ndarray)), obj
        stack.extend(gc.get_referents(obj))
    assert len(seen) > 20  # the walk did reach the records
    assert _wait_until_freed() == 0


def test_a_deleted_tensor_is_freed_during_the_run() -> None:
    src = textwrap.dedent(
        """
        a = torch.ones(3, 5, 7, 11)
        b = a.sum()
        del a
        c = torch.zeros(1)
        """
    ).strip()
    counts: list[int] = []

    def emit(step: Step) -> None:
        counts.append(_live_marked_tensors())

    gc.collect()
    Stepper(parse_program(src), RunOptions(), emit).run()
    assert counts == [1, 1, 0, 0]


def test_storage_label_of_a_freed_tensor_is_not_reused() -> None:
    trace = run("a = torch.ones(4)\ndel a\nb = torch.ones(4)\nc = b")
    labels = [s.tensors[n].storage for s, n in ((trace.steps[0], "a"), (trace.steps[2], "b"))]
    assert labels[0] != labels[1]


def test_observation_never_reads_grad_of_a_non_leaf() -> None:
    trace = run(
        """
        a = torch.ones(2, requires_grad=True)
        b = a * 2
        c = b.sum()
        c.backward()
        l = [b, c]
        z = 1
        """
    )
    assert all(step.warnings == [] for step in trace.steps)
    assert last(trace).tensors["b"].grad is None
    assert last(trace).tensors["a"].grad is not None


def test_the_script_reading_grad_of_a_non_leaf_does_warn() -> None:
    trace = run("a = torch.ones(2, requires_grad=True)\nb = a * 2\nb.sum().backward()\ng = b.grad")
    assert [bool(s.warnings) for s in trace.steps] == [False, False, False, True]
    assert "leaf" in last(trace).warnings[0]


def test_retain_grad_is_observed() -> None:
    trace = run("a = torch.ones(2, requires_grad=True)\nb = a * 2\nb.retain_grad()\nb.sum().backward()")
    rec = last(trace).tensors["b"]
    assert rec.grad is not None and rec.grad.values == [1.0, 1.0]
    assert all(step.warnings == [] for step in trace.steps)


def test_observation_does_not_bump_versions_or_change_the_graph() -> None:
    src = """
        a = torch.tensor([1.0, 2.0], requires_grad=True)
        b = a.sigmoid()
        c = b * a
        d = c.sum()
        x = 1
        y = 2
        d.backward()
        print(a._version, b._version, c._version, a.grad, b.grad_fn.name(), c.requires_grad)
        """
    trace = assert_same_as_python(src)
    assert [s.tensors["a"].version for s in trace.steps] == [0] * len(trace.steps)
    _, ns = plain_run(src)
    rec = last(trace).tensors
    assert rec["a"].grad is not None
    assert rec["a"].grad.values == pytest.approx(ns["a"].grad.tolist())
    assert rec["b"].grad_fn == type(ns["b"].grad_fn).__name__
    assert rec["c"].is_leaf is ns["c"].is_leaf is False


def test_observation_does_not_break_saved_tensor_checks() -> None:
    # An in-place write to a tensor autograd saved fails at backward, as in Python.
    src = """
        a = torch.ones(2, requires_grad=True)
        b = a.exp()
        b.add_(1)
        b.sum().backward()
        """
    assert_error_like_python(src)


def test_in_place_on_a_leaf_that_requires_grad_is_pythons_error() -> None:
    assert_error_like_python("a = torch.ones(2, requires_grad=True)\na.add_(1)")


def test_records_match_plain_torch() -> None:
    src = """
        a = torch.arange(6.0).reshape(2, 3)
        t = a.t()
        v = a.view(3, 2)
        c = a.clone()
        d = a.detach()
        """
    trace = run(src)
    _, ns = plain_run(src)
    rec = last(trace).tensors
    for name in ("a", "t", "v", "c", "d"):
        t = ns[name]
        assert rec[name].shape == list(t.shape)
        assert rec[name].stride == list(t.stride())
        assert rec[name].values == t.tolist()
        assert rec[name].storage_offset == t.storage_offset()
    assert rec["a"].storage == rec["t"].storage == rec["v"].storage == rec["d"].storage
    assert rec["c"].storage != rec["a"].storage
    assert rec["a"].data_ptr == rec["d"].data_ptr


def test_math_and_copy_modules_match_python() -> None:
    assert_same_as_python(
        """
        import math
        import copy
        print(math.sqrt(2), math.exp(1), math.log(10), math.floor(-1.5), math.ceil(1.2), math.inf, math.isnan(math.nan))
        l = [[1], 2]
        s = copy.copy(l)
        d = copy.deepcopy(l)
        l[0].append(3)
        print(s, d)
        """
    )


def test_limits_object_is_honoured_by_run_source() -> None:
    trace = run("for i in range(100):\n    x = i", limits=Limits(max_steps=5))
    assert len(trace.steps) == 6
    assert last(trace).error is not None and last(trace).error.type == "LimitExceeded"


def test_storage_labels_are_consecutive_and_gradients_have_their_own() -> None:
    """Named tensors' storages are S1, S2, ... with no gap where a gradient was first seen;
    a gradient's storage is G1, G2, ...; equal labels exactly where plain torch shares a storage."""
    src = """
        x = torch.ones(2, requires_grad=True)
        y = (x * 2).sum()
        y.backward()
        z = x.detach() + 1
        g = x.grad
        w = torch.zeros(1)
        """
    trace = run(src)
    _, ns = plain_run(src)
    order: list[str] = []
    for step in trace.steps:
        for rec in step.tensors.values():
            if rec.storage not in order:
                order.append(rec.storage)
    named = [label for label in order if label.startswith("S")]
    assert named == [f"S{i}" for i in range(1, len(named) + 1)]
    rec = last(trace).tensors
    assert rec["x"].grad is not None and rec["x"].grad.storage == "G1" == rec["g"].storage
    plain_ptr = {n: ns[n].untyped_storage().data_ptr() for n in ("x", "y", "z", "g", "w")}
    plain_ptr["x.grad"] = ns["x"].grad.untyped_storage().data_ptr()
    label = {n: rec[n].storage for n in ("x", "y", "z", "g", "w")} | {"x.grad": rec["x"].grad.storage}
    for a in label:
        for b in label:
            assert (label[a] == label[b]) == (plain_ptr[a] == plain_ptr[b]), (a, b)


def test_a_view_whose_grad_fn_torch_refuses_says_so_in_every_step() -> None:
    """A no_grad view whose base then changed in place: torch raises on its grad_fn, and the
    record says "(invalid view)", also in the next step, where its record is reused."""
    src = "x = torch.ones(3, requires_grad=True)\nb = x.clone()\n"
    src += "with torch.no_grad():\n    v = b[:2]\nb.mul_(2)\nk = 1\n"
    namespace: dict[str, Any] = {"torch": torch}
    exec(src, namespace)
    with pytest.raises(RuntimeError):
        _ = namespace["v"].grad_fn
    steps = run_source(src).steps
    assert steps[-3].source == "v = b[:2]" and steps[-3].tensors["v"].grad_fn is None
    assert steps[-2].tensors["v"].grad_fn == "(invalid view)"
    assert steps[-1].tensors["v"].grad_fn == "(invalid view)"


def test_a_list_longer_than_the_records_list_says_how_many_items_are_not_listed() -> None:
    src = textwrap.dedent(
        """\
        import torch
        xs = [torch.zeros(1) for _ in range(1003)]
        d = {"a": xs, "b": [[torch.ones(1)] * 1500]}
        floats = [0.5] * 3000
        short = (torch.ones(2),) * 999
        xs.append(torch.zeros(2))
        """
    )
    namespace: dict[str, Any] = {}
    exec(src, namespace)
    containers = {
        "xs": namespace["xs"],
        'd["a"]': namespace["d"]["a"],
        'd["b"][0]': namespace["d"]["b"][0],
        "short": namespace["short"],
    }
    steps = run_source(src).steps
    last = steps[-1]
    # Every item of each container is either listed under its name or counted as not listed:
    # the first 1,000 of a list, and no more than the 5,000 items looked at in one step (here
    # the 3,000 floats, which are never counted, use up the last of them inside ``short``).
    for name, value in containers.items():
        listed = [n for n in last.tensors if re.fullmatch(re.escape(name) + r"\[\d+\]", n)]
        assert len(listed) + last.unlisted.get(name, 0) == len(value), name
        assert len(listed) <= 1000
    assert set(last.unlisted) == set(containers) and "floats" not in last.unlisted
    assert last.unlisted["xs"] == len(namespace["xs"]) - 1000 and last.unlisted["short"] > 0
    assert [s.unlisted.get("xs") for s in steps[1:]] == [3, 3, 3, 3, 4]
    assert step_json(last)["unlisted"] == last.unlisted
    assert "unlisted" not in step_json(steps[0])


def test_a_module_past_the_step_budget_says_how_many_parameters_and_buffers_are_not_listed() -> None:
    src = textwrap.dedent(
        """\
        import torch
        import torch.nn as nn
        small = nn.Linear(2, 2)
        big = nn.Sequential(*[nn.Linear(2, 2) for _ in range(2600)], nn.BatchNorm1d(2))
        shared = nn.Sequential(big[0], big[0])
        """
    )
    namespace: dict[str, Any] = {}
    exec(src, namespace)
    last = run_source(src).steps[-1]
    total = 0
    for name in ("small", "big", "shared"):
        module = namespace[name]
        # Each tensor once, as named_parameters and named_buffers give them (a shared layer once).
        tensors = {id(t) for t in [*module.parameters(), *module.buffers()]}
        listed = [n for n in last.tensors if n.startswith(name + ".")]
        assert len(listed) + last.unlisted.get(name, 0) == len(tensors), name
        total += len(tensors)
    assert "small" not in last.unlisted and last.unlisted["big"] > 0
    assert sum(1 for n in last.tensors if "." in n) + sum(last.unlisted.values()) == total == 2 + 5205 + 2


def test_containers_cut_by_the_step_budget_or_past_their_first_items_are_counted() -> None:
    src = textwrap.dedent(
        """\
        import torch
        f = [0] * 1000 + [torch.zeros(1) for _ in range(10)]
        big = [[torch.zeros(1) for _ in range(1000)] for _ in range(5)]
        g = [torch.ones(1), torch.ones(1)]
        """
    )
    namespace: dict[str, Any] = {}
    exec(src, namespace)
    last = run_source(src).steps[-1]
    # f's tensors lie past its first 1,000 items (ints, looked at and not listed); the 5,000
    # items looked at per step run out inside big, so g (after it) is not looked at at all.
    f, big, g = namespace["f"], namespace["big"], namespace["g"]
    assert last.unlisted["f"] == len(f) - 1000
    assert last.unlisted["g"] == len(g) and not any(n.startswith("g[") for n in last.tensors)
    looked_big = {n.split("]")[0] + "]" for n in last.tensors if n.startswith("big[")}
    assert len(looked_big) + last.unlisted["big"] == len(big)
    for i in range(len(big)):
        listed = sum(1 for n in last.tensors if n.startswith(f"big[{i}]["))
        assert listed + last.unlisted.get(f"big[{i}]", 0) == (len(big[i]) if f"big[{i}]" in looked_big else 0)
    assert 1000 + sum(len(x) for x in big) > 5000  # the budget is what cut them


def test_containers_of_words_and_numbers_count_against_the_step_budget_item_by_item() -> None:
    """Lists and dicts of numbers and strings hold no tensor, but each of their items is one
    looked at: 5 lists of 900 words and the outer list's 5 items leave 495 of the 5,000."""
    src = textwrap.dedent(
        """\
        import torch
        words = [["w"] * 900 for _ in range(5)]
        g = [torch.ones(1) for _ in range(600)]
        """
    )
    last = run_source(src).steps[-1]
    assert last.unlisted == {"g": 600 - 494}
    assert sum(1 for n in last.tensors if n.startswith("g[")) == 494
