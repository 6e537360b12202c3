"""``--trust``: run the script with CPython itself and report the same steps as the sandbox.

The script is compiled as it is (no allow-list) and executed one top-level statement at
a time in one ``__main__`` namespace. A ``sys.settrace`` tracer follows only the
script's own code objects (its file name): the module's statements and every function
the script defines; library code runs untraced, and what it did to the script's
tensors shows in the step that called it. As in snoop and PySnooper, a statement ends
at the next ``line`` event of its frame, at the frame's ``return``, or at an
``exception`` event in it; there the runner observes the tensors bound in the script's
frames (module names, then each running script function's locals as ``fn:name``) with
the sandbox's observer and emits the same fact-only Step. The statement a line belongs
to comes from the script's AST, so a multi-line statement is one step; where statements
share a line (``a = 1; b = 2``, ``for i in x: y(i)``) the running instruction's column
(``co_positions``, 3.11+) tells them apart, with opcode events in the script's frames
only when the script has such lines. Comprehensions and lambdas run in frames of their
own that are not stepped.

Steps match the sandbox's: block headers (``if``, ``for``, ``while``, ``with``,
``try``, ``pass``...) are steps only when they fail or print; an error a surrounding
``try`` of the script will handle is reported on its step with status ok; an error
nothing handles is an error step, the run ends there (``--keep-going`` goes on with the
next top-level statement). Script functions that torch calls during backward (tensor
and node hooks, a custom Function's backward) or that a library calls back (the
function given to ``jacobian`` or ``gradcheck``) run without steps of their own, as in
the sandbox: what they print lands in the step that ran them, whose ``hooks`` names
them. Decorators, calling an ``nn.Module`` and ``Function.apply`` are not calls back.
``sys.exit()`` (status 0 or None) ends the run after an ok step; any other exit status
is an error step ``SystemExit``.

Each step says where it is, as the sandbox's do (so views fold loops and sum them up
the same way): the loops around it with their turns (CPython traces a loop's header line
before every turn), a ``for``'s length where its line shows it without calling anything,
the grad- and anomaly-mode ``with`` blocks, and the script-function calls running.
"""

from __future__ import annotations
import __future__

import ast
import builtins
import contextlib
import dataclasses
import dis
import inspect
import io
import os
import sys
import warnings
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import CodeType, FrameType
from typing import Any

import torch

from tcopy_cli.errors import StopRun, TcopyError, TimeoutExceeded
from tcopy_cli.limits import LOOPS_ENDED_KEPT
from tcopy_cli.script.interp import _SIZED, BLOCK_STATEMENTS, _context_name
from tcopy_cli.script.parse import Program
from tcopy_cli.trace.records import RunInfo
from tcopy_cli.trace.runner import Runner
from tcopy_cli.trace.trusted_ops import statement_ops, tracked_op

# Comprehensions and generator expressions run in frames of their own (before 3.12);
# they are part of the statement that runs them.
_COMPREHENSIONS = frozenset({"<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>"})
# Library code through which a script calls its own functions (decorators, module calls,
# custom autograd Functions): a script function called from these is stepped.
_PASS_THROUGH = (
    "torch/utils/_contextlib.py",
    "torch/nn/modules/module.py",
    "torch/autograd/function.py",
    "/contextlib.py",
)
# Columns of each instruction (3.11+): where statements share a line, which one runs.
_POSITIONS = hasattr(CodeType, "co_positions")
TRACKED = {
    code: name
    for fn, name in (
        (torch.autograd.backward, "backward"),
        (torch.optim.Optimizer.zero_grad, "zero_grad"),
        (torch.nn.Module.zero_grad, "zero_grad"),
    )
    if (code := getattr(inspect.unwrap(fn), "__code__", None)) is not None
}
"""Library functions whose call the tracer records as an operation (by code object):
a backward pass (``x.backward()`` goes through ``torch.autograd.backward``) and grad resets."""
# Ends of iteration, not errors: Python consumes them in the loop that asked.
_ITERATION_ENDS = (StopIteration, StopAsyncIteration, GeneratorExit)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
# Code whose frame can return and later go on (generators, coroutines).
_SUSPENDING = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE
_MAX_SUSPENDED = 10_000
"""Generators waiting at a ``yield`` whose loops are kept (the oldest is forgotten first)."""
# The instructions a frame returns with (not a yield's, nor an exception's way out).
_RETURNS = frozenset(dis.opmap[name] for name in ("RETURN_VALUE", "RETURN_CONST") if name in dis.opmap)


# Where a frame takes an end of iteration itself: a for's next item, yield from's result.
_TAKES_STOP = frozenset(dis.opmap[name] for name in ("FOR_ITER", "SEND", "END_SEND", "YIELD_FROM") if name in dis.opmap)
_FIRST_RESUME: dict[CodeType, int] = {}


def _opcode(frame: FrameType) -> int | None:
    code, at = frame.f_code.co_code, frame.f_lasti
    return code[at] if 0 <= at < len(code) else None


def _returned(frame: FrameType) -> bool:
    """Whether the frame's last instruction is a ``return`` (the frame is done, not waiting at a ``yield``)."""
    return _opcode(frame) in _RETURNS


