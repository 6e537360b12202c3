"""The Stepper: turns what the tracer tells (a statement started, ended, or carried over) into Step
records, and owns the run's limits, pending output, expectations, loop bookkeeping and headers.

Steps carry facts only (the explain pass adds notes, see ``tcopy_cli.pipeline``). Each statement's
operations come from the dispatch record (``engine.recorder``), its names' bindings from
``engine.bindings``, its tensors from the observer (``trace.observe``).
"""

from __future__ import annotations

import ast
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from types import FrameType
from typing import Any

import torch

from tcopy_cli import __version__
from tcopy_cli.engine import bindings
from tcopy_cli.engine.alarm import Uninterrupted
from tcopy_cli.engine.messages import error_message
from tcopy_cli.engine.recorder import OpMode, Recording
from tcopy_cli.engine.session import torch_session, watchdog
from tcopy_cli.engine.tracer import Ended, Tracer, Where
from tcopy_cli.errors import LimitExceeded, StopRun, TcopyError, TimeoutExceeded
from tcopy_cli.limits import DEFAULT_MAX_VALUES, Limits
from tcopy_cli.program import Program, lead_comments
from tcopy_cli.trace.compat import degraded
from tcopy_cli.trace.names import Walked, iter_named, walk_names
from tcopy_cli.trace.observe import Observer, Snapshot
from tcopy_cli.trace.ops import OpRecorder
from tcopy_cli.trace.records import CaughtInfo, ErrorInfo, OpRecord, RunInfo, RunSummary, Step


@dataclass(frozen=True)
class RunOptions:
    """How to run a script."""

    device: str = "cpu"
    limits: Limits = field(default_factory=Limits)
    keep_going: bool = False
    max_values: int = DEFAULT_MAX_VALUES
    graph: bool = False
    on_stuck: Callable[[str], None] | None = None
    """Called (from the watchdog thread, with a message) if one torch operation outlasts --timeout by
    5 s; the worker passes a function that reports and ends the process."""


@dataclass
class _Statement:
    """What the Stepper keeps about a running statement between its start and its end."""

    token: int
    before: list[bindings.Bound]


