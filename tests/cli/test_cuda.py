"""--device cuda for real (skipped without a CUDA GPU)."""

from __future__ import annotations

import json

import pytest
import torch
from cli_runs import invoke

from tcopy_cli import examples
from tcopy_cli.engine import run_source
from tcopy_cli.pipeline import run_source as run_explained
from tcopy_cli.trace.compare import SETUPS, STANDARD, compare

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]


def test_default_device_and_storage_facts_on_cuda() -> None:
    src = (
        "a = torch.arange(6.0, requires_grad=True)\nv = a[2:]\nd = a.detach()\nc = a.clone()\n"
        "h = torch.ones(2, device='cpu')"
    )
    step = run_source(src, device="cuda").steps[-1]
    t = step.tensors
    assert t["a"].device == "cuda:0" and t["h"].device == "cpu"
    assert t["v"].storage == t["a"].storage and t["v"].data_ptr == t["a"].data_ptr + 8
    assert t["d"].data_ptr == t["a"].data_ptr and "a" in t["d"].shares_version_with
    assert t["c"].storage != t["a"].storage and t["c"].grad_fn == "CloneBackward0"
    a = torch.arange(6.0, device="cuda")
    assert t["a"].values == a.tolist()


def test_cross_device_copy() -> None:
    src = (
        "g = torch.tensor([1.0, 2.0], device='cuda', requires_grad=True)\n"
        "h = torch.zeros(2, device='cpu')\n"
        "h.copy_(g)\n"
        "(h * 3).sum().backward()\n"
    )
    steps = run_source(src).steps
    last = steps[-1].tensors
    assert last["h"].device == "cpu" and last["h"].grad_fn == "CopyBackwards"
    assert last["g"].grad is not None and last["g"].grad.values == [3.0, 3.0] and last["g"].grad.device == "cuda:0"
    err = run_explained("a = torch.ones(2, device='cuda')\nb = a + torch.ones(2, device='cpu')").steps[-1]
    assert err.error is not None and "different devices" in err.error.explanation


def test_large_cuda_tensor_preview_is_bounded() -> None:
    torch.cuda.synchronize()
    step = run_source("big = torch.ones(20_000_000, device='cuda')", device="cuda").steps[-1]
    rec = step.tensors["big"]
    assert rec.values is None and "min 1. max 1. mean 1." in rec.preview


def test_examples_on_cuda() -> None:
    for name in examples.names():
        result = invoke("run", "--example", name, "--device", "cuda", "-f", "json")
        assert result.exit_code in (0, 1), (name, result.stderr)
        events = [json.loads(x) for x in result.stdout.splitlines()]
        assert events[0]["device"] == "cuda:0" and events[-1]["event"] == "end"


def test_compare_on_cuda_includes_cpu_copy() -> None:
    rows = compare([*STANDARD, 'x.to("cpu")'], SETUPS["leaf"], "cuda:0")
    by = {r.expression: r for r in rows}
    assert by["x.detach()"].shares_storage and by["x.data"].autograd_detects_inplace is False
    cpu = by['x.to("cpu")']
    assert cpu.device == "cpu" and cpu.shares_storage is False and cpu.grad_flows_to_source is True
