"""Rules that explain the warnings torch raised during a step."""

from __future__ import annotations

from tcopy_cli.explain.errors.context import mentions, parse_statement
from tcopy_cli.explain.facts import Origin, StepFacts, names_text, note, stored_names
from tcopy_cli.trace.records import Note, script_name
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
    here = f.step.index
    holders = [t, *f.same_object(t)]
    got = sorted(
        (here if n in f.new_names else f.state.bound_at[n].index, n)
        for n in holders
        if n in f.new_names or n in f.state.bound_at
    )
    # names this statement bound (not a loop header before it): ``h, g = w * 3, h.grad`` read the old h's .grad
    line = f.step.line  # a loop header's binding is carried into the step: its line is above the statement
    bound_here = {
        res.name for op in f.step.ops if op.kind in ("bind", "rebind") and op.line >= line for res in op.results
    }
    where = ""
    if t not in bound_here:
        # the first step whose statement bound one of the names (a name that first shows at a step
        # a loop header or a call bound it for has no line of its own)
        for index, name in got:
            first = Origin.of(f.step) if index == here else f.state.origins.get(index)
            if first is not None and (
                name in bound_here if index == here else script_name(name) in stored_names(first.source)
            ):
                where = f" {name} got this tensor at line {first.line} ({code_span(first.source)})" + (
                    f", and {t} is the same tensor." if name != t else "."
                )
                break
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
