"""Notes on what an operation did to tensors that already existed: ``x.data = ...`` and ``x.grad = ...``,
``requires_grad`` set or cleared, a name rebound while another still holds its tensor, ``+=`` that
changed a tensor in place for every name that holds it, and in-place writes that gave a graph
tensor ``CopySlices``.
"""

from __future__ import annotations

from collections.abc import Iterator

from tcopy_cli.explain.facts import StepFacts, agree, names_text, note, quoted_call, storage_text
from tcopy_cli.trace.records import Note, OpRecord, TensorRecord


def effect_notes(f: StepFacts, op: OpRecord, explained: set[str]) -> Iterator[Note]:
    """What an operation did to tensors that already existed: attribute writes, rebinding, in-place views."""
    if op.kind == "setattr":
        yield from _setattr_notes(f, op, explained)
    if op.function in ("requires_grad", "requires_grad_") and "requires_grad" in op.detail.get("before", {}):
        yield from _flag_notes(f, op, explained)
    elif op.kind == "rebind":
        yield from _rebind_notes(f, op)
    if op.kind == "augassign" and op.bumped:
        target = op.inputs[op.bumped[0]]
        res = op.results[0] if op.results else None
        others = [n for n in (res.names if res else []) if n != target.name]
        if target.name and others:
            yield note(
                "change.in-place-augassign",
                f"{quoted_call(op)} changed the tensor {target.name} names in place (the same object, its version "
                f"moved), so {names_text(others)} {'sees' if len(others) == 1 else 'see'} the change too: on a tensor, "
                f"`{target.name} {op.call.split(' ', 2)[1]} ...` is in-place, while `{target.name} = {target.name} "
                f"{op.call.split(' ', 2)[1][:-1]} ...` would make a new tensor and leave "
                f"{names_text(others)} unchanged.",
                [target.name, *others],
                op=op.index,
            )
    yield from _copy_slices(f, op)


def written_tensor(f: StepFacts, op: OpRecord) -> str | None:
    """The step's name for the tensor whose attribute or flag ``op`` wrote (``x`` of ``x.grad = g``)."""
    target = op.inputs[0] if op.inputs and op.inputs[0].role == "self" else None
    if target is None or target.name is None or target.name not in f.tensors:
        return None
    return target.name


def leaf_sharing_tail(f: StepFacts, name: str) -> tuple[str, list[str]]:
    """For a tensor that now requires grad: the names on its memory that require grad too, and a sentence."""
    sharing = [n for n in f.tensors[name].shares_memory_with if n in f.tensors and f.tensors[n].requires_grad]
    if not sharing:
        return "", []
    return (
        f" It shares memory with {names_text(sharing)}, but gradients into {name} won't reach {names_text(sharing)}.",
        sharing,
    )


