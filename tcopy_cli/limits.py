"""Named resource limits. Each has a command-line flag of the same name."""

from __future__ import annotations

from dataclasses import dataclass, fields

from tcopy_cli.errors import LimitExceeded, TimeoutExceeded

DEFAULT_MAX_VALUES = 100
"""Tensors with at most this many elements have their values listed (--max-values)."""


@dataclass(frozen=True)
class Limits:
    """Bounds on what a script may do. Exceeding one is an error step, never a crash."""

    max_elements: int = 50_000_000
    """Elements in any one tensor a torch call makes (checked before allocating where the size is known)."""
    max_bytes: int = 4 * 1024**3
    """Bytes of all tensor storages the script keeps alive after a step (names, sets, autograd graph); the
    worker's memory ceiling is this plus a fixed headroom."""
    max_steps: int = 100_000
    """Executed statements in one run (the command line's default depends on the view: ``view_max_steps``)."""
    max_iterations: int = 100_000
    """Turns of one loop of the script (counted by the tracer)."""
    max_output: int = 1_000_000
    """Characters of output in total: printed text, notes, warnings and error messages."""
    max_script_bytes: int = 1_000_000
    """Size of the script source."""
    timeout: float = 120.0
    """Wall-clock seconds for the whole run."""

    def message(self, name: str, detail: str) -> str:
        """``detail`` followed by the limit's value and the flag that raises it."""
        if name not in _NAMES:
            raise ValueError(f"no limit named {name!r}")
        value = getattr(self, name)
        shown = f"{value:g} s" if isinstance(value, float) else f"{value:,}"
        return f"{detail} (limit {shown}; raise it with {flag(name)})"

    def exceeded(self, name: str, detail: str) -> LimitExceeded:
        """The error for limit ``name``; the caller raises it."""
        cls = TimeoutExceeded if name == "timeout" else LimitExceeded
        return cls(self.message(name, detail), name)


_NAMES = frozenset(f.name for f in fields(Limits))

READING_MAX_STEPS = 10_000
"""The default --max-steps of the views people read (table, Markdown, the REPL).

A loop that never ends stops there within seconds (later turns of a loop fold, so a long
run still reads in a screen or two); JSON, the complete record, keeps ``Limits.max_steps``
so that long training loops finish without a flag.
"""


def view_max_steps(fmt: str | None) -> int:
    """The default step limit for output format ``fmt`` (None: a view people read)."""
    return Limits.max_steps if fmt == "json" else READING_MAX_STEPS


def flag(name: str) -> str:
    """The command-line flag of limit ``name`` (max_steps -> --max-steps)."""
    return "--" + name.replace("_", "-")


LOOPS_ENDED_KEPT = 10_000
"""Loops that ended between two steps that an engine remembers, the latest (``Step.loops_ended``).
A loop with steps of its own usually ends just before the next step, after the loops it holds. Where
more than this many loops end after it and before the next step (an inner loop run over and over
with no step), it is forgotten, and its summary counts the turns its steps showed, as before."""
