"""Rules that explain the warnings torch raised during a step."""

from __future__ import annotations

from tcopy_cli.explain.facts import StepFacts, note
from tcopy_cli.trace.records import Note


def torch_warnings(f: StepFacts) -> list[Note]:
    """Copy-construct and non-leaf .grad warnings, in plain words."""
    notes: list[Note] = []
    for w in f.step.warnings:
        if "To copy construct from a tensor" in w:
            notes.append(
                note(
                    "warning.copy-construct",
                    "torch.tensor(t) / t.new_tensor(t) copied the data into a new tensor with no autograd history; "
                    "torch suggests t.clone().detach() (or .requires_grad_(True) after it) to say that explicitly.",
                )
            )
        elif ".grad attribute of a Tensor that is not a leaf" in w:
            notes.append(
                note(
                    "warning.non-leaf-grad",
                    "Reading .grad of a non-leaf tensor gives None: autograd keeps gradients only for leaves. "
                    "Call t.retain_grad() before backward() to keep it.",
                )
            )
    return notes