def _setattr_notes(f: StepFacts, op: OpRecord, explained: set[str]) -> Iterator[Note]:
    t = written_tensor(f, op)
    if t is None:
        return
    replaced = op.detail.get("replaced", [])
    before, after = op.detail.get("before", {}), op.detail.get("after", {})
    r = f.tensors[t]
    if "storage" in replaced:
        explained.add(t)
        changed = before.get("shape") != after.get("shape")
        shape = f"; shape {after.get('shape')}, was {before.get('shape')}" if changed else ""
        old = f.before.get(t)
        kept = [n for n, rec in f.tensors.items() if old is not None and n != t and rec.storage == old.storage]
        tail = (
            f" {names_text(kept)} still {'uses' if len(kept) == 1 else 'use'} the old memory ({old.storage})."
            if (kept and old is not None)
            else ""
        )
        counter = [n for n in kept if r.version_counter and f.tensors[n].version_counter == r.version_counter]
        if counter:  # measured: w keeps its counter, and a w.detach() made before still shares it
            tail += (
                f" {names_text(counter)} still {agree(counter, 'shares', 'share')} {t}'s version counter: an "
                f"in-place write to {t} moves {agree(counter, 'its', 'their')} version too, though it no longer "
                f"changes {agree(counter, 'its', 'their')} values."
            )
        yield note(
            "change.data-swap",
            f"{quoted_call(op)} swapped the memory under {t}: {t} is still the same tensor object (same names, "
            f"requires_grad={r.requires_grad}, same place in the graph) but now uses other memory "
            f"({storage_text(r)}{shape}). Its version counter did not move (version {r.version}), so autograd "
            f"can't tell.{_swap_readers(f, t)}{_swap_dtype(before, after, r, t)}{tail}",
            [t, *kept],
            op=op.index,
        )
    if "grad" in replaced:
        old_grad = f.before[t].grad if t in f.before else None
        holders = [n for n, rec in f.tensors.items() if old_grad is not None and rec.object_id == old_grad.object_id]
        still = (
            f" {names_text(holders)} still {agree(holders, 'holds', 'hold')} the old gradient ({old_grad.preview}): "
            f"{agree(holders, 'it is', 'they are')} the tensor {t}.grad was, and this only dropped {t}'s reference "
            f"to it."
            if holders and old_grad is not None
            else ""
        )
        if not after.get("has_grad"):
            text = (
                f"{quoted_call(op)} removed {t}'s gradient: the next backward stores a fresh {t}.grad instead of "
                f"adding to the old one (what optimizer.zero_grad() does by default).{still}"
            )
        else:
            text = (
                f"{quoted_call(op)} set {t}.grad directly: the next backward adds its gradient to this tensor.{still}"
            )
            if not r.requires_grad:
                text = (
                    f"{quoted_call(op)} set {t}.grad directly; {t} does not require grad, so no backward will add to "
                    f"it (the value stays what was assigned)."
                )
        yield note("change.grad-replaced", text, [t], op=op.index)


def _swap_readers(f: StepFacts, t: str) -> str:
    """What the graph nodes that saved ``t`` read after its memory was swapped, where measured:
    a node that saved ``t`` itself (a leaf, an input) reads the new memory; one that saved a
    copy of the handle (its own output) keeps the old. Only a measured change is told."""
    nodes = list(dict.fromkeys(ev.node for ev in f.step.saved_events if ev.kind == "silent" and ev.tensor == t))
    if not nodes:
        return ""
    return (
        f" {names_text(nodes)} saved {t} for backward and now {'reads' if len(nodes) == 1 else 'read'} the new "
        f"memory: the next backward through {agree(nodes, 'it', 'them')} computes from the new values."
    )


def _swap_dtype(before: dict[str, object], after: dict[str, object], r: TensorRecord, t: str) -> str:
    """A swap that changed the dtype: the gradient keeps its own."""
    if before.get("dtype") == after.get("dtype"):
        return ""
    grad = (
        f" {t}.grad is still {r.grad.dtype}: .data = ... replaces the values, not the gradient."
        if r.grad is not None and r.grad.dtype != r.dtype
        else ""
    )
    return f" {t} is now {after.get('dtype')} (was {before.get('dtype')}).{grad}"


def _flag_notes(f: StepFacts, op: OpRecord, explained: set[str]) -> Iterator[Note]:
    """``x.requires_grad = ...`` or ``x.requires_grad_(...)``: the flag before and after, measured."""
    t = written_tensor(f, op)
    if t is None:
        return
    r = f.tensors[t]
    was, now = bool(op.detail["before"]["requires_grad"]), bool(op.detail["after"]["requires_grad"])
    leaf = bool(op.detail.get("is_leaf"))
    explained.add(t)
    if now and not was:
        tail, sharing = leaf_sharing_tail(f, t)
        text = (
            f"{quoted_call(op)} made {t} a leaf that requires grad: operations on {t} from here on are recorded in "
            f"the graph, and backward fills {t}.grad. Results computed from {t} before this line stay "
            f"unlinked to it.{tail}"
        )
        yield note("change.requires-grad-on", text, [t, *sharing], op=op.index)
    elif was and not now:
        grad = " (the .grad it already has stays)" if op.detail["after"].get("has_grad") else ""
        text = (
            f"{quoted_call(op)}: {t} no longer requires grad: operations on it are no longer recorded, and backward "
            f"will not fill {t}.grad{grad}. It is still a leaf; results computed from it earlier keep their graph."
        )
        yield note("change.requires-grad-off", text, [t], op=op.index)
    elif now and not leaf:
        text = (
            f"{quoted_call(op)} changed nothing: {t} already requires grad, as a non-leaf computed in the graph "
            f"({r.grad_fn}). Backward won't fill {t}.grad; call {t}.retain_grad() before backward to keep it."
        )
        yield note("change.requires-grad-unchanged", text, [t], op=op.index)
    elif now == was:
        text = f"{quoted_call(op)} changed nothing: {t} {'already requires' if now else 'does not require'} grad."
        yield note("change.requires-grad-unchanged", text, [t], op=op.index)


