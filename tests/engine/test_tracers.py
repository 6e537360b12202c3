"""Scripts that hand their code to one of torch's tracers print what ``python`` prints.

``torch.jit.trace`` takes each node's source location from the innermost Python frame and names
values from that frame's locals; ``torch.fx`` records the Python stack in a node's ``stack_trace``.
With tcopy's mode in the way, ``traced.graph`` named tcopy's recorder instead of the script's line,
``traced.code`` lost the script's names, and a ``stack_trace`` listed the mode's frame. Each script is
a real file (a graph names it), run by ``python FILE`` and by the engine with that file as origin.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from cli_runs import python, tcopy

from tcopy_cli.engine import run_source
from tcopy_cli.trace import Trace

SCRIPTS = {
    "torch.jit.trace of a module: graph and code": """
        import torch
        class Cell(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.linear = torch.nn.Linear(4, 4)
            def forward(self, x, h):
                new_h = torch.tanh(self.linear(x) + h)
                return new_h, new_h
        torch.manual_seed(0)
        cell = Cell()
        x, h = torch.rand(3, 4), torch.rand(3, 4)
        traced = torch.jit.trace(cell, (x, h))
        print(traced.graph)
        print(traced.code)
        print(torch.equal(traced(x, h)[0], cell(x, h)[0]))
    """,
    "torch.jit.trace of a function calling a scripted one": """
        import torch
        @torch.jit.script
        def gate(x):
            if bool(x.sum() > 0):
                return x * 2
            return -x
        print(gate.graph)
        def f(a, b):
            c = a * b
            d = torch.tanh(c) + gate(a)
            return d.sum(dim=0)
        traced = torch.jit.trace(f, (torch.ones(2, 3), torch.ones(2, 3)))
        print(traced.graph)
        print(traced.code)
    """,
    "torch.fx.symbolic_trace and a Tracer that records stack traces": """
        import torch
        import torch.fx
        class M(torch.nn.Module):
            def forward(self, x):
                y = torch.relu(x + 1)
                return torch.sum(y, dim=0) * x.shape[0]
        gm = torch.fx.symbolic_trace(M())
        print(gm.code)
        tracer = torch.fx.Tracer()
        tracer.record_stack_traces = True
        graph = tracer.trace(M())
        for node in graph.nodes:
            print(node.op, node.name, node.stack_trace)
    """,
}
ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
MANGLED = re.compile(r"___torch_mangle_\d+\.")
"""torch.jit's name for a class or function traced again in one process (an earlier test's ``Cell``): the
engine runs in this process, ``python`` in a fresh one."""


def _printed(trace: Trace) -> str:
    return MANGLED.sub("", ADDRESS.sub("0x…", "".join(s.stdout for s in trace.steps)))


def _script(tmp_path: Path, source: str) -> Path:
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(source).strip() + "\n")
    return path


def _python_prints(path: Path) -> str:
    done = python(str(path), cwd=path.parent)
    assert done.returncode == 0, done.stderr
    return ADDRESS.sub("0x…", done.stdout)


@pytest.mark.parametrize("source", SCRIPTS.values(), ids=list(SCRIPTS))
def test_a_traced_graph_prints_as_in_python(source: str, tmp_path: Path) -> None:
    path = _script(tmp_path, source)
    trace = run_source(path.read_text(), origin=str(path))
    errors = [(s.line, s.error) for s in trace.steps if s.error is not None]
    assert not errors, errors
    printed = _printed(trace)
    assert "tcopy_cli" not in printed
    assert printed == _python_prints(path)


def test_a_trace_is_one_operation_of_its_statement(tmp_path: Path) -> None:
    """The tracer runs without the mode: the statement records the trace call, with what it was given
    and what it returned, not the copies and checks torch.jit.trace makes inside."""
    path = _script(tmp_path, SCRIPTS["torch.jit.trace of a module: graph and code"])
    trace = run_source(path.read_text(), origin=str(path))
    step = next(s for s in trace.steps if s.source.startswith("traced = "))
    assert [op.function for op in step.ops] == ["trace"]
    assert {i.name for i in step.ops[0].inputs} >= {"x", "h"}


@pytest.mark.e2e
def test_the_confined_worker_prints_a_traced_graph_as_python_does(tmp_path: Path) -> None:
    path = _script(tmp_path, SCRIPTS["torch.jit.trace of a module: graph and code"])
    done = tcopy("run", str(path), "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    printed = "".join(e["stdout"] for e in events if e["event"] == "step")
    assert ADDRESS.sub("0x…", printed) == _python_prints(path)


def test_a_script_run_by_a_relative_path_has_the_absolute_file_name_python_gives_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``python script.py`` makes the script's ``__file__`` and code file name absolute (3.9+), which a
    graph's source locations print."""
    path = _script(
        tmp_path, "print(__file__)\n" + textwrap.dedent(SCRIPTS["torch.jit.trace of a module: graph and code"])
    )
    monkeypatch.chdir(tmp_path)
    trace = run_source(path.read_text(), origin=path.name)
    printed = _printed(trace)
    done = python(path.name, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert printed == ADDRESS.sub("0x…", done.stdout)
    assert printed.startswith(str(path))
