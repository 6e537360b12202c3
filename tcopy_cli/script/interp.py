"""The interpreter: walks a validated Program and evaluates it node by node.

It never calls ``exec``/``eval``. ``NODE_HANDLERS`` (at the end) maps every statement
and expression node type to its ``on_<node>`` handler; ``PART_NODES`` are the nodes
that only occur inside those (operators, arguments, ``except`` clauses). Anything else
was refused by ``parse.py`` (a test checks that its allow-list is exactly these).
Values flow through ``sandbox.py``'s attribute and call checks, sizes through
``guards.py``; script functions and classes live in ``functions.py``, builtins in
``builtins.py``.
"""

from __future__ import annotations

import ast
import contextlib
import functools
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Protocol

import torch

from tcopy_cli.errors import NotAllowedError, StopRun, TcopyError
from tcopy_cli.limits import LOOPS_ENDED_KEPT, Limits
from tcopy_cli.script import expressions, functions, statements
from tcopy_cli.script.builtins import Capture, Output, make_builtins
from tcopy_cli.script.formatting import SafeFormatter, make_format
from tcopy_cli.script.functions import (
    NOTHING,
    BuiltinCallable,
    Frame,
    ScriptCallable,
    bind_arguments,
    enclosing_scope,
)
from tcopy_cli.script.guards import Guards
from tcopy_cli.script.parse import Program
from tcopy_cli.script.sandbox import (
    ClassProxy,
    ModuleProxy,
    Placeholder,
    SafeFunction,
    ScriptFunction,
    Sealed,
    build_all_modules,
    is_context_manager,
    is_storable,
    type_name,
)
from tcopy_cli.suggest import did_you_mean


class StepHook(Protocol):
    """How the interpreter hands statements to the step runner."""

    def step(self, node: ast.stmt, action: Callable[[], None]) -> bool:
        """Run ``action`` as one reported step. False if it failed (and the run goes on)."""

    def header(self, node: ast.stmt, action: Callable[[], Any]) -> tuple[bool, Any]:
        """Run a block header silently; a failure is reported as a step. (ok, result)."""

    def turn(self, node: ast.stmt) -> None:
        """A loop header about to take its next item where that can run no script code and
        can't print, warn, record or fail (``for i in range(n)``): only the limits apply."""


class OpSink(Protocol):
    """Where the interpreter reports each operation it performs (``trace.ops.OpRecorder``)."""

    def begin(
        self,
        node: ast.AST,
        kind: str,
        function: str,
        inputs: Sequence[tuple[str, ast.AST | None, Any]],
        call: str | None = None,
        extra: Any = None,
    ) -> Any:
        """An operation starts; returns a token for ``end``/``fail`` (None: not recorded)."""

    def end(self, pending: Any, result: Any) -> None:
        """The operation returned ``result``."""

    def fail(self, pending: Any, exc: BaseException) -> None:
        """The operation raised ``exc``."""


class ControlFlow(BaseException):
    """Base of the interpreter's own unwinding (never reported as a script error)."""


class _Break(ControlFlow):
    pass


class _Continue(ControlFlow):
    pass


class _Return(ControlFlow):
    def __init__(self, value: Any) -> None:
        super().__init__()
        self.value = value


class Caught(ControlFlow):
    """A script exception on its way to the ``except`` that will handle it."""

    def __init__(self, exc: BaseException) -> None:
        super().__init__()
        self.exc = exc


_END = object()
"""What ``next`` gives a for loop when its iterator is exhausted."""


