"""One error hierarchy for everything tcopy reports to a user.

Every error that concerns the script carries the script position (line, column) so
the command line can point at it. Nothing here imports torch.
"""

from __future__ import annotations


class TcopyError(Exception):
    """Base class of tcopy's own errors."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column

    def __str__(self) -> str:
        return self.message


class UsageError(TcopyError):
    """A bad option, unreadable file or unavailable device (exit status 2)."""


class ScriptRejected(TcopyError):
    """The script was refused before it ran: syntax error or a construct not allowed."""


class LimitExceeded(TcopyError):
    """A resource limit (elements, bytes, steps, iterations, sizes, time) was hit."""

    def __init__(self, message: str, limit: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(message, line, column)
        self.limit = limit


class TimeoutExceeded(LimitExceeded):
    """The wall-clock limit (--timeout) was hit."""


class StopRun(BaseException):
    """Internal: raised by the step runner to end a run after an error step.

    A BaseException, so no ``except Exception`` in a script (or in torch code between
    the step and the runner) can swallow the end of a run.

    ``unwinding``: the run ends because a script error went uncaught, so the script's own
    ``finally`` blocks still run on the way out, as in Python (not after tcopy's own refusals
    and limits, or Ctrl-C: those end the run where they happen).
    """

    def __init__(self, unwinding: bool = False) -> None:
        super().__init__()
        self.unwinding = unwinding