def _consumed(frame: FrameType, exc: BaseException) -> bool:
    """Whether ``exc`` is an end of iteration that the frame's own instruction takes (a ``for``
    ending, ``yield from`` getting its result): no error, and the frame goes on."""
    return isinstance(exc, (StopIteration, StopAsyncIteration)) and _opcode(frame) in _TAKES_STOP


def _starting(frame: FrameType) -> bool:
    """Whether a generator's frame is called for the first time (not going on after a ``yield``):
    no instruction ran yet (3.10), or none past its first ``RESUME`` (3.11 on)."""
    code = frame.f_code
    first = _FIRST_RESUME.get(code)
    if first is None:
        first = _FIRST_RESUME[code] = next((i.offset for i in dis.get_instructions(code) if i.opname == "RESUME"), -1)
    return frame.f_lasti <= first


# The context managers the sandbox allows in ``with`` (grad and anomaly modes), by class name.
_CONTEXTS = frozenset(
    {"no_grad", "enable_grad", "inference_mode", "set_grad_enabled", "detect_anomaly", "set_detect_anomaly"}
)


def trusted_filename(origin: str) -> str:
    """The file name the script's code objects carry (a real path keeps tracebacks readable)."""
    if origin == "-":
        return "<stdin>"
    return origin if os.path.isfile(origin) else f"<{origin.strip('<>') or 'script'}>"


@dataclass
class _TryBlock:
    owner: ast.AST | None
    first: int
    last: int
    depth: int
    handlers: list[tuple[ast.expr | None, int]]


class StatementIndex:
    """Which statement a line belongs to, and which ``try`` blocks enclose a line."""

    def __init__(self, tree: ast.Module) -> None:
        self.at_line: dict[int, ast.stmt] = {}
        self.headers: set[int] = set()
        self.tries: list[_TryBlock] = []
        self.functions: dict[tuple[int, str], ast.AST] = {}
        self.owners: dict[int, ast.AST | None] = {}
        self.spans: dict[int, list[ast.stmt]] = {}
        self.loops: dict[int, tuple[ast.stmt, ...]] = {}
        """The loops whose body holds a statement (in its own function), outermost first."""
        self.withs: dict[int, tuple[ast.stmt, ...]] = {}
        """The ``with`` blocks whose body holds a statement (in its own function), outermost first."""
        self._all: list[ast.stmt] = []
        self._add_block(tree.body, None, 0)
        starts: dict[int, int] = {}
        for stmt in self._all:
            starts[stmt.lineno] = starts.get(stmt.lineno, 0) + 1
        # Lines where statements share a line (``a = 1; b = 2``, ``for i in x: y(i)``): a
        # line event can't tell them apart, the column of the running instruction can.
        self.shared = frozenset(line for line, n in starts.items() if n > 1)
        for stmt in self._all:
            for line in range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1):
                if line in self.shared:
                    self.spans.setdefault(line, []).append(stmt)

    def _add_block(
        self,
        body: list[ast.stmt],
        owner: ast.AST | None,
        depth: int,
        loops: tuple[ast.stmt, ...] = (),
        withs: tuple[ast.stmt, ...] = (),
    ) -> None:
        for stmt in body:
            self._add(stmt, owner, depth, loops, withs)

    def _add(
        self,
        stmt: ast.stmt,
        owner: ast.AST | None,
        depth: int,
        loops: tuple[ast.stmt, ...],
        withs: tuple[ast.stmt, ...],
    ) -> None:
        self._all.append(stmt)
        self.owners[id(stmt)] = owner
        self.loops[id(stmt)] = loops
        self.withs[id(stmt)] = withs
        first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
        last = stmt.end_lineno or stmt.lineno
        for line in range(first, last + 1):
            self.at_line[line] = stmt  # the statements inside overwrite their own lines
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.functions[(first, stmt.name)] = stmt
            self._add_block(stmt.body, stmt, 0)
            return
        if isinstance(stmt, ast.ClassDef):
            self._add_block(stmt.body, stmt, 0)
            return
        if type(stmt) in BLOCK_STATEMENTS or hasattr(stmt, "body"):
            self.headers.add(id(stmt))
        if isinstance(stmt, ast.Try) and stmt.body:
            handlers = [(h.type, h.lineno) for h in stmt.handlers]
            self.tries.append(_TryBlock(owner, stmt.body[0].lineno, _end(stmt.body), depth, handlers))
        # Only a loop's body is inside it (its ``else`` runs after the last turn), and only a
        # ``with``'s body inside its context.
        inner_loops = (*loops, stmt) if isinstance(stmt, _LOOPS) else loops
        inner_withs = (*withs, stmt) if isinstance(stmt, (ast.With, ast.AsyncWith)) else withs
        self._add_block(getattr(stmt, "body", []), owner, depth + 1, inner_loops, inner_withs)
        for name in ("orelse", "finalbody"):
            self._add_block(getattr(stmt, name, []), owner, depth + 1, loops, withs)
        for handler in getattr(stmt, "handlers", []):
            self._add_block(handler.body, owner, depth + 1, loops, withs)

    def statement(self, line: int, col: int | None = None) -> ast.stmt | None:
        """The innermost statement at ``line`` (and ``col``, where statements share the line)."""
        if col is not None and line in self.shared:
            around = [
                stmt
                for stmt in self.spans[line]
                if (stmt.lineno, stmt.col_offset) <= (line, col)
                and (line, col) < (stmt.end_lineno or stmt.lineno, stmt.end_col_offset or 0)
            ]
            if around:
                return max(around, key=lambda stmt: (stmt.lineno, stmt.col_offset))
        return self.at_line.get(line)

    def is_header(self, node: ast.stmt) -> bool:
        """True for a block statement (not a step unless it fails or prints)."""
        return id(node) in self.headers

    def owner(self, code: CodeType) -> ast.AST | None:
        """The ``def`` whose body ``code`` runs (None for module code)."""
        return self.functions.get((code.co_firstlineno, code.co_name))

    def handlers(self, owner: ast.AST | None, line: int) -> Iterator[tuple[ast.expr | None, int]]:
        """The ``except`` clauses that would see an error raised at ``line``, innermost first."""
        around = [t for t in self.tries if t.owner is owner and t.first <= line <= t.last]
        for block in sorted(around, key=lambda t: -t.depth):
            yield from block.handlers


