"""Run a Program statement by statement and turn each statement into a Step record."""

from __future__ import annotations

import ast
import contextlib
import signal
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

from tcopy_cli import __version__
from tcopy_cli.errors import StopRun, TcopyError, TimeoutExceeded, UsageError
from tcopy_cli.limits import DEFAULT_MAX_VALUES, Limits
from tcopy_cli.script.interp import Caught, ControlFlow, Interpreter
from tcopy_cli.script.parse import Program
from tcopy_cli.trace.compat import degraded
from tcopy_cli.trace.observe import Observer, Snapshot, Walked, iter_named, walk_names
from tcopy_cli.trace.ops import OpRecorder
from tcopy_cli.trace.records import (
    CallSite,
    CaughtInfo,
    ErrorInfo,
    LoopContext,
    OpRecord,
    RunInfo,
    RunSummary,
    Step,
)

# Seconds the hard watchdog waits past --timeout for a single C operation to return
# before it ends the process (Python cannot interrupt code running inside torch).
HARD_TIMEOUT_GRACE = 5.0


class PrintedCount(Protocol):
    """Counts what the script printed (for --max-output)."""

    @property
    def printed(self) -> int:
        """Characters printed so far in the run."""


class Engine(Protocol):
    """What executes the script for a Runner: the sandbox's Interpreter or the ``--trust`` tracer."""

    @property
    def output(self) -> PrintedCount:
        """The script's printed output so far."""

    @property
    def current_function(self) -> str | None:
        """The script function whose statement is running, None at module level."""

    @property
    def depth(self) -> int:
        """How many script-function calls are running."""

    echoed: str | None
    """The repr of the last top-level expression's value, for the REPL to echo."""
    loops: list[list[Any]]
    """The loops running, outermost first: [line, turn, total or None, entry number (, in a generator)]."""
    loops_ended: deque[tuple[int, int]]
    """The loops that ended since the last step, (entry number, turns run) (the runner takes them; at
    most ``LOOPS_ENDED_KEPT``, the latest)."""
    contexts: list[str]
    """Grad-mode blocks running, outermost first."""

    def call_chain(self) -> list[tuple[str, int]]:
        """Each running script-function call, outermost first: (function, line that called it)."""

    def run(self) -> None:
        """Execute the whole program, reporting steps to the runner."""

    def load(self, program: Program) -> None:
        """Run ``program`` next, in the same namespace."""

    def forget(self) -> None:
        """Drop the script's names."""

    def names(self) -> dict[str, Any]:
        """The names to observe: module names, then running functions' locals as ``fn:name``."""

    def capture_output(self) -> contextlib.AbstractContextManager[Any]:
        """A context whose value collects what the script prints inside it."""

    def would_catch(self, exc: BaseException) -> int | None:
        """Line of the ``except`` that will handle ``exc``, or None."""


@dataclass(frozen=True)
class RunOptions:
    """How to run a script."""

    device: str = "cpu"
    limits: Limits = field(default_factory=Limits)
    keep_going: bool = False
    max_values: int = DEFAULT_MAX_VALUES
    graph: bool = False
    on_stuck: Callable[[str], None] | None = None
    """Called (from the watchdog thread, with a message) if one torch operation outlasts
    --timeout by 5 s; the command line passes a function that reports and ends the process."""


def available_devices() -> list[str]:
    """Devices this machine can run on, e.g. ['cpu', 'cuda:0']."""
    devices = ["cpu"]
    if torch.cuda.is_available():
        devices += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        devices.append("mps")
    return devices


def resolve_device(spec: str) -> str:
    """Normalise --device (cpu, cuda, cuda:N, mps, auto); UsageError if unavailable."""
    spec = spec.strip().lower()
    available = available_devices()
    if spec == "auto":
        for prefix in ("cuda", "mps"):
            for dev in available:
                if dev.startswith(prefix):
                    return dev
        return "cpu"
    if spec == "cuda":
        spec = f"cuda:{torch.cuda.current_device()}" if torch.cuda.is_available() else "cuda:0"
    if spec == "mps:0":
        spec = "mps"
    if spec not in available:
        try:
            torch.device(spec)
        except RuntimeError:
            raise UsageError(f"'{spec}' is not a device name; use cpu, cuda, cuda:N, mps or auto") from None
        raise UsageError(f"device '{spec}' is not available on this machine; available: {', '.join(available)}")
    return spec


