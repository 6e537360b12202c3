"""Folded turns of a loop that read alike, told in one line (tables).

The folder gives each of a loop's first folded turns a line of its own (``folding.SINGLE_TURNS``),
so a learner sees the values move turn by turn: ``loss 2.078 → 2.019``, then ``loss 2.019 →
1.954``. Where consecutive lines say the same but for the names, each turn doing to another
tensor what the turn before did to its own (the blocks of a model: ``model.blocks.2.{1,4}.
num_batches_tracked each 0 → 1``, then the same of ``model.blocks.3``), they are one line,
its names written together: ``iterations 1/3 › 3–10 · model.blocks.{2…9}.{1,4}.num_batches_tracked
each 0 → 1``. Lines whose numbers differ stay apart (a loss that moves says something each turn).
"""

from __future__ import annotations

from dataclasses import replace

from tcopy_cli.render.folding import FoldedTurn
from tcopy_cli.render.loops import number


def _changes(turn: FoldedTurn) -> set[tuple[str, str]]:
    """How the turn's one-element tensors moved, their names aside (as its line writes the numbers)."""
    return {("" if was is None else number(was), number(now)) for _, was, now in turn.scalars}


def alike(before: FoldedTurn, turn: FoldedTurn) -> bool:
    """Whether ``turn`` follows ``before`` in the same run of its loop and its line would read as
    ``before``'s but for the names of the one-element tensors that moved (none of them the same)."""
    *outer, loop = turn.loops
    *outer_before, was = before.loops
    return (
        not (before.partial or turn.partial or before.printed or turn.printed)
        and outer == outer_before
        and (loop.line, loop.entry) == (was.line, was.entry)
        and turn.first_turn == before.last_turn + 1
        and (before.lines, before.versions, before.grads) == (turn.lines, turn.versions, turn.grads)
        and not (before.added or turn.added or before.unlisted or turn.unlisted)
        and bool(turn.scalars)
        and _changes(before) == _changes(turn)
        and {s[0] for s in before.scalars}.isdisjoint(s[0] for s in turn.scalars)
    )


def joined(before: FoldedTurn, turn: FoldedTurn) -> FoldedTurn:
    """One line for two turns ``alike`` says read alike: the first's, through the second's last turn."""
    return replace(before, last_step=turn.last_step, through=turn.last_turn, scalars=before.scalars + turn.scalars)
