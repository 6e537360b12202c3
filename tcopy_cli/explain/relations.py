"""Fallback rules for a new or rebound name that no operation-record note explained.

Each is a name rule (see facts.py), run for every new name in order; the first three
are exclusive: the same object, else memory shared with another name, else new memory.
They state only what direct measurement supports (object identity, storage, version
counter sharing, graph reach), and where the step has an operation record they name as
a source only a tensor the record lists among the step's inputs. Equal values are never
taken as provenance.
"""

from __future__ import annotations

from dataclasses import dataclass

from tcopy_cli.explain.facts import Origin, StepFacts, names_text, note, overlaps, storage_text
from tcopy_cli.explain.ops import explained_names, step_input_names
from tcopy_cli.explain.provenance import disjoint_text, inference_note
from tcopy_cli.trace.records import Note, OpInput, TensorRecord
from tcopy_cli.trace.scriptnames import is_local
from tcopy_cli.trace.values import code_span


def _candidates(f: StepFacts, name: str, names: list[str]) -> list[str]:
    """``names`` that may be named as a source of ``name``: none once an op note explained
    it; with an operation record, only the step's inputs."""
    if name in explained_names(f):
        return []
    if not f.step.ops:
        return names
    allowed = step_input_names(f.step.ops)
    return [n for n in names if n in allowed]


def same_object(f: StepFacts, name: str) -> list[Note]:
    """``b = a``: another name for the very same tensor."""
    # Identity is measured (the same object), not provenance: any name may be said to hold it.
    same = [] if name in explained_names(f) else f.same_object(name)
    if not same or is_local(name):  # an argument or local naming a tensor the caller has: nothing new
        return []
    return [
        note(
            "relation.same-object",
            f"{name} is the same tensor object as {same[0]}: assignment only adds a name, nothing is "
            f"copied; every change through one name shows through the other.",
            [name, same[0]],
        )
    ]


def _told(f: StepFacts, name: str) -> bool:
    """Whether ``grad_alias`` or ``same_node`` told what ``name`` is (the rules after them are fallbacks)."""
    return any(n.kind in ("relation.grad-alias", "relation.same-node") and n.tensors[:1] == (name,) for n in f.notes)


def grad_alias(f: StepFacts, name: str) -> list[Note]:
    """``g = w.grad``: a name for the very tensor another tensor holds as its ``.grad`` (measured identity)."""
    b = f.tensors[name]
    owners = [n for n in f.others(name) if (g := f.tensors[n].grad) is not None and g.object_id == b.object_id]
    if not owners or is_local(name) or f.same_object(name):
        return []
    owner = owners[0]
    return [
        note(
            "relation.grad-alias",
            f"{name} is {owner}.grad itself (the same tensor object, not a copy): a backward that adds into "
            f"{owner}.grad writes into it in place, so {name} changes too. Once {owner}.grad is replaced "
            f"({owner}.grad = None, or zero_grad(), which sets it to None by default), {name} keeps the old "
            f"gradient; {owner}.grad.clone() would be a snapshot instead.",
            [name, owner],
        )
    ]


def same_node(f: StepFacts, name: str) -> list[Note]:
    """Another tensor object at the same place in the graph, on the same memory and version counter
    (``s = y.grad_fn._saved_result``: what autograd saved is not ``y`` itself)."""
    b = f.tensors[name]
    if b.grad_fn is None or name in explained_names(f) or f.same_object(name):
        return []
    for other in f.others(name):
        a = f.tensors[other]
        if a.node_id != b.node_id or a.storage != b.storage or a.object_id == b.object_id:
            continue
        counter = " and version counter" if other in b.shares_version_with else ""
        return [
            note(
                "relation.same-node",
                f"{name} is not {other} (`{name} is {other}` is False): it is another tensor object, on "
                f"{other}'s memory ({storage_text(b)}){counter} and with the same grad_fn ({b.grad_fn}). A "
                f"change through one shows in the other, and backward from either goes through the same node.",
                [name, other],
            )
        ]
    return []


def shared_memory(f: StepFacts, name: str) -> list[Note]:
    """A view, a detached alias, ``.data``: another tensor on a storage a name already uses."""
    if f.same_object(name) or _told(f, name):
        return []
    # Not a tensor computed from this one (f:w = p[0] for a new argument p): p is not "on w's memory".
    sharing = [n for n in _candidates(f, name, f.sharing(name)) if name not in f.tensors[n].reaches]
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
    disjoint = disjoint_text(a, b)
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
        # No record or graph says which came from which: siblings (w, b = p) and .detach() aliases
        # share a counter too. Byte spans that overlap need not share elements (n[::2], n[1::2]).
        effect = (
            "Their spans of that storage overlap, so a write through one may change the other; either way it "
            "moves the version counter of both, and autograd notices it through either."
            if overlaps(a, b)
            else "They cover different bytes of that storage, so a write to one does not change the other's "
            "values, but it moves the version counter of both: autograd notices it through either."
        )
        return "relation.shared-counter", (
            f"{name} shares {src}'s memory ({storage_text(b)}) and its version counter: one was made from the "
            f"other (a view or .detach()), or both from one tensor. {effect}"
        )
    if not b.shares_version_with and b.version >= 0 and a.version >= 0:
        return "relation.untracked-alias", (
            f"{name} shares {where} but has its own version counter and no graph (what .data gives): "
            f"in-place changes to {name} also change {src} and autograd will NOT notice, so gradients that "
            f"use {src}'s saved values can be silently wrong.{disjoint}"
        )
    return "relation.shares-memory", f"{name} shares {where}.{disjoint}"


