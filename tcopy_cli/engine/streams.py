"""The script's standard streams and process-wide hooks while it runs.

``print`` and writes to ``sys.stdout``/``sys.stderr`` go to the running statement's step; warnings too;
standard input is empty; ``breakpoint()`` and ``pdb.set_trace()`` do nothing (a debugger would take the
tracer away, and tcopy stops after every statement already); ``sys.argv`` is ``[SCRIPT]`` and the
script's directory comes first on the import path, as under ``python SCRIPT``. Everything is put back
when the run ends.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from tcopy_cli.program import Program


class Printed(io.TextIOBase):
    """``sys.stdout`` and ``sys.stderr`` while the script runs: text goes to ``buffer()`` (the running
    statement's), at most ``limit`` characters in all (counted in full, for --max-output)."""

    def __init__(self, buffer: Callable[[], io.StringIO], limit: int) -> None:
        self.buffer_of = buffer
        self.limit = limit
        self.printed = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        budget = self.limit + 1 - self.printed
        self.printed += len(text)
        if budget > 0:
            self.buffer_of().write(text[:budget])
        return len(text)

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"


@contextlib.contextmanager
def redirected(
    program: Program, output: Printed, display: Callable[[Any], None], on_warning: Callable[..., None]
) -> Iterator[None]:
    """stdout and stderr to ``output``, warnings to ``on_warning``, no stdin, no debugger; the script's
    directory importable; ``sys.displayhook`` is ``display`` (the REPL echoes a value)."""
    origin = program.origin
    here = os.path.dirname(os.path.abspath(origin)) if os.path.isfile(origin) else ""
    path_entry = here or os.getcwd()
    saved = sys.argv, sys.stdin, sys.breakpointhook, sys.displayhook
    sys.argv = [origin]
    sys.stdin = io.StringIO("")
    sys.breakpointhook = _no_breakpoint
    sys.displayhook = display
    sys.path.insert(0, path_entry)
    debugger = _quiet_debugger() if "set_trace" in program.source else None
    try:
        with (
            contextlib.redirect_stdout(output),  # type: ignore[type-var]
            contextlib.redirect_stderr(output),  # type: ignore[type-var]
            warnings.catch_warnings(),
        ):
            # What Python shows by default, each time it happens (every step shows its own):
            # deprecations only where the script itself triggers them; pending deprecations,
            # import and resource warnings never. The script's own filters go before these.
            warnings.simplefilter("always")
            for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
                warnings.filterwarnings("ignore", category=category)
            warnings.filterwarnings("always", category=DeprecationWarning, module="__main__")
            warnings.showwarning = on_warning
            yield
    finally:
        sys.argv, sys.stdin, sys.breakpointhook, sys.displayhook = saved
        if debugger is not None:
            debugger()
        with contextlib.suppress(ValueError):
            sys.path.remove(path_entry)


def _no_breakpoint(*_args: Any, **_kwargs: Any) -> None:
    """``breakpoint()``: nothing (a debugger's tracer would replace tcopy's)."""


def _quiet_debugger() -> Callable[[], None]:
    """``pdb.set_trace()`` does nothing while the script runs (it would replace the tracer and read the
    terminal); returns what puts it back."""
    import pdb

    saved = pdb.set_trace, pdb.Pdb.set_trace
    pdb.set_trace = _no_breakpoint
    pdb.Pdb.set_trace = _no_breakpoint  # type: ignore[method-assign,assignment]

    def restore() -> None:
        pdb.set_trace, pdb.Pdb.set_trace = saved  # type: ignore[method-assign]

    return restore
