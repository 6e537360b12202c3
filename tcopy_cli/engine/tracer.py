"""The engine: CPython runs the script, one top-level statement at a time, under a line tracer.

The script is compiled as it is and executed in one ``__main__`` namespace. A ``sys.settrace``
tracer follows only the script's own code objects (its file name): the module's statements and
every function the script defines; library code runs untraced, and what it did to the script's
tensors shows in the step that called it. As in snoop and PySnooper, a statement ends at the next
``line`` event of its frame, at the frame's ``return``, or at an ``exception`` event in it; there
the tracer tells the Stepper (``engine.stepper``), which observes the tensors bound in the script's
frames and emits a fact-only Step. The statement a line belongs to comes from the script's AST
(``engine.index``), so a multi-line statement is one step; where statements share a line (``a = 1;
b = 2``) the running instruction's column (``co_positions``, 3.11+) tells them apart, with opcode
events in the script's frames only when the script has such lines. Comprehensions and lambdas run
in frames of their own that are not stepped.

Block headers (``if``, ``for``, ``while``, ``with``, ``try``, ``pass``...) are steps only when they
fail or print; an error a surrounding ``try`` of the script will handle is reported on its step
with status ok; an error nothing handles is an error step, and the run ends there
(``--keep-going`` goes on with the next top-level statement). Script functions that torch calls
during backward (hooks, a custom Function's backward) or that a library calls back (the function
given to ``jacobian`` or ``vmap``) run without steps of their own: what they print lands in the step
that ran them, whose ``hooks`` names them. Decorators, calling an ``nn.Module`` and
``Function.apply`` are not calls back. ``sys.exit()`` (status 0 or None) ends the run after an ok
step; any other exit status is an error step ``SystemExit``.
"""

from __future__ import annotations
import __future__

import ast
import builtins
import io
import linecache
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import CodeType, FrameType
from typing import TYPE_CHECKING, Any

import torch

from tcopy_cli.engine.frames import (
    ITERATION_ENDS,
    POSITIONS,
    SUSPENDING,
    CodeKinds,
    consumed,
    display_name,
    script_filename,
)
from tcopy_cli.engine.imports import untraced_imports
from tcopy_cli.engine.index import StatementIndex
from tcopy_cli.engine.loops import Loops, Turn
from tcopy_cli.engine.reading import contexts, matches
from tcopy_cli.engine.streams import Printed, redirected
from tcopy_cli.engine.watched import TRACKED, UNRECORDED, CompiledCalls
from tcopy_cli.errors import StopRun, TcopyError, TimeoutExceeded
from tcopy_cli.program import Program
from tcopy_cli.trace.records import CallSite, LoopContext

if TYPE_CHECKING:
    from tcopy_cli.engine.stepper import Stepper


@dataclass(frozen=True)
class Where:
    """Where a statement runs: the loops around it (with their turns), the grad-mode blocks, the
    script-function calls running, and the function it is in."""

    loops: tuple[LoopContext, ...] = ()
    contexts: tuple[str, ...] = ()
    calls: tuple[CallSite, ...] = ()
    function: str | None = None

    @property
    def depth(self) -> int:
        """How many script-function calls are running around the statement."""
        return len(self.calls)


@dataclass
class Ended:
    """A statement of the script ended (the event the Stepper turns into a step)."""

    node: ast.stmt
    where: Where
    printed: str = ""
    warned: list[str] = field(default_factory=list)
    error: BaseException | None = None
    caught: tuple[BaseException, int] | None = None
    """The error and the line of the script's ``except`` that will handle it."""
    grad_enabled: bool = True
    header: bool = False
    hooks: list[str] = field(default_factory=list)
    frame: FrameType | None = None
    """The frame it ran in (only while the event is told)."""
    replaced: list[str] = field(default_factory=list)
    """Of ``hooks``, those that returned a tensor other than the one they were given first (a tensor
    hook that does so replaces the gradient)."""


