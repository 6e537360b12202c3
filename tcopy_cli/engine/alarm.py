"""What --timeout's alarm may not break into.

The alarm (SIGALRM, set by ``session.watchdog``) raises TimeoutExceeded between bytecodes. Inside an
``Uninterrupted`` block it only notes the timeout, which is raised when the block ends: a frame is
written whole, and a step that was numbered is a step that was sent.

Nothing here imports torch (the worker writes frames before it imports torch).
"""

from __future__ import annotations


class Uninterrupted:
    """A block --timeout's alarm does not break into: the timeout is raised when it ends (a step
    that was numbered is a step that was sent)."""

    depth = 0
    pending: BaseException | None = None

    def __enter__(self) -> None:
        Uninterrupted.depth += 1

    def __exit__(self, kind: object, value: object, tb: object) -> None:
        Uninterrupted.depth -= 1
        if Uninterrupted.depth == 0 and Uninterrupted.pending is not None:
            exc, Uninterrupted.pending = Uninterrupted.pending, None
            if kind is None:
                raise exc