def new_memory(f: StepFacts, name: str) -> list[Note]:
    """A tensor in memory no other name uses: a result in the graph, or one made with grad off."""
    if name in explained_names(f) or f.same_object(name) or f.sharing(name) or _told(f, name):
        return []
    b = f.tensors[name]
    sources = _candidates(f, name, [n for n in f.others(name) if n in b.reaches])
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
    if b.version < 0:
        return [inference_note(name)]
    if not f.step.grad_enabled and not b.requires_grad:
        return [
            note(
                "relation.no-grad",
                f"{name} was computed with gradient tracking off (no_grad/inference mode): it has no grad_fn "
                f"and requires_grad=False, whatever its inputs were.",
                [name],
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
        told = f.state.extra.setdefault(_TOLD, set())
        assert isinstance(told, set)
        if any(loop.iteration > 1 for loop in f.step.loops) or name in told:
            return []  # (x = x + 1 in every turn, x = layer(x) line after line: told the first time)
        told.add(name)
        return [
            note(
                "rebind.computed-from-old",
                f"The name {name} now refers to a new tensor computed from the old one; the graph still holds "
                f"the old {name}, so backward through earlier results is unaffected.",
                [name],
            )
        ]
    if held and old.requires_grad:
        # Told when a backward goes through the graph that holds it (``rebound_graph_used``), not now:
        # a loop rebinds its names every turn, and an old graph no backward uses again changes nothing.
        rebound = f.state.extra.setdefault(_REBOUND, [])
        assert isinstance(rebound, list)
        rebound.append(Rebound(name, old.node_id, Origin.of(f.step)))
        del rebound[:-MAX_REBOUND]
    return []


_REBOUND = "rebound"
_TOLD = "rebinding told"
MAX_REBOUND = 64
"""Rebindings remembered at once (the oldest are forgotten)."""


@dataclass(frozen=True)
class Rebound:
    """A name bound to a new tensor while a graph still held the old one."""

    name: str
    node: int
    origin: Origin


BACKWARD_CALLS = frozenset({"backward", "grad"})


def rebound_graph_used(f: StepFacts) -> list[Note]:
    """A backward through a graph that holds a tensor a name held before it was rebound: the gradients
    flowed through the old tensor, not through the one the name holds now."""
    rebound = f.state.extra.get(_REBOUND)
    if not rebound or not isinstance(rebound, list):
        return []
    out: list[Note] = []
    for op in f.step.ops:
        if op.error is not None or op.kind != "call" or op.function not in BACKWARD_CALLS or not op.inputs:
            continue
        roots = [i for i in op.inputs if i.role == "self" or i.role.startswith(("arg0", "outputs="))]
        reached = set().union(*(_reach(f, op_input) for op_input in roots)) if roots else set()
        for r in [r for r in rebound if r.node in reached]:
            rebound.remove(r)
            now = f.tensors.get(r.name)
            apart = now is not None and r.node not in (now.reach_ids | {now.node_id})
            also = f", and the tensor {r.name} names now took no part" if apart else ""
            out.append(
                note(
                    "rebind.held-by-graph",
                    f"{code_span(op.call)} went back through the old {r.name}, the tensor {r.name} named until "
                    f"line {r.origin.line} ({code_span(r.origin.source)}) bound {r.name} to another one: the "
                    f"graph still held the old tensor, so the gradients flowed through it{also}. Rebinding a name "
                    f"does not change what backward computes.",
                    [r.name],
                    op=op.index,
                )
            )
    return out


def _reach(f: StepFacts, given: OpInput, depth: int = 8) -> set[int]:
    """Graph nodes behind a tensor an operation was given: a name's (as it was before the step), or,
    for a temporary, those behind the named tensors the step made it from."""
    if given.name is not None:
        r = f.before.get(given.name) or f.tensors.get(given.name)
        return set(r.reach_ids) | {r.node_id} if r is not None else set()
    if given.from_op is None or depth == 0:
        return set()
    made = next((o for o in f.step.ops if o.index == given.from_op), None)
    if made is None:
        return set()
    return set().union(*(_reach(f, i, depth - 1) for i in made.inputs)) if made.inputs else set()
