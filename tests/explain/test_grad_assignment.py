"""``x.grad = ...`` is an assignment, not a backward: the notes say what the record shows.

Found measuring outside snippets (pytorch issues 3307 and 95711): the grad rule called an
assigned ``.grad`` "backward put a gradient into", next to the record's own "set directly".
Each case is checked against plain torch: whether the tensor requires grad, and whether
the grad is the assigned object.
"""

from __future__ import annotations

import pytest
import torch

from tcopy_cli.pipeline import run_source

CASES = {
    # script: (tensor, requires grad in plain torch)
    "a = torch.zeros(1)\na.grad = torch.ones(1)": ("a", False),
    "c = torch.nn.Linear(1, 2)\nc.weight.grad = torch.rand((2, 1))": ("c.weight", True),
    "w = torch.ones(2, requires_grad=True)\n(w * w).sum().backward()\nw.grad = torch.zeros(2)": ("w", True),
}


@pytest.mark.parametrize("src", CASES)
def test_an_assigned_grad_is_not_called_backward(src: str) -> None:
    name, requires = CASES[src]
    space: dict[str, object] = {"torch": torch}
    *head, last = src.split("\n")
    exec("\n".join(head), space)
    target = eval(name, space)
    assert isinstance(target, torch.Tensor) and target.requires_grad is requires
    exec(last, space)
    texts = [n.text for n in run_source("import torch\n" + src, origin="<t>").steps[-1].explanations]
    assert not any("backward put" in t or "backward added" in t for t in texts), texts
    (said,) = [t for t in texts if "set " + name + ".grad directly" in t]
    if requires:
        assert "the next backward adds its gradient to this tensor" in said
    else:
        assert "does not require grad, so no backward will add to it" in said


def test_a_write_through_an_index_of_a_leaf_names_the_leaf() -> None:
    src = "import torch\nbad = torch.zeros(2, 2, requires_grad=True)\nbad[0, 0] = 1.0"
    bad = torch.zeros(2, 2, requires_grad=True)
    assert bad.is_leaf and not bad._is_view()
    with pytest.raises(RuntimeError, match="view of a leaf Variable"):
        bad[0, 0] = 1.0
    error = run_source(src, origin="<t>").steps[-1].error
    assert error is not None and "into bad, a leaf that requires grad" in error.explanation


def test_rebinding_a_name_with_no_other_holder_is_told() -> None:
    """``Y = Y + X`` (outside snippet: d2l's memory section): a new object in new memory."""
    src = "import torch\nX = torch.ones(2)\nY = torch.zeros(2)\nY = Y + X\nY = Y.view(2, 1)"
    X, Y = torch.ones(2), torch.zeros(2)
    before = (id(Y), Y.data_ptr())
    Y = Y + X
    assert id(Y) != before[0] and Y.data_ptr() != before[1]  # plain torch: another object, other memory
    steps = run_source(src, origin="<t>").steps
    rebind = [n.text for n in steps[3].explanations if n.kind == "rebind.new-object"]
    assert len(rebind) == 1 and "bound Y to a new tensor in new memory (S3; the old Y was in S2)" in rebind[0]
    assert not [n for n in steps[4].explanations if n.kind == "rebind.new-object"]  # a view: same memory
