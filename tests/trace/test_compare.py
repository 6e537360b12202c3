"""``tcopy compare``: every cell checked against plain PyTorch."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch
from cli_runs import invoke

from tcopy_cli.render.jsonl import comparison_json
from tcopy_cli.trace.compare import SETUPS, STANDARD, compare


def _plain(expression: str, nonleaf: bool) -> dict[str, object]:
    """What plain PyTorch says about y = expression, by direct experiment."""

    def make() -> tuple[torch.Tensor, torch.Tensor]:
        torch.manual_seed(0)
        leaf = torch.randn(3, requires_grad=True)
        x = leaf * 2 if nonleaf else leaf
        if nonleaf:
            x.retain_grad()
        return leaf, x

    env = {"torch": torch, "copy": copy}
    warnings.simplefilter("ignore")
    _, x = make()
    try:
        y = eval(expression, env, {"x": x})
    except RuntimeError as exc:
        return {"error": type(exc).__name__}
    out: dict[str, object] = {
        "new_object": y is not x,
        "shares_storage": y.untyped_storage().data_ptr() == x.untyped_storage().data_ptr(),
        "same_data_ptr": y.data_ptr() == x.data_ptr(),
        "requires_grad": y.requires_grad,
        "is_leaf": y.is_leaf,
        "grad_fn": type(y.grad_fn).__name__ if y.grad_fn is not None else None,
    }
    _, x = make()
    y = eval(expression, env, {"x": x})
    try:
        y.sum().backward()
        out["grad_flows_to_source"] = x.grad is not None and bool((x.grad != 0).any())
    except RuntimeError:
        out["grad_flows_to_source"] = False
    _, x = make()
    y = eval(expression, env, {"x": x})
    before = x.detach().clone()
    with torch.no_grad():
        y.add_(1)
    visible = not torch.equal(before, x.detach())
    out["inplace_visible_in_source"] = visible
    if visible:
        _, x = make()
        z = (x * x).sum()
        y = eval(expression, env, {"x": x})
        with torch.no_grad():
            y.add_(1)
        try:
            z.backward()
            out["autograd_detects_inplace"] = False
        except RuntimeError:
            out["autograd_detects_inplace"] = True
    else:
        out["autograd_detects_inplace"] = None
    # version counter: bump y, see whether x's counter moves
    _, x = make()
    y = eval(expression, env, {"x": x})
    v = x._version
    with torch.no_grad():
        y.add_(0)
    out["shares_version_counter"] = x._version != v
    return out


@pytest.mark.parametrize("source", ["leaf", "nonleaf"])
def test_compare_matches_plain_pytorch(source: str) -> None:
    rows = compare(STANDARD, SETUPS[source])
    assert [r.expression for r in rows] == STANDARD
    for row in rows:
        expected = _plain(row.expression, source == "nonleaf")
        got = comparison_json(row)
        if "error" in expected:
            assert got["error"] is not None and got["error"]["type"] == expected["error"], row.expression
            continue
        for key, value in expected.items():
            assert got[key] == value, (row.expression, key, got[key], value)
        if row.expression in ("x.new_tensor(x)", "torch.tensor(x)"):
            assert any("copy construct" in w for w in row.warnings)


def test_compare_cli_json_has_required_fields() -> None:
    result = invoke("compare", "x.clone()", "x.data", "-f", "json")
    assert result.exit_code == 0
    import json

    rows = [json.loads(x) for x in result.stdout.splitlines()]
    required = {
        "expression",
        "new_object",
        "shares_storage",
        "same_data_ptr",
        "shares_version_counter",
        "requires_grad",
        "is_leaf",
        "grad_fn",
        "grad_flows_to_source",
        "inplace_visible_in_source",
        "autograd_detects_inplace",
        "warnings",
        "error",
    }
    assert all(required <= set(r) for r in rows)
    assert rows[1]["autograd_detects_inplace"] is False  # .data: silent
    assert rows[0]["grad_flows_to_source"] is True and rows[0]["shares_storage"] is False
    result = invoke("compare", "__import__('os')", "-f", "json")
    (row,) = [json.loads(x) for x in result.stdout.splitlines()]
    message = "y = __import__('os') is not a tensor: there is nothing to compare"
    assert row["error"] == {"type": "TypeError", "message": message}
    result = invoke("compare", "--source", "weird")
    assert result.exit_code == 2
    result = invoke("compare", "x.clone()", "-f", "markdown")
    assert result.exit_code == 0 and "| `x.clone()` |" in result.stdout
