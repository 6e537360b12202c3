"""A training loop without ``zero_grad`` is named in the table, in Markdown and in JSON.

The ``loop`` event's ``findings``, the step's warning at the turn where it starts (turn 2),
and the line to add; plain python shows the gradient is the sum of every turn's, and that a
loop with the reset (or accumulating on purpose) gets no finding.
"""

from __future__ import annotations

import json
from typing import Any

import torch
from recorded import run_cli

NO_RESET = """\
import torch
torch.manual_seed(0)
x = torch.randn(8, 3)
y = torch.randn(8, 1)
model = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(4):
    pred = model(x)
    loss = ((pred - y) ** 2).mean()
    loss.backward()
    opt.step()
"""
RESET = NO_RESET.replace("    pred = model(x)\n", "    opt.zero_grad()\n    pred = model(x)\n")


def _tcopy(script: str, *args: str) -> str:
    result = run_cli(["run", "-e", script, *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_plain_python_sums_every_turns_gradient() -> None:
    ns: dict[str, Any] = {}
    exec(NO_RESET, ns)
    torch.manual_seed(0)
    x, y = torch.randn(8, 3), torch.randn(8, 1)
    model = torch.nn.Linear(3, 1)
    sums = [torch.zeros_like(p) for p in model.parameters()]
    for _ in range(4):
        grads = torch.autograd.grad(((model(x) - y) ** 2).mean(), list(model.parameters()))
        with torch.no_grad():
            for p, s, g in zip(model.parameters(), sums, grads):
                s += g
                p -= 0.1 * s
    assert all(torch.allclose(p.grad, s) for p, s in zip(ns["model"].parameters(), sums))


def test_json_names_it_in_the_loop_event_and_at_turn_two() -> None:
    events = [json.loads(line) for line in _tcopy(NO_RESET, "--format", "json").splitlines()]
    (loop,) = [e for e in events if e["event"] == "loop"]
    (finding,) = loop["findings"]
    assert finding["kind"] == "grad.not-reset" and finding["severity"] == "warning"
    assert finding["tensors"] == ["model.weight", "model.bias"]
    assert finding["turns"] == [2, 3, 4] and finding["fix"] == "opt.zero_grad()" and finding["line"] == 10
    assert finding["text"].startswith("model.weight.grad and model.bias.grad never reset in the loop")
    told = [
        (e["loops"][0]["iteration"], x)
        for e in events
        if e["event"] == "step"
        for x in e["explanations"]
        if x["kind"] == "grad.not-reset"
    ]
    assert [turn for turn, _ in told] == [2, 3, 4]
    assert told[0][1]["severity"] == "warning" and told[0][1]["fix"] == "opt.zero_grad()"
    assert "not reset since the backward of turn 1" in told[0][1]["text"]


def test_table_and_markdown_say_it_in_the_summary() -> None:
    for args in (("--width", "200"), ("--format", "markdown")):
        out = _tcopy(NO_RESET, *args)
        assert "⚠ model.weight.grad and model.bias.grad never reset in the loop" in out, args
        assert "Add `opt.zero_grad()` in the loop before the backward at line 10." in out, args


def test_a_loop_that_resets_gets_no_finding() -> None:
    events = [json.loads(line) for line in _tcopy(RESET, "--format", "json").splitlines()]
    (loop,) = [e for e in events if e["event"] == "loop"]
    assert "findings" not in loop
    assert not any(x["kind"] == "grad.not-reset" for e in events if e["event"] == "step" for x in e["explanations"])
