"""Renderers: Rich tables, JSON Lines, Markdown. They read records only, never torch.

Adding an output format: write a class with the four methods of ``Renderer`` in a module
here, and name it in the command line's format table (tcopy_cli/cli/present.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Protocol, TypeVar

if TYPE_CHECKING:
    from rich.console import Console

    from tcopy_cli.render.folding import FoldedTurn, StepFlow
    from tcopy_cli.render.loops import LoopSummary
    from tcopy_cli.trace.records import Note, RunInfo, RunSummary, Step


T = TypeVar("T")


def in_colour(console: Console) -> bool:
    """Whether what ``console`` draws shows colours: on a terminal with colours, or recorded for
    --export (an exported picture is drawn in colour wherever stdout goes)."""
    return console.color_system is not None or console.record


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
    fold: bool = True
    """Tables and Markdown: later turns of a loop in one line each (--all-steps: False)."""
    flags: bool = True
    """Hints may name a flag of the command line (the REPL takes none after it starts)."""

    def notes_of(self, step: Step) -> list[Note]:
        """The step's notes a view shows: with --watch, only those about a watched name (or no name)."""
        if not self.watch:
            return step.explanations
        return [n for n in step.explanations if not n.tensors or any(self.watches(t) for t in n.tensors)]

    def shown_notes(self, step: Step) -> list[Note]:
        """``notes_of``, where notes that say the same thing about different tensors are told once
        (``The same holds for ts[1…999].``): what tables and Markdown show."""
        from tcopy_cli.render.notegroups import grouped_notes

        return grouped_notes(self.notes_of(step))

    @property
    def unchanged_text(self) -> str:
        """What a step that changed none of the shown tensors is told with: under --watch only
        watched tensors are looked at, and the words say so."""
        return "no watched tensor changed" if self.watch else "no tensor changed"

    def noted_names(self, step: Step) -> list[str]:
        """The names the notes a view shows under a step are about (none with --no-explain)."""
        return [name for note in self.notes_of(step) for name in note.tensors] if self.explain else []

    def watched_only(self, named: dict[str, T]) -> dict[str, T]:
        """``named`` without the names --watch leaves out."""
        return {k: v for k, v in named.items() if self.watches(k)} if self.watch else named

    def watches(self, name: str) -> bool:
        """Whether --watch names ``name`` (or the list, dict or module it is part of)."""
        return any(name == w or name.startswith((w + "[", w + ".")) for w in self.watch or ())

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

    def folded(self, turn: FoldedTurn) -> None:
        """A later turn of a loop, in one line (tables and Markdown)."""

    def loop(self, summary: LoopSummary) -> None:
        """A loop ended."""

    def end(self, summary: RunSummary, flow: StepFlow | None = None) -> None:
        """After the last step (``flow`` says what folding and --watch left out)."""

    def rejected(self, info: RunInfo, line: int, column: int, message: str) -> None:
        """Instead of start, steps and end: the script was refused before it ran."""


def source_label(source: str) -> str:
    """How a view's header names the script: ``<stdin>`` for one read from standard input (``-``)."""
    return "<stdin>" if source == "-" else source