@dataclass
class _Running:
    """A traced frame of the script and the statement it is running."""

    node: ast.stmt | None = None
    out: io.StringIO = field(default_factory=io.StringIO)
    warned: list[str] = field(default_factory=list)
    grad_enabled: bool = True
    order: dict[str, None] = field(default_factory=dict)
    hooks: dict[str, None] = field(default_factory=dict)
    replaced: dict[str, None] = field(default_factory=dict)
    loops: list[Turn] = field(default_factory=list)
    raised: BaseException | None = None
    """The exception the frame's last event raised, until a line of the frame runs again (one that
    propagates ends the frame with it)."""
    resumed: bool = False
    """``node`` is the ``yield`` statement the frame goes on in, reported when the frame waited there."""


class Tracer:
    """Executes a program with CPython under a line tracer and tells the Stepper about its statements."""

    def __init__(self, program: Program, stepper: Stepper) -> None:
        self.program = program
        self.stepper = stepper
        self.filename = script_filename(program.origin)
        self.kind = CodeKinds(self.filename, UNRECORDED)
        # inspect.getsource, torch.compile and tracebacks read the script's lines through linecache:
        # they get the text that runs (also for stdin and -e), and never need the file itself, which
        # the wall may not let them read. (No modification time: linecache never checks it again.)
        linecache.cache[self.filename] = (len(program.source), None, program.source.splitlines(True), self.filename)
        self.index = StatementIndex(program.tree)
        self.namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins, "torch": torch}
        if os.path.isfile(program.origin):
            self.namespace["__file__"] = self.filename
        self.output = Printed(self.buffer, stepper.options.limits.max_output)
        self.echo = False
        """Keep the repr of a top-level expression statement's value (the REPL shows it)."""
        self.echoed: str | None = None
        self.loops = Loops()
        self.running: dict[FrameType, _Running] = {}
        self.stack: list[_Running] = []
        self.frame: FrameType | None = None
        """The script frame whose statement is being reported (None between reports)."""
        self.reported: set[int] = set()
        self.loose = io.StringIO()
        self.flags = 0
        # An exception of tcopy's own raised inside the tracer (a timeout while observing, a bug):
        # the run stops with StopRun, which the script can't catch, and it is raised again once
        # the script is unwound.
        self.escaped: BaseException | None = None
        self.compiled = CompiledCalls()

    # --- what the Stepper reads ------------------------------------------------------

    def load(self, program: Program) -> None:
        """Run ``program`` next, in the same namespace (the REPL's next entry)."""
        self.program = program
        self.index = StatementIndex(program.tree)

    def forget(self) -> None:
        """Drop the script's names so its tensors are freed now."""
        self.namespace.clear()

    def names(self, frame: FrameType | None = None) -> dict[str, Any]:
        """Module names (not dunders), then each running script function's locals as ``fn:name`` (the
        functions running around ``frame``, by default the statement's being reported)."""
        merged = {k: v for k, v in self.namespace.items() if not k.startswith("__")}
        for f in reversed(list(self._script_frames(frame or self.frame))):
            if self.kind(f.f_code) == "module":
                continue
            code = f.f_code
            prefix = display_name(code)
            local = f.f_locals
            state = self.running.get(f)
            keys = list(local)
            if state is not None:  # in the order the names were first bound
                state.order = {k: None for k in state.order if k in local} | dict.fromkeys(keys)
                keys = list(state.order)
            for k in keys:
                if k != "self" and k not in code.co_freevars:
                    merged[f"{prefix}:{k}"] = local[k]
        return merged

    def _script_frames(self, frame: FrameType | None) -> Iterator[FrameType]:
        """The script's frames from ``frame`` outwards, up to its module's (what called that is tcopy)."""
        while frame is not None:
            kind = self.kind(frame.f_code)
            if kind in ("module", "function", "lambda"):
                yield frame
                if kind == "module":
                    return
            frame = frame.f_back

    def buffer(self) -> io.StringIO:
        """Where printed text goes now: the innermost running statement's buffer."""
        return self.stack[-1].out if self.stack else self.loose

    def catching_line(self, exc: BaseException, frame: FrameType | None) -> int | None:
        """Line of the first ``except`` of the script, from ``frame`` outwards, that matches ``exc``
        (the exception types are read from the frame where the clause is: nothing is called)."""
        if not isinstance(exc, Exception) or isinstance(exc, TcopyError):
            return None
        while frame is not None:
            if self.kind(frame.f_code) in ("module", "function"):
                for expr, line in self.index.handlers(self.index.owner(frame.f_code), frame.f_lineno):
                    if matches(exc, expr, frame):
                        return line
            frame = frame.f_back
        return None

    # --- running -----------------------------------------------------------------------

    def run(self) -> None:
        """Execute the program one top-level statement at a time under the tracer."""
        stepper = self.stepper
        with redirected(self.program, self.output, self._display, self._on_warning), untraced_imports():
            for node in self.program.tree.body:
                code = self._compile(node)
                self.reported.clear()
                expected_before = stepper.expected
                try:
                    self._exec(code)
                except StopRun:
                    escaped, self.escaped = self.escaped, None
                    if escaped is not None:
                        raise escaped from None
                    raise
                except (KeyboardInterrupt, TimeoutExceeded):
                    raise
                except BaseException as exc:  # the script's error, already reported as its step
                    if id(exc) not in self.reported:
                        self._report_top(node, exc)
                    if isinstance(exc, SystemExit):
                        raise StopRun() from None
                    # An error its line's "# expect:" comment named goes on with the next top-level
                    # statement (real Python can't resume inside this one).
                    expected = stepper.expected > expected_before
                    if not (stepper.options.keep_going or expected) or stepper.stopped_by is not None:
                        raise StopRun() from None
                finally:
                    self.running.clear()
                    self.stack.clear()

    def _compile(self, node: ast.stmt) -> CodeType:
        """One top-level statement's code (``single`` mode where the REPL echoes an expression's value)."""
        tree: ast.Module | ast.Interactive = ast.Module(body=[node], type_ignores=[])
        mode = "exec"
        if self.echo and isinstance(node, ast.Expr):
            tree, mode = ast.Interactive(body=[node]), "single"
        code: CodeType = compile(tree, self.filename, mode, flags=self.flags, dont_inherit=True)
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            self.flags |= sum(
                getattr(__future__, a.name).compiler_flag for a in node.names if hasattr(__future__, a.name)
            )
        return code

    def _exec(self, code: CodeType) -> None:
        previous = sys.gettrace()  # a coverage tool or debugger of the calling process gets it back
        sys.settrace(self._trace_call)
        try:
            exec(code, self.namespace)
        finally:
            sys.settrace(previous)

    def _display(self, value: Any) -> None:
        """``sys.displayhook`` in the REPL: the value's repr is the step's echo (as Python's REPL shows it)."""
        if value is not None:
            builtins._ = value  # type: ignore[attr-defined]
            self.echoed = repr(value)

    def _on_warning(self, message: Any, *_rest: Any, **_kw: Any) -> None:
        if self.stack:
            self.stack[-1].warned.append(str(message))

    # --- the tracer --------------------------------------------------------------------

    def _trace_call(self, frame: FrameType, event: str, arg: Any) -> Any:
        # Called for every Python call in the process (library code's above all): the common case first.
        code = frame.f_code
        kind = self.kind.known.get(code) or self.kind(code)
        if kind == "library":
            tracked = TRACKED.get(code)
            if tracked is not None:
                args = (frame.f_locals.get("t1"), frame.f_locals.get("t2")) if tracked == "swap_tensors" else ()
                self.stepper.called(tracked, self.kind.script_frame(frame.f_back) if self.stack else None, args)
            return None
        if kind == "compiled":
            return self.compiled.called(self._trace_call, self._trace_line)
        if kind not in ("module", "function"):
            return None
        if kind == "function" and (
            torch._C._current_graph_task_id() != -1
            or torch._C._get_tracing_state() is not None
            or self.kind.called_back(frame)
        ):
            # A hook torch runs during backward, or a function a library calls back: no steps of its
            # own; the step that ran it names it.
            if self.stack:
                self.stack[-1].hooks[display_name(code)] = None
                return self._returned(frame)
            return None
        state = _Running()
        if code.co_flags & SUSPENDING:
            kept = self.loops.resume(frame)
            if kept is not None:
                state.loops, state.order, state.node = kept.loops, kept.order, kept.node
                state.resumed = state.node is not None
        self.running[frame] = state
        self.stack.append(state)
        if self.index.shared and POSITIONS:
            frame.f_trace_opcodes = True  # to see each statement of a shared line begin
        return self._trace_line

    def _returned(self, frame: FrameType) -> Any:
        """A local tracer for a function torch called back: it only notes, when the function returns,
        whether it returned a tensor other than its first argument (a hook that replaced a gradient)."""
        code = frame.f_code
        given = frame.f_locals.get(code.co_varnames[0]) if code.co_argcount else None
        running = self.stack[-1]
        frame.f_trace_lines = False

        def on_return(_frame: FrameType, event: str, arg: Any) -> Any:
            if event == "return" and isinstance(arg, torch.Tensor) and arg is not given:
                running.replaced[display_name(code)] = None
            return on_return

        return on_return

    def _trace_line(self, frame: FrameType, event: str, arg: Any) -> Any:
        try:
            return self._on_event(frame, event, arg)
        except (StopRun, KeyboardInterrupt):
            raise
        except BaseException as exc:  # tcopy's own: never into the script, where an except could hide it
            self.escaped = exc
            raise StopRun() from None

    def _on_event(self, frame: FrameType, event: str, arg: Any) -> Any:
        state = self.running.get(frame)
        if state is None:
            return None
        if event == "line" or (event == "opcode" and frame.f_lineno in self.index.shared):
            state.raised = None
            node = self._statement(frame)
            if node is not None and node is not state.node:
                self.stepper.next_follows = True  # (reset as the step is emitted, or as the next one starts)
                self._end(frame, state)
                self._begin(frame, state, node)
        elif event == "exception":
            state.raised = None if consumed(frame, arg[1]) else arg[1]
            self._on_exception(frame, state, arg[1])
        elif event == "return":
            node = state.node
            try:
                self._end(frame, state)
            finally:
                self.loops.leave(frame, state.loops, state.order, node, state.raised is not None)
                self.running.pop(frame, None)
                if self.stack and self.stack[-1] is state:
                    self.stack.pop()
                if self.stack and self.loose.tell():  # never expected; kept, not lost
                    self.stack[-1].out.write(self.loose.getvalue())
                    self.loose = io.StringIO()
        return self._trace_line

    def _statement(self, frame: FrameType) -> ast.stmt | None:
        """The statement of the script that ``frame`` is running now (one of its own code's)."""
        line, col = frame.f_lineno, None
        if line in self.index.shared and POSITIONS:
            here = self.kind.position(frame)
            if here is None or here[0] is None or here[2] is None:
                return None
            line, col = here[0], here[2]
        node = self.index.statement(line, col)
        if node is None or self.index.owners.get(id(node)) is not self.index.owner(frame.f_code):
            return None  # a line of another code object (a def's header inside its own frame)
        return node

    def _in_target(self, frame: FrameType, loop: ast.For) -> bool:
        """Whether ``frame`` runs (or failed in) the assignment to the ``for``'s target, not its iterator."""
        here = self.kind.position(frame)
        if here is None or None in here:
            return False
        target = loop.target
        first, last = (target.lineno, target.col_offset), (target.end_lineno, target.end_col_offset)
        return first <= (here[0], here[2]) and (here[1], here[3]) <= last  # type: ignore[operator]

    def _begin(self, frame: FrameType, state: _Running, node: ast.stmt) -> None:
        self.loops.follow(frame, state.loops, node, self.index)
        turns = max((t.turn for t in state.loops), default=0)  # (a turn counts once its body starts)
        self.stepper.started(node, self.index.is_header(node), frame, lambda: self._where(frame, node), turns)
        state.node, state.resumed = node, False
        state.out, state.warned = io.StringIO(), []
        state.hooks = {}
        state.replaced = {}
        state.grad_enabled = torch.is_grad_enabled()

    def _end(
        self,
        frame: FrameType,
        state: _Running,
        error: BaseException | None = None,
        caught: tuple[BaseException, int] | None = None,
    ) -> None:
        node = state.node
        if node is None:
            return
        state.node = None
        printed, warned, hooks, replaced = state.out.getvalue(), state.warned, list(state.hooks), list(state.replaced)
        state.out, state.warned, state.hooks, state.replaced = io.StringIO(), [], {}, {}
        if state.resumed:
            state.resumed = False
            if error is None and caught is None:
                # the rest of a yield statement the frame went on in: it was reported when the frame
                # waited there; what it printed goes with the next step
                self.stepper.carry(node, printed, warned, frame)
                return
        self.frame = frame
        try:
            ended = Ended(
                node,
                self._where(frame, node),
                printed,
                warned,
                error,
                caught,
                state.grad_enabled,
                self.index.is_header(node),
                hooks,
                frame,
                replaced,
            )
            self.stepper.ended(ended)
        finally:
            self.frame, self.stepper.next_follows = None, False

    def _on_exception(self, frame: FrameType, state: _Running, exc: BaseException) -> None:
        if state.node is None or isinstance(exc, (KeyboardInterrupt, StopRun)):
            return
        if id(exc) in self.reported:
            # Already an error step further in: this statement ends with it, unreported.
            self.stepper.carry(state.node, state.out.getvalue(), state.warned, frame)
            state.node = None
            return
        if isinstance(exc, ITERATION_ENDS) and (self.kind(frame.f_code) != "module" or consumed(frame, exc)):
            # Inside a function it may be a __next__ whose caller's loop takes it; at top level only
            # a for takes it (next() of an exhausted iterator there is the statement's error).
            return
        if isinstance(exc, SystemExit):
            self.reported.add(id(exc))
            ok = exc.code is None or exc.code == 0
            self._end(frame, state, error=None if ok else exc)
            return
        if isinstance(exc, TcopyError):  # a limit (--timeout's alarm, --max-elements) raised inside the script
            self.reported.add(id(exc))
            self.stepper.stop_for(exc)
            self._end(frame, state, error=exc)
            raise StopRun()
        line = self.catching_line(exc, frame)
        if line is not None:
            self._end(frame, state, caught=(exc, line))
        else:
            self.reported.add(id(exc))
            self._end(frame, state, error=exc)

    def _where(self, frame: FrameType, node: ast.stmt) -> Where:
        """The loops, grad-mode blocks and calls around ``node`` running in ``frame`` (and the frames
        that called it)."""
        loops: list[LoopContext] = []
        blocks: list[str] = []
        calls: list[CallSite] = []
        caller = 0
        frames = [f for f in self._script_frames(frame) if self.kind(f.f_code) != "lambda"]
        for f in reversed(frames):
            if self.kind(f.f_code) == "function":
                calls.append(CallSite(display_name(f.f_code), caller))
            state = self.running.get(f)
            if state is None:
                continue
            suspends = bool(f.f_code.co_flags & SUSPENDING)
            for t in state.loops:
                turn = t.turn
                if t.node is node and t.between and isinstance(node, ast.For) and self._in_target(f, node):
                    turn += 1  # the header took its next item; its target failed to take it
                if turn or not isinstance(t.node, ast.For):  # a for is entered once it has an item
                    loops.append(LoopContext(t.node.lineno, turn, t.total, t.entry, suspends))
            here = node if f is frame else state.node
            if here is not None:
                caller = here.lineno
                for block in self.index.withs.get(id(here), ()):
                    blocks += contexts(block, f)
        function = display_name(frame.f_code) if self.kind(frame.f_code) == "function" else None
        return Where(tuple(loops), tuple(blocks), tuple(calls), function)

    def _report_top(self, node: ast.stmt, exc: BaseException) -> None:
        """An error no traced statement reported (the tracer was off): a step of the top-level statement."""
        ok = isinstance(exc, SystemExit) and (exc.code is None or exc.code == 0)
        self.stepper.ended(Ended(node, Where(), error=None if ok else exc, grad_enabled=torch.is_grad_enabled()))
