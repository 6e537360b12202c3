"""Renderers: Rich tables, JSON Lines, Markdown. They read records only, never torch."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from tcopy_cli.trace.records import RunInfo, RunSummary, Step


class Renderer(Protocol):
    """What the CLI feeds a run into."""

    def start(self, info: RunInfo) -> None:
        """Before the first step."""

    def step(self, step: Step, shown: bool = True) -> None:
        """After each step; ``shown`` is False for steps outside --step/--from/--to."""

    def end(self, summary: RunSummary) -> None:
        """After the last step."""
