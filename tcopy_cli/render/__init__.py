"""Renderers: Rich tables, JSON Lines, Markdown. They read records only, never torch.

Adding an output format: write a class with the four methods of ``Renderer`` in a module
here, and name it in the command line's format table (tcopy_cli/cli/present.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Protocol

if TYPE_CHECKING:
    from tcopy_cli.trace.records import RunInfo, RunSummary, Step


@dataclass(frozen=True)
class ViewOptions:
    """What a view of a run shows: the same for every format and every command."""

    explain: bool = True
    """Plain-language notes under each step (JSON always has them)."""
    only_changed: bool = False
    """Only tensors that are new or changed in each step."""
    watch: Optional[tuple[str, ...]] = None
    """Only these names."""
    graph: bool = False
    """The autograd graph after steps that change it."""
    memory: bool = False
    """A storage map after each step (tables)."""
    first: Optional[int] = None
    """Show steps from this index on (--step/--from)."""
    last: Optional[int] = None
    """Show steps up to this index (--step/--to)."""
    depth: Optional[int] = None
    """Hide steps inside script functions nested deeper than this."""
    json_refs: bool = False
    """JSON: a tensor record identical to the last one written for its name as ``{"unchanged_since": step}``."""

    def shows(self, step: Step) -> bool:
        """Whether a step is in the --step/--from/--to range and within --depth."""
        index = step.index
        in_range = (self.first is None or index >= self.first) and (self.last is None or index <= self.last)
        return in_range and (self.depth is None or step.depth <= self.depth)


def plural(n: int, word: str) -> str:
    """``1 error``, ``2 errors``."""
    return f"{n} {word}{'s' if n != 1 else ''}"


def error_counts(summary: RunSummary) -> str:
    """The errors of a run for its closing line: unexpected ones, then expected ones
    (``# expect: NAME``) and expected ones that never happened, where there are any."""
    text = plural(summary.unexpected, "error")
    if summary.expected:
        text += f", {plural(summary.expected, 'expected error')}"
    if summary.missing:
        text += f", {plural(summary.missing, 'expected error')} not raised"
    return text


class Renderer(Protocol):
    """What the CLI feeds a run into."""

    def start(self, info: RunInfo) -> None:
        """Before the first step."""

    def step(self, step: Step, shown: bool = True) -> None:
        """After each step; ``shown`` is False for steps outside --step/--from/--to."""

    def end(self, summary: RunSummary) -> None:
        """After the last step."""

    def rejected(self, info: RunInfo, line: int, column: int, message: str) -> None:
        """Instead of start, steps and end: the script was refused before it ran."""
