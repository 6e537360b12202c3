"""One worker for a REPL session (``tcopy repl``): every piece of code runs in the same confined
namespace, and a worker that is lost is replaced by a fresh one.

Nothing here imports torch.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from typing import Any

from tcopy_cli.errors import ScriptRejected
from tcopy_cli.process.account import WorkerState
from tcopy_cli.program import script_text
from tcopy_cli.supervise import WorkerOptions, conclude, popen, pump, request, stop
from tcopy_cli.trace import wire
from tcopy_cli.trace.records import RunInfo, Step


class WorkerSession:
    """One worker for a REPL session: every piece of code runs in the same confined namespace.

    ``start`` gets the RunInfo once the worker is ready. ``run`` sends a piece of code and
    calls ``emit`` with its steps; a worker that crashes, hangs past --timeout or sends
    too much becomes an error step, and the next ``run`` starts a fresh worker (its
    names are gone: ``lost`` says so once). ``explain`` makes the explain pass of each worker
    (a fresh one with a fresh worker: the pass remembers the steps before).
    """

    def __init__(
        self,
        options: WorkerOptions,
        start: Callable[[RunInfo], None],
        explain: Callable[[], Callable[[Step], Step]] | None = None,
    ) -> None:
        self.options = options
        self.on_start = start
        self.explain = explain
        self.proc: subprocess.Popen[bytes] | None = None
        self.state = WorkerState()
        self.lost = False

    def _open(self) -> subprocess.Popen[bytes]:
        req = {**request("", "<repl>", self.options), "mode": "session"}
        self.state = WorkerState(
            mode="session",
            explain=self.explain() if self.explain is not None else None,
            printable=self.options.printable,
            timeout=self.options.limits.timeout,
        )
        proc = popen(self.options, subprocess.PIPE)
        self.proc = proc
        self._write(json.dumps(req))  # its start frame comes with the first piece's frames
        return proc

    def _write(self, line: str) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write(line.encode("utf-8") + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass  # the worker died: reading its frames reports how

    def run(self, source: str, line_offset: int, emit: Callable[[Step], None]) -> None:
        """Run one piece of code (ScriptRejected if the worker refuses it)."""
        proc = self.proc if self.proc is not None and self.proc.poll() is None else self._open()
        state = self.state
        state.final, state.killed_for, state.wire_bytes, state.stack = None, None, 0, wire.RunningStack()
        state.piece_errors = 0
        try:
            self._write(json.dumps({"source": source, "line_offset": line_offset}))
            pump(proc, self.options, state, emit, self.on_start)
        except BaseException:  # Ctrl-C: the worker and its names are gone
            self.close()
            raise
        final: dict[str, Any] = state.final or {}
        if state.info is None:  # the worker did not start: say why (UsageError, TcopyError, internal)
            self.close()
            conclude(proc, self.options, state, emit)
        if final.get("kind") == "done":
            return
        if final.get("kind") == "refused":
            raise ScriptRejected(final["message"], final.get("line"), final.get("column"))
        self.close()
        self.lost = True
        state.source = "\n" * line_offset + script_text(source)  # the crash step quotes the piece's statement
        conclude(proc, self.options, state, emit)

    def close(self) -> None:
        """End the worker (the session's names are lost)."""
        if self.proc is not None:
            if self.proc.stdin is not None:
                try:
                    self.proc.stdin.close()
                except BrokenPipeError:
                    pass
            stop(self.proc)
            self.proc = None
