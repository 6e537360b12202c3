"""Rules about graphs a loop keeps alive: a tensor whose graph now leads back to the graph it
had when the loop's turn began (``total_loss += loss``), and a list, tuple or dict that gains
tensors in the graph turn after turn (``losses.append(loss)``). Both are told only inside a
loop, and at most once per name and turn.

What they state is measured: the graph node a name held at the start of the turn is among
the nodes its new graph reaches (``reach_ids``); the container gained items that have a
``grad_fn`` in this turn and in an earlier turn of the same loop. The advice is
conditional: a recurrent state chains its graph on purpose (backpropagation through time);
a running total or a log of values should not.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tcopy_cli.explain.facts import StepFacts, agree, names_text, note
from tcopy_cli.trace.records import Note, OpRecord, TensorRecord, added_items, is_item

Turn = tuple[tuple[tuple[int, int], ...], tuple[int, ...]]
"""A loop turn: the loops around a step (line, entry), and the turn each is in."""


@dataclass
class TurnState:
    """What the rules remember of the loop turns so far (kept in ``ExplainState.extra``)."""

    turn: Turn | None = None
    start: dict[str, TensorRecord] = field(default_factory=dict)
    """The tensors when the current turn began (the records before its first step)."""
    chained: set[str] = field(default_factory=set)
    """Names already told in the current turn."""
    grew: dict[str, Turn] = field(default_factory=dict)
    """For each container, the last turn in which it gained tensors in the graph."""
    step: int = -1


def _turn(f: StepFacts) -> TurnState:
    """The turn state, moved on to ``f``'s step (once per step, whichever rule asks first)."""
    state = f.state.extra.setdefault("turns", TurnState())
    assert isinstance(state, TurnState)
    if state.step != f.step.index:
        state.step = f.step.index
        turn = (tuple((loop.line, loop.entry) for loop in f.step.loops), tuple(loop.iteration for loop in f.step.loops))
        if turn != state.turn:
            state.turn, state.start, state.chained = turn, f.before, set()
    return state


def chained_graph(f: StepFacts) -> list[Note]:
    """Names whose graph, in a loop, now leads back to the graph they held when the turn began."""
    if not f.step.loops:
        return []
    state = _turn(f)
    out = []
    for name, b in f.tensors.items():
        start = state.start.get(name)
        if start is None or start.grad_fn is None or b.grad_fn is None or is_item(name) or name in state.chained:
            continue
        if b.node_id == start.node_id or start.node_id not in b.reach_ids:
            continue
        state.chained.add(name)
        addends = _graph_inputs(f, _adds_to(name), skip=name)
        fix = (
            f"add {_instead(addends)} instead"
            if addends
            else f"cut the chain once per turn with `{name} = {name}.detach()`"
        )
        out.append(
            note(
                "graph.chained",
                f"{name}'s graph now holds the graph {name} had when this turn of the loop began ({b.grad_fn} "
                f"leads back to that {start.grad_fn}). Done every turn, this chains the turns' graphs together and "
                f"keeps them all alive while {name} lives: what a recurrent state needs for backpropagation through "
                f"time, and a leak for a value that is only recorded (a running total). For that, {fix}.",
                [name],
            )
        )
    return out


def collected_graphs(f: StepFacts) -> list[Note]:
    """Containers that gained tensors in the graph in this turn of a loop and in an earlier one."""
    if not f.step.loops:
        return []
    state = _turn(f)
    assert state.turn is not None
    gained: dict[str, list[str]] = {}
    for name in added_items((f.before, f.state.previous_unlisted), (f.tensors, f.step.unlisted)):
        if f.tensors[name].grad_fn is not None:
            gained.setdefault(name[: name.index("[")], []).append(name)
    out = []
    for base, items in gained.items():
        before = state.grew.get(base)
        state.grew[base] = state.turn
        if before is None or before[0] != state.turn[0] or before == state.turn:
            continue  # not yet seen growing in another turn of this loop (or told in this turn)
        fns = sorted({f.tensors[n].grad_fn or "" for n in items})
        named = names_text(items) if len(items) <= 3 else f"{items[0]} … {items[-1]} ({len(items)} items)"
        given = _graph_inputs(f, lambda op: op.kind == "setitem" or op.function in _ADDING)
        out.append(
            note(
                "graph.collected",
                f"{named} {agree(items, 'is a tensor', 'are tensors')} in the graph ({', '.join(fns)}), and {base} "
                f"gained such tensors in an earlier turn too: it keeps each one's graph alive (and the tensors a "
                f"graph saved, until a backward frees them), a graph per turn. If {base} only records values (a "
                f"loss history), store {_instead(given)} instead.",
                items,
            )
        )
    return out


# The calls that put a value into a list, a dict or a set.
_ADDING = frozenset({"append", "insert", "extend", "setdefault", "update", "add"})


def _graph_inputs(
    f: StepFacts, chosen: Callable[[OpRecord], bool], skip: str | None = None
) -> list[tuple[str, TensorRecord | None]]:
    """The expressions, as written, of tensors that require grad given to the step's ``chosen``
    operations, each with the record of the name that held it (None for a temporary)."""
    found: dict[str, TensorRecord | None] = {}
    for op in f.step.ops:
        if op.error is not None or not chosen(op):
            continue
        for i in op.inputs:
            if i.requires_grad and i.name != skip and i.kind == "tensor":
                held = f.tensors.get(i.name) or f.before.get(i.name) if i.name is not None else None
                found.setdefault(i.expr, held)
    return list(found.items())


def _adds_to(name: str) -> Callable[[OpRecord], bool]:
    """Whether an operation adds to the tensor ``name`` held (``name += t``, ``name + t``)."""
    return lambda op: op.function in _ADD and any(i.name == name for i in op.inputs)


# How the operation record names an addition (``+=``, ``+``, ``add``, ``add_``).
_ADD = frozenset({"Add", "add", "add_"})


def _instead(given: list[tuple[str, TensorRecord | None]]) -> str:
    """```loss.item()` (a number) or `loss.detach()``` for the one tensor given, by name: ``.item()``
    only for a tensor of one element; else the same in general."""
    e, r = given[0] if len(given) == 1 else ("", None)
    if e.isidentifier() and r is not None:
        if _elements(r) == 1:
            return f"`{e}.item()` (a number) or `{e}.detach()`"
        return f"`{e}.detach()` (or `{e}.tolist()` for plain numbers)"
    return "plain numbers (`.item()` of a one-element tensor) or detached tensors (`.detach()`)"


def _elements(r: TensorRecord) -> int:
    n = 1
    for d in r.shape:
        n *= d
    return n
