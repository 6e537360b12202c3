"""Modules held in a list, tuple or dict show their parameters and buffers as rows.

From-scratch code keeps layers in a plain list (``layers = [nn.Linear(4, 8), nn.Linear(8, 1)]``)
and trains them through ``[p for l in layers for p in l.parameters()]``; the table lists
``layers[0].weight`` as it lists ``model.0.weight``, and the values are those plain python has.
"""

from __future__ import annotations

from typing import Any

import torch

from tcopy_cli.limits import Limits
from tcopy_cli.pipeline import run_source
from tcopy_cli.trace.names import walk_names

SCRIPT = """\
import torch
import torch.nn as nn
torch.manual_seed(0)
x = torch.randn(5, 4)
y = torch.randn(5, 1)
layers = [nn.Linear(4, 8), nn.Linear(8, 1)]
heads = {"out": nn.Linear(1, 1), "norm": nn.BatchNorm1d(1)}
opt = torch.optim.SGD([p for m in layers for p in m.parameters()], lr=0.1)
for _ in range(3):
    h = x
    for layer in layers:
        h = layer(h)
    loss = ((h - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def _python() -> dict[str, Any]:
    """The same statements run by plain python: the tensors by the names tcopy gives them."""
    ns: dict[str, Any] = {}
    exec(SCRIPT, ns)  # the test's own script, as python runs it
    out: dict[str, Any] = {}
    for i, m in enumerate(ns["layers"]):
        for n, p in m.named_parameters():
            out[f"layers[{i}].{n}"] = p
    for k, m in ns["heads"].items():
        for n, t in [*m.named_parameters(), *m.named_buffers()]:
            out[f'heads["{k}"].{n}'] = t
    return out


def test_parameters_of_modules_in_containers_are_rows_with_python_values() -> None:
    expected = _python()
    result = run_source(SCRIPT, limits=Limits(max_steps=1000))
    assert result.summary is not None and result.summary.errors == 0 and all(s.status == "ok" for s in result.steps)
    last = result.steps[-1]
    for name, t in expected.items():
        rec = last.tensors[name]
        assert rec.shape == list(t.shape), name
        assert rec.requires_grad == t.requires_grad and rec.is_leaf, name
        assert rec.version == t._version, name
        if rec.values is not None:
            assert torch.tensor(rec.values, dtype=t.dtype).equal(t.detach()), name
    # the optimizer trained layers[...] three times; the heads were never touched
    assert last.tensors["layers[0].weight"].version == 1 + 3
    assert last.tensors['heads["out"].weight'].version == 1
    assert last.tensors["layers[1].bias"].grad is not None
    assert "heads" not in last.unlisted


def test_the_step_that_made_the_layers_lists_them() -> None:
    result = run_source(SCRIPT, limits=Limits(max_steps=1000))
    (made,) = [s for s in result.steps if s.line == 6]
    params = ["layers[0].weight", "layers[0].bias", "layers[1].weight", "layers[1].bias"]
    assert sorted(made.tensors) == sorted(["x", "y", *params])


def test_a_list_of_modules_cut_short_is_counted_as_not_listed() -> None:
    mods = [torch.nn.Linear(1, 1) for _ in range(1003)] + [torch.nn.ReLU()]
    named, cut, _ = walk_names({"mods": mods, "acts": [torch.nn.ReLU()] * 2000})
    assert sum(n.startswith("mods[") for n, _ in named) == 2 * 1000
    assert cut["mods"] == 4  # three more layers with parameters, and a ReLU among the items left out
    # a container whose items left out hold no tensor (modules without parameters) is not told
    assert "acts" not in cut


def test_a_module_past_the_listed_items_counts_for_max_bytes() -> None:
    # a Linear past the first 1,000 items holds 1,002,000 bytes, as a tensor there would
    script = "import torch\nimport torch.nn as nn\nbig = [nn.Identity()] * 1000 + [nn.Linear(500, 500)]\n"
    held = sum(t.numel() * t.element_size() for t in torch.nn.Linear(500, 500).parameters())
    assert held == 1_002_000
    trace = run_source(script, limits=Limits(max_bytes=held - 1))
    assert trace.steps[-1].error is not None and trace.steps[-1].error.type == "LimitExceeded"
    assert f"{held:,} bytes" in trace.steps[-1].error.message
    assert run_source(script, limits=Limits(max_bytes=held)).steps[-1].error is None


def test_a_module_that_never_called_module_init_is_passed_over() -> None:
    # --trust: python runs this to the end (it fails only when the module is used)
    script = """\
import torch
import torch.nn as nn
class Bad(nn.Module):
    def __init__(self):
        self.k = 1
bs = [Bad()]
b = Bad()
x = torch.ones(1)
"""
    trace = run_source(script)
    assert all(s.status == "ok" for s in trace.steps)
    assert list(trace.steps[-1].tensors) == ["x"]
