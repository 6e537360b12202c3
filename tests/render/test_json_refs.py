"""--json-refs: unchanged tensor records by reference, and nothing lost."""

from __future__ import annotations

import io
import json

from recorded import run_cli

from tcopy_cli import run_script
from tcopy_cli.render import ViewOptions
from tcopy_cli.render.jsonl import JsonRenderer

SCRIPT = """\
import torch
import torch.nn as nn
torch.manual_seed(0)
model = nn.Linear(3, 2)
x = torch.ones(4, 3)
for i in range(3):
    y = model(x).sum()
    y.backward()
    with torch.no_grad():
        model.weight.sub_(0.1 * model.weight.grad)
    model.zero_grad()
del x
x = torch.ones(4, 3)
"""


TRACE = run_script(SCRIPT)


def _events(refs: bool) -> list[dict[str, object]]:
    trace = TRACE
    out = io.StringIO()
    renderer = JsonRenderer(out, ViewOptions(json_refs=refs))
    renderer.start(trace.info)
    for step in trace.steps:
        renderer.step(step)
    renderer.end(trace.summary)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_references_resolve_to_the_full_records() -> None:
    full, refs = _events(False), _events(True)
    assert refs[0]["tensor_refs"] is True and "tensor_refs" not in full[0]
    by_index = {e["index"]: e for e in refs if e["event"] == "step"}
    referenced = 0
    for plain, short in zip(full, refs):
        if plain["event"] != "step":
            assert plain == {k: v for k, v in short.items() if k != "tensor_refs"}
            continue
        assert {k: v for k, v in plain.items() if k != "tensors"} == {k: v for k, v in short.items() if k != "tensors"}
        assert list(plain["tensors"]) == list(short["tensors"])  # type: ignore[call-overload]
        for name, record in short["tensors"].items():  # type: ignore[attr-defined]
            if "unchanged_since" in record:
                referenced += 1
                assert record == {"unchanged_since": record["unchanged_since"]}
                earlier = by_index[record["unchanged_since"]]["tensors"][name]  # type: ignore[index]
                assert "unchanged_since" not in earlier  # points at a full record
                assert earlier == plain["tensors"][name]  # type: ignore[index]
            else:
                assert record == plain["tensors"][name]  # type: ignore[index]
    assert referenced > 0


def test_a_changed_tensor_is_written_in_full() -> None:
    full = [e for e in _events(False) if e["event"] == "step"]
    refs = [e for e in _events(True) if e["event"] == "step"]
    changed = 0
    for before, after, short in zip(full, full[1:], refs[1:]):
        for name, record in after["tensors"].items():  # type: ignore[attr-defined]
            if before["tensors"].get(name) != record:  # type: ignore[attr-defined]
                changed += 1
                assert short["tensors"][name] == record  # type: ignore[index]
    assert changed > 5


def test_the_option_on_the_command_line() -> None:
    result = run_cli(["run", "-e", "a = torch.ones(2)\nb = a + 1\n", "-f", "json", "--json-refs"])
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert events[0]["tensor_refs"] is True
    assert events[2]["tensors"]["a"] == {"unchanged_since": 1}
    assert events[2]["tensors"]["b"]["values"] == [2.0, 2.0]