@contextlib.contextmanager
def torch_session(device: str) -> Iterator[None]:
    """Make ``device`` the default for tensor creation; restore torch's global state after."""
    grad = torch.is_grad_enabled()
    dtype = torch.get_default_dtype()
    anomaly = torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()
    print_options = dict(vars(torch._tensor_str.PRINT_OPTS))  # a script may call torch.set_printoptions
    if device != "cpu":
        torch.set_default_device(device)
    try:
        yield
    finally:
        if device != "cpu":
            torch.set_default_device(None)
        torch.set_grad_enabled(grad)
        torch.set_default_dtype(dtype)
        torch.set_anomaly_enabled(*anomaly)
        for name, value in print_options.items():
            setattr(torch._tensor_str.PRINT_OPTS, name, value)


@contextlib.contextmanager
def watchdog(
    seconds: float, describe: Callable[[], str], on_stuck: Callable[[str], None] | None = None
) -> Iterator[None]:
    """--timeout: an interval timer interrupts Python code; a thread reports a stuck C call.

    SIGALRM raises TimeoutExceeded between Python bytecodes, which covers loops and
    everything tcopy itself does. A single torch operation running in C can't be
    interrupted; if the process is still busy ``HARD_TIMEOUT_GRACE`` seconds later, the
    watchdog thread calls ``on_stuck`` with a message (the command line reports it and
    ends the process; the Python API passes nothing and never ends it).
    """
    if seconds <= 0:
        yield
        return
    use_signal = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    done = threading.Event()

    def hard_stop(report: Callable[[str], None]) -> None:
        if not done.wait(seconds + HARD_TIMEOUT_GRACE):
            report(
                f"timed out after {seconds:g} s (--timeout) in {describe()}; a single "
                "operation did not return, so tcopy stopped the process."
            )

    if on_stuck is not None:
        threading.Thread(target=hard_stop, args=(on_stuck,), name="tcopy-watchdog", daemon=True).start()
    previous: Any = None
    if use_signal:

        def on_alarm(_sig: int, _frame: Any) -> None:
            raise Limits(timeout=seconds).exceeded("timeout", "the run took longer than the limit")

        previous = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        if use_signal:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        done.set()


