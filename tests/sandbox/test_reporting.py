"""Runs that must never end "ok": break/continue outside a loop, output flooded through
notes and error messages, a timeout while tcopy reports a step."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
import torch
from cli_runs import tcopy
from sandbox_guard import guarded

from tcopy_cli.errors import ScriptRejected, TimeoutExceeded
from tcopy_cli.limits import Limits
from tcopy_cli.pipeline import run_source
from tcopy_cli.trace import observe

pytestmark = pytest.mark.e2e  # through the real command line and worker

OUTSIDE_A_LOOP = [
    ("break", (1, 1)),
    ("x = 1\ncontinue", (2, 1)),
    ("def f():\n    break\n\n\nf()\nprint('after')", (2, 5)),
    ("def f():\n    if True:\n        continue\n\n\nf()", (3, 9)),
    ("for i in range(3):\n    def f():\n        break\n    f()", (3, 9)),
    ("for i in range(3):\n    pass\nelse:\n    break", (4, 5)),
    ("while False:\n    pass\nelse:\n    continue", (4, 5)),
    ("if True:\n    break", (2, 5)),
    ("try:\n    break\nexcept ValueError:\n    pass", (2, 5)),
    ("with torch.no_grad():\n    continue", (2, 5)),
    ("import torch.nn as nn\nclass M(nn.Module):\n    def forward(self, x):\n        break", (4, 9)),
]


@pytest.mark.parametrize(("src", "where"), OUTSIDE_A_LOOP)
def test_break_and_continue_outside_a_loop_are_refused_like_python(src: str, where: tuple[int, int]) -> None:
    with pytest.raises(SyntaxError, match=r"outside loop|not properly in loop"):
        compile(src, "<script>", "exec")  # Python refuses each of these too
    with pytest.raises(ScriptRejected, match=r"outside loop|not properly in loop") as info:
        run_source(src)
    assert info.value.line == where[0]


INSIDE_A_LOOP = [
    "for i in range(5):\n    if i == 3:\n        break\n    if i == 1:\n        continue\n    print(i)",
    "for i in range(3):\n    for j in range(3):\n        if j == i:\n            break\n        print(i, j)",
    "for i in range(3):\n    pass\nelse:\n    print('done')",
    "for i in range(3):\n    if i == 1:\n        break\nelse:\n    print('not reached')\nprint(i)",
    "n = 0\nwhile True:\n    n += 1\n    try:\n        if n > 2:\n            break\n"
    "    except ValueError:\n        pass\nprint(n)",
    "def f():\n    for i in range(4):\n        if i == 2:\n            return i\n        continue\n\n\nprint(f())",
    "for i in range(2):\n    with torch.no_grad():\n        if i == 0:\n            continue\n        print(i)",
    "i = 0\nwhile i < 3:\n    i += 1\n    if i == 2:\n        continue\n    print(i)\nelse:\n    print('else')",
]


@pytest.mark.parametrize("src", INSIDE_A_LOOP)
def test_break_and_continue_inside_loops_behave_like_python(src: str, tmp_path: Path) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(src, "<script>", "exec"), {"torch": torch})
    with guarded(tmp_path):
        trace = run_source(src)
    assert trace.summary is not None and trace.summary.status == "ok"
    assert "".join(s.stdout for s in trace.steps) == out.getvalue()


def test_break_in_a_function_exits_non_zero_from_the_command_line(tmp_path: Path) -> None:
    proc = tcopy("run", "-e", "def f():\n    break\n\n\nf()\nprint(1)", timeout=120, cwd=tmp_path)
    assert proc.returncode != 0
    assert "outside loop" in proc.stderr + proc.stdout


def _reported_chars(trace: Any) -> int:
    total = 0
    for s in trace.steps:
        total += len(s.stdout) + sum(map(len, s.notes)) + sum(map(len, s.warnings))
        if s.error is not None:
            total += len(s.error.message) + len(s.error.explanation)
    return total


FLOODS = [
    # A huge error message caught again and again: each catch is a note quoting it.
    's = "x" * 900000\nfor i in range(100):\n    try:\n        raise ValueError(s)\n'
    "    except ValueError as e:\n        pass",
    's = "x" * 400000\nfor i in range(100):\n    try:\n        d = {}\n        v = d[s]\n'
    "    except KeyError:\n        pass",
    # Printing and notes together.
    's = "y" * 600000\nprint(s)\ntry:\n    raise RuntimeError(s)\nexcept RuntimeError:\n    pass\nprint("after")',
]


@pytest.mark.parametrize("src", FLOODS)
def test_notes_and_error_messages_count_toward_max_output(src: str, tmp_path: Path) -> None:
    limits = Limits(max_output=1_000_000)
    with guarded(tmp_path):
        trace = run_source(src, limits=limits, keep_going=True)
    assert trace.summary is not None and trace.summary.status == "error"
    last = trace.steps[-1]
    assert last.error is not None and last.error.type == "LimitExceeded", last.error
    assert "--max-output" in last.error.message
    assert trace.summary.stopped_by == "max_output"
    # What was reported stays near the limit: at most one message past it.
    assert _reported_chars(trace) < 2 * limits.max_output + 10_000
    assert all("after" not in s.stdout for s in trace.steps)


def test_small_notes_do_not_use_up_the_output_budget(tmp_path: Path) -> None:
    src = "for i in range(200):\n    try:\n        x = 1 / 0\n    except ZeroDivisionError:\n        pass\nprint('end')"
    with guarded(tmp_path):
        trace = run_source(src, limits=Limits(max_steps=10_000))
    assert trace.summary is not None and trace.summary.status == "ok"
    assert trace.steps[-1].stdout == "end\n"


def test_a_timeout_while_a_step_is_reported_ends_the_run_as_an_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The alarm fires inside tcopy's own reporting (observing the namespace after a
    # statement), outside any statement: the run must end as an error, not "ok".
    real = observe.Observer.snapshot
    calls = [0]

    def slow_snapshot(self: observe.Observer, ns: dict[str, Any], walked: Any = None) -> observe.Snapshot:
        calls[0] += 1
        if calls[0] == 2:
            raise TimeoutExceeded("the run took longer than 1 s (limit --timeout)", "timeout")
        return real(self, ns, walked)

    monkeypatch.setattr(observe.Observer, "snapshot", slow_snapshot)
    with guarded(tmp_path):
        trace = run_source("a = 1\nb = [torch.ones(2) for i in range(3)]\nc = 3\nprint('after')")
    assert trace.summary is not None and trace.summary.status == "error"
    assert trace.summary.stopped_by == "timeout"
    last = trace.steps[-1]
    assert last.error is not None and last.error.type == "TimeoutExceeded"
    assert last.source.startswith("b = ")
    assert all("after" not in s.stdout for s in trace.steps)


@pytest.mark.slow
def test_a_timeout_while_reporting_2500_tensors_exits_1_with_an_error_end(tmp_path: Path) -> None:
    src = (
        "xs = [torch.ones(3, requires_grad=True) * 2 for i in range(2500)]\n"
        "ys = [x + 1 for x in xs]\nzs = [y + 1 for y in ys]\nws = [z + 1 for z in zs]\nprint('done')\n"
    )
    proc = tcopy("run", "-e", src, "--format", "json", "--timeout", "1", timeout=300, cwd=tmp_path)
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert events[-1]["event"] == "end" and events[-1]["status"] == "error"
    assert events[-2]["status"] == "error" and events[-2]["error"]["type"] == "TimeoutExceeded"
    assert all("done" not in (e.get("stdout") or "") for e in events)
