"""A loop that resets the gradient before each turn ends is summed up by the norms it had.

Dive into Deep Learning's ``sgd`` zeroes ``param.grad`` right after the update; the PyTorch
tutorial's polynomial fit sets ``a.grad = None``. Each turn then ends with norm 0 or no
``.grad`` at all, so the norms at turn ends say nothing; the summary gives the largest norm
among each turn's steps (what backward put there), checked against plain python.
"""

from __future__ import annotations

import json
import math
from typing import Any

from recorded import run_cli
from typer.testing import Result

SCRIPT = """\
import torch
torch.manual_seed(0)
X = torch.randn(8, 2)
y = X @ torch.tensor([[2.0], [-3.4]]) + 4.2
w = torch.zeros(2, 1, requires_grad=True)
b = torch.zeros(1, requires_grad=True)
for epoch in range(6):
    l = ((X @ w + b - y) ** 2).mean()
    l.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
        b -= 0.1 * b.grad
        w.grad.zero_()
        b.grad = None
"""


def _python() -> dict[str, list[float]]:
    """The norm of each gradient after each turn's backward, from its values as python lists them."""
    import torch

    torch.manual_seed(0)
    X = torch.randn(8, 2)
    y = X @ torch.tensor([[2.0], [-3.4]]) + 4.2
    w = torch.zeros(2, 1, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    out: dict[str, list[float]] = {"w": [], "b": []}
    for _ in range(6):
        l = ((X @ w + b - y) ** 2).mean()  # noqa: E741 - the tutorial's name
        l.backward()
        assert w.grad is not None and b.grad is not None
        out["w"].append(math.sqrt(sum(v * v for row in w.grad.tolist() for v in row)))
        out["b"].append(math.sqrt(sum(v * v for v in b.grad.tolist())))
        with torch.no_grad():
            w -= 0.1 * w.grad
            b -= 0.1 * b.grad
            w.grad.zero_()
            b.grad = None
    return out


def _tcopy(*args: str, script: str = SCRIPT) -> Result:
    result = run_cli(["run", "-e", script, *args])
    assert result.exit_code == 0, result.output
    return result


def test_the_loop_event_carries_each_turns_largest_norm() -> None:
    expected = _python()
    events = [json.loads(line) for line in _tcopy("--format", "json").stdout.splitlines()]
    (loop,) = [e for e in events if e["event"] == "loop"]
    w: dict[str, Any] = loop["tensors"]["w"]
    b: dict[str, Any] = loop["tensors"]["b"]
    assert w["grad_norms_peak"] == expected["w"] and b["grad_norms_peak"] == expected["b"]
    # at each turn's end: zeroed in place (norm 0), or no gradient at all
    assert w["grad_norms"] == [0.0] * 6 and "grad_norms" not in b


def test_the_summary_says_the_largest_norms() -> None:
    expected = _python()
    out = _tcopy("--width", "120").stdout
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("  ⟲ loop at line 7: 6 iterations"))
    rows = {line.split()[0]: line for line in lines[at + 1 : at + 4]}
    first, last = expected["w"][0], expected["w"][-1]
    assert f"largest grad norm in a turn {first:.4g} → {last:.4g} (zero at each turn's end)" in rows["w"], rows
    # a one-element tensor's row is its values' sparkline
    assert "grad norm" not in rows["b"] and "▁" in rows["b"]


def test_a_nan_gradient_stays_in_the_peaks_and_a_gradient_set_then_reset_is_a_change() -> None:
    script = """\
import torch
w = torch.tensor([1.0, 2.0], requires_grad=True)
scale = [1.0, float("nan"), 3.0]
for i in range(3):
    (w * scale[i]).sum().backward()
    w.grad = None
v = torch.tensor([1.0, 2.0], requires_grad=True)
for i in range(3):
    (v * 3.0).sum().backward()
    v.grad = None
"""
    out = _tcopy("--format", "json", script=script).stdout
    loops = [json.loads(line) for line in out.splitlines() if '"event":"loop"' in line.replace(" ", "")]
    import torch

    def norm_after(scale: float) -> float:  # what python's .grad holds after one turn's backward
        t = torch.tensor([1.0, 2.0], requires_grad=True)
        (t * scale).sum().backward()
        assert t.grad is not None
        return math.sqrt(sum(g * g for g in t.grad.tolist()))

    assert loops[0]["tensors"]["w"]["grad_norms_peak"] == [norm_after(1.0), "nan", norm_after(3.0)]
    # the same gradient in every turn, gone by its end: the name's .grad changed in each turn
    assert loops[1]["tensors"]["v"]["grad_norms_peak"] == [norm_after(3.0)] * 3
