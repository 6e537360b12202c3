"""Rules about graphs a loop keeps alive: a tensor whose graph now holds its own graph from
before the step (``total_loss += loss``), and tensors in the graph that a list, tuple or dict
gains (``losses.append(loss)``). Both are told only inside a loop, where they repeat.

What they state is measured: the graph node of the tensor before the step is among the
nodes its new graph reaches (``reach_ids``), and the added item has a ``grad_fn``. The
advice is conditional: a recurrent state is meant to chain its graph (backpropagation
through time); a running total or a log of values is not.
"""

from __future__ import annotations

from collections.abc import Callable

from tcopy_cli.explain.facts import StepFacts, agree, names_text, note
from tcopy_cli.trace.records import Note, OpRecord, added_items


def chained_graph(f: StepFacts) -> list[Note]:
    """Names whose tensor's graph, in a loop, now leads back to the graph they had before the step."""
    if not f.step.loops:
        return []
    out = []
    for name, b in f.tensors.items():
        old = f.before.get(name)
        if old is None or old.grad_fn is None or b.grad_fn is None or b.node_id == old.node_id:
            continue
        if old.node_id not in b.reach_ids:
            continue
        added = _graph_inputs(f, _adds_to(name), skip=name)
        out.append(
            note(
                "graph.chained",
                f"{name}'s graph now holds its graph from before this step ({b.grad_fn} leads back to the old "
                f"{old.grad_fn}). Done in every turn of a loop, this chains the turns' graphs together and keeps "
                f"them all alive while {name} lives, as a recurrent state needs for backpropagation through time. "
                f"If {name} only records values (a running total), add {_instead(added)} instead.",
                [name],
            )
        )
    return out


def collected_graphs(f: StepFacts) -> list[Note]:
    """Items in the graph that a list, tuple or dict gained in a loop: each keeps its graph alive."""
    if not f.step.loops:
        return []
    added = added_items((f.before, f.state.previous_unlisted), (f.tensors, f.step.unlisted))
    by_container: dict[str, list[str]] = {}
    for name in added:
        if f.tensors[name].grad_fn is not None:
            by_container.setdefault(name[: name.rindex("[")], []).append(name)
    out = []
    for base, items in by_container.items():
        fns = sorted({f.tensors[n].grad_fn or "" for n in items})
        given = _graph_inputs(f, lambda op: op.kind == "setitem" or op.function in _ADDING)
        out.append(
            note(
                "graph.collected",
                f"{names_text(items)} {agree(items, 'is a tensor', 'are tensors')} in the graph "
                f"({', '.join(fns)}), so {base} keeps {agree(items, 'its graph', 'their graphs')} alive (and the "
                f"tensors a graph saved, until a backward frees them). Gaining one in every turn of a loop, {base} "
                f"keeps a graph per turn. If {base} only records values (a loss history), store {_instead(given)} "
                f"instead.",
                items,
            )
        )
    return out


# The calls that put a value into a list, a dict or a set.
_ADDING = frozenset({"append", "insert", "extend", "setdefault", "update", "add"})


def _graph_inputs(f: StepFacts, chosen: Callable[[OpRecord], bool], skip: str | None = None) -> list[str]:
    """The expressions, as written, of tensors that require grad given to the step's ``chosen`` operations."""
    exprs = [
        i.expr
        for op in f.step.ops
        if op.error is None and chosen(op)
        for i in op.inputs
        if i.requires_grad and i.name != skip and i.kind == "tensor"
    ]
    return list(dict.fromkeys(exprs))


def _adds_to(name: str) -> Callable[[OpRecord], bool]:
    """Whether an operation adds to the tensor ``name`` held (``name += t``, ``name + t``)."""
    return lambda op: op.function in _ADD and any(i.name == name for i in op.inputs)


# How the operation record names an addition (``+=``, ``+``, ``add``, ``add_``).
_ADD = frozenset({"Add", "add", "add_"})


def _instead(exprs: list[str]) -> str:
    """``loss.item()` (a number) or `loss.detach()``, for the one expression given; else in general."""
    if len(exprs) == 1 and exprs[0].isidentifier():
        e = exprs[0]
        return f"`{e}.item()` (a number) or `{e}.detach()`"
    return "plain numbers (`.item()`) or detached tensors (`.detach()`)"
