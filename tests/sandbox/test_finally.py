"""A script's ``finally`` blocks run when an error leaves them, as in Python, before the run ends."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tcopy_cli.pipeline import run_source

SCRIPTS = {
    "uncaught": 'try:\n    x = 1 / 0\nfinally:\n    print("finally ran")\n',
    "nested": 'try:\n    try:\n        y = [][1]\n    finally:\n        print("inner")\nfinally:\n    print("outer")\n',
    "in_a_function": (
        'def f():\n    try:\n        return 1 / 0\n    finally:\n        print("f cleans up")\n'
        'try:\n    f()\nexcept ZeroDivisionError:\n    print("caught")\nfinally:\n    print("outer")\n'
    ),
    "handler_of_another_class": (
        'try:\n    z = {}["k"]\nexcept ValueError:\n    print("wrong handler")\nfinally:\n    print("finally")\n'
    ),
}


def _plain(source: str) -> str:
    """What plain Python prints to stdout for the script (it may end in a traceback)."""
    return subprocess.run([sys.executable, "-c", source], capture_output=True, text=True).stdout


@pytest.mark.parametrize("name", SCRIPTS)
def test_finally_runs_as_in_python(name: str) -> None:
    source = SCRIPTS[name]
    trace = run_source(source, origin="<t>")
    assert "".join(s.stdout for s in trace.steps) == _plain(source)


def test_a_limit_does_not_run_finally() -> None:
    """tcopy's own stop (here --max-steps) is no script error: Python would never get there."""
    from tcopy_cli.limits import Limits

    source = 'try:\n    while True:\n        x = 1\nfinally:\n    print("finally")\n'
    trace = run_source(source, origin="<t>", limits=Limits(max_steps=20))
    assert "".join(s.stdout for s in trace.steps) == ""
    assert trace.steps[-1].error is not None and trace.steps[-1].error.type == "LimitExceeded"
