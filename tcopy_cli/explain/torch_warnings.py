"""Rules that explain the warnings torch raised during a step."""

from __future__ import annotations

from tcopy_cli.explain.errors.context import mentions, parse_statement
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
                    "torch suggests t.detach().clone() (or .requires_grad_(True) after it) to say that explicitly.",
                )
            )
        elif ".grad attribute of a Tensor that is not a leaf" in w:
            notes.append(_non_leaf_grad(f))
    return notes


def _non_leaf_grad(f: StepFacts) -> Note:
    """The non-leaf .grad warning, naming the tensors whose .grad the statement read."""
    read = [
        n for n in mentions(parse_statement(f.step.source)) if n.endswith(".grad") and n[: -len(".grad")] in f.tensors
    ]
    names = [n[: -len(".grad")] for n in dict.fromkeys(read) if not f.tensors[n[: -len(".grad")]].is_leaf]
    if not names:
        return note(
            "warning.non-leaf-grad",
            "Reading .grad of a non-leaf tensor gives None: autograd keeps gradients only for leaves. "
            "Call t.retain_grad() before backward() to keep it.",
        )
    t = names[0]
    return note(
        "warning.non-leaf-grad",
        f"Reading {t}.grad gives None: {t} is not a leaf (grad_fn {f.tensors[t].grad_fn}), and autograd keeps "
        f"gradients only for leaves. Call {t}.retain_grad() before backward() to keep it.",
        names,
    )
