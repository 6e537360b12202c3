"""The untracked-write note names the write and the alias it went through, from the record.

A tensor whose values changed while its version counter stood still was written through an
alias with its own counter. When the step's operation record shows the write (an in-place
call on ``x.data``, on a named tensor on the same memory with another counter, or an
augmented assignment / item write on a NumPy array on that memory), the note names that
call and alias; each case is checked against plain torch: the alias shares the memory, the
write moves the values and not the tensor's version.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tcopy_cli.pipeline import run_source

HEAD = "import torch\nx = torch.ones(3, requires_grad=True)\ny = x * x\n"

CASES = {
    # script tail: (call named in the note, alias named in the note)
    "x.data.add_(1)": ("`x.data.add_(1)`", "`x.data`, an alias with its own version counter"),
    "z = x.data\nz.mul_(2)": ("`z.mul_(2)`", "z, which shares x's memory but not its version counter"),
    "n = x.detach().numpy()\nn += 1": ("`n += 1`", "n, a NumPy array on the same memory"),
    "n = x.detach().numpy()\nn[0] = 5": ("`n[0] = 5`", "n, a NumPy array on the same memory"),
}


def _plain(tail: str) -> dict[str, object]:
    """Run the script in plain Python, the last statement apart; what it did to x."""
    space: dict[str, object] = {"torch": torch, "np": np}
    *first, last = (HEAD + tail).split("\n")
    exec("\n".join(first), space)
    x = space["x"]
    assert isinstance(x, torch.Tensor)
    version, values = x._version, x.detach().clone()
    exec(last, space)
    return {"same_version": x._version == version, "changed": not torch.equal(values, x.detach()), **space}


@pytest.mark.parametrize("tail", CASES)
def test_the_note_names_the_write_and_the_alias(tail: str) -> None:
    plain = _plain(tail)
    assert plain["same_version"] and plain["changed"]  # what makes the write untracked
    alias = plain.get("z", plain.get("n"))
    if isinstance(alias, torch.Tensor):  # same memory, another counter
        x = plain["x"]
        assert isinstance(x, torch.Tensor)
        assert alias.data_ptr() == x.data_ptr()
        before = x._version
        alias.add_(0)
        assert x._version == before
    elif isinstance(alias, np.ndarray):
        x = plain["x"]
        assert isinstance(x, torch.Tensor)
        assert np.shares_memory(alias, x.detach().numpy())
    trace = run_source(HEAD + tail, origin="<t>")
    last = trace.steps[-1]
    texts = [n.text for n in last.explanations if n.kind == "change.untracked-write"]
    call, alias_text = CASES[tail]
    assert texts == [
        f"x's values changed but its version counter did not: {call} wrote into its memory through "
        f"{alias_text}, so autograd cannot notice it."
    ]


def test_a_write_through_a_shared_counter_is_not_untracked() -> None:
    """detach() shares the counter: the write is seen (version moves), so no untracked note."""
    trace = run_source(HEAD + "d = x.detach()\nd.add_(1)", origin="<t>")
    kinds = [n.kind for n in trace.steps[-1].explanations]
    assert "change.untracked-write" not in kinds and "change.in-place" in kinds