def _end(body: list[ast.stmt]) -> int:
    last = body[-1]
    return last.end_lineno or last.lineno


@dataclass
class _Turn:
    """A loop running in a traced frame: which entry into a loop it is, and its turn."""

    node: ast.stmt
    entry: int
    total: int | None
    turn: int = 0
    between: bool = True
    """The loop's header ran since then: the next statement in its body starts a turn."""


@dataclass
class _Running:
    """A traced frame of the script and the statement it is running."""

    node: ast.stmt | None = None
    out: io.StringIO = field(default_factory=io.StringIO)
    warned: list[str] = field(default_factory=list)
    grad_enabled: bool = True
    order: dict[str, None] = field(default_factory=dict)
    hooks: dict[str, None] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)
    """The calls the tracer watches for that ran during the statement, in order (``TRACKED``)."""
    loops: list[_Turn] = field(default_factory=list)
    raised: BaseException | None = None
    """The exception the frame's last event raised, until a line of the frame runs again (one that
    propagates ends the frame with it)."""
    resumed: bool = False
    """``node`` is the ``yield`` statement the frame goes on in, reported when the frame waited there."""


class _Printed(io.TextIOBase):
    """``sys.stdout`` while the script runs: text goes to the running statement's buffer."""

    def __init__(self, script: TrustedScript) -> None:
        self.script = script
        self.printed = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        budget = self.script.runner.options.limits.max_output + 1 - self.printed
        self.printed += len(text)
        if budget > 0:
            self.script.buffer().write(text[:budget])
        return len(text)

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"


