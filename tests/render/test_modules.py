"""Modules as rows (render/modules.py): a module's tensors that behave alike share one row."""

from __future__ import annotations

import json
import re

import torch
import torch.nn as nn
from recorded import run_cli

from tcopy_cli.render.modules import member_of, module_phrases

NET = """\
import torch
import torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
opt = torch.optim.Adam(model.parameters(), lr=0.01)
x = torch.randn(16, 4)
loss = model(x).pow(2).mean()
loss.backward()
opt.step()
"""


def _out(*args: str) -> str:
    result = run_cli(["run", "-e", NET, "--width", "100", "--no-color", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def _step(out: str, source: str) -> str:
    return next(block for block in re.split(r"^(?=Step \d+ · )", out, flags=re.M) if source in block)


def test_a_models_parameters_are_one_row_with_count_versions_and_largest_grad_norm() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    params = list(model.parameters())
    count = sum(p.numel() for p in params)
    x = torch.randn(16, 4)
    model(x).pow(2).mean().backward()
    largest = max(p.grad.norm().item() for p in params if p.grad is not None)
    step = _step(_out(), "loss.backward()")
    row = re.search(rf"^~ model +{len(params)} tensors, {count} params .*$", step, flags=re.M)
    assert row is not None, step
    assert f"‖g‖≤{largest:.3g}" in row[0] and "V1–4:1" in row[0], row[0]
    assert "model.0.weight" not in step.split("•")[0]  # no row of its own
    assert "the .grad of model's 4 tensors" in step  # the note says it of the module


def test_watch_opens_a_module_and_json_and_all_steps_keep_every_tensor() -> None:
    step = _step(_out("--watch", "model.2"), "opt.step()")
    assert re.search(r"^~ model\.2 +2 tensors", step, flags=re.M) is None, step
    assert re.search(r"^~ model\.2\.weight ", step, flags=re.M) and re.search(r"^~ model\.2\.bias ", step, flags=re.M)
    whole = _step(_out("--all-steps"), "opt.step()")
    assert all(re.search(rf"^~ model\.{k} ", whole, flags=re.M) for k in ("0.weight", "0.bias", "2.weight", "2.bias"))
    lines = run_cli(["run", "-e", NET, "--format", "json"]).stdout.splitlines()
    (step_json,) = [s for s in map(json.loads, lines) if s.get("event") == "step" and s["source"] == "opt.step()"]
    assert {"model.0.weight", "model.0.bias", "model.2.weight", "model.2.bias"} <= set(step_json["tensors"])


def test_a_parameter_that_does_otherwise_keeps_its_own_row() -> None:
    script = NET + "model[2].bias.data.add_(1)\n"
    result = run_cli(["run", "-e", script, "--width", "100", "--no-color"])
    step = _step(result.stdout, "model[2].bias.data.add_(1)")
    assert re.search(r"^~ model\.2\.bias ", step, flags=re.M), step  # its values changed, the others' did not
    assert "model.2.bias" in step and "model.0.weight" not in step.split("\n  •")[0].split("unchanged:")[0]


def test_member_names_and_note_phrases() -> None:
    assert member_of("model.conv1.weight") == ("model", "conv1", "weight")
    assert member_of("layers[0].weight") == ("layers[0]", "weight")
    assert member_of("train:net.0.weight") == ("train:net", "0", "weight")
    assert member_of("x") is None and member_of('d["a.b"]') is None
    names = ["model.0.weight", "model.0.bias", "model.2.weight", "model.2.bias", "x"]
    note = (
        "backward put gradients into model.0.weight.grad, model.0.bias.grad, model.2.weight.grad and model.2.bias.grad."
    )
    assert module_phrases(note, names) == "backward put gradients into the .grad of model's 4 tensors."
    assert module_phrases("computed from model.0.weight and model.0.bias", names) == (
        "computed from model.0.weight and model.0.bias"  # not every tensor of model: named as they are
    )
