"""The loops running in the script's frames: which entry into a loop each is, its turn, and the loops
that ended (with the turns they ran) since the last step.

CPython traces a loop's header line before every turn (``while True`` included), so the first
statement of its body after the header starts a turn. A generator's loop is left at every
``yield`` and taken up again, in its next turn, when the generator goes on.
"""

from __future__ import annotations

import ast
from collections import deque
from dataclasses import dataclass
from types import CodeType, FrameType

from tcopy_cli.engine.frames import SUSPENDING, returned, starting
from tcopy_cli.engine.index import LOOPS, StatementIndex
from tcopy_cli.engine.reading import loop_total
from tcopy_cli.limits import LOOPS_ENDED_KEPT

MAX_SUSPENDED = 10_000
"""Generators waiting at a ``yield`` whose loops are kept (the oldest is forgotten first)."""


@dataclass
class Turn:
    """A loop running in a traced frame: which entry into a loop it is, and its turn."""

    node: ast.stmt
    entry: int
    total: int | None
    turn: int = 0
    between: bool = True
    """The loop's header ran since then: the next statement in its body starts a turn."""


@dataclass
class Suspended:
    """A generator's frame waiting at a ``yield``: its loops, the order its names were bound in and
    the ``yield`` statement."""

    code: CodeType
    loops: list[Turn]
    order: dict[str, None]
    node: ast.stmt | None


class Loops:
    """Entries into loops, and the loops that ended since the last step (``ended``)."""

    def __init__(self) -> None:
        self.entries = 0
        self.ended: deque[tuple[int, int]] = deque(maxlen=LOOPS_ENDED_KEPT)
        """(entry number, turns run) of the loops that ended since the last step was reported: a
        generator's loop is left at every ``yield``, and a last turn may have no step."""
        self.suspended: dict[int, Suspended] = {}
        """A generator's loops while it waits at a ``yield``, by id of its frame."""

    def follow(self, frame: FrameType, stack: list[Turn], node: ast.stmt, index: StatementIndex) -> None:
        """Follow the frame's loops (``stack``) as ``node`` starts: entered, left, or in a new turn.

        A loop the frame's statement is no longer inside has ended; the inner loops of a new
        turn are entered again, with new entry numbers.
        """
        chain = index.loops.get(id(node), ())
        if isinstance(node, LOOPS):
            chain = (*chain, node)
        kept = 0
        while kept < len(stack) and kept < len(chain) and stack[kept].node is chain[kept]:
            kept += 1
        self.left(stack[kept:])
        del stack[kept:]
        for level, loop in enumerate(chain):
            if level == len(stack):
                self.entries += 1
                total = loop_total(loop, frame) if loop is node else None
                stack.append(Turn(loop, self.entries, total))
            turn = stack[level]
            if loop is node:
                turn.between = True
                return
            if turn.between:
                turn.turn += 1
                turn.between = False
                self.left(stack[level + 1 :])
                del stack[level + 1 :]

    def left(self, turns: list[Turn]) -> None:
        """``turns``, loops that ended, are told to the next step with the turns they ran."""
        self.ended.extend((t.entry, t.turn) for t in turns)

    def resume(self, frame: FrameType) -> Suspended | None:
        """What a generator's frame that goes on after a ``yield`` had: its loops are where they were
        (a loop around the ``yield`` is in its next turn, not entered again).

        Kept frames are not weakly referable, so the state is kept by the frame's id and given back
        only to a frame of the same code that goes on (not at its start): a new generator's frame at
        the address of a finished one starts afresh."""
        kept = self.suspended.pop(id(frame), None)
        if kept is not None and kept.code is frame.f_code and not starting(frame):
            return kept
        return None

    def leave(
        self, frame: FrameType, stack: list[Turn], order: dict[str, None], node: ast.stmt | None, raised: bool
    ) -> None:
        """A frame returns (``node``: the statement it was in). A generator's, at a ``yield``, may go
        on later (``resume``); any other, or one that is done (a ``return`` instruction, or an
        exception it did not catch), has ended its loops."""
        if not frame.f_code.co_flags & SUSPENDING:
            self.left(stack)
            return
        self.suspended.pop(id(frame), None)
        if raised or returned(frame):
            self.left(stack)
            return
        if len(self.suspended) >= MAX_SUSPENDED:  # the longest waiting is given up: it will start afresh
            self.left(self.suspended.pop(next(iter(self.suspended))).loops)
        self.suspended[id(frame)] = Suspended(frame.f_code, stack, order, node)

    def take_ended(self) -> list[tuple[int, int]]:
        """The loops that ended since the last call, (entry, turns), and forget them."""
        ended = list(self.ended)
        self.ended.clear()
        return ended
