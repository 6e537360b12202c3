"""A row that is the very tensor of a row above it, under another name, folds into ``also named:``.

``train(model, opt)`` shows each parameter twice inside the function, as ``model.0.weight``
and ``train:model.0.weight`` (the PyTorch quickstart's train/test functions). JSON keeps both.
"""

from __future__ import annotations

import json
from typing import Any

import torch.nn as nn
from recorded import run_cli

SCRIPT = """\
import torch
import torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.ones(4, 2)
def train(model, opt):
    loss = model(x).sum()
    loss.backward()
    opt.step()
    return loss
out = train(model, opt)
a = torch.zeros(2)
b = a
b.add_(1)
"""


def _run(*args: str) -> str:
    result = run_cli(["run", "-e", SCRIPT, "--no-color", *args], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    return result.output


def _step(output: str, source: str) -> str:
    """The text of the step whose statement is ``source``."""
    start = output.index("\n" + source + "\n")
    end = output.find("\nStep ", start)
    return output[start : end if end >= 0 else len(output)]


def test_a_modules_parameters_under_a_functions_argument_are_named_not_drawn_again() -> None:
    # plain python: inside train, the argument is the global module, so each parameter is one object
    seen: dict[str, Any] = {}

    def train(m: nn.Module) -> None:
        seen["inside"] = dict(m.named_parameters())

    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1))
    train(model)
    assert all(seen["inside"][k] is p for k, p in model.named_parameters())

    step = _step(_run(), "opt.step()")
    flat = " ".join(step.split())
    assert "also named: train:model.{0,2}.{weight,bias} (the same tensors as model.{0,2}.{weight,bias})" in flat, step
    # the module's parameters are one row (render.modules), the argument's names folded against it
    assert "\n~ model " in step and "train:model.0.weight " not in step.split("also named")[0]


def test_json_and_all_steps_keep_every_name() -> None:
    lines = run_cli(["run", "-e", SCRIPT, "--format", "json"]).output.splitlines()
    steps = [json.loads(line) for line in lines if '"event": "step"' in line]
    (step,) = [s for s in steps if s["source"] == "opt.step()"]
    for key in ("0.weight", "0.bias", "2.weight", "2.bias"):
        mine, theirs = step["tensors"][f"train:model.{key}"], step["tensors"][f"model.{key}"]
        facts = ("values", "shape", "data_ptr", "storage", "version", "requires_grad", "is_leaf", "grad_fn")
        assert all(mine[k] == theirs[k] for k in facts) and mine["grad"]["values"] == theirs["grad"]["values"]
    whole = _step(_run("--all-steps"), "opt.step()")
    assert "also named" not in whole and "train:model.0.weight" in whole


def test_two_names_of_one_tensor_stay_rows() -> None:
    # fewer than three such rows: the table stays whole (b = a; b.add_(1) shows both change)
    step = _step(_run(), "b.add_(1)")
    assert "~ a " in step and "~ b " in step and "also named" not in step


def test_markdown_names_them_too() -> None:
    result = run_cli(["run", "-e", SCRIPT, "--format", "markdown"])
    assert "*also named: train:model.{0,2}.{weight,bias} (the same tensors as model.{0,2}.{weight,bias})*" in (
        result.output
    )


def _table(script: str, *args: str) -> str:
    result = run_cli(["run", "-e", script, "--no-color", *args], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def test_names_that_differ_in_how_they_begin_are_written_together() -> None:
    # an argument named otherwise than the caller's module; a second name for a whole list
    script = """\
import torch
import torch.nn as nn
my_model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 1))
x = torch.ones(4, 2)
def train(net):
    loss = net(x).sum()
    loss.backward()
    return loss
out = train(my_model)
xs = [torch.zeros(1) for _ in range(40)]
ys = xs
n = [y.add_(1) for y in ys]
"""
    ns: dict[str, Any] = {}
    exec(script, ns)
    assert all(a is b for a, b in zip(ns["ys"], ns["xs"]))
    flat = _table(script)
    assert "also named: train:net.{0…2}.{weight,bias} (the same tensors as my_model.{0…2}.{weight,bias})" in flat
    assert "also named: ys[0…39] (the same tensors as xs[0…39])" in flat


def test_a_name_rebound_onto_a_tensor_keeps_its_row_and_watched_names_keep_theirs() -> None:
    # for p in m.parameters(): p is marked ~ for being rebound, the parameter for its write
    script = """\
import torch
import torch.nn as nn
def inner(m):
    for p in m.parameters():
        p.data.mul_(2)
    return m
net = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1))
out = inner(net)
"""
    flat = _table(script)
    assert "inner:p (the same tensor as" not in flat and "~ inner:p " in flat
    watched = _table(SCRIPT, "--watch", "model,train:model.0.weight,train:model.0.bias,train:model.2.weight")
    step = watched[watched.index("opt.step()") :]
    assert "~ train:model.0.weight " in step and "also named" not in step.split("Step ")[0]