class TrustedScript:
    """The ``--trust`` engine: executes the program with CPython under a line tracer."""

    def __init__(self, program: Program, runner: TrustedRunner) -> None:
        self.program = program
        self.runner = runner
        self.filename = trusted_filename(program.origin)
        self.index = StatementIndex(program.tree)
        self.namespace: dict[str, Any] = {
            "__name__": "__main__",
            "__builtins__": builtins,
            "torch": torch,
        }
        if os.path.isfile(program.origin):
            self.namespace["__file__"] = program.origin
        self.output = _Printed(self)
        self.echoed: str | None = None  # the REPL's echo; trusted runs have no REPL
        # Where the statement being reported is, as the sandbox's interpreter records it:
        # the loops running (outermost first: [line, turn, total or None, entry number]),
        # the grad-mode blocks, and the script-function calls. Set before each report.
        self.loops: list[list[Any]] = []
        self.contexts: list[str] = []
        self.calls: list[tuple[str, int]] = []
        self.loop_entries = 0
        self.running: dict[FrameType, _Running] = {}
        self.suspended: dict[int, tuple[CodeType, list[_Turn], dict[str, None], ast.stmt | None]] = {}
        """A generator's loops, local names' order and ``yield`` statement while it waits there, by id of its frame."""
        self.loops_ended: deque[tuple[int, int]] = deque(maxlen=LOOPS_ENDED_KEPT)
        """(entry number, turns run) of the loops that ended since the last step was reported: a
        generator's loop is left at every ``yield``, and a last turn may have no step."""
        self.stack: list[_Running] = []
        self.frame: FrameType | None = None
        self.kinds: dict[CodeType, str] = {}
        self.positions: dict[CodeType, list[tuple[int | None, int | None, int | None, int | None]]] = {}
        self.reported: set[int] = set()
        self.loose = io.StringIO()
        self.flags = 0
        # An exception of tcopy's own raised inside the tracer (a timeout while observing,
        # a bug): the run stops with StopRun, which the script can't catch, and it is
        # raised again once the script is unwound.
        self.escaped: BaseException | None = None

    # --- the Engine protocol ---------------------------------------------------------

    def load(self, program: Program) -> None:
        """Run ``program`` next, in the same namespace."""
        self.program = program
        self.index = StatementIndex(program.tree)

    def forget(self) -> None:
        """Drop the script's names so its tensors are freed now."""
        self.namespace.clear()

    @contextlib.contextmanager
    def capture_output(self) -> Iterator[io.StringIO]:
        """Unused by ``--trust`` (the tracer routes output itself); here for the Engine protocol."""
        yield io.StringIO()

    def would_catch(self, exc: BaseException) -> int | None:
        """Line of the script's ``except`` that will handle ``exc`` raised in the current frame."""
        return self.catching_line(exc, self.frame)

    @property
    def current_function(self) -> str | None:
        """The script function of the statement being reported, None at module level."""
        frame = self.frame
        if frame is None or self.kind(frame.f_code) != "function":
            return None
        return _display_name(frame.f_code)

    @property
    def depth(self) -> int:
        """Script-function calls running around the statement being reported."""
        return sum(1 for f in self._script_frames() if self.kind(f.f_code) != "module")

    def names(self) -> dict[str, Any]:
        """Module names (not dunders), then each running script function's locals as ``fn:name``."""
        merged = {k: v for k, v in self.namespace.items() if not k.startswith("__")}
        for frame in reversed(list(self._script_frames())):
            if self.kind(frame.f_code) == "module":
                continue
            code = frame.f_code
            prefix = _display_name(code)
            local = frame.f_locals
            state = self.running.get(frame)
            keys = list(local)
            if state is not None:  # in the order the names were first bound, as the sandbox shows them
                state.order = {k: None for k in state.order if k in local} | dict.fromkeys(keys)
                keys = list(state.order)
            for k in keys:
                if k != "self" and k not in code.co_freevars:
                    merged[f"{prefix}:{k}"] = local[k]
        return merged

    def run(self) -> None:
        """Execute the program one top-level statement at a time under the tracer."""
        self.runner.reset_stop()
        with self._redirected():
            for node in self.program.tree.body:
                code = compile(
                    ast.Module(body=[node], type_ignores=[]), self.filename, "exec", flags=self.flags, dont_inherit=True
                )
                self.flags |= _future_flags(node)
                self.reported.clear()
                expected_before = self.runner.expected
                try:
                    self._exec(code)
                except StopRun:
                    escaped, self.escaped = self.escaped, None
                    if escaped is not None:
                        raise escaped from None
                    raise
                except (KeyboardInterrupt, TimeoutExceeded):
                    raise
                except SystemExit as exc:
                    if id(exc) not in self.reported:
                        self._report_top(node, exc)
                    raise StopRun() from None
                except BaseException as exc:  # the script's error, already reported as its step
                    if id(exc) not in self.reported:
                        self._report_top(node, exc)
                    # An error its line's "# expect:" comment named goes on with the next
                    # top-level statement (real Python can't resume inside this one).
                    expected = self.runner.expected > expected_before
                    if not (self.runner.options.keep_going or expected) or self.runner.stopped_by is not None:
                        raise StopRun() from None
                finally:
                    self.running.clear()
                    self.stack.clear()

    def call_chain(self) -> list[tuple[str, int]]:
        """Each running script-function call, outermost first: (function, line that called it)."""
        return self.calls

    # --- execution -------------------------------------------------------------------

    def _exec(self, code: CodeType) -> None:
        previous = sys.gettrace()  # a coverage tool or debugger of the calling process gets it back
        sys.settrace(self._trace_call)
        try:
            exec(code, self.namespace)
        finally:
            sys.settrace(previous)

    @contextlib.contextmanager
    def _redirected(self) -> Iterator[None]:
        """stdout to the steps, warnings to the steps, no stdin; the script's directory importable."""
        here = os.path.dirname(os.path.abspath(self.program.origin)) if os.path.isfile(self.program.origin) else ""
        path_entry = here or os.getcwd()
        saved_argv, saved_stdin, saved_hook = sys.argv, sys.stdin, sys.breakpointhook
        sys.argv = [self.program.origin]
        sys.stdin = io.StringIO("")
        sys.breakpointhook = _no_breakpoint  # a debugger would replace the tracer; tcopy stops at every step
        sys.path.insert(0, path_entry)
        try:
            # What the script writes to sys.stderr (logging, progress bars) is shown with what
            # it printed: the worker's own stderr is not shown unless it crashes.
            with (
                contextlib.redirect_stdout(self.output),  # type: ignore[type-var]
                contextlib.redirect_stderr(self.output),  # type: ignore[type-var]
                warnings.catch_warnings(),
            ):
                warnings.simplefilter("always")
                warnings.showwarning = self._on_warning
                yield
        finally:
            sys.argv, sys.stdin, sys.breakpointhook = saved_argv, saved_stdin, saved_hook
            with contextlib.suppress(ValueError):
                sys.path.remove(path_entry)

    def _on_warning(self, message: Any, *_rest: Any, **_kw: Any) -> None:
        if self.stack:
            self.stack[-1].warned.append(str(message))

    def buffer(self) -> io.StringIO:
        """Where printed text goes now: the innermost running statement's buffer."""
        return self.stack[-1].out if self.stack else self.loose

    def kind(self, code: CodeType) -> str:
        """'module', 'function' (stepped), 'lambda' (locals shown, not stepped), 'other' or 'library'."""
        kind = self.kinds.get(code)
        if kind is None:
            if code.co_filename != self.filename:
                kind = "library"
            elif code.co_name == "<module>":
                kind = "module"
            elif code.co_name == "<lambda>":
                kind = "lambda"
            elif code.co_name in _COMPREHENSIONS or not code.co_flags & inspect.CO_OPTIMIZED:
                kind = "other"  # comprehensions and class bodies
            else:
                kind = "function"
            self.kinds[code] = kind
        return kind

    def _script_frames(self) -> Iterator[FrameType]:
        frame = self.frame
        while frame is not None:
            if self.kind(frame.f_code) in ("module", "function", "lambda"):
                yield frame
            frame = frame.f_back

    # --- the tracer --------------------------------------------------------------------

    def _trace_call(self, frame: FrameType, event: str, arg: Any) -> Any:
        code = frame.f_code
        tracked = TRACKED.get(code)
        if tracked is not None and self.stack:
            # The operation record's measured calls: the notes tell a gradient that a
            # backward added from one the script wrote or reset (see trusted_ops).
            self.stack[-1].calls.append(tracked)
        kind = self.kind(code)
        if kind not in ("module", "function"):
            return None
        if kind == "function" and (torch._C._current_graph_task_id() != -1 or self._called_back(frame)):
            # A hook torch runs during backward, or a function a library calls back
            # (jacobian, gradcheck ...): no steps of its own, as in the sandbox; the step
            # that ran it names it.
            if self.stack:
                self.stack[-1].hooks[_display_name(frame.f_code)] = None
            return None
        state = _Running()
        if code.co_flags & _SUSPENDING:
            self._resume(frame, state)
        self.running[frame] = state
        self.stack.append(state)
        if self.index.shared and _POSITIONS:
            frame.f_trace_opcodes = True  # to see each statement of a shared line begin
        return self._trace_line

    def _resume(self, frame: FrameType, state: _Running) -> None:
        """A generator's frame goes on after a ``yield``: its loops are where they were (a loop
        around the ``yield`` is in its next turn, not entered again).

        CPython traces a ``yield`` as a return and going on after it as a call, and kept frames
        are not weakly referable, so the state is kept by the frame's id and given back only to a
        frame of the same code that goes on (not at its start): a new generator's frame at the
        address of a finished one starts afresh."""
        kept = self.suspended.pop(id(frame), None)
        if kept is not None and kept[0] is frame.f_code and not _starting(frame):
            _, state.loops, state.order, state.node = kept
            state.resumed = state.node is not None

    def _leave_frame(self, frame: FrameType, state: _Running, node: ast.stmt | None) -> None:
        """A frame returns (``node``: the statement it was in). A generator's, at a ``yield``, may go
        on later (``_resume``); any other, or one that is done (a ``return`` instruction, or an
        exception it did not catch), has ended its loops."""
        if not frame.f_code.co_flags & _SUSPENDING:
            self._left(state.loops)
            return
        self.suspended.pop(id(frame), None)
        if state.raised is not None or _returned(frame):
            self._left(state.loops)
            return
        if len(self.suspended) >= _MAX_SUSPENDED:  # the longest waiting is given up: it will start afresh
            self._left(self.suspended.pop(next(iter(self.suspended)))[1])
        self.suspended[id(frame)] = (frame.f_code, state.loops, state.order, node)

    def _left(self, turns: list[_Turn]) -> None:
        """``turns``, loops that ended, are told to the next step with the turns they ran."""
        self.loops_ended.extend((t.entry, t.turn) for t in turns)

    def _called_back(self, frame: FrameType) -> bool:
        """True when library code (other than the ways a script calls its own functions) calls ``frame``'s function.

        Decorators (torch's grad-mode decorators, contextlib), calling a module
        (``forward``) and ``Function.apply`` pass calls through; any other library frame
        between the function and the script means the library calls it back.
        """
        caller = frame.f_back
        while caller is not None and self.kind(caller.f_code) == "library":
            if not caller.f_code.co_filename.replace(os.sep, "/").endswith(_PASS_THROUGH):
                return True
            caller = caller.f_back
        return False

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
                self._end(frame, state)
                self._begin(frame, state, node)
        elif event == "exception":
            state.raised = None if _consumed(frame, arg[1]) else arg[1]
            self._on_exception(frame, state, arg[1])
        elif event == "return":
            node = state.node
            try:
                self._end(frame, state)
            finally:
                self._leave_frame(frame, state, node)
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
        if line in self.index.shared and _POSITIONS:
            here = self._position(frame)
            if here is None or here[0] is None or here[2] is None:
                return None
            line, col = here[0], here[2]
        node = self.index.statement(line, col)
        if node is None or self.index.owners.get(id(node)) is not self.index.owner(frame.f_code):
            return None  # a line of another code object (a def's header inside its own frame)
        return node

    def _position(self, frame: FrameType) -> tuple[int | None, int | None, int | None, int | None] | None:
        """(line, end line, column, end column) of the instruction ``frame`` runs (3.11+)."""
        code = frame.f_code
        positions = self.positions.get(code)
        if positions is None:
            positions = self.positions[code] = list(code.co_positions())
        return positions[frame.f_lasti // 2] if 0 <= frame.f_lasti // 2 < len(positions) else None

    def _in_target(self, frame: FrameType, loop: ast.For) -> bool:
        """Whether ``frame`` runs (or failed in) the assignment to the ``for``'s target, not its iterator."""
        here = self._position(frame) if _POSITIONS else None
        if here is None or None in here:
            return False
        target = loop.target
        first, last = (target.lineno, target.col_offset), (target.end_lineno, target.end_col_offset)
        return first <= (here[0], here[2]) and (here[1], here[3]) <= last  # type: ignore[operator]

    def _begin(self, frame: FrameType, state: _Running, node: ast.stmt) -> None:
        runner = self.runner
        self._turns(frame, state, node)
        self._locate(frame, node)
        runner.starting(node, header=self.index.is_header(node))
        state.node, state.resumed = node, False
        state.out = io.StringIO()
        state.warned = []
        state.hooks = {}
        state.calls = []
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
        printed, warned, hooks, calls = state.out.getvalue(), state.warned, list(state.hooks), state.calls
        state.out, state.warned, state.hooks, state.calls = io.StringIO(), [], {}, []
        if state.resumed:
            state.resumed = False
            if error is None and caught is None:
                # the rest of a yield statement the frame went on in: it was reported when the
                # frame waited there; what it printed goes with the next step
                self.runner.carry(node, printed, warned, calls)
                return
        self.frame = frame
        self._locate(frame, node)
        try:
            self.runner.finish(
                node, printed, warned, error, caught, state.grad_enabled, self.index.is_header(node), hooks, calls
            )
        finally:
            self.frame = None

    def _on_exception(self, frame: FrameType, state: _Running, exc: BaseException) -> None:
        if state.node is None or isinstance(exc, (KeyboardInterrupt, StopRun)):
            return
        if id(exc) in self.reported:
            # Already an error step further in: this statement ends with it, unreported.
            printed, warned = state.out.getvalue(), state.warned
            self.runner.carry(state.node, printed, warned, [])
            state.node = None
            return
        if isinstance(exc, _ITERATION_ENDS) and (self.kind(frame.f_code) != "module" or _consumed(frame, exc)):
            # Inside a function it may be a __next__ whose caller's loop takes it; at top level
            # only a for takes it (next() of an exhausted iterator there is the statement's error).
            return
        if isinstance(exc, SystemExit):
            self.reported.add(id(exc))
            ok = exc.code is None or exc.code == 0
            self._end(frame, state, error=None if ok else exc)
            return
        if isinstance(exc, TcopyError):  # --timeout's alarm, raised inside the script
            self.reported.add(id(exc))
            if isinstance(exc, TimeoutExceeded):
                self.runner.stopped_by = "timeout"
            self._end(frame, state, error=exc)
            raise StopRun()
        line = self.catching_line(exc, frame)
        if line is not None:
            self._end(frame, state, caught=(exc, line))
        else:
            self.reported.add(id(exc))
            self._end(frame, state, error=exc)

    def _turns(self, frame: FrameType, state: _Running, node: ast.stmt) -> None:
        """Follow the frame's loops as ``node`` starts: entered, left, or in a new turn.

        A loop's header runs before each turn (CPython traces the ``for``/``while`` line
        every time round, ``while True`` included), so the first statement of its body
        after the header starts a turn. (Source order can't tell turns apart: the line of
        a ``with`` is traced again when its block exits.) A loop the frame's statement is
        no longer inside has ended; the inner loops of a new turn are entered again, with
        new entry numbers, as in the sandbox.
        """
        chain = self.index.loops.get(id(node), ())
        if isinstance(node, _LOOPS):
            chain = (*chain, node)
        stack = state.loops
        kept = 0
        while kept < len(stack) and kept < len(chain) and stack[kept].node is chain[kept]:
            kept += 1
        self._left(stack[kept:])
        del stack[kept:]
        for level, loop in enumerate(chain):
            if level == len(stack):
                self.loop_entries += 1
                total = _loop_total(loop, frame) if loop is node else None
                stack.append(_Turn(loop, self.loop_entries, total))
            turn = stack[level]
            if loop is node:
                turn.between = True
                return
            if turn.between:
                turn.turn += 1
                turn.between = False
                self._left(stack[level + 1 :])
                del stack[level + 1 :]

    def _locate(self, frame: FrameType, node: ast.stmt) -> None:
        """``loops``, ``contexts`` and ``calls`` for ``node`` running in ``frame`` (and the frames that called it)."""
        loops: list[list[Any]] = []
        contexts: list[str] = []
        calls: list[tuple[str, int]] = []
        caller = 0
        frames: list[FrameType] = []
        f: FrameType | None = frame
        while f is not None:
            if self.kind(f.f_code) in ("module", "function"):
                frames.append(f)
            f = f.f_back
        for f in reversed(frames):
            if self.kind(f.f_code) == "function":
                calls.append((_display_name(f.f_code), caller))
            state = self.running.get(f)
            if state is None:
                continue
            for t in state.loops:
                turn = t.turn
                if t.node is node and t.between and isinstance(node, ast.For) and self._in_target(f, node):
                    turn += 1  # the header took its next item; its target failed to take it
                if turn or not isinstance(t.node, ast.For):  # a for is entered once it has an item
                    loops.append([t.node.lineno, turn, t.total, t.entry, bool(f.f_code.co_flags & _SUSPENDING)])
            here = node if f is frame else state.node
            if here is not None:
                caller = here.lineno
                for block in self.index.withs.get(id(here), ()):
                    contexts += _contexts(block, f)
        self.loops, self.contexts, self.calls = loops, contexts, calls

    def catching_line(self, exc: BaseException, frame: FrameType | None) -> int | None:
        """Line of the first ``except`` of the script, from ``frame`` outwards, that matches ``exc``.

        Like the sandbox's, this looks at the ``try`` blocks around the running
        statements of the script's frames; the exception types are read from the frame
        where the clause is (names and attributes only, nothing is called).
        """
        if not isinstance(exc, Exception) or isinstance(exc, TcopyError):
            return None
        while frame is not None:
            kind = self.kind(frame.f_code)
            if kind in ("module", "function"):
                for expr, line in self.index.handlers(self.index.owner(frame.f_code), frame.f_lineno):
                    if _matches(exc, expr, frame):
                        return line
            frame = frame.f_back
        return None

    def _report_top(self, node: ast.stmt, exc: BaseException) -> None:
        """An error no traced statement reported (the tracer was off): a step of the top-level statement."""
        ok = isinstance(exc, SystemExit) and (exc.code is None or exc.code == 0)
        self.loops, self.contexts, self.calls = [], [], []
        self.runner.finish(node, "", [], None if ok else exc, None, torch.is_grad_enabled(), False)


def _no_breakpoint(*_args: Any, **_kwargs: Any) -> None:
    """``breakpoint()`` under ``--trust``: nothing (a debugger's tracer would replace tcopy's)."""


def _matches(exc: BaseException, expr: ast.expr | None, frame: FrameType) -> bool:
    if expr is None:
        return True
    parts = expr.elts if isinstance(expr, ast.Tuple) else [expr]
    types: list[type] = []
    for part in parts:
        value = _read_name(part, frame)
        if isinstance(value, tuple):
            types.extend(t for t in value if isinstance(t, type))
        elif isinstance(value, type):
            types.append(value)
    return bool(types) and isinstance(exc, tuple(types))


def _read_name(expr: ast.expr, frame: FrameType) -> Any:
    """The value of a name or dotted name in ``frame`` (None for anything else)."""
    if isinstance(expr, ast.Name):
        for scope in (frame.f_locals, frame.f_globals, vars(builtins)):
            if expr.id in scope:
                return scope[expr.id]
        return None
    if isinstance(expr, ast.Attribute):
        base = _read_name(expr.value, frame)
        return inspect.getattr_static(base, expr.attr, None) if base is not None else None
    return None


def _literal(expr: ast.expr, frame: FrameType) -> Any:
    """A constant, or a (dotted) name's value in ``frame``; None for anything else (nothing is called)."""
    if isinstance(expr, ast.Constant):
        return expr.value
    return _read_name(expr, frame)


def _count(expr: ast.expr, frame: FrameType) -> int | None:
    """An ``int`` written as a constant, a name, ``len(name)`` or arithmetic of those; None otherwise."""
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
        inner = _count(expr.operand, frame)
        return -inner if inner is not None else None
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)):
        a, b = _count(expr.left, frame), _count(expr.right, frame)
        if a is None or b is None or (isinstance(expr.op, ast.FloorDiv) and b == 0):
            return None
        ops = {ast.Add: int.__add__, ast.Sub: int.__sub__, ast.Mult: int.__mul__, ast.FloorDiv: int.__floordiv__}
        return ops[type(expr.op)](a, b)
    if isinstance(expr, ast.Call) and not expr.keywords and len(expr.args) == 1 and _builtin(expr.func, frame, len):
        value = _literal(expr.args[0], frame)
        return len(value) if isinstance(value, _SIZED) else None
    value = _literal(expr, frame)
    return value if type(value) is int else None