class Runner:
    """Executes a Program and emits a Step after every statement.

    It is the interpreter's StepHook: the interpreter walks blocks and loops, and
    hands each simple statement here to be captured and observed. Steps carry facts
    only; notes are added by the explain pass (see tcopy_cli.pipeline).
    """

    def __init__(self, program: Program, options: RunOptions, emit: Callable[[Step], None]) -> None:
        self.program = program
        self.options = options
        self.emit = emit
        self.observer = Observer(options.max_values, graph=options.graph)
        self._walked: Walked | None = None
        """What ``_pop_ops`` found under the script's names, for observing the same step."""
        self._stepped: set[int] = set()
        """Entries of the loops that steps were in and that have not ended (or not been told to)."""
        self.interp = self._engine()
        self.recorder = OpRecorder()
        if isinstance(self.interp, Interpreter):  # --trust runs have no operation record yet
            self.recorder.names = self.interp.name_of
            self.recorder.holders = self.interp.names_of
            interp = self.interp
            self.recorder.named = lambda: iter_named(interp.names())
            self.interp.ops = self.recorder
        self.count = 0
        self.errors = 0
        self.expected = 0  # error steps their line's "# expect: NAME" named (counted in errors too)
        self.missing = 0  # steps marked "# expect: NAME" that raised nothing
        self.current_node: ast.stmt | None = None
        # The statement last started, kept after its step ends: a timeout that fires while
        # tcopy reports it (observing thousands of tensors) is reported there.
        self.last_node: ast.stmt | None = None
        # Characters of notes, warnings and error messages reported so far (--max-output
        # counts them with what the script printed).
        self.reported = 0
        self.stopped_by: str | None = None
        self.grad_enabled = True
        self.deadline: float | None = None
        self.interrupted = False
        self.pending: tuple[ast.stmt | None, str, list[str]] = (None, "", [])
        self.block_comments = lead_comments(program)
        self.narrated: set[int] = set()

    def _engine(self) -> Engine:
        """What executes the script: the sandbox's interpreter (``--trust`` has its own)."""
        return Interpreter(self.program, self.options.limits, self)

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

    def run(self) -> RunSummary:
        """Run the whole script."""
        with torch_session(self.options.device):
            self._run_body()
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

    def _run_body(self) -> None:
        timeout = self.options.limits.timeout
        self.deadline = time.monotonic() + timeout if timeout > 0 else None
        self.interrupted = False
        previous_sigint: Any = None
        on_main = threading.current_thread() is threading.main_thread()
        if on_main:
            # Ctrl-C also sets a flag checked at every step: Python drops an exception
            # raised while a destructor runs, and the interrupt must still stop the run.
            def on_sigint(_sig: int, _frame: Any) -> None:
                self.interrupted = True
                raise KeyboardInterrupt

            previous_sigint = signal.signal(signal.SIGINT, on_sigint)
        try:
            with watchdog(timeout, self._where, self.options.on_stuck):
                try:
                    self.interp.run()
                    self._flush_pending()
                except StopRun:
                    pass
        except TimeoutExceeded as exc:
            # Raised outside a statement (between steps, while tcopy reported one, while
            # the run was already ending, or as the watchdog disarms): report it once, on
            # the statement it interrupted. A run that timed out never ends "ok".
            node = self.current_node or self.last_node
            if self.stopped_by is None:
                if node is not None:
                    # No time is left to observe the namespace again (that may be what
                    # ran out of time): the error step carries no tensor records.
                    self._emit_error(node, exc, observe=False)
                else:
                    self.errors += 1
            self.stopped_by = "timeout"
        finally:
            if on_main:
                signal.signal(signal.SIGINT, previous_sigint if previous_sigint is not None else signal.SIG_DFL)

    def run_more(self, program: Program) -> int:
        """Run another piece of code in the same namespace (the REPL); returns its error count.

        The caller holds ``torch_session`` open for the whole session.
        """
        errors = self.errors
        self.program = program
        self.block_comments = lead_comments(program)
        self.interp.load(program)
        self.stopped_by = None
        self._run_body()
        return self.errors - errors

    def close(self) -> None:
        """Drop the script's names so its tensors are freed now, not at the next GC."""
        self.interp.forget()

    def _where(self) -> str:
        node = self.current_node
        return f"line {node.lineno}" if node is not None else "the script"

    # --- StepHook --------------------------------------------------------------------

    def step(self, node: ast.stmt, action: Callable[[], None]) -> bool:
        """Run one statement as a step.

        Steps nest: a statement that calls a script function runs the function's
        statements as steps of their own first, so this saves and restores the state of
        the enclosing step. An error that a surrounding ``try`` will handle is reported
        on its step (status ok, with a note) and then travels on to the ``except``.
        """
        self._check_step_budget(node)
        saved = (self.current_node, self.grad_enabled)
        self.current_node = self.last_node = node
        self.grad_enabled = torch.is_grad_enabled()
        error: BaseException | None = None
        handled_at: int | None = None
        depth = self.recorder.push()
        try:
            with self.interp.capture_output() as out, warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    action()
                except Caught as c:  # raised by a nested step, already reported there
                    error, handled_at = c.exc, self.interp.would_catch(c.exc)
                except (StopRun, KeyboardInterrupt, ControlFlow):
                    raise
                except Exception as exc:  # the script's error becomes the step's error
                    error = exc
                    handled_at = self.interp.would_catch(exc)
            warned = [str(w.message) for w in caught]
            ops = self._pop_ops(node)
            walked, self._walked = self._walked, None
            if handled_at is not None and error is not None:
                self._finish(node, out.getvalue(), warned, None, caught=(error, handled_at), ops=ops, walked=walked)
            else:
                ok = self._finish(node, out.getvalue(), warned, error, ops=ops, walked=walked)
        finally:
            self.recorder.unwind(depth)
            self.current_node, self.grad_enabled = saved
        if handled_at is not None and error is not None:
            raise Caught(error)
        return ok

    def header(self, node: ast.stmt, action: Callable[[], Any]) -> tuple[bool, Any]:
        """Evaluate a block header; only a failure becomes a step.

        What a successful header printed or warned is carried into the next step (or
        reported on a step of its own if no step follows), so nothing is lost.
        """
        self._check_deadline(node)
        self.current_node = self.last_node = node
        error: BaseException | None = None
        result: Any = None
        depth = self.recorder.push()
        # capture_output hands the enclosing capture back afterwards: a header inside a
        # function that a step called (print(f()) with a loop in f) loses nothing.
        with self.interp.capture_output() as out, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = action()
            except (StopRun, KeyboardInterrupt, ControlFlow):
                raise
            except Exception as exc:
                error = exc
            finally:
                ops = self._pop_ops(node)
                self.recorder.unwind(depth)
        printed, warned = out.getvalue(), [str(w.message) for w in caught]
        if error is not None and (line := self.interp.would_catch(error)) is not None:
            self._finish(node, printed, warned, None, caught=(error, line), ops=ops)
            raise Caught(error)
        if error is None:
            if printed or warned:
                self.pending = (node, self.pending[1] + printed, self.pending[2] + warned)
            if ops:
                self.recorder.carry(ops)
            return True, result
        self._check_step_budget(node)
        self._finish(node, printed, warned, error, ops=ops)
        return False, None

    def turn(self, node: ast.stmt) -> None:
        """A loop header that needs no capture (see ``StepHook.turn``): the limits still hold."""
        self._check_deadline(node)
        self.current_node = self.last_node = node

    def _pop_ops(self, node: ast.stmt) -> list[OpRecord]:
        """The running step's operation records, results named as the script now names them."""
        names: dict[int, list[str]] = {}
        if not self.recorder.has_results():
            return self.recorder.pop(names)
        # Observing the step walks the same names next: it takes this list (see ``step``).
        self._walked = walk_names(self.interp.names())
        for name, value in self._walked[0]:
            names.setdefault(id(value), []).append(name)
        return self.recorder.pop(names, _targets(node, self.interp.current_function))

    # --- internals -------------------------------------------------------------------

    def _check_deadline(self, node: ast.stmt) -> None:
        """--timeout, checked at every step and loop turn.

        SIGALRM raises TimeoutExceeded too, but Python drops an exception raised while a
        weakref finalizer or destructor runs; this check makes the limit hold anyway.
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

    def _echoed(self, node: ast.stmt) -> str | None:
        """The value the REPL echoes for ``node`` (a top-level expression statement), once."""
        value, self.interp.echoed = self.interp.echoed, None
        return value if isinstance(node, ast.Expr) else None

    def _emit_error(self, node: ast.stmt, exc: BaseException, observe: bool = True) -> None:
        self._finish(node, "", [], exc, stop=False, observe=observe)

    def _flush_pending(self) -> None:
        """Header output with no step after it becomes a step of the header."""
        node, printed, warned = self.pending
        if node is not None and (printed or warned):
            self._finish(node, "", [], None, stop=False)

    def _finish(
        self,
        node: ast.stmt,
        stdout: str,
        warned: list[str],
        error: BaseException | None,
        stop: bool = True,
        caught: tuple[BaseException, int] | None = None,
        observe: bool = True,
        hooks: list[str] | None = None,
        expectable: bool | None = None,
        ops: list[OpRecord] | None = None,
        walked: Walked | None = None,
    ) -> bool:
        _, pending_out, pending_warn = self.pending
        if pending_out or pending_warn:
            stdout, warned = pending_out + stdout, pending_warn + warned
            self.pending = (None, "", [])
        if not observe:
            snap = Snapshot({}, {}, 0, [])
        elif self.options.device == "cpu":
            snap = self.observer.snapshot(self.interp.names(), walked)
        else:
            # The default-device mode routes every torch call through Python; observing
            # creates no tensors that need it, so switch it off while observing.
            torch.set_default_device(None)
            try:
                snap = self.observer.snapshot(self.interp.names(), walked)
            finally:
                torch.set_default_device(self.options.device)
        tensors, arrays, total = snap.tensors, snap.arrays, snap.total_bytes
        limits = self.options.limits
        if error is None and caught is None and self.count >= limits.max_steps:
            # A statement that called a function finishes after the function's own steps,
            # which may have used up the budget meanwhile.
            error = limits.exceeded("max_steps", "the script ran too many steps")
            self.stopped_by = "max_steps"
        if error is None and total > limits.max_bytes:
            error = limits.exceeded("max_bytes", f"tensors now use {total:,} bytes")
        info = None
        expect = self.program.expectation(node)
        if error is not None:
            message = str(error)
            if isinstance(error, KeyError):
                message = repr(error.args[0]) if error.args else ""
            expected = expect is not None and _raises(error, expect) and (stop if expectable is None else expectable)
            info = ErrorInfo(type=type(error).__name__, message=message, expected=expected)
        caught_info = None
        if caught is not None:
            exc, line = caught
            caught_info = CaughtInfo(ErrorInfo(type=type(exc).__name__, message=str(exc)), except_line=line)
        # Notes and error messages are output too: a script that catches a huge error in
        # a loop must not flood the report. The notes the explain pass adds quote these
        # texts (warnings, error and caught messages), so they are what is counted.
        self.reported += sum(map(len, warned))
        self.reported += len(info.message) if info is not None else 0
        self.reported += len(caught_info.error.message) if caught_info is not None else 0
        printed = self.interp.output.printed
        if printed + self.reported > limits.max_output and self.stopped_by != "max_output":
            self.stopped_by = "max_output"
            detail = "the run's output (printed text, notes and error messages) is too long"
            error = limits.exceeded("max_output", detail)
            info = ErrorInfo(type=type(error).__name__, message=str(error))
            caught_info = None
            stdout, warned = stdout[: max(0, limits.max_output - printed + len(stdout))], []
        self.count += 1
        source = self.program.statement_source(node)
        ended, ended_turns = self._loops_ended()
        record = Step(
            index=self.count,
            line=node.lineno,
            source=source,
            status="error" if info else "ok",
            error=info,
            stdout=stdout,
            warnings=warned,
            tensors=tensors,
            arrays=arrays,
            narration=self._narration(node),
            grad_enabled=self.grad_enabled,
            saved_events=snap.saved_events,
            graph=snap.graph,
            unlisted=snap.unlisted,
            observed=observe,
            function=self.interp.current_function,
            depth=self.interp.depth,
            caught=caught_info,
            expect=expect,
            value=self._echoed(node),
            hooks=hooks or [],
            ops=ops or [],
            loops=tuple(LoopContext(*loop) for loop in self.interp.loops),
            contexts=tuple(self.interp.contexts),
            calls=tuple(CallSite(fn, line) for fn, line in self.interp.call_chain()),
            loops_ended=ended,
            loops_ended_turns=ended_turns,
        )
        self._stepped.update(loop.entry for loop in record.loops)
        self.emit(record)
        if record.missed:
            self.missing += 1
        if info is not None:
            self.errors += 1
            if info.expected:  # the intended outcome: the run goes on with the next statement
                self.expected += 1
                return False
            fatal = isinstance(error, TimeoutExceeded) or self.stopped_by in ("max_steps", "max_output")
            if stop and (not self.options.keep_going or fatal):
                raise StopRun(unwinding=not fatal and not isinstance(error, (KeyboardInterrupt, TcopyError)))
            return False
        return True

    def _loops_ended(self) -> tuple[list[int], list[int]]:
        """The loops that ended since the last step and had steps of their own (the others no view
        follows), and the turns each ran (``Step.loops_ended``, ``loops_ended_turns``)."""
        ended = [(entry, turns) for entry, turns in self.interp.loops_ended if entry in self._stepped]
        self.interp.loops_ended.clear()
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
        return lines + _narration(self.program, node)


BLOCKS = (ast.For, ast.While, ast.With, ast.If, ast.Try)
"""Blocks whose comments narrate their first step (and a method's ``def`` inside a class)."""


def lead_comments(program: Program) -> dict[int, list[tuple[int, list[str]]]]:
    """For the first statement of each commented block, the block's comments:
    ``id(statement) -> [(id(block), lines)]``, outermost block first."""
    found: dict[int, list[tuple[int, int, list[str]]]] = {}
    for node in ast.walk(program.tree):
        blocks: list[ast.For | ast.While | ast.With | ast.If | ast.Try | ast.FunctionDef] = (
            [node] if isinstance(node, BLOCKS) else []
        )
        if isinstance(node, ast.ClassDef):
            blocks = [m for m in node.body if isinstance(m, ast.FunctionDef)]
        for block in blocks:
            comments = _narration(program, block)
            first = _first_statement(block.body)
            if comments and first is not None:
                found.setdefault(id(first), []).append((block.lineno, id(block), comments))
    return {k: [(b, lines) for _, b, lines in sorted(v, key=lambda e: e[0])] for k, v in found.items()}


def _first_statement(body: list[ast.stmt]) -> ast.stmt | None:
    """The first statement that is a step of its own (descending into nested blocks)."""
    stmt = body[0] if body else None
    while isinstance(stmt, BLOCKS):
        stmt = stmt.body[0] if stmt.body else None
    return stmt


def _raises(error: BaseException, name: str) -> bool:
    """True when ``error`` is an instance of a class called ``name`` (as ``except NAME`` would
    catch it); tcopy's own limits are never an expected outcome."""
    if isinstance(error, TcopyError):
        return False
    return any(cls.__name__ == name for cls in type(error).__mro__)


def _targets(node: ast.stmt, function: str | None) -> frozenset[str]:
    """Names a statement assigns (``a = b = ...``, ``for x in``), as tables show them."""
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For)):
        targets = [node.target]
    found = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    if function:
        found |= {f"{function}:{n}" for n in found}
    return frozenset(found)


def _narration(program: Program, node: ast.stmt) -> list[str]:
    """Whole-line comments directly above a statement."""
    lines: list[str] = []
    n = node.lineno - 1
    while n >= 1 and n in program.comments:
        lines.append(program.comments[n])
        n -= 1
    return list(reversed(lines))