class Stepper:
    """Runs a Program under the tracer and emits a Step after every statement."""

    def __init__(self, program: Program, options: RunOptions, emit: Callable[[Step], None]) -> None:
        self.program = program
        self.options = options
        self.emit = emit
        self.observer = Observer(options.max_values, graph=options.graph)
        self.observer.read_saved = "register_hooks" not in program.source  # (SavedTensor.register_hooks)
        self.tracer = Tracer(program, self)
        self.recorder = OpRecorder()
        self.recording = Recording(self.recorder, program, self.tracer.kind, options.limits)
        self.recording.namespace = self.tracer.namespace
        self.recording.statement = self.tracer._statement
        self.recording.on_limit = self.stop_for
        self.recording.unchanged = self.observer.unchanged
        self.recorder.named = lambda: iter_named(self.tracer.names(self.recording.frame))
        self.running: dict[int, _Statement] = {}
        """The statements running (by id of their node and frame), outermost first."""
        self._stepped: set[int] = set()
        """Entries of the loops that steps were in and that have not ended (or not been told to)."""
        self.count = 0
        self.errors = 0
        self.expected = 0  # error steps their line's "# expect: NAME" named (counted in errors too)
        self.missing = 0  # steps marked "# expect: NAME" that raised nothing
        self.current_node: ast.stmt | None = None
        # The statement last started, kept after its step ends: a timeout that fires while tcopy
        # reports it (observing thousands of tensors) is reported there.
        self.last_node: ast.stmt | None = None
        self.last_where = Where()
        self.where_of: Callable[[], Where] = lambda: self.last_where
        """Where the statement running now is (asked only when an error step must say it)."""
        # Characters of notes, warnings and error messages reported so far (--max-output counts them
        # with what the script printed).
        self.reported = 0
        self.stopped_by: str | None = None
        self.deadline: float | None = None
        self.interrupted = False
        self.pending: tuple[ast.stmt | None, str, list[str]] = (None, "", [])
        self.block_comments = lead_comments(program)
        self.narrated: set[int] = set()
        self.next_follows = False  # the step being emitted is followed at once by ``started`` (the tracer's)

    def info(self, origin: str) -> RunInfo:
        """The facts for the ``start`` event."""
        return RunInfo(
            tcopy=__version__,
            torch=torch.__version__,
            device=self.options.device,
            source=origin,
            title=self.program.title,
            degraded=degraded(),
        )

    # --- running ---------------------------------------------------------------------

    def run(self) -> RunSummary:
        """Run the whole script."""
        with torch_session(self.options.device), self.observer.unchanged.watching_threads():
            self._run_body()
        return self.summary()

    def summary(self) -> RunSummary:
        """How the run ended, and the loops that ended after its last step."""
        entries, turns = self._loops_ended()
        return RunSummary(
            steps=self.count,
            errors=self.errors,
            stopped_by=self.stopped_by,
            expected=self.expected,
            missing=self.missing,
            loops_ended=entries,
            loops_ended_turns=turns,
        )

    def run_more(self, program: Program) -> int:
        """Run another piece of code in the same namespace (the REPL); returns its error count.

        The caller holds ``torch_session`` open for the whole session.
        """
        errors = self.errors
        self.program = program
        self.block_comments = lead_comments(program)
        self.tracer.load(program)
        self.recording.load(program)
        self.stopped_by = None
        with self.observer.unchanged.watching_threads():
            self._run_body()
        return self.errors - errors

    def close(self) -> None:
        """Drop the script's names so its tensors are freed now, not at the next GC."""
        self.tracer.forget()

    def _run_body(self) -> None:
        timeout = self.options.limits.timeout
        self.deadline = time.monotonic() + timeout if timeout > 0 else None
        self.interrupted = False
        self.pending = (None, "", [])
        previous_sigint: Any = None
        on_main = threading.current_thread() is threading.main_thread()
        if on_main:
            # Ctrl-C also sets a flag checked at every step: Python drops an exception raised while
            # a destructor runs, and the interrupt must still stop the run.
            def on_sigint(_sig: int, _frame: Any) -> None:
                self.interrupted = True
                raise KeyboardInterrupt

            previous_sigint = signal.signal(signal.SIGINT, on_sigint)
        try:
            with watchdog(timeout, self._where, self.options.on_stuck), OpMode(self.recording):
                try:
                    self.tracer.run()
                    self._flush_pending()
                except StopRun:
                    pass
        except TimeoutExceeded as exc:
            # Raised outside a statement (between steps, while tcopy reported one, while the run was
            # already ending, or as the watchdog disarms): report it once, on the statement it
            # interrupted. A run that timed out never ends "ok".
            node = self.current_node or self.last_node
            if self.stopped_by is None:
                if node is not None:
                    # No time is left to observe the namespace again: the error step has no tensors.
                    self._emit_error(node, exc, observe=False)
                else:
                    self.errors += 1
            self.stopped_by = "timeout"
        finally:
            self.recorder.unwind(0)
            self.running.clear()
            if on_main:
                signal.signal(signal.SIGINT, previous_sigint if previous_sigint is not None else signal.SIG_DFL)

    def _where(self) -> str:
        node = self.current_node
        return f"line {node.lineno}" if node is not None else "the script"

    # --- what the tracer tells ---------------------------------------------------------

    def started(self, node: ast.stmt, header: bool, frame: FrameType, where: Callable[[], Where], turns: int) -> None:
        """A statement starts: check the limits (they end the run with an error step) and open its
        operation record. ``where`` tells where it runs (asked only for an error step), ``turns`` the
        most turns a loop of its frame has run."""
        with torch._C.DisableTorchFunction():
            self.where_of = where
            if header:
                self._check_deadline(node)
            else:
                self._check_step_budget(node)
            if turns > self.options.limits.max_iterations:
                self._check_iterations(node, where())
            self.current_node = self.last_node = node
            before = bindings.before(node, frame, self.tracer.kind)
            self.running[id(frame)] = _Statement(self.recorder.push(), before)

    def carry(self, node: ast.stmt, printed: str, warned: list[str], frame: FrameType) -> None:
        """Output and operations of a statement that ends unreported go to the next step."""
        with torch._C.DisableTorchFunction():
            self._carry(node, printed, warned, self.running.pop(id(frame), None))

    def _carry(self, node: ast.stmt, printed: str, warned: list[str], running: _Statement | None) -> None:
        if printed or warned:
            self.pending = (node, self.pending[1] + printed, self.pending[2] + warned)
        if running is not None:
            self.recorder.carry(self.recorder.pop())
            self.recorder.unwind(running.token)

    def called(self, function: str, frame: FrameType | None, args: tuple[Any, ...] = ()) -> None:
        """A tracked library call ran (``watched.TRACKED``): ``zero_grad`` is recorded among the statement's
        operations; saved-tensor hooks stop the observer reading saved tensors; tensors about to be swapped
        lose the observer's weak references (``swap_tensors`` refuses a tensor that has one)."""
        if function == "saved_tensors_hooks":
            self.observer.read_saved = False
        elif function == "swap_tensors":
            self.observer.forget(*args)
            for obj in args:
                self.recording.recorder.forget(obj)
        elif frame is not None:
            with torch._C.DisableTorchFunction():
                self.recording.record_call(function, frame)

    def stop_for(self, exc: BaseException) -> None:
        """A limit ended the run inside the script (--timeout, --max-elements)."""
        if isinstance(exc, TimeoutExceeded):
            self.stopped_by = "timeout"
        elif isinstance(exc, LimitExceeded):
            self.stopped_by = exc.limit
        else:
            self.stopped_by = "error"

    def ended(self, ended: Ended) -> None:
        """Report a statement that ended (a header only if it failed or was caught failing); a run
        that must stop (a limit, an unexpected error outside --keep-going) raises StopRun."""
        with torch._C.DisableTorchFunction():
            self._ended(ended)
        if self.stopped_by is not None:
            raise StopRun()

    def _ended(self, ended: Ended) -> None:
        node = ended.node
        running = self.running.pop(id(ended.frame), None) if ended.frame is not None else None
        if ended.header and ended.error is None and ended.caught is None:
            if ended.printed or ended.warned:
                self.pending = (node, self.pending[1] + ended.printed, self.pending[2] + ended.warned)
            if running is not None:  # what the header did opens the next step's record
                carried, _ = self._pop_ops(ended, running)
                self.recorder.unwind(running.token)
                self.recorder.carry(carried)
            return
        self.current_node = self.last_node = node
        self.last_where = ended.where
        self.where_of = lambda: ended.where
        walked: Walked | None = None
        ops: list[OpRecord] = []
        if running is not None:
            ops, walked = self._pop_ops(ended, running)
            self.recorder.unwind(running.token)
        self._finish(
            node,
            ended.printed,
            ended.warned,
            ended.error,
            ended.where,
            grad_enabled=ended.grad_enabled,
            caught=ended.caught,
            hooks=ended.hooks,
            replaced=ended.replaced,
            ops=ops,
            walked=walked,
            frame=ended.frame,
        )

    def _pop_ops(self, ended: Ended, running: _Statement) -> tuple[list[OpRecord], Walked | None]:
        """The statement's operation records, results named as the script now names them, and the
        bindings it made that no torch call made."""
        names_now = self.tracer.names()
        walked: Walked | None = None
        by_id: dict[int, list[str]] = {}
        if self.recorder.has_results():
            walked = walk_names(names_now)
            for name, value in walked[0]:
                by_id.setdefault(id(value), []).append(name)
        function = ended.where.function
        targets = bindings.targets(ended.node, function)
        ops = self.recorder.pop(by_id, targets)
        if ended.error is None:
            ops += bindings.statement_ops(ended.node, running.before, names_now, function, ops, self.program)
        return ops, walked

    # --- limits --------------------------------------------------------------------------

    def _check_deadline(self, node: ast.stmt) -> None:
        """--timeout, checked at every step and loop turn.

        SIGALRM raises TimeoutExceeded too, but Python drops an exception raised while a weakref
        finalizer or destructor runs; this check makes the limit hold anyway.
        """
        if self.interrupted:
            raise KeyboardInterrupt
        if self.deadline is not None and time.monotonic() > self.deadline:
            if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):
                signal.setitimer(signal.ITIMER_REAL, 0)  # the alarm must not fire into the reporting
            self.deadline = None
            exc = self.options.limits.exceeded("timeout", "the run took longer than the limit")
            self._emit_error(node, exc)
            self.stopped_by = "timeout"
            raise StopRun()

    def _check_step_budget(self, node: ast.stmt) -> None:
        self._check_deadline(node)
        if self.count >= self.options.limits.max_steps:
            exc = self.options.limits.exceeded("max_steps", "the script ran too many steps")
            self._emit_error(node, exc)
            self.stopped_by = "max_steps"
            raise StopRun()

    def _check_iterations(self, node: ast.stmt, where: Where) -> None:
        """--max-iterations: a loop about to run a turn past the limit ends the run, on its header (the
        turn that would be one too many is not counted)."""
        limit = self.options.limits.max_iterations
        over = next((i for i, loop in enumerate(where.loops) if loop.iteration > limit), None)
        if over is None:
            return
        header = self.tracer.index.statement(where.loops[over].line) or node
        exc = self.options.limits.exceeded("max_iterations", "a loop ran too many iterations")
        loops = (*where.loops[:over], replace(where.loops[over], iteration=limit))
        self._emit_error(header, exc, where=replace(where, loops=loops))
        self.stopped_by = "max_iterations"
        raise StopRun()

    def _emit_error(self, node: ast.stmt, exc: BaseException, observe: bool = True, where: Where | None = None) -> None:
        self._finish(node, "", [], exc, where or self.where_of(), observe=observe)

    def _flush_pending(self) -> None:
        """Header output with no step after it becomes a step of the header."""
        node, printed, warned = self.pending
        if node is not None and (printed or warned):
            with torch._C.DisableTorchFunction():
                self._finish(node, "", [], None, self.last_where)

    # --- the step record -----------------------------------------------------------------

    def _snapshot(self, observe: bool, walked: Walked | None) -> Snapshot:
        if not observe:
            return Snapshot({}, {}, 0, [])
        if self.options.device == "cpu":
            return self.observer.snapshot(self.tracer.names(), walked)
        # The default-device mode routes every torch call through Python; observing creates no
        # tensors that need it, so switch it off while observing.
        torch.set_default_device(None)
        try:
            return self.observer.snapshot(self.tracer.names(), walked)
        finally:
            torch.set_default_device(self.options.device)

    def _finish(
        self,
        node: ast.stmt,
        stdout: str,
        warned: list[str],
        error: BaseException | None,
        where: Where,
        grad_enabled: bool | None = None,
        caught: tuple[BaseException, int] | None = None,
        observe: bool = True,
        hooks: list[str] | None = None,
        replaced: list[str] | None = None,
        ops: list[OpRecord] | None = None,
        walked: Walked | None = None,
        frame: FrameType | None = None,
    ) -> None:
        """Emit the step of a statement that ended (``error``: the error it ended with, or a limit's)."""
        _, pending_out, pending_warn = self.pending
        if pending_out or pending_warn:
            stdout, warned = pending_out + stdout, pending_warn + warned
            self.pending = (None, "", [])
        snap = self._snapshot(observe, walked)
        limits = self.options.limits
        if error is None and caught is None and self.count >= limits.max_steps:
            # A statement that called a function finishes after the function's own steps, which may
            # have used up the budget meanwhile.
            error = limits.exceeded("max_steps", "the script ran too many steps")
            self.stopped_by = "max_steps"
        if error is None and snap.total_bytes > limits.max_bytes:
            error = limits.exceeded("max_bytes", f"tensors now use {snap.total_bytes:,} bytes")
            self.stopped_by = "max_bytes"
        info = None
        expect = self.program.expectation(node)
        if error is not None:
            message = error_message(error, frame)
            expected = expect is not None and _raises(error, expect)
            info = ErrorInfo(type=type(error).__name__, message=message, expected=expected)
        caught_info = None
        if caught is not None:
            exc, line = caught
            caught_info = CaughtInfo(ErrorInfo(type=type(exc).__name__, message=str(exc)), except_line=line)
        # Notes and error messages are output too: a script that catches a huge error in a loop must
        # not flood the report. The notes quote these texts, so they are what is counted.
        self.reported += sum(map(len, warned))
        self.reported += len(info.message) if info is not None else 0
        self.reported += len(caught_info.error.message) if caught_info is not None else 0
        printed = self.tracer.output.printed
        if printed + self.reported > limits.max_output and self.stopped_by != "max_output":
            self.stopped_by = "max_output"
            detail = "the run's output (printed text, notes and error messages) is too long"
            error = limits.exceeded("max_output", detail)
            info = ErrorInfo(type=type(error).__name__, message=str(error))
            caught_info = None
            stdout, warned = stdout[: max(0, limits.max_output - printed + len(stdout))], []
        with Uninterrupted():  # a step numbered is a step sent: --timeout raises after it
            self.count += 1
            ended, ended_turns = self._loops_ended()
            echoed, self.tracer.echoed = self.tracer.echoed, None
            record = Step(
                index=self.count,
                line=node.lineno,
                source=self.program.statement_source(node),
                status="error" if info else "ok",
                error=info,
                stdout=stdout,
                warnings=warned,
                tensors=snap.tensors,
                arrays=snap.arrays,
                narration=self._narration(node),
                grad_enabled=torch.is_grad_enabled() if grad_enabled is None else grad_enabled,
                saved_events=snap.saved_events,
                graph=snap.graph,
                unlisted=snap.unlisted,
                observed=observe,
                function=where.function,
                depth=where.depth,
                caught=caught_info,
                expect=expect,
                value=echoed if isinstance(node, ast.Expr) else None,
                hooks=hooks or [],
                hooks_replaced=replaced or [],
                ops=ops or [],
                loops=where.loops,
                contexts=where.contexts,
                calls=where.calls,
                loops_ended=ended,
                loops_ended_turns=ended_turns,
            )
            self._stepped.update(loop.entry for loop in record.loops)
            self.emit(record)
        if record.missed:
            self.missing += 1
        if info is not None:
            self.errors += 1
            self.expected += info.expected  # the intended outcome: the run goes on

    def _loops_ended(self) -> tuple[list[int], list[int]]:
        """The loops that ended since the last step and had steps of their own (the others no view
        follows), and the turns each ran (``Step.loops_ended``, ``loops_ended_turns``)."""
        ended = [(entry, turns) for entry, turns in self.tracer.loops.take_ended() if entry in self._stepped]
        entries = [entry for entry, _ in ended]
        self._stepped.difference_update(entries)
        return entries, [turns for _, turns in ended]

    def _narration(self, node: ast.stmt) -> list[str]:
        """Comments above the statement, after those above the blocks it is the first statement of
        (each block's shown once, on the first step it runs)."""
        lines: list[str] = []
        for block, comments in self.block_comments.get(id(node), ()):
            if block not in self.narrated:
                self.narrated.add(block)
                lines += comments
        return lines + self.program.narration(node)


def _raises(error: BaseException, name: str) -> bool:
    """True when ``error`` is an instance of a class called ``name`` (as ``except NAME`` would catch it);
    tcopy's own limits are never an expected outcome."""
    if isinstance(error, TcopyError):
        return False
    return any(cls.__name__ == name for cls in type(error).__mro__)


__all__ = ["RunOptions", "Stepper"]
