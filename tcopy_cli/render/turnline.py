"""A folded turn's line: which turns it covers, and what they did, after its turn number.

``↻ iterations 7–10/60 · loss 1.908 → 1.699``: the lines that ran (left out where the line
above said them), the one-element tensors that moved, the tensors updated (by their modules'
names where a view writes them so), the items added, and under the line what the turns printed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from tcopy_cli.render.folding import FoldedTurn
from tcopy_cli.render.loops import number
from tcopy_cli.render.names import grouped_names, unlisted_change
from tcopy_cli.render.where import iteration_text
from tcopy_cli.render.where import turn as where_turn

PRINTED_ENDS = 2
"""A folded line's printed output longer than ``2 * PRINTED_ENDS + 1`` lines keeps this many lines
at each end, with a line saying how many were left out between."""


def line_ranges(lines: Iterable[int]) -> str:
    """``14–15, 20–24``: the lines, sorted, runs of consecutive lines as ranges."""
    runs: list[list[int]] = []
    for n in sorted(set(lines)):
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}–{r[-1]}" for r in runs)


def turn_label(turn: FoldedTurn) -> str:
    """``iteration 7/50``, or for a range of turns ``iterations 21–40/50`` (nested: ``iterations 2/3 › 21–40/50``)."""
    if turn.turns == 1:
        return iteration_text(turn.loops)
    *outer, loop = turn.loops
    span = f"{loop.iteration}–{turn.last_turn}" + (f"/{loop.total}" if loop.total is not None else "")
    return "iterations " + " › ".join([*(where_turn(c) for c in outer), span])


def printed_lines(turn: FoldedTurn) -> list[str]:
    """What a folded line's turns printed, line by line; a long output keeps only its first and last lines."""
    if not turn.printed:
        return []
    lines = turn.printed.rstrip("\n").split("\n")
    if len(lines) <= 2 * PRINTED_ENDS + 1:
        return lines
    left = len(lines) - 2 * PRINTED_ENDS
    return [*lines[:PRINTED_ENDS], f"… {left} more lines …", *lines[-PRINTED_ENDS:]]


def turn_parts(
    turn: FoldedTurn, previous: FoldedTurn | None = None, written: Callable[[list[str]], list[str]] = list
) -> list[str]:
    """The pieces of a folded turn's line after its turn number.

    After a folded turn of the same loop (``previous``), the lines that ran and the
    tensors updated are left out when they are the same as there. ``written``: the names
    updated, and those that moved alike, as the view writes them (a module for all its tensors:
    ``modules.whole_modules``).
    """
    same_loop = (
        previous is not None
        and not previous.partial
        and [c.line for c in previous.loops] == [c.line for c in turn.loops]
    )
    parts = []
    lines = f"line{'s' if len(set(turn.lines)) > 1 else ''} {line_ranges(turn.lines)}"
    if turn.partial:  # steps of a turn shown in full: always said which, and that they were folded
        parts.append(f"{lines} as before")  # their values may move (loss 2.3 → 2.1): nothing else is new
    elif not (same_loop and previous is not None and previous.lines == turn.lines):
        parts.append(lines)
    parts += _scalar_parts(turn.scalars, written)
    updated = _updated(turn)
    # said again where the line would say nothing else (--watch w: w is all it shows, every turn)
    if updated and (not parts or not (same_loop and previous is not None and _updated(previous) == updated)):
        parts.append(f"updated: {grouped_names(written(updated))}")
    if turn.added:
        parts.append(f"added: {grouped_names(turn.added)}")
    parts += [f"{name}: {unlisted_change(d)}" for name, d in turn.unlisted.items()]
    if not parts:  # everything it would say is as on the line above: say it again, never an empty line
        parts.append(lines)
        if updated:
            parts.append(f"updated: {grouped_names(written(updated))}")
    return parts


def _scalar_parts(
    scalars: Iterable[tuple[str, float | None, float]], written: Callable[[list[str]], list[str]] = list
) -> list[str]:
    """``loss 2.3 → 2.1``; one-element tensors that went from one value to the same other, together
    (``model.blocks.{6…9}.1.num_batches_tracked each 0 → 1``), as the view writes them (``written``)."""
    changes: dict[str, list[str]] = {}
    for name, was, now in scalars:
        changes.setdefault(f"{number(was)} → {number(now)}" if was is not None else f"= {number(now)}", []).append(name)
    out = []
    for change, names in changes.items():
        if len(names) == 1:
            out.append(f"{names[0]} {change}")
        else:
            out.append(f"{grouped_names(written(names), most=len(names))} each {change}")
    return out


def _updated(turn: FoldedTurn) -> list[str]:
    return list(dict.fromkeys(turn.versions + turn.grads))