def _builtin(func: ast.expr, frame: FrameType, fn: Any) -> bool:
    return isinstance(func, ast.Name) and _read_name(func, frame) is fn


def _loop_total(loop: ast.stmt, frame: FrameType) -> int | None:
    """Turns a ``for`` will make, read before it starts where that needs no call of the script's code.

    The sandbox knows the length of what a ``for`` walks (a range, list, tuple, dict,
    string or set); here the same is read from the ``for`` line as written:
    ``range(...)`` of constants, names and ``len(name)``, a name bound to such a value,
    or a list or tuple written out. Anything else (a call, a generator) counts as unknown.
    """
    if not isinstance(loop, ast.For):
        return None
    it = loop.iter
    if isinstance(it, (ast.List, ast.Tuple)) and not any(isinstance(e, ast.Starred) for e in it.elts):
        return len(it.elts)
    if isinstance(it, ast.Call) and not it.keywords and 1 <= len(it.args) <= 3 and _builtin(it.func, frame, range):
        args = [_count(a, frame) for a in it.args]
        if None in args or (len(args) == 3 and args[2] == 0):
            return None
        return len(range(*args))  # type: ignore[arg-type]
    return _length(it, frame)


def _length(expr: ast.expr, frame: FrameType) -> int | None:
    """``len`` of a name bound to a sized value, or of ``enumerate``/``reversed``/``zip`` of such names."""
    if isinstance(expr, ast.Call) and not expr.keywords and expr.args and isinstance(expr.func, ast.Name):
        fn = _read_name(expr.func, frame)
        if (fn in (enumerate, reversed) and len(expr.args) == 1) or fn is zip:
            lengths = [_length(a, frame) for a in expr.args]
            return None if None in lengths else min(lengths)  # type: ignore[type-var]
        return None
    value = _literal(expr, frame)
    return len(value) if isinstance(value, _SIZED) else None


