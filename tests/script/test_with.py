"""with: the grad-mode context managers. Each runs through tcopy and under plain Python."""

from __future__ import annotations

import pytest
import torch

from script.snippets import (
    assert_same_as_python,
    last,
    run,
)

# --- grad mode -----------------------------------------------------------------------


def test_grad_mode_context_managers() -> None:
    trace = assert_same_as_python(
        """
        a = torch.ones(2, requires_grad=True)
        with torch.no_grad():
            b = a * 2
            print(torch.is_grad_enabled())
        with torch.enable_grad():
            c = a * 2
        with torch.inference_mode():
            d = a * 2
            print(torch.is_inference_mode_enabled())
        with torch.set_grad_enabled(False):
            e = a * 2
        with torch.no_grad():
            with torch.enable_grad():
                f = a * 2
        with torch.no_grad(), torch.enable_grad():
            g = a * 2
        print(b.requires_grad, c.requires_grad, d.requires_grad, e.requires_grad, f.requires_grad, g.requires_grad)
        print(torch.is_grad_enabled(), torch.is_inference_mode_enabled())
        """
    )
    tensors = last(trace).tensors
    assert tensors["b"].grad_fn is None and tensors["c"].grad_fn == "MulBackward0"


@pytest.mark.parametrize(
    "src",
    [
        "with torch.no_grad():\n    x = 1 / 0",
        "with torch.inference_mode():\n    x = 1 / 0",
        "with torch.set_grad_enabled(False):\n    x = 1 / 0",
        "torch.set_grad_enabled(False)\nx = 1 / 0",
        "torch.set_grad_enabled(False)",
        "with torch.no_grad():\n    with torch.inference_mode():\n        x = 1 / 0",
    ],
)
@pytest.mark.parametrize("keep_going", [False, True])
def test_grad_mode_restored_after_the_run(src: str, keep_going: bool) -> None:
    assert torch.is_grad_enabled()
    run(src, keep_going=keep_going)
    assert torch.is_grad_enabled()
    assert not torch.is_inference_mode_enabled()


def test_default_dtype_restored_after_the_run() -> None:
    before = torch.get_default_dtype()
    trace = run("torch.set_default_dtype(torch.float64)\na = torch.ones(1)\nx = 1 / 0")
    assert trace.steps[1].tensors["a"].dtype == "float64"
    assert torch.get_default_dtype() == before
