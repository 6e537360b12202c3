"""Rules about graphs a loop keeps alive: a tensor whose graph now leads back to the graph it
had when the loop's turn began (``total_loss += loss``), and a list, tuple or dict that gains
tensors in the graph turn after turn (``losses.append(loss)``). Both are told only inside a
loop, and at most once per name and turn.

What they state is measured: the graph node a name held at the start of the turn, made in
the loop, is among the nodes its new graph reaches (``reach_ids``); the container gained items
that have a ``grad_fn`` in this turn, and still holds (by graph node) items with a graph that it
gained in an earlier turn of the same loop. The advice is
conditional: a recurrent state chains its graph on purpose (backpropagation through time);
a running total or a log of values should not.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from tcopy_cli.explain.facts import StepFacts, agree, names_text, note
from tcopy_cli.trace.records import Note, OpRecord, TensorRecord
from tcopy_cli.trace.scriptnames import added_items, script_name

Loops = tuple[tuple[int, int], ...]
"""The loops around a step, outermost first, each as (line, entry)."""


@dataclass
class Turn:
    """The turn a loop is in, and what the rules know of it."""

    iterations: tuple[int, ...]
    """The turn of each loop around it, its own last."""
    start: dict[str, TensorRecord]
    """The tensors when the turn began (the records before its first step)."""
    chained: set[str] = field(default_factory=set)
    """Names already told in this turn."""


@dataclass
class TurnState:
    """What the rules remember of loop turns (kept in ``ExplainState.extra``)."""

    turns: dict[Loops, Turn] = field(default_factory=dict)
    """Each loop's current turn, by the loops around it and itself (a loop entered again is another)."""
    before_loop: dict[Loops, set[int]] = field(default_factory=dict)
    """The graph nodes that existed when each loop began its first turn."""
    grew: dict[str, tuple[Loops, tuple[int, ...], set[int]]] = field(default_factory=dict)
    """For each container, the last turn (loop, iterations) in which it gained tensors in the
    graph, and their graph nodes (node ids are not reused, unlike the ids of freed objects)."""
    step: int = -1


def _turn(f: StepFacts) -> tuple[TurnState, Loops, Turn]:
    """The turn state moved on to ``f``'s step (once per step, whichever rule asks first), the
    step's innermost loop, and its turn. A loop's turn begins when its iteration changes, not
    when an inner loop (or a call with a loop) ends."""
    state = f.state.extra.setdefault("turns", TurnState())
    assert isinstance(state, TurnState)
    loops = f.step.loops
    # Each loop around the step, keyed by itself and the loops around it, outermost first.
    keys = [tuple((loop.line, loop.entry) for loop in loops[:k]) for k in range(1, len(loops) + 1)]
    if state.step != f.step.index:
        state.step = f.step.index
        for ended in [k for k in state.turns if k not in keys]:  # loops that ended: their turns are over
            del state.turns[ended]
            state.before_loop.pop(ended, None)
        for k, key in enumerate(keys, 1):
            iterations = tuple(loop.iteration for loop in loops[:k])
            current = state.turns.get(key)
            if current is None:
                state.before_loop[key] = {r.node_id for r in f.before.values() if r.grad_fn is not None}
            if current is None or current.iterations != iterations:
                state.turns[key] = Turn(iterations, f.before)
    return state, keys[-1], state.turns[keys[-1]]


def _is_item(name: str) -> bool:
    """An item of a list, tuple or dict, a function's local one included (``xs[0]``, ``f:xs[0]``)."""
    return name.endswith("]")


def chained_graph(f: StepFacts) -> list[Note]:
    """Names whose graph, in a loop, now leads back to the graph they held when the turn began,
    made in the loop (not before it)."""
    if not f.step.loops:
        return []
    state, key, turn = _turn(f)
    out = []
    for name, b in f.tensors.items():
        start = turn.start.get(name)
        if start is None or start.grad_fn is None or b.grad_fn is None or _is_item(name) or name in turn.chained:
            continue
        if b.node_id == start.node_id or start.node_id not in b.reach_ids:
            continue
        if start.node_id in state.before_loop.get(key, set()):
            continue  # a graph made before the loop: nothing chains from turn to turn yet
        turn.chained.add(name)
        addends = _graph_inputs(f, _adds_to(name), skip=name)
        code = script_name(name)
        fix = (
            f"add {_instead(addends)} instead"
            if addends
            else f"cut the chain once per turn with `{code} = {code}.detach()`"
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
    """Containers that gained tensors in the graph in this turn of a loop and in an earlier one,
    and still hold what they gained then (a list made again each turn does not)."""
    if not f.step.loops:
        return []
    state, key, turn = _turn(f)
    gained: dict[str, list[str]] = {}
    for name in added_items((f.before, f.state.previous_unlisted), (f.tensors, f.step.unlisted), _is_item):
        if f.tensors[name].grad_fn is not None:
            gained.setdefault(name[: name.index("[")], []).append(name)
    out = []
    for base, items in gained.items():
        before = state.grew.get(base)
        state.grew[base] = (key, turn.iterations, {f.tensors[n].node_id for n in items})
        if before is None or before[0] != key or before[1] == turn.iterations:
            continue  # not yet seen growing in another turn of this loop (or told in this turn)
        held = {r.node_id for n, r in f.tensors.items() if n.startswith(base + "[") and r.grad_fn is not None}
        if not before[2] & held:
            continue  # what it gained then is gone (a container made again), or has no graph now
        fns = sorted({f.tensors[n].grad_fn or "" for n in items})
        named = names_text(items) if len(items) <= 3 else f"{items[0]} … {items[-1]} ({len(items)} items)"
        given = _graph_inputs(f, lambda op: op.kind == "setitem" or op.function in _ADDING)
        out.append(
            note(
                "graph.collected",
                f"{named} {agree(items, 'is a tensor', 'are tensors')} in the graph ({', '.join(fns)}), and {base} "
                f"gained such tensors in an earlier turn too and still holds them: it keeps each one's graph alive "
                f"(and the tensors a graph saved, until a backward frees them), a graph per turn. If {base} only "
                f"records values (a log), store {_instead(given)} instead.",
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
        if math.prod(r.shape) == 1:
            return f"`{e}.item()` (a number) or `{e}.detach()`"
        return f"`{e}.detach()` (or `{e}.tolist()` for plain numbers)"
    return "plain numbers (`.item()` of a one-element tensor) or detached tensors (`.detach()`)"