def _contexts(block: ast.stmt, frame: FrameType) -> list[str]:
    """The grad- and anomaly-mode blocks a ``with`` statement entered, named as the sandbox names them."""
    out: list[str] = []
    for item in getattr(block, "items", []):
        expr = item.context_expr
        if not isinstance(expr, ast.Call):  # ``with ctx:``: the object the name holds
            value = _read_name(expr, frame)
            if type(value).__name__ in _CONTEXTS:
                out.append(_context_name(value))
            continue
        func = expr.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name not in _CONTEXTS:
            continue
        arg = expr.args[0] if expr.args else next((k.value for k in expr.keywords if k.arg == "mode"), None)
        mode = _literal(arg, frame) if arg is not None else True
        if name == "set_grad_enabled":
            name = f"set_grad_enabled({bool(mode)})"
        elif name == "inference_mode" and mode is False:
            name = "inference_mode(False)"
        out.append(name)
    return out


def _display_name(code: CodeType) -> str:
    """``f``, ``Net.forward``: the qualified name without enclosing functions (as the sandbox names them)."""
    name: str = getattr(code, "co_qualname", code.co_name)
    return name.rsplit(".<locals>.", 1)[-1]


def _future_flags(node: ast.stmt) -> int:
    if isinstance(node, ast.ImportFrom) and node.module == "__future__":
        return sum(getattr(__future__, a.name).compiler_flag for a in node.names if hasattr(__future__, a.name))
    return 0


