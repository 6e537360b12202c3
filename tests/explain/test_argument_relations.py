"""New function arguments that share memory: notes say only what the run measured.

A function's arguments appear when its first statement is reported; the operation that made
them belongs to the caller's statement, reported later. Unpacking ``f(*p)`` gives two views
of p (w and b, siblings); neither is a view of the other, and p is not "on w's memory".
Found in the training loop of Deep Learning with PyTorch, chapter 5 (``model(t_u, *params)``).
"""

from __future__ import annotations

from typing import Any

from tcopy_cli.pipeline import run_source
from tcopy_cli.trace.graph import version_groups

SCRIPT = """\
import torch
def f(w, b):
    return w + b
def g(p):
    y = f(*p)
    return y
out = g(torch.tensor([1.0, 2.0], requires_grad=True))
"""


def _python_frame() -> dict[str, Any]:
    """f's arguments and g's p, as plain python binds them."""
    import torch

    seen: dict[str, Any] = {}

    def f(w: Any, b: Any) -> Any:
        seen.update(w=w, b=b)
        return w + b

    def g(p: Any) -> Any:
        seen["p"] = p
        return f(*p)

    g(torch.tensor([1.0, 2.0], requires_grad=True))
    return seen


def test_sibling_views_are_not_called_views_of_each_other() -> None:
    seen = _python_frame()
    w, b, p = seen["w"], seen["b"], seen["p"]
    # plain python: both are views of p, neither of the other; one storage, one version counter
    assert w._base is p and b._base is p
    assert w.untyped_storage().data_ptr() == b.untyped_storage().data_ptr() == p.untyped_storage().data_ptr()
    assert version_groups([[("w", w), ("b", b)]])["w"] == ["b"]

    (step,) = [s for s in run_source(SCRIPT).steps if s.line == 3]
    texts = [n.text for n in step.explanations]
    assert not any("f:w is a view of f:b" in t or "f:b is a view of f:w" in t for t in texts), texts
    shared = [t for t in texts if t.startswith(("f:w shares f:b's memory", "f:b shares f:w's memory"))]
    assert len(shared) == 2 and all("or both from one tensor" in t for t in shared), texts
    # they cover different bytes: a write to one leaves the other's values, but moves the shared counter
    assert all("does not change the other's values" in t for t in shared)
    before = b.clone()
    with __import__("torch").no_grad():
        w.add_(1)
    assert b.equal(before) and b._version == w._version == 1


def test_the_base_is_not_said_to_be_on_its_views_memory() -> None:
    (step,) = [s for s in run_source(SCRIPT).steps if s.line == 3]
    about_p = [n for n in step.explanations if "g:p" in n.tensors]
    # p was made by the caller's expression; its views w and b were computed from it
    assert not any(n.kind == "relation.leaf-on-shared-memory" for n in about_p), [n.text for n in about_p]
    assert "g:p" in step.tensors["f:w"].reaches and "g:p" in step.tensors["f:b"].reaches


def test_a_leaf_made_on_another_tensors_memory_is_still_told() -> None:
    # w.detach().requires_grad_() without a record of it (a function's argument): the leaf note stays
    script = """\
import torch
def h(q, v):
    return q * v
w = torch.ones(2, requires_grad=True)
r = h(w.detach().requires_grad_(), w)
"""
    (step,) = [s for s in run_source(script).steps if s.line == 3]
    kinds = {n.kind: n.text for n in step.explanations}
    assert kinds.get("relation.leaf-on-shared-memory", "").startswith("h:q is a new leaf that requires grad on h:v's")


def test_interleaved_and_detached_arguments_are_not_said_to_show_each_others_writes() -> None:
    import torch

    script = """\
import torch
def f(a, b):
    return a.sum() + b.sum()
n = torch.zeros(6)
x = torch.ones(4, requires_grad=True)
r = f(n[::2], n[1::2])
s = f(x.detach(), x.detach())
"""
    # plain python: interleaved views share no element; a detached alias is no view at all
    n = torch.zeros(6)
    a, b = n[::2], n[1::2]
    a.add_(1)
    assert b.eq(0).all() and a._version == b._version == 1
    x = torch.ones(4, requires_grad=True)
    assert x.detach()._base is None and not x.detach()._is_view()

    notes = [n for s in run_source(script).steps if s.line == 3 for n in s.explanations]
    shared = [n for n in notes if n.kind == "relation.shared-counter"]
    assert len(shared) == 4, [n.text for n in notes]
    for note in shared:
        assert "show in both" not in note.text and "is a view of" not in note.text
        assert "one was made from the other (a view or .detach()), or both from one tensor" in note.text
        assert "a write through one may change the other" in note.text
