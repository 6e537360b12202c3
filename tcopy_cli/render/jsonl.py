"""JSON Lines output (shared/spec/jsonl-v1.md): one strict JSON object per line."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, TextIO

from tcopy_cli.render import ViewOptions
from tcopy_cli.trace.records import RunInfo, RunSummary, Step

if TYPE_CHECKING:
    from tcopy_cli.render.folding import FoldedTurn, StepFlow
    from tcopy_cli.render.loops import LoopSummary


_STRICT = json.JSONEncoder(allow_nan=False, ensure_ascii=False)  # one for all lines: dumps() makes one per call
# What the encoder leaves as it is (it escapes only C0, quotes and backslashes) but a terminal
# showing the line would obey or a strict reader refuse: DEL, C1 (0x9b is CSI), the
# bidirectional controls and line separators, lone surrogates. Outside strings a line is ASCII.
_UNSAFE = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escape(m: re.Match[str]) -> str:
    return f"\\u{ord(m[0]):04x}"


def dumps(obj: dict[str, Any]) -> str:
    """Strict JSON (no NaN/Infinity literals) on one line; the exact text, with the characters of
    ``printable.UNPRINTABLE`` that JSON leaves raw written as ``\\uNNNN`` escapes."""
    line = _STRICT.encode(obj)
    return line if _UNSAFE.search(line) is None else _UNSAFE.sub(_escape, line)


class JsonRenderer:
    """Writes events to a text stream, flushing each line so pipes see steps as they run."""

    def __init__(self, out: TextIO, options: ViewOptions | None = None) -> None:
        self.out = out
        self.graph = (options or ViewOptions()).graph
        self.refs = (options or ViewOptions()).json_refs
        # name -> (the tensor record last written in full for it, its step index)
        self.written: dict[str, tuple[dict[str, Any], int]] = {}

    def _write(self, obj: dict[str, Any]) -> None:
        self.out.write(dumps(obj) + "\n")
        self.out.flush()

    def start(self, info: RunInfo) -> None:
        """The ``start`` event."""
        event = info.to_json()
        if self.refs:
            event["tensor_refs"] = True
        self._write(event)

    def step(self, step: Step, shown: bool = True) -> None:
        """A ``step`` event (every step: JSON consumers filter themselves)."""
        event = step.to_json()
        if self.graph and step.graph is not None:
            event["graph"] = step.graph.to_json()
        if self.refs:
            self._refer(event["tensors"], step.index)
        self._write(event)

    def _refer(self, tensors: dict[str, Any], index: int) -> None:
        """--json-refs: replace each record identical to its name's last full record by a reference."""
        for name, record in tensors.items():
            last = self.written.get(name)
            if last is not None and last[0] == record:
                tensors[name] = {"unchanged_since": last[1]}
            else:
                self.written[name] = (record, index)

    def folded(self, turn: FoldedTurn) -> None:
        """JSON folds nothing: every step was written."""

    def loop(self, summary: LoopSummary) -> None:
        """A ``loop`` event: the loop's turns and how each tensor it changed evolved."""
        self._write(summary.to_json())

    def rejected(self, info: RunInfo, line: int, column: int, message: str) -> None:
        """``start``, ``rejected`` and ``end`` for a script refused before running."""
        self.start(info)
        self._write({"event": "rejected", "line": line, "column": column, "message": message})
        self.end(RunSummary(steps=0, errors=0, rejected=True))

    def end(self, summary: RunSummary, flow: StepFlow | None = None) -> None:
        """The ``end`` event."""
        self._write(summary.to_json())
