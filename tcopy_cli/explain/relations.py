"""Rules for a new or rebound name: how its tensor relates to the others.

Each is a name rule (see facts.py), run for every new name in order; the first three
are exclusive: the same object, else memory shared with another name, else new memory.
"""

from __future__ import annotations

from tcopy_cli.explain.facts import StepFacts, names_text, note, overlaps, storage_text
from tcopy_cli.trace.records import Note, TensorRecord


def same_object(f: StepFacts, name: str) -> list[Note]:
    """``b = a``: another name for the very same tensor."""
    same = f.same_object(name)
    if not same or ":" in name:  # an argument or local naming a tensor the caller has: nothing new
        return []
    return [
        note(
            "relation.same-object",
            f"{name} is the same tensor object as {same[0]}: assignment only adds a name, nothing is "
            f"copied; every change through one name shows through the other.",
            [name, same[0]],
        )
    ]


def shared_memory(f: StepFacts, name: str) -> list[Note]:
    """A view, a detached alias, ``.data``: another tensor on a storage a name already uses."""
    if f.same_object(name):
        return []
    sharing = f.sharing(name)
    if not sharing:
        return []
    b = f.tensors[name]
    # The source: a name b's graph reaches, else one sharing its version counter, else the first.
    src = next((n for n in sharing if n in b.reaches), None)
    src = src or next((n for n in sharing if n in b.shares_version_with), sharing[0])
    a = f.tensors[src]
    kind, text = _alias(name, b, src, a)
    return [note(kind, text, [name, src])]


def _alias(name: str, b: TensorRecord, src: str, a: TensorRecord) -> tuple[str, str]:
    where = f"{src}'s memory (storage {b.storage})"
    disjoint = (
        ""
        if overlaps(a, b)
        else (" They cover different bytes of that storage, so a write to one does not change the other.")
    )
    shared_vc = src in b.shares_version_with
    if src in b.reaches and shared_vc:
        return "relation.view", (
            f"{name} is a view of {src}: same memory ({storage_text(b)}), same version counter, and it "
            f"stays in the graph ({b.grad_fn}). In-place changes to {name} also change {src}; autograd will "
            f"notice. Gradients through {name} flow back into {src}.{disjoint}"
        )
    if shared_vc and b.requires_grad and b.is_leaf:
        return "relation.leaf-on-shared-memory", (
            f"{name} is a new leaf that requires grad on {where}: in-place changes show in both, but "
            f"gradients into {name} stay in {name}.grad and never reach {src}.{disjoint}"
        )
    if shared_vc and not b.requires_grad and a.requires_grad:
        return "relation.detached", (
            f"{name} shares {where} and its version counter but is cut from the graph (no grad_fn, "
            f"requires_grad=False): in-place changes to {name} also change {src} and autograd will notice "
            f"them, but no gradient flows from {name} back to {src}.{disjoint}"
        )
    if shared_vc:
        return "relation.view", (
            f"{name} is a view of {src}: same memory ({storage_text(b)}) and version counter; in-place "
            f"changes to either show in both.{disjoint}"
        )
    if not b.shares_version_with and b.version >= 0 and a.version >= 0:
        return "relation.untracked-alias", (
            f"{name} shares {where} but has its own version counter and no graph (what .data gives): "
            f"in-place changes to {name} also change {src} and autograd will NOT notice, so gradients that "
            f"use {src}'s saved values can be silently wrong.{disjoint}"
        )
    return "relation.shares-memory", f"{name} shares {where}.{disjoint}"


def new_memory(f: StepFacts, name: str) -> list[Note]:
    """A tensor in memory no other name uses: a copy in or out of the graph, or a result."""
    if f.same_object(name) or f.sharing(name):
        return []
    b = f.tensors[name]
    order = f.others(name)
    sources = [n for n in order if n in b.reaches]
    copies = [
        n
        for n in order
        if f.tensors[n].shape == b.shape
        and f.tensors[n].dtype == b.dtype
        and b.values is not None
        and f.tensors[n].values == b.values
    ]
    copy_in_graph = [n for n in sources if n in copies]
    if copy_in_graph:
        src = copy_in_graph[0]
        return [
            note(
                "relation.copy-in-graph",
                f"{name} is a copy of {src} in new memory ({storage_text(b)}) that stays in the graph "
                f"({b.grad_fn}): in-place changes to {name} don't affect {src}, and gradients through "
                f"{name} flow back into {src}.",
                [name, src],
            )
        ]
    if sources and b.grad_fn is not None:
        leaves = [n for n in sources if f.tensors[n].is_leaf and f.tensors[n].requires_grad]
        reach = f"; backward through it sends gradients to {names_text(leaves)}" if leaves else ""
        return [
            note(
                "relation.computed",
                f"{name} is a new tensor in the graph ({b.grad_fn}), computed from {names_text(sources)}{reach}.",
                [name, *sources],
            )
        ]
    if not f.step.grad_enabled and not b.requires_grad:
        return [
            note(
                "relation.no-grad",
                f"{name} was computed with gradient tracking off (no_grad/inference mode): it has no grad_fn "
                f"and requires_grad=False, whatever its inputs were.",
                [name],
            )
        ]
    if copies and not b.reaches:
        src = copies[0]
        return [
            note(
                "relation.independent-copy",
                f"{name} holds the same values as {src} in new memory ({storage_text(b)}) with no autograd "
                f"link to it: an independent copy. Changes to either don't affect the other, and no "
                f"gradient flows from {name} to {src}.",
                [name, src],
            )
        ]
    return []


def rebinding(f: StepFacts, name: str) -> list[Note]:
    """A name that held another tensor before this step: what still holds the old one."""
    old = f.before.get(name)
    if old is None or f.same_object(name):
        return []
    b = f.tensors[name]
    held = [n for n, r in f.tensors.items() if old.node_id in r.reach_ids]
    if old.node_id in b.reach_ids:
        if old.is_leaf and old.requires_grad and not b.is_leaf:
            return [
                note(
                    "rebind.leaf",
                    f"{name} now names a new non-leaf tensor computed from the old {name}. The old leaf still "
                    f"receives gradients, but you can no longer read its .grad through the name {name} (the "
                    f"usual fix: update leaves in place under torch.no_grad()).",
                    [name],
                )
            ]
        return [
            note(
                "rebind.computed-from-old",
                f"The name {name} now refers to a new tensor computed from the old one; the graph still holds "
                f"the old {name}, so backward through earlier results is unaffected.",
                [name],
            )
        ]
    if held:
        return [
            note(
                "rebind.held-by-graph",
                f"The name {name} now refers to a new tensor, but the graph of {names_text(held)} still holds the "
                f"old {name}: rebinding a name does not change what backward computes.",
                [name, *held],
            )
        ]
    return []
