"""Differential test on snippets from outside the project: tcopy against plain Python.

tests/outside/ holds real PyTorch snippets taken from tutorials and books (sources and
licences in tests/outside/README.md), not written for tcopy. Each must run to what plain
Python prints, and end in the same error (type and
line) where Python ends in one. Snippets whose output is random from run to run
(``RANDOM``) are compared with every number masked and runs of white space collapsed,
since tensor printing pads and wraps by the numbers' widths.

The snippets that train for hundreds of steps take tens of seconds each; they are marked
``slow`` and run only with ``TCOPY_SLOW_TESTS=1``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tcopy_cli.engine import run_source

OUTSIDE = Path(__file__).resolve().parent.parent / "outside"
SNIPPETS = sorted(p.name for p in OUTSIDE.glob("[0-9][0-9]_*.py"))
RANDOM = frozenset(
    "03 04 05 06 07 08 09 10 11 12 13 14 15 39 40".split()
)  # two plain-Python runs print different numbers (unseeded torch.randn, np.random ...)
SLOW = frozenset("02 03 04 06 09 10".split())  # hundreds of training steps
SKIPPED: dict[str, str] = {}
ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")

_REFERENCE = r"""
import contextlib, io, json, sys, traceback
import torch
out = {}
for path in sys.argv[1:]:
    buffer = io.StringIO()
    error = None
    with contextlib.redirect_stdout(buffer):
        try:
            exec(compile(open(path).read(), path, "exec"), {"__name__": "__main__"})
        except Exception as exc:
            lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename == path]
            error = [type(exc).__name__, lines]
    torch.set_printoptions(profile="default")
    torch.set_default_device(None)
    out[path] = {"stdout": buffer.getvalue(), "error": error}
print(json.dumps(out))
"""


@cache
def python_runs() -> dict[str, Any]:
    """Plain Python's stdout and error for every fast snippet, from one child process."""
    paths = [str(OUTSIDE / name) for name in SNIPPETS if _number(name) not in SLOW | set(SKIPPED)]
    if os.environ.get("TCOPY_SLOW_TESTS"):
        paths = [str(OUTSIDE / name) for name in SNIPPETS if _number(name) not in SKIPPED]
    proc = subprocess.run(
        [sys.executable, "-c", _REFERENCE, *paths], capture_output=True, text=True, timeout=600, cwd=OUTSIDE
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _number(name: str) -> str:
    return name[:2]


def _normalise(text: str, random: bool) -> str:
    text = ADDRESS.sub("0x?", text)
    if random:  # (a printed tensor wraps its rows where the numbers' widths make it)
        text = re.sub(r"\s+", " ", NUMBER.sub("#", text))
        text = re.sub(r"\[ | \]", lambda m: m.group(0).strip(), text)
    return text


def _params() -> list[Any]:
    out = []
    for name in SNIPPETS:
        n = _number(name)
        marks = [pytest.mark.slow] if n in SLOW else []
        if n in SKIPPED:
            marks.append(pytest.mark.skip(reason=SKIPPED[n]))
        elif n in SLOW and not os.environ.get("TCOPY_SLOW_TESTS"):
            marks.append(pytest.mark.skip(reason="slow: set TCOPY_SLOW_TESTS=1"))
        out.append(pytest.param(name, marks=marks, id=name[:-3]))
    return out


@pytest.mark.parametrize("name", _params())
def test_outside_snippet_runs_as_in_python(name: str) -> None:
    path = OUTSIDE / name
    expected = python_runs()[str(path)]
    trace = run_source(path.read_text(), origin=str(path))
    errors = [s for s in trace.steps if s.status == "error"]
    printed = "".join(s.stdout or "" for s in trace.steps)
    random = _number(name) in RANDOM
    if expected["error"] is None:
        assert not errors, [(s.line, s.error) for s in errors]
    else:
        etype, lines = expected["error"]
        assert errors, f"Python raised {etype} at line(s) {lines}; tcopy ran through"
        first = errors[0]
        assert first.error is not None
        assert (first.error.type, first.line in lines) == (etype, True), (first.line, first.error, lines)
    assert _normalise(printed, random) == _normalise(expected["stdout"], random)
