"""Run a snippet through tcopy and under plain Python, and compare.

The truth for every fact tcopy reports is what the same statements do under plain
Python: most tests run a snippet twice, once through tcopy (``run_source``) and once
with the real ``exec`` in the test process, and compare what the script printed.
"""

from __future__ import annotations

import contextlib
import io
import textwrap
from typing import Any

import torch

from tcopy_cli.engine import run_source
from tcopy_cli.trace import Trace
from tcopy_cli.trace.records import Step


def run(src: str, **kwargs: Any) -> Trace:
    """Run a dedented snippet through tcopy."""
    return run_source(textwrap.dedent(src).strip("\n"), **kwargs)


def stdout_of(trace: Trace) -> str:
    return "".join(step.stdout for step in trace.steps)


def plain_run(src: str) -> tuple[str, dict[str, Any]]:
    """(printed text, namespace) of the snippet under plain Python, torch pre-imported as in tcopy."""
    buf = io.StringIO()
    ns: dict[str, Any] = {"torch": torch, "__name__": "__main__"}
    with contextlib.redirect_stdout(buf):
        exec(textwrap.dedent(src).strip("\n"), ns)
    return buf.getvalue(), ns


def plain(src: str) -> str:
    """What the snippet prints under plain Python."""
    return plain_run(src)[0]


def plain_error(src: str) -> BaseException:
    """The exception the snippet raises under plain Python."""
    try:
        plain(src)
    except Exception as exc:
        return exc
    raise AssertionError("the snippet did not raise under plain Python")


def assert_same_as_python(src: str) -> Trace:
    """Every step is ok and the printed text equals plain Python's."""
    trace = run(src)
    errors = [(s.line, s.source, s.error) for s in trace.steps if s.status != "ok"]
    assert not errors, errors
    assert stdout_of(trace) == plain(src)
    return trace


def last(trace: Trace) -> Step:
    assert trace.steps, "no steps"
    return trace.steps[-1]


def assert_error_like_python(src: str) -> Step:
    """The run ends with an error step whose type and message are plain Python's."""
    trace = run(src)
    step = last(trace)
    expected = plain_error(src)
    assert step.status == "error"
    assert step.error is not None
    assert (step.error.type, step.error.message) == (type(expected).__name__, str(expected))
    return step
