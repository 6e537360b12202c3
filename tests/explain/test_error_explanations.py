"""Error explanations: the catalogue's words, and the earlier step that caused the error."""

from __future__ import annotations

import pytest

from tcopy_cli.pipeline import run_source

LEAF = "a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\n"


def error_of(src: str) -> tuple[str, str, str]:
    step = run_source(src).steps[-1]
    assert step.error is not None
    return step.error.type, step.error.message, step.error.explanation


def test_explains_inplace_error_with_the_earlier_step() -> None:
    _, _, why = error_of(
        "x = torch.ones(3, requires_grad=True)\ny = x.sigmoid()\nz = y + 1\ny.mul_(2)\ny.sum().backward()"
    )
    assert "needs y as SigmoidBackward0 saved it (version 0)" in why
    assert "step 4 (line 4: y.mul_(2))" in why


@pytest.mark.parametrize(
    ("src", "phrase"),
    [
        (LEAF + "a.add_(1)", "a leaf that requires grad"),
        (LEAF + "y = (a * a).sum()\ny.backward()\ny.backward()", "the backward in step 3"),
        ("a = torch.ones(2)\n(a * 2).sum().backward()", "nothing leads back to a tensor that requires grad"),
        (LEAF + "(a * 2).backward()", "single-element tensor"),
        ("import copy\n" + LEAF + "b = a * 2\nc = copy.deepcopy(b)", "deepcopy only copies leaves"),
        ("a = torch.ones(2, device='meta')\nb = a + torch.ones(2)", "different devices"),
        ("a = torch.ones(2, dtype=torch.long)\na.add_(0.5)", "which is int64"),
        ("a = torch.ones(2, 2)\nb = a.mm(torch.ones(2, 2, dtype=torch.float64))", "dtypes"),
        ("a = torch.ones(2, dtype=torch.long)\na.requires_grad_()", "floating-point"),
    ],
)
def test_error_explanations(src: str, phrase: str) -> None:
    _, message, why = error_of(src)
    assert phrase in why, (message, why)


def test_unknown_error_keeps_message() -> None:
    t, message, why = error_of("a = torch.ones(2)\nb = torch.linalg.inv(a)")
    assert t == "RuntimeError" and "at least 2 dimensions" in message
    assert "no further explanation" in why