class Interpreter(Sealed):
    """Evaluates one Program; the module namespace persists across statements and runs."""

    def __init__(self, program: Program, limits: Limits, hook: StepHook) -> None:
        self.program = program
        self.limits = limits
        self.guards = Guards(limits)
        self.hook = hook
        self.modules = build_all_modules(limits)
        self.ns: dict[str, Any] = {"torch": self.modules["torch"]}
        self.output = Output(self.guards)
        self.builtins = make_builtins(
            self.output,
            lambda fn: isinstance(fn, (ScriptCallable, BuiltinCallable)),
            [c for c in self.modules["torch"].members.values() if isinstance(c, ClassProxy)],
        )
        self.formatter = SafeFormatter(self.guards)
        self.builtins["format"] = SafeFunction("format", make_format(self.formatter))
        # The module's frame first, then one per running call of a script function.
        self.frames: list[Frame] = [Frame(function=None)]
        self.try_stack: list[tuple[tuple[type, ...], int]] = []
        self.echo = False
        """Keep the repr of a top-level expression statement's value (the REPL shows it)."""
        self.echoed: str | None = None
        self.handling: list[BaseException] = []
        self.iterations = 0
        self.quiet_calls = 0
        self.ops: OpSink | None = None
        """Set by the step runner: receives every operation (calls, indexing, operators, writes)."""
        # The loops running, outermost first: [line, turn, total or None, entry number].
        self.loops: list[list[Any]] = []
        self.loops_ended: deque[tuple[int, int]] = deque(maxlen=LOOPS_ENDED_KEPT)
        """(entry number, turns run) of the loops that ended since the last step."""
        self.loop_entries = 0
        # Grad-mode blocks (``with torch.no_grad():``) running, outermost first.
        self.contexts: list[str] = []

    # --- the API the step runner uses ------------------------------------------------

    def load(self, program: Program) -> None:
        """Run ``program`` next, in the same namespace (the REPL's next entry)."""
        self.program = program

    def run(self) -> None:
        """Execute the whole program; steps are reported through the hook."""
        try:
            self._exec_block(self.program.tree.body)
        except (_Break, _Continue):  # pragma: no cover - parse refuses these outside loops
            pass

    def capture_output(self) -> Capture:
        """``with interp.capture_output() as buffer:`` what the script prints inside goes to ``buffer``."""
        return self.output.capture()

    def names(self) -> dict[str, Any]:
        """Module names, then each running function's locals as ``fn:name``."""
        if len(self.frames) == 1:
            return self.ns
        merged = dict(self.ns)
        for frame in self.frames[1:]:
            for k, v in frame.locals.items():
                if k != "self":  # the module itself is shown through the name that holds it
                    merged[f"{frame.function}:{k}"] = v
        return merged

    def forget(self) -> None:
        """Drop the script's module names (so its tensors are freed now)."""
        self.ns.clear()

    @property
    def current_function(self) -> str | None:
        """The script function whose statement is running, None at module level."""
        return self.frames[-1].function

    def call_chain(self) -> list[tuple[str, int]]:
        """Each running script-function call, outermost first: (function, line that called it)."""
        return [(f.function or "", f.called_from) for f in self.frames[1:]]

    @property
    def depth(self) -> int:
        """How many script-function calls are running."""
        return len(self.frames) - 1

    def would_catch(self, exc: BaseException) -> int | None:
        """Line of the ``except`` that will handle ``exc``, or None if none will."""
        if isinstance(exc, (TcopyError, ControlFlow)) or not isinstance(exc, Exception):
            return None
        for types, line in reversed(self.try_stack):
            if isinstance(exc, types):
                return line
        return None

    # --- frames and names ------------------------------------------------------------

    @property
    def frame(self) -> Frame:
        """The running call's frame (the module's at top level)."""
        return self.frames[-1]

    def scope_of(self, name: str) -> dict[str, Any]:
        """Where ``name`` binds now: the innermost scope, or the module's (also for ``global`` names)."""
        frame = self.frame
        scopes = frame.scopes
        if not scopes or (name in frame.global_names and scopes[-1] is frame.locals):
            return self.ns
        if name in frame.outer and scopes[-1] is frame.locals:
            return frame.outer[name]
        return scopes[-1]

    def bind(self, name: str, value: Any) -> None:
        self.scope_of(name)[name] = value

    def lookup(self, name: str) -> Any:
        value = self._lookup(name)
        if isinstance(value, Placeholder):  # any use of an unavailable module fails here
            raise value.used()
        return value

    def _lookup(self, name: str) -> Any:
        if name == "__name__":
            return "__main__"
        frame = self.frame
        for scope in reversed(frame.scopes):
            if name in scope and not (scope is frame.locals and name in frame.global_names):
                return scope[name]
        if name in self.ns:
            return self.ns[name]
        if name in self.builtins:
            return self.builtins[name]
        raise NameError(f"name '{name}' is not defined" + did_you_mean(name, self.visible_names()))

    def visible_names(self) -> list[str]:
        """Every name a statement here could use: the frame's scopes, the module's, the builtins."""
        return [n for scope in (*self.frame.scopes, self.ns, self.builtins) for n in scope]

    def call_function(
        self, fn: ScriptFunction, args: list[Any] | tuple[Any, ...], kwargs: dict[str, Any], silent: bool = False
    ) -> Any:
        """Run a script-defined function or lambda in a new frame."""
        if self.depth >= self.limits.max_call_depth:
            raise self.limits.exceeded(
                "max_call_depth", "the script's function calls nested too deeply (endless recursion?)"
            )
        local = bind_arguments(fn, args, kwargs)
        silent = silent or self.frame.silent or self.quiet_calls > 0
        frame = Frame(
            fn.name, [*fn.env, local], local, silent, global_names=fn.global_names, called_from=self.frame.line
        )
        frame.outer = {n: enclosing_scope(fn, n, self.ns) for n in fn.nonlocal_names}
        self.frames.append(frame)
        try:
            if fn.grad_modes:
                with contextlib.ExitStack() as modes:
                    for mode in fn.grad_modes:
                        modes.enter_context(mode.clone())
                    return self._run_body(fn)
            return self._run_body(fn)
        finally:
            self.frames.pop()

    @contextlib.contextmanager
    def quiet(self) -> Iterator[None]:
        """Script functions called inside run without steps (torch calling them many times)."""
        self.quiet_calls += 1
        try:
            yield
        finally:
            self.quiet_calls -= 1

    def _run_body(self, fn: ScriptFunction) -> Any:
        if isinstance(fn.node, ast.Lambda):
            return self.eval(fn.node.body)
        try:
            self._exec_block(fn.node.body)
        except _Return as r:
            return r.value
        return None

    def name_of(self, obj: Any) -> str | None:
        """The script name bound to ``obj`` (by identity) as tables show it: the running call's
        locals (``fn:name``), then the module's names. Comprehension variables and a lambda's
        enclosing scopes are not table names, so they are skipped (the caller looks further)."""
        frame = self.frame
        if frame.function:
            for k, v in frame.locals.items():
                if v is obj and k != "self":
                    return f"{frame.function}:{k}"
        for k, v in self.ns.items():
            if v is obj:
                return k
        return None

    def names_of(self, obj: Any) -> list[str]:
        """Every script name bound to ``obj`` in the running scopes and the module."""
        frame = self.frame
        out = []
        for scope in reversed(frame.scopes):
            out += [
                f"{frame.function}:{k}" if scope is frame.locals and frame.function else k
                for k, v in scope.items()
                if v is obj
            ]
        out += [k for k, v in self.ns.items() if v is obj and k not in out]
        return out

    def recorded(
        self,
        node: ast.AST,
        kind: str,
        function: str,
        inputs: Sequence[tuple[str, ast.AST | None, Any]],
        run: Callable[[], Any],
        call: str | None = None,
        extra: Any = None,
    ) -> Any:
        """``run()``, reported to the operation record (``self.ops``) as one operation."""
        sink = self.ops
        if sink is None:
            return run()
        pending = sink.begin(node, kind, function, inputs, call, extra)
        if pending is None:
            return run()
        try:
            result = run()
        except BaseException as exc:
            sink.fail(pending, exc)
            raise
        sink.end(pending, result)
        return result

    # --- statements ------------------------------------------------------------------

    def _step(self, stmt: ast.stmt, action: Callable[[], None]) -> bool:
        frame = self.frame
        frame.line = stmt.lineno
        if frame.silent:
            action()
            ok = True
        else:
            ok = self.hook.step(stmt, action)
        if frame.returned is not NOTHING:
            value, frame.returned = frame.returned, NOTHING
            raise _Return(value)
        return ok

    def _header(self, stmt: ast.stmt, action: Callable[[], Any]) -> tuple[bool, Any]:
        self.frame.line = stmt.lineno
        if self.frame.silent:
            return True, action()
        return self.hook.header(stmt, action)

    def _turn(self, stmt: ast.stmt) -> None:
        self.frame.line = stmt.lineno
        if not self.frame.silent:
            self.hook.turn(stmt)

    def _exec_block(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            handler = NODE_HANDLERS[type(stmt)]
            if type(stmt) in BLOCK_STATEMENTS:
                handler(self, stmt)
            else:
                self._step(stmt, functools.partial(handler, self, stmt))

    def exec_simple(self, stmt: ast.stmt) -> None:
        """Execute one simple statement (the body of one step)."""
        NODE_HANDLERS[type(stmt)](self, stmt)

    def _loop_body(self, body: list[ast.stmt]) -> bool:
        """One turn of a loop's body; False if it ended with ``break``."""
        try:
            self._exec_block(body)
        except _Break:
            return False
        except _Continue:
            pass
        return True

    def _loop_limit_hit(self, stmt: ast.stmt, count: int) -> bool:
        """Report (as an error step on the loop header) a loop past --max-iterations.

        Called before the loop's turn count moves on: the turn refused never ran, so the
        error step is placed in the last turn that did, and the loop is told as that many
        turns (as an error in a ``for`` header is, in both engines).
        """
        if not self.guards.loop(count):
            return False

        def fail() -> None:
            raise self.guards.loop_error()

        self._header(stmt, fail)
        return True

    def on_if(self, stmt: ast.If) -> None:
        ok, test = self._header(stmt, lambda: bool(self.eval(stmt.test)))
        if ok:
            self._exec_block(stmt.body if test else stmt.orelse)

    def on_pass(self, stmt: ast.Pass) -> None:
        return

    def on_global(self, stmt: ast.Global | ast.Nonlocal) -> None:
        return  # a declaration: make_function read it when the function was defined

    def on_break(self, stmt: ast.Break) -> None:
        raise _Break()

    def on_continue(self, stmt: ast.Continue) -> None:
        raise _Continue()

    def _enter_loop(self, stmt: ast.stmt, total: int | None) -> list[Any]:
        """Push a loop onto ``loops`` (steps record where they are in it); pop it with ``loops.pop()``."""
        self.loop_entries += 1
        loop = [stmt.lineno, 0, total, self.loop_entries]
        self.loops.append(loop)
        return loop

    def _leave_loop(self) -> None:
        """Pop the innermost loop; the next step says how many turns it ran (its last turn may have
        run no step: ``if i == 2: break``)."""
        _, turns, _, entry = self.loops.pop()
        self.loops_ended.append((entry, turns))

    def on_while(self, stmt: ast.While) -> None:
        count = 0
        loop = self._enter_loop(stmt, None)
        try:
            while True:
                ok, test = self._header(stmt, lambda: bool(self.eval(stmt.test)))
                if not ok:
                    return
                if not test:
                    break
                count += 1
                if self._loop_limit_hit(stmt, count):
                    return
                loop[1] = count
                if not self._loop_body(stmt.body):
                    return
        finally:
            self._leave_loop()
        self._exec_block(stmt.orelse)

    def on_for(self, stmt: ast.For) -> None:
        source: list[Any] = []

        def start() -> tuple[Any, int | None]:
            iterable = self.iterable(self.eval(stmt.iter))
            source.append(iterable)
            return iter(iterable), _known_length(iterable)

        ok, started = self._header(stmt, start)
        if not ok:
            return
        iterator, total = started
        over = source[0] if self.ops is not None and isinstance(source[0], torch.Tensor) else None
        call = f"for {ast.unparse(stmt.target)} in {ast.unparse(stmt.iter)}" if over is not None else ""
        # Taking the next item of a range, list or tuple runs no script code and can't fail:
        # it needs no header around it (which captures output, warnings and operations).
        plain = over is None and type(iterator) in _PLAIN_ITERATORS
        count = 0
        loop = self._enter_loop(stmt, total)
        try:
            while True:
                if plain:
                    self._turn(stmt)
                    ok, item = True, next(iterator, _END)
                else:
                    ok, item = self._header(stmt, lambda: next(iterator, _END))
                if not ok or item is _END:
                    break
                count += 1
                if self._loop_limit_hit(stmt, count):
                    return
                loop[1] = count
                if plain and statements.binds_quietly(self, stmt.target, item):
                    statements.assign(self, stmt.target, item)
                else:
                    bind = functools.partial(statements.assign, self, stmt.target, item)
                    if over is not None:  # each item of a tensor is a view of it: recorded as an operation
                        bind = functools.partial(self._iterate, stmt, over, item, bind, call)
                    ok, _ = self._header(stmt, bind)
                if not ok or not self._loop_body(stmt.body):
                    return
        finally:
            self._leave_loop()
        if ok:
            self._exec_block(stmt.orelse)

    def _iterate(self, stmt: ast.For, over: Any, item: Any, bind: Callable[[], None], call: str) -> None:
        def run() -> Any:
            bind()
            return item

        self.recorded(stmt, "iterate", "for", [("self", stmt.iter, over)], run, call)

    def on_with(self, stmt: ast.With, index: int = 0) -> None:
        if index == len(stmt.items):
            self._exec_block(stmt.body)
            return
        item = stmt.items[index]

        def enter() -> Any:
            cm = self.eval(item.context_expr)
            if not is_context_manager(cm):
                raise NotAllowedError(
                    "only torch.no_grad(), torch.enable_grad(), torch.inference_mode() and "
                    "torch.set_grad_enabled(...) may be used in 'with'"
                )
            entered = cm.__enter__()
            return cm, entered

        ok, pair = self._header(stmt, enter)
        if not ok:
            return
        cm, entered = pair
        self.contexts.append(_context_name(cm))
        try:
            if item.optional_vars is not None:
                statements.assign(self, item.optional_vars, entered)
            self.on_with(stmt, index + 1)
        finally:
            self.contexts.pop()
            cm.__exit__(None, None, None)

    def _exception_types(self, node: ast.expr | None) -> tuple[type, ...]:
        if node is None:
            return (Exception,)
        names = node.elts if isinstance(node, ast.Tuple) else [node]
        return tuple(self.builtins[n.id].cls for n in names if isinstance(n, ast.Name))

    def on_try(self, stmt: ast.Try) -> None:
        handlers = [(self._exception_types(h.type), h) for h in stmt.handlers]
        caught: BaseException | None = None
        leaving: ControlFlow | None = None
        depth = len(self.try_stack)
        for types, h in handlers:
            self.try_stack.append((types, h.lineno))
        try:
            self._exec_block(stmt.body)
        except Caught as c:
            caught = c.exc
        except (_Return, _Break, _Continue) as flow:  # the finally block still runs, as in Python
            leaving = flow
        except Exception as exc:  # raised where no step reports it (hooks, silent calls)
            if _matching_handler(exc, handlers) is None:
                del self.try_stack[depth:]
                self._exec_block(stmt.finalbody)  # as Python does before the error leaves the try
                raise
            caught = exc
        except StopRun as stop:  # an uncaught script error ends the run: its finally still runs first
            del self.try_stack[depth:]
            if stop.unwinding:
                self._exec_block(stmt.finalbody)
            raise
        finally:
            del self.try_stack[depth:]
        if leaving is not None:
            self._exec_block(stmt.finalbody)
            raise leaving
        try:
            if caught is None:
                self._exec_block(stmt.orelse)
            else:
                handler = _matching_handler(caught, handlers)
                if handler is None:  # pragma: no cover - would_catch said one matches
                    raise caught
                if handler.name:
                    self.bind(handler.name, caught)
                self.handling.append(caught)
                try:
                    self._exec_block(handler.body)
                finally:
                    self.handling.pop()
        finally:
            self._exec_block(stmt.finalbody)

    # --- expressions -----------------------------------------------------------------

    def eval(self, node: ast.expr, allow_proxy: bool = False) -> Any:
        """Evaluate an expression node. Proxies (modules, functions) only as attribute bases."""
        handler = NODE_HANDLERS.get(type(node))
        if handler is None or not isinstance(node, ast.expr):
            raise NotAllowedError(f"{type(node).__name__} is not allowed here")
        value = (
            expressions.on_attribute(self, node, allow_proxy) if type(node) is ast.Attribute else handler(self, node)
        )
        if not allow_proxy and not is_storable(value):
            raise NotAllowedError(f"{type_name(value)} can only be called or used with '.', not used as a value")
        return value

    def iterable(self, value: Any) -> Iterable[Any]:
        if isinstance(value, (ModuleProxy, SafeFunction, ClassProxy)):
            raise TypeError(f"'{type_name(value)}' object is not iterable")
        return value  # type: ignore[no-any-return]


_SIZED = (range, list, tuple, dict, str, set, frozenset)
_PLAIN_ITERATORS: frozenset[type] = frozenset(
    {type(iter(range(1))), type(iter(range(1 << 64))), type(iter([])), type(iter(()))}
)


def _known_length(value: Any) -> int | None:
    """How many turns a ``for`` over ``value`` makes, where that is known without iterating."""
    return len(value) if isinstance(value, _SIZED) else None


def _context_name(cm: Any) -> str:
    """``no_grad``, ``enable_grad``, ``inference_mode`` or ``set_grad_enabled(False)``."""
    name = type(cm).__name__
    if name == "set_grad_enabled":
        return f"set_grad_enabled({getattr(cm, 'mode', '?')})"
    if name == "inference_mode" and getattr(cm, "mode", True) is False:
        return "inference_mode(False)"
    return name


def _matching_handler(
    exc: BaseException, handlers: list[tuple[tuple[type, ...], ast.ExceptHandler]]
) -> ast.ExceptHandler | None:
    """The handler of one ``try`` that matches ``exc`` (tcopy's own errors never match)."""
    if isinstance(exc, TcopyError):
        return None
    return next((h for types, h in handlers if isinstance(exc, types)), None)


Handler = Callable[[Interpreter, Any], Any]

NODE_HANDLERS: dict[type[ast.AST], Handler] = {
    # statements: blocks (their headers are evaluated silently) ...
    ast.If: Interpreter.on_if,
    ast.For: Interpreter.on_for,
    ast.While: Interpreter.on_while,
    ast.With: Interpreter.on_with,
    ast.Try: Interpreter.on_try,
    ast.Break: Interpreter.on_break,
    ast.Continue: Interpreter.on_continue,
    ast.Pass: Interpreter.on_pass,
    ast.Global: Interpreter.on_global,
    ast.Nonlocal: Interpreter.on_global,
    # ... and simple statements, each one step
    ast.Expr: statements.on_expr,
    ast.Assign: statements.on_assign,
    ast.AnnAssign: statements.on_annassign,
    ast.AugAssign: statements.on_augassign,
    ast.Delete: statements.on_delete,
    ast.Import: statements.on_import,
    ast.ImportFrom: statements.on_importfrom,
    ast.Return: statements.on_return,
    ast.Raise: statements.on_raise,
    ast.Assert: statements.on_assert,
    ast.FunctionDef: statements.on_functiondef,
    ast.ClassDef: statements.on_classdef,
    # expressions
    ast.Constant: expressions.on_constant,
    ast.Name: expressions.on_name,
    ast.Attribute: expressions.on_attribute,
    ast.Subscript: expressions.on_subscript,
    ast.Slice: expressions.on_slice,
    ast.Tuple: expressions.on_tuple,
    ast.List: expressions.on_list,
    ast.Set: expressions.on_set,
    ast.Dict: expressions.on_dict,
    ast.BoolOp: expressions.on_boolop,
    ast.UnaryOp: expressions.on_unaryop,
    ast.BinOp: expressions.on_binop,
    ast.Compare: expressions.on_compare,
    ast.IfExp: expressions.on_ifexp,
    ast.JoinedStr: expressions.on_joinedstr,
    ast.Call: functions.on_call,
    ast.Lambda: expressions.on_lambda,
    ast.ListComp: expressions.on_listcomp,
    ast.GeneratorExp: expressions.on_listcomp,
    ast.SetComp: expressions.on_setcomp,
    ast.DictComp: expressions.on_dictcomp,
}
"""Every statement and expression a script may contain, and the method that runs it."""

BLOCK_STATEMENTS = frozenset(
    {ast.If, ast.For, ast.While, ast.With, ast.Try, ast.Break, ast.Continue, ast.Pass, ast.Global, ast.Nonlocal}
)
"""Statements that are not a step themselves (their bodies' statements are; ``global`` is a declaration)."""

PART_NODES: frozenset[type[ast.AST]] = frozenset(
    {
        ast.keyword,  # call arguments (Call)
        ast.Starred,  # *args in calls and displays
        ast.FormattedValue,  # f-string fields (JoinedStr)
        ast.withitem,  # With
        ast.alias,  # Import, ImportFrom
        ast.ExceptHandler,  # Try
        ast.arguments,  # FunctionDef, Lambda
        ast.arg,
        ast.comprehension,  # the comprehensions
        ast.Load,  # expression contexts
        ast.Store,
        ast.Del,
        ast.operator,  # BinOp, AugAssign: guards.BINARY_OPERATORS
        ast.unaryop,  # UnaryOp: expressions.UNARY_OPERATORS
        ast.cmpop,  # Compare: expressions.COMPARISONS
        ast.boolop,  # BoolOp
    }
)
"""Nodes that occur only inside a handled node, which evaluates them itself."""
