"""Rules that explain the warnings torch raised during a step."""

from __future__ import annotations

from tcopy_cli.explain.errors.context import mentions, parse_statement
from tcopy_cli.explain.facts import Origin, StepFacts, binds, names_text, note, plain_name, stored_names
from tcopy_cli.trace.records import Note
from tcopy_cli.trace.values import code_span


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
        f"gradients only for leaves.{_non_leaf_origin(f, t)}",
        names,
    )


def _non_leaf_origin(f: StepFacts, t: str) -> str:
    """Where the non-leaf ``t`` came from (the earliest step at which a name that holds it now got
    it), the named leaves its graph reaches (where a plain backward() puts its gradients), and the
    fixes. ``t`` bound by this very statement (``h, g = w * 3, h.grad``) is not placed: the .grad read
    may have been of the tensor it held before."""
    r = f.tensors[t]
    holders = [t, *f.same_object(t)]
    stored = stored_names(f.step.source)
    where = ""
    if not binds(stored, t):
        # The earliest step whose statement bound a name that holds the tensor now: this one, or
        # one the explain state kept (a name a loop header or a call bound has no line of its own,
        # nor has an item or an attribute).
        found = [(Origin.of(f.step), n) for n in holders if n in f.new_names and binds(stored, n)]
        found += [
            (f.state.bound_at[n], n)
            for n in holders
            if n not in f.new_names and plain_name(n) and n in f.state.bound_at
        ]
        if found:
            first, name = min(found, key=lambda item: (item[0].index, item[1]))
            where = f" {name} got this tensor at line {first.line} ({code_span(first.source)})" + (
                f", and {t} is the same tensor." if name != t else "."
            )
    leaves = [n for n in r.reaches if f.tensors[n].is_leaf and f.tensors[n].requires_grad]
    if leaves:
        return (
            f"{where} The named leaves it was computed from are {names_text(leaves)}: a plain backward() puts "
            f"the gradients through it in their .grad. Call {t}.retain_grad() before backward() to keep {t}'s "
            f"own gradient too."
        )
    return (
        f"{where} tcopy finds no listed name holding a leaf it was computed from (torch.randn(..., "
        f"requires_grad=True) * 0.01, for one, leaves its leaf unnamed). To train {t} itself, make it the leaf: "
        f"compute its value first, then call .requires_grad_() on the result; or call {t}.retain_grad() before "
        f"backward() to keep its gradient."
    )