class TrustedRunner(Runner):
    """A Runner whose engine is CPython itself (``--trust``); steps, limits and records are shared."""

    def _engine(self) -> TrustedScript:
        return TrustedScript(self.program, self)

    def info(self, origin: str) -> RunInfo:
        """The ``start`` facts, marked trusted."""
        return dataclasses.replace(super().info(origin), trusted=True)

    @property
    def script(self) -> TrustedScript:
        """The engine, typed."""
        assert isinstance(self.interp, TrustedScript)
        return self.interp

    calls_carried: tuple[str, ...] = ()
    """What a block header that made no step of its own ran of the tracked calls
    (``if loss.backward() is None:``): the next step's record holds them, as in the sandbox."""

    def reset_stop(self) -> None:
        """A new run (or REPL entry) starts unstopped."""
        self.pending = (None, "", [])
        self.calls_carried = ()

    def starting(self, node: ast.stmt, header: bool) -> None:
        """A statement starts: check the time and step limits (they end the run with an error step)."""
        if header:
            self._check_deadline(node)
        else:
            self._check_step_budget(node)
        self.current_node = self.last_node = node

    def carry(self, node: ast.stmt, printed: str, warned: list[str], calls: list[str]) -> None:
        """Output and tracked calls of a statement that ends unreported go to the next step."""
        if printed or warned:
            self.pending = (node, self.pending[1] + printed, self.pending[2] + warned)
        self.calls_carried += tuple(calls)

    def finish(
        self,
        node: ast.stmt,
        printed: str,
        warned: list[str],
        error: BaseException | None,
        caught: tuple[BaseException, int] | None,
        grad_enabled: bool,
        header: bool,
        hooks: list[str] | None = None,
        calls: list[str] | None = None,
    ) -> None:
        """Report a statement that ended (a header only if it failed or was caught failing).

        ``calls``: the tracked calls (``TRACKED``) the tracer saw run during it, in order."""
        if header and error is None and caught is None:
            self.carry(node, printed, warned, calls or [])
            return
        tracked, self.calls_carried = [*self.calls_carried, *(calls or ())], ()
        self.grad_enabled = grad_enabled
        self.current_node = self.last_node = node
        # A script error travels on as Python's own exception; only limits end the run here.
        # The statement's operation record, measured now that it has ended (see trusted_ops).
        ops = statement_ops(node, self.interp.names(), self.interp.current_function) if error is None else []
        if error is None:
            ops.extend(tracked_op(len(ops) + i, node.lineno, fn) for i, fn in enumerate(tracked))
        self._finish(
            node, printed, warned, error, stop=error is None, caught=caught, hooks=hooks, expectable=True, ops=ops
        )
        if self.stopped_by is not None:
            raise StopRun()
