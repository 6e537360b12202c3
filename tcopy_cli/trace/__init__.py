"""Run statements, observe tensors and autograd, build Step records."""

from __future__ import annotations

from dataclasses import dataclass, field

from tcopy_cli.trace.records import RunInfo, RunSummary, Step


@dataclass
class Trace:
    """A finished run: start facts, every step, and how it ended."""

    info: RunInfo
    steps: list[Step] = field(default_factory=list)
    summary: RunSummary | None = None


__all__ = ["Trace"]
