"""The step table: change marks, columns and values at different widths, piped output."""

from __future__ import annotations

import json
import re

import torch
from typer.testing import CliRunner

from tcopy_cli.cli import app

runner = CliRunner()

# Each step changes something a narrow table hides, or changes nothing of an existing tensor.
MARKS_SCRIPT = """\
import torch
a = torch.zeros(3, requires_grad=True)
b = a.detach()
w = torch.ones(1000)
w[999] = 5.0
x = torch.ones(2)
x.data = torch.zeros(2)
y = a * 2
y = a + 1
b.add_(1)
"""


def _names_by_step(script: str) -> dict[int, list[str]]:
    result = runner.invoke(app, ["run", "-e", script, "-f", "json"])
    events = [json.loads(line) for line in result.stdout.splitlines()]
    return {e["index"]: list(e["tensors"]) for e in events if e["event"] == "step"}


def table_marks(text: str, names: dict[int, list[str]]) -> dict[int, dict[str, str]]:
    """{step: {name: mark}} read from the table view."""
    blocks = re.split(r"^Step (\d+) · ", text, flags=re.M)[1:]
    marks: dict[int, dict[str, str]] = {}
    for index, body in zip(blocks[::2], blocks[1::2]):
        step = int(index)
        marks[step] = {}
        for name in names[step]:
            m = re.search(rf"^([+~ ]) {re.escape(name)} ", body, flags=re.M)
            assert m is not None, (step, name, body)
            marks[step][name] = m[1]
    return marks


def markdown_marks(text: str) -> dict[int, dict[str, str]]:
    marks: dict[int, dict[str, str]] = {}
    for index, body in re.findall(r"^### Step (\d+) ·(.*?)(?=^### Step|\Z)", text, flags=re.M | re.S):
        marks[int(index)] = {m[1]: m[0].strip() or " " for m in re.findall(r"^\| ([+~ ]) \| ([^ |]+) \|", body, re.M)}
    return marks


def test_marks_are_the_same_at_80_and_160_columns_and_in_markdown() -> None:
    names = _names_by_step(MARKS_SCRIPT)
    narrow = table_marks(runner.invoke(app, ["run", "-e", MARKS_SCRIPT, "--width", "80"]).stdout, names)
    wide = table_marks(runner.invoke(app, ["run", "-e", MARKS_SCRIPT, "--width", "160"]).stdout, names)
    md = markdown_marks(runner.invoke(app, ["run", "-e", MARKS_SCRIPT, "-f", "markdown"]).stdout)
    assert narrow == wide
    assert {k: v for k, v in md.items() if v} == {k: v for k, v in narrow.items() if v}
    # What plain torch says changed, step by step (0-based lines of MARKS_SCRIPT + 1).
    a = torch.zeros(3, requires_grad=True)
    b = a.detach()
    assert b.data_ptr() == a.data_ptr()
    assert narrow[3] == {"a": " ", "b": "+"}  # only a's sharing changed: not a fact of a itself
    w = torch.ones(1000)
    w[999] = 5.0  # past the listed values, but max and mean change
    assert narrow[5]["w"] == "~"
    assert narrow[7]["x"] == "~"  # x.data = ...: new memory
    assert narrow[9]["y"] == "~"  # a new tensor under the same name: grad_fn changed
    b.add_(1)
    assert a._version == 1  # b shares a's version counter
    assert narrow[10] == {"a": "~", "b": "~", "w": " ", "x": " ", "y": " "}
