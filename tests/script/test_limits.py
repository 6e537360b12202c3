"""Every limit is named, documented and reported in one format."""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tcopy_cli.errors import LimitExceeded, TimeoutExceeded
from tcopy_cli.limits import Limits, flag
from tcopy_cli.trace import run_source

ROOT = Path(__file__).resolve().parents[2]
MESSAGE = re.compile(r"^.+ \(limit [\d,.]+( s)?; raise it with --[a-z-]+\)$")


@functools.cache
def _run_help() -> str:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "tcopy_cli", "run", "--help"], capture_output=True, text=True, env=env
    ).stdout


@pytest.mark.parametrize("name", [f.name for f in dataclasses.fields(Limits)])
def test_every_limit_has_a_flag_a_readme_row_and_one_message_format(name: str) -> None:
    assert f"| `{flag(name)}` |" in (ROOT / "README.md").read_text()
    assert flag(name) in _run_help()
    exc = Limits().exceeded(name, "something grew")
    assert exc.limit == name and MESSAGE.match(str(exc)), str(exc)
    assert isinstance(exc, TimeoutExceeded) == (name == "timeout")


def test_an_unknown_limit_name_is_a_programming_error() -> None:
    with pytest.raises(ValueError):
        Limits().message("max_things", "x")


RECURSE = "def f(n):\n    return f(n + 1)\n\nf(0)"


def test_call_depth_is_its_own_limit() -> None:
    # Python itself would raise RecursionError; tcopy stops at --max-call-depth.
    with pytest.raises(RecursionError):
        exec(compile(RECURSE, "<plain>", "exec"), {})
    trace = run_source(RECURSE, limits=Limits(max_call_depth=7))
    step = trace.steps[-1]
    assert step.error is not None and step.error.type == "LimitExceeded"
    assert step.error.message.endswith("(limit 7; raise it with --max-call-depth)")
    assert max(s.depth for s in trace.steps) == 7


def _cli(*args: str) -> tuple[int, list[dict[str, object]]]:
    proc = subprocess.run(
        [sys.executable, "-m", "tcopy_cli", "run", *args, "-f", "json"], capture_output=True, text=True
    )
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines()]


def test_call_depth_flag_on_the_command_line() -> None:
    code = "def f(n):\n    if n == 0:\n        return 0\n    return f(n - 1) + 1\n\nx = f(60)\nprint(x)"
    code_low, events = _cli("-e", code)
    errors = [e["error"] for e in events if e.get("event") == "step" and e.get("error")]
    assert code_low == 1 and "--max-call-depth" in str(errors[-1])
    code_high, events = _cli("-e", code, "--max-call-depth", "70")
    assert code_high == 0 and [e["stdout"] for e in events if e.get("event") == "step"][-1] == "60\n"


def test_limit_exceeded_carries_the_limit_name() -> None:
    exc = Limits(max_steps=3).exceeded("max_steps", "the script ran too many steps")
    assert isinstance(exc, LimitExceeded)
    assert str(exc) == "the script ran too many steps (limit 3; raise it with --max-steps)"
