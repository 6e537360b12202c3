"""``# expect: NAME``: a line whose error is the intended outcome.

The error itself (type, message) must be what plain Python raises; the comment only
changes how tcopy reports it: the step is "expected", the run goes on, and the run
ends ok (exit 0) when every error was expected and every expected error happened.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from cli_runs import cli, invoke

from tcopy_cli.pipeline import run_source
from tcopy_cli.program import parse_program as parse_script
from tcopy_cli.render.jsonl import end_json

EXPECTED = """\
import torch
a = torch.ones(2, requires_grad=True)
b = a.view(4)  # expect: RuntimeError
c = a * 3
"""


def _plain_error(code: str) -> BaseException:
    ns: dict[str, object] = {}
    try:
        exec(code, ns)
    except Exception as exc:
        return exc
    raise AssertionError("plain Python raised nothing")


def _invoke(tmp_path: Path, source: str, *args: str) -> tuple[int, str, str]:
    path = tmp_path / "script.py"
    path.write_text(source)
    return cli("run", str(path), *args)


def test_trailing_comments_are_read_and_nothing_else() -> None:
    program = parse_script(
        textwrap.dedent(
            """\
            import torch
            # expect: ValueError
            s = "# expect: KeyError"
            t = (1 +
                 2)  # expect:  TypeError
            for i in range(2):  # expect: IndexError
                pass
            """
        )
    )
    assert program.expects == {5: "TypeError", 6: "IndexError"}
    assert [program.expectation(node) for node in program.tree.body] == [None, None, "TypeError", "IndexError"]


def test_an_expected_error_is_plain_pythons_error_and_the_run_goes_on() -> None:
    trace = run_source(EXPECTED)
    error = _plain_error("import torch\na = torch.ones(2, requires_grad=True)\nb = a.view(4)\n")
    assert trace.summary is not None
    step = trace.steps[2]
    assert step.error is not None and (step.error.type, step.error.message) == (type(error).__name__, str(error))
    assert step.expected and step.expect == "RuntimeError" and step.status == "error"
    assert [s.line for s in trace.steps] == [1, 2, 3, 4], "the statement after the expected error ran"
    assert "b" not in trace.steps[-1].tensors  # the failed assignment bound nothing, as in Python
    assert trace.steps[-1].tensors["c"].values == [3.0, 3.0]
    summary = trace.summary
    assert (summary.errors, summary.expected, summary.missing, summary.status) == (1, 1, 0, "ok")
    assert end_json(summary) == {"event": "end", "status": "ok", "steps": 4, "errors": 1, "expected_errors": 1}


def test_a_base_class_name_matches_like_except() -> None:
    trace = run_source("import torch\nx = torch.ones(2)[5]  # expect: Exception\n")
    error = _plain_error("import torch\nx = torch.ones(2)[5]\n")
    assert isinstance(error, Exception)
    assert trace.steps[-1].expected and trace.summary is not None and trace.summary.status == "ok"


def test_another_error_class_is_a_failure_that_says_what_was_expected(tmp_path: Path) -> None:
    source = EXPECTED.replace("RuntimeError", "ValueError")
    trace = run_source(source)
    step = trace.steps[-1]
    assert step.line == 3 and step.error is not None and not step.expected
    assert [n.kind for n in step.explanations if n.kind.startswith("expect.")] == ["expect.other"]
    assert trace.summary is not None and trace.summary.status == "error"
    code, out, err = _invoke(tmp_path, source, "--no-color")
    assert code == 1
    assert "(the line expects ValueError)" in err and "✗ RuntimeError" in out


def test_an_expected_error_that_never_comes_fails(tmp_path: Path) -> None:
    source = "import torch\na = torch.ones(2)\nb = a.view(2)  # expect: RuntimeError\nc = a + 1\n"
    trace = run_source(source)
    step = trace.steps[2]
    assert step.error is None and step.missed
    assert [n.severity for n in step.explanations if n.kind == "expect.missing"] == ["warning"]
    assert trace.summary is not None and (trace.summary.missing, trace.summary.status) == (1, "error")
    code, out, err = _invoke(tmp_path, source, "--format", "json")
    assert code == 1
    assert "line 3: expected RuntimeError, but the statement raised nothing" in err
    events = [json.loads(line) for line in out.splitlines()]
    assert events[3]["expect"] == "RuntimeError" and events[3]["expected"] is False
    assert events[-1] == {"event": "end", "status": "error", "steps": 4, "errors": 0, "missing_errors": 1}


def test_expected_error_exits_0_and_is_marked_in_every_format(tmp_path: Path) -> None:
    code, out, err = _invoke(tmp_path, EXPECTED, "--no-color", "--width", "80")
    assert code == 0, err
    assert "Step 3 · line 3 expected error" in out
    assert "expected RuntimeError: shape '[4]' is invalid for input of size 2" in out
    assert "4 steps, 0 errors, 1 expected error" in out
    code, out, _ = _invoke(tmp_path, EXPECTED, "--format", "json")
    step = [json.loads(line) for line in out.splitlines()][3]
    assert code == 0 and step["status"] == "error" and step["expected"] is True and step["error"]["expected"] is True
    code, out, _ = _invoke(tmp_path, EXPECTED, "--format", "markdown")
    assert code == 0 and "**expected RuntimeError:**" in out and "4 steps, 0 errors, 1 expected error" in out


@pytest.mark.parametrize("name", ["deepcopy", "detach", "inplace_error", "clone_detach_data"])
def test_shipped_examples_end_in_their_expected_error_and_exit_0(name: str) -> None:
    result = invoke("run", "--example", name, "--format", "json")
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.exit_code == 0, result.stderr
    assert events[-2]["expected"] is True and events[-2]["error"]["type"] == "RuntimeError"
    assert events[-1]["status"] == "ok" and events[-1]["expected_errors"] == 1
