"""Notes: plain sentences about what a step did, derived from observed facts."""

from __future__ import annotations

from tcopy_cli.trace.records import TensorRecord


def warning_notes(warnings: list[str]) -> list[str]:
    """Explain the torch warnings a step raised."""
    notes: list[str] = []
    for w in warnings:
        if "To copy construct from a tensor" in w:
            notes.append(
                "torch.tensor(t) / t.new_tensor(t) copied the data into a new tensor with no "
                "autograd history; torch suggests t.clone().detach() (or .requires_grad_(True) "
                "after it) to say that explicitly."
            )
        elif ".grad attribute of a Tensor that is not a leaf" in w:
            notes.append(
                "Reading .grad of a non-leaf tensor gives None: autograd keeps gradients only "
                "for leaves. Call t.retain_grad() before backward() to keep it."
            )
    return notes


def step_notes(before: dict[str, TensorRecord], after: dict[str, TensorRecord], warnings: list[str]) -> list[str]:
    """All notes for one step."""
    return warning_notes(warnings)