def _rebind_notes(f: StepFacts, op: OpRecord) -> Iterator[Note]:
    held = [n for n in op.detail.get("still_held_by", []) if n != op.function]
    name = op.function
    if not held:
        if "still_held_by" in op.detail:
            yield from _rebind_unheld(f, op, name)
        return
    verb = "holds" if len(held) == 1 else "hold"
    yield note(
        "rebind.still-held",
        f"{quoted_call(op)} bound the name {name} to another object; {names_text(held)} still {verb} the old tensor, "
        f"which this statement did not change (an in-place write such as `{name} += ...` or `{name}.add_(...)` "
        f"would have changed it for {names_text(held)} too).",
        [name, *held],
        op=op.index,
    )


def _rebind_unheld(f: StepFacts, op: OpRecord, name: str) -> Iterator[Note]:
    """``Y = Y + X``: the name now holds another tensor, and no name holds the old one (measured)."""
    new, old = f.tensors.get(name), f.before.get(name)
    if new is None or old is None or new.object_id == old.object_id or new.storage == old.storage:
        return  # (a view of the old tensor is told by its relation note)
    if any(r.storage == new.storage for r in f.before.values()):
        return  # not new memory: ``b = a`` binds b to a tensor already there (its relation note says so)
    if f.step.loops:  # each turn of a loop rebinds its names: routine there, and folded lines show it
        return
    graphs = [n for n, r in f.tensors.items() if old.node_id in r.reach_ids]
    kept = (
        f", though the graph of {names_text(graphs)} still holds it (a backward through "
        f"{agree(graphs, 'it', 'them')} uses the old {name})"
        if graphs
        else ""
    )
    yield note(
        "rebind.new-object",
        f"{quoted_call(op)} bound {name} to a new tensor in new memory ({new.storage}; the old {name} was in "
        f"{old.storage}); no name in the script holds the old {name} any more{kept}. `{name} += ...` or "
        f"`{name}.add_(...)` would have written into the old memory instead.",
        [name, *graphs],
        op=op.index,
    )


def _copy_slices(f: StepFacts, op: OpRecord) -> Iterator[Note]:
    for i in op.bumped:
        inp = op.inputs[i]
        for target, via in ((inp.base, inp), (inp.name, None)):
            if target is None or target not in f.tensors or target not in f.before:
                continue
            now, old = f.tensors[target], f.before[target]
            if now.grad_fn != "CopySlices" or old.grad_fn == "CopySlices":
                continue
            if via is not None:
                text = (
                    f"{quoted_call(op)} wrote in place into {via.name or via.expr}, a view of {target}: autograd "
                    f"rewrote {target}'s history, so {target}.grad_fn is now CopySlices (backward through {target} "
                    f"passes through this write), though {target} itself was not named in the call."
                )
            else:
                text = (
                    f"{quoted_call(op)} wrote in place into part of {target}: {target}.grad_fn is now CopySlices "
                    f"(was {old.grad_fn}), so backward through {target} passes through this write."
                )
            yield note("change.copy-slices", text, [target, *([via.name] if via and via.name else [])], op=op.index)
