"""JSON Lines output (shared/spec/jsonl-v1.md): one strict JSON object per line."""

from __future__ import annotations

import json
from typing import Any, TextIO

from tcopy_cli.trace.records import RunInfo, RunSummary, Step


def dumps(obj: dict[str, Any]) -> str:
    """Strict JSON (no NaN/Infinity literals) on one line."""
    return json.dumps(obj, allow_nan=False, ensure_ascii=False)


class JsonRenderer:
    """Writes events to a text stream, flushing each line so pipes see steps as they run."""

    def __init__(self, out: TextIO, graph: bool = False) -> None:
        self.out = out
        self.graph = graph

    def _write(self, obj: dict[str, Any]) -> None:
        self.out.write(dumps(obj) + "\n")
        self.out.flush()

    def start(self, info: RunInfo) -> None:
        """The ``start`` event."""
        self._write(info.to_json())

    def step(self, step: Step, shown: bool = True) -> None:
        """A ``step`` event (every step: JSON consumers filter themselves)."""
        event = step.to_json()
        if self.graph and step.graph is not None:
            event["graph"] = step.graph.to_json()
        self._write(event)

    def rejected(self, line: int, column: int, message: str) -> None:
        """The ``rejected`` event for a script refused before running."""
        self._write({"event": "rejected", "line": line, "column": column, "message": message})

    def end(self, summary: RunSummary) -> None:
        """The ``end`` event."""
        self._write(summary.to_json())
