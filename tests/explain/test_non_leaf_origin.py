"""Reading a non-leaf's .grad: the note says which line made the tensor and where its gradient went.

The classic: ``W = torch.randn(..., requires_grad=True) * 0.01`` makes W a non-leaf; the leaf
(the randn tensor) has no name, and ``W.grad`` is None after backward. Found in a published
RNN-from-scratch notebook (``for param in [W_ih, ...]: param.data -= lr * param.grad``).
"""

from __future__ import annotations

import warnings
from typing import Any

import torch

from tcopy_cli.pipeline import run_source

UNNAMED_LEAF = """\
import torch
W = torch.randn(3, 2, requires_grad=True) * 0.01
x = torch.ones(1, 3)
loss = (x @ W).sum()
loss.backward()
for p in [W]:
    g = p.grad
"""

NAMED_LEAF = """\
import torch
w = torch.ones(2, requires_grad=True)
h = w * 2
h.sum().backward()
g = h.grad
"""


def _python(script: str) -> dict[str, Any]:
    ns: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(script, ns)
    return ns


def _note(script: str) -> str:
    notes = [n for s in run_source(script).steps for n in s.explanations if n.kind == "warning.non-leaf-grad"]
    assert len(notes) == 1
    return notes[0].text


def test_an_unnamed_leaf_is_told_with_the_line_that_made_the_tensor() -> None:
    ns = _python(UNNAMED_LEAF)
    w = ns["W"]
    assert not w.is_leaf and ns["g"] is None and type(w.grad_fn).__name__ == "MulBackward0"
    # the gradient went to the randn tensor, which only the graph holds
    leaf = w.grad_fn.next_functions[0][0].variable
    assert leaf.is_leaf and leaf.grad is not None and all(leaf is not v for v in ns.values())

    text = _note(UNNAMED_LEAF)
    assert text.startswith("Reading p.grad gives None: p is not a leaf (grad_fn MulBackward0)")
    assert "W got this tensor at line 2 (`W = torch.randn(3, 2, requires_grad=True) * 0.01`), and p is the same" in text
    assert "tcopy finds no listed name holding a leaf it was computed from" in text
    assert "call .requires_grad_() on the result" in text and "p.retain_grad()" in text


def test_a_named_leaf_is_where_the_gradient_went() -> None:
    ns = _python(NAMED_LEAF)
    assert ns["g"] is None and torch.equal(ns["w"].grad, torch.full((2,), 2.0))

    text = _note(NAMED_LEAF)
    assert "h got this tensor at line 3 (`h = w * 2`)." in text
    assert "The named leaves it was computed from are w: a plain backward() puts the gradients" in text
    assert "finds no listed name" not in text


def test_a_name_bound_in_the_reading_step_is_placed_at_that_step() -> None:
    # p, g = h, h.grad: p gets h's tensor here; its old binding (line 3) held another tensor
    script = """\
import torch
w = torch.ones(2, requires_grad=True)
p = w * 5
h = w * 2
h.sum().backward()
p, g = h, h.grad
"""
    ns = _python(script)
    assert ns["p"] is ns["h"]
    text = _note(script)
    assert "h got this tensor at line 4 (`h = w * 2`)." in text
    assert "line 3" not in text
    # h rebound by the step that read h.grad: which tensor's .grad was read is not told as a line
    rebound = script.replace("p, g = h, h.grad", "h, g = w * 3, h.grad")
    assert "got this tensor" not in _note(rebound)


def test_a_tensor_only_a_loop_header_bound_gets_no_line() -> None:
    # the header `for p in ...` is no step: p did not get its tensor at `g = p.grad`
    script = """\
import torch
w = torch.ones(2, requires_grad=True)
for p in [w * 2]:
    p.sum().backward()
    g = p.grad
"""
    text = _note(script)
    assert "got this tensor" not in text and "The named leaves it was computed from are w" in text


def test_an_error_does_not_place_a_loop_variable_at_the_first_statement_of_the_body() -> None:
    # z is bound by the header; the first body step (print) did not make it
    script = """\
import torch
x = torch.ones(2, requires_grad=True)
for z in [x.detach().sum()]:
    print(1)
    z.backward()
"""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ns: dict[str, Any] = {}
        try:
            exec(script, ns)
        except RuntimeError as exc:
            assert "does not require grad" in str(exc)
    (step,) = [s for s in run_source(script).steps if s.error is not None]
    assert step.error is not None and "made at line" not in step.error.explanation
    # a name the statement binds still gets its line
    bound = script.replace(
        "for z in [x.detach().sum()]:\n    print(1)\n    z.backward()", "z = x.detach().sum()\nz.backward()"
    )
    (step,) = [s for s in run_source(bound).steps if s.error is not None]
    assert step.error is not None and "z was made at line 3 (z = x.detach().sum())" in step.error.explanation
