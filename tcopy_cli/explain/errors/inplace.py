"""In-place writes autograd or memory layout can't allow: version errors, overlapping memory, inference tensors."""

from __future__ import annotations

import re

from tcopy_cli.explain.errors.catalogue import entry
from tcopy_cli.explain.errors.context import ErrorContext, call_sites, listed, out_of_place, parse_statement
from tcopy_cli.explain.facts import Origin


def _culprit_fix(origin: Origin, name: str) -> str:
    """The out-of-place form of the in-place write at ``origin`` into ``name``."""
    writes = [c for c in call_sites(parse_statement(origin.source)) if c.in_place]
    call = next((c for c in writes if c.receiver == name), writes[0] if writes else None)
    if call is None:
        return f"an out-of-place operation there, or {name}.clone() before the change"
    through = (
        f" ({call.receiver} shares {name}'s memory, so writing into it changed {name})" if call.receiver != name else ""
    )
    return f"line {origin.line} as {out_of_place(call)}{through}"


def _changed_at(ctx: ErrorContext, shape: list[int], version: int) -> list[tuple[str, Origin]]:
    """Named tensors of this shape, now at ``version``, with the last step that moved their version."""
    out = []
    for name, key in ctx.keys.items():
        moves = ctx.state.version_moves.get(key, [])
        r = ctx.tensors.get(name)
        if r is not None and moves and r.shape == shape and r.version == version:
            out.append((name, moves[-1]))
    return out


@entry(
    "inplace.version",
    r"one of the variables needed for gradient computation has been modified by an inplace operation: "
    r"\[(?P<what>[^\]]*\[(?P<shape>[\d, ]*)\])\](?:, which is output \d+ of (?P<node>\w+))?, "
    r"is at version (?P<actual>\d+); expected version (?P<expected>\d+)",
)
def version_error(ctx: ErrorContext, m: re.Match[str]) -> str:
    op = m["node"]
    backward = ctx.call("backward", "grad", "torch.autograd.grad")
    here = f"{backward.text if backward else 'This backward'} on {ctx.where}"
    bumps = [b for b in ctx.state.bumps if op is None or b.event.node.startswith(op)] or ctx.state.bumps
    if bumps:
        b = bumps[-1]
        origin = Origin(b.index, b.line, b.source)
        return (
            f"{here} needs {b.event.tensor} as {b.event.node} saved it (version {b.event.saved_version}) to compute "
            f"gradients, but {origin} changed {b.event.tensor} in place afterwards (now version {m['actual']}). "
            "Backward would use the changed values, so torch refuses. "
            f"Fix: write {_culprit_fix(origin, b.event.tensor)}, "
            f"or clone() {b.event.tensor} before that change and use the clone."
        )
    shape = [int(d) for d in m["shape"].replace(" ", "").split(",") if d]
    suspects = _changed_at(ctx, shape, int(m["actual"]))
    if suspects:
        name, origin = suspects[-1]
        return (
            f"{here} needs a {m['what']} tensor saved at version {m['expected']}"
            f"{' (output of ' + op + ')' if op else ''}; it is now at version {m['actual']}. {name} has that shape "
            f"and version, and {origin} changed it in place. Fix: write {_culprit_fix(origin, name)}, or clone() "
            f"{name} before that change."
        )
    return (
        f"{here}: autograd saved a {m['what']} tensor at version {m['expected']} to compute gradients, but an "
        f"in-place operation changed it afterwards (now at version {m['actual']}). Fix: use the out-of-place form "
        "(x = x * 2 instead of x.mul_(2) or x *= 2), or clone() the tensor before changing it in place."
    )


@entry(
    "inplace.overlap",
    r"unsupported operation: (?:more than one element of the written-to tensor refers to a single memory location"
    r"|some elements of the input tensor and the written-to tensor refer to a single memory location)",
)
def overlap(ctx: ErrorContext, m: re.Match[str]) -> str:
    call = ctx.call(in_place=True)
    name = ctx.tensor(call.receiver) if call else None
    if call is None or name is None:
        return (
            "The in-place write would store several results into one memory location (a tensor made by expand() "
            "or an overlapping view). Fix: clone() the tensor before writing into it."
        )
    r = ctx.record(name)
    zero = [i for i, s in enumerate(r.stride) if s == 0 and r.shape[i] > 1]
    how = (
        f"{name} has stride 0 in dim {listed(map(str, zero))}{ctx.made_at(name)}: expand repeats elements without "
        f"copying, so several of them share one memory location"
        if zero
        else f"{name}'s elements overlap in memory{ctx.made_at(name)}"
    )
    return (
        f"{call.text} on {ctx.where} writes into {name}, but {how}: one write per element would land on the same "
        f"bytes several times. Fix: {name} = {name}.clone() first (real memory for every element), or "
        f"{out_of_place(call)}."
    )


def _inference(ctx: ErrorContext, names: list[str]) -> list[str]:
    # Inference tensors have no version counter; the record says -1.
    return [n for n in names if ctx.record(n).version == -1]


@entry("inference.saved", r"Inference tensors cannot be saved for backward")
def inference_saved(ctx: ErrorContext, m: re.Match[str]) -> str:
    culprits = _inference(ctx, ctx.used)
    call = ctx.call(in_place=False)
    who = listed(culprits) or "an inference tensor"
    made = "".join(ctx.made_at(n) for n in culprits[:1])
    first = culprits[0] if culprits else "t"
    return (
        f"{call.text if call else 'This operation'} on {ctx.where} uses {who}, created inside "
        f"torch.inference_mode(){made}, together with a tensor that requires grad; autograd would have to save "
        f"{who} for backward, and inference tensors can't be saved. Fix: {first} = {first}.clone() before this line "
        f"(a normal tensor), or create it under torch.no_grad() instead of inference_mode()."
    )


@entry("inference.in-place", r"Inplace update to inference tensor outside InferenceMode is not allowed")
def inference_in_place(ctx: ErrorContext, m: re.Match[str]) -> str:
    call = ctx.call(in_place=True)
    who = (ctx.tensor(call.receiver) or ctx.tensor(call.arg(0))) if call else None
    op = call.text if call else "This in-place operation"
    if who is None:
        return (
            f"{op} on {ctx.where} writes into an inference tensor (made under torch.inference_mode()); outside "
            f"inference_mode() torch refuses in-place writes to those. Fix: clone() it first (a normal tensor), "
            f"or do the write inside a torch.inference_mode() block."
        )
    changed = ctx.changed_values(who)
    after = (
        f" It refused only after writing: {who}'s values did change ({changed[0]} → {changed[1]})."
        if changed is not None
        else ""
    )
    return (
        f"{op} on {ctx.where} writes into {who}, an inference tensor with no version counter{ctx.made_at(who)}; "
        f"outside inference_mode() torch refuses in-place writes to those.{after} Fix: {who} = "
        f"{who}.clone() before writing, or do the write inside a torch.inference_mode() block."
    )
