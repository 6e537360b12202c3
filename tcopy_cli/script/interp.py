"""The interpreter: walks a validated Program and evaluates it node by node.

It never calls ``exec``/``eval``. Every statement node has a handler; every
expression node has a handler; anything else was refused by ``parse.py``. Values flow
through ``sandbox.py``'s attribute and call checks, and sizes through ``alloc.py``.
"""

from __future__ import annotations

import ast
import functools
import inspect
import io
import math
import operator
import re
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import numpy as np
import torch

from tcopy_cli.errors import LimitExceeded, NotAllowedError, TcopyError
from tcopy_cli.limits import Limits
from tcopy_cli.script import alloc, policy
from tcopy_cli.script.parse import Program
from tcopy_cli.script.sandbox import (
    ClassProxy,
    ModuleProxy,
    SafeFunction,
    ScriptClass,
    ScriptFunction,
    Sealed,
    SuperProxy,
    TypeView,
    build_all_modules,
    check_store,
    check_text,
    check_value,
    get_attribute,
    guard_call,
    is_context_manager,
    is_storable,
    resolve_method,
    set_attribute,
    type_name,
)


class StepHook(Protocol):
    """How the interpreter hands statements to the step runner."""

    def step(self, node: ast.stmt, action: Callable[[], None]) -> bool:
        """Run ``action`` as one reported step. False if it failed (and the run goes on)."""

    def header(self, node: ast.stmt, action: Callable[[], Any]) -> tuple[bool, Any]:
        """Run a block header silently; a failure is reported as a step. (ok, result)."""


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


_NOTHING = object()
MAX_CALL_DEPTH = 50


_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.MatMult: operator.matmul,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
}
_IOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.iadd,
    ast.Sub: operator.isub,
    ast.Mult: operator.imul,
    ast.Div: operator.itruediv,
    ast.FloorDiv: operator.ifloordiv,
    ast.Mod: operator.imod,
    ast.Pow: operator.ipow,
    ast.MatMult: operator.imatmul,
    ast.LShift: operator.ilshift,
    ast.RShift: operator.irshift,
    ast.BitAnd: operator.iand,
    ast.BitOr: operator.ior,
    ast.BitXor: operator.ixor,
}
_UNARY: dict[type, Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
    ast.Not: operator.not_,
    ast.Invert: operator.invert,
}
_CMPOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
_SPEC_NUMBER = re.compile(r"\d+")
_SIZED_BUILTINS = frozenset(
    {"list", "tuple", "set", "sorted", "sum", "min", "max", "any", "all", "enumerate", "zip", "reversed", "dict", "map"}
)
# Builtins that only display their arguments, so any storable value may be passed.
_DISPLAY_BUILTINS = frozenset({"print", "str", "type", "bool", "len"})


class Interpreter(Sealed):
    """Evaluates one Program; the namespace persists across statements."""

    def __init__(self, program: Program, limits: Limits, hook: StepHook) -> None:
        self.program = program
        self.limits = limits
        self.hook = hook
        self.modules = build_all_modules()
        self.ns: dict[str, Any] = {"torch": self.modules["torch"]}
        self.out = io.StringIO()
        self.printed = 0
        self.builtins = self._make_builtins()
        # Local scopes of the running function or comprehension (innermost last).
        self.scopes: list[dict[str, Any]] = []
        # (function name, locals) of each running call, for step labels and tables.
        self.call_stack: list[tuple[str, dict[str, Any]]] = []
        self.silent = 0
        self.try_stack: list[tuple[tuple[type, ...], int]] = []
        self.handling: list[BaseException] = []
        self.pending_return: Any = _NOTHING
        self.iterations = 0

    # --- scopes ----------------------------------------------------------------------

    def visible_names(self) -> dict[str, Any]:
        """Module names, then each running function's locals as ``fn:name``."""
        if not self.call_stack:
            return self.ns
        merged = dict(self.ns)
        for fname, local in self.call_stack:
            for k, v in local.items():
                if k != "self":  # the module itself is shown through the name that holds it
                    merged[f"{fname}:{k}"] = v
        return merged

    def _bind(self, name: str, value: Any) -> None:
        (self.scopes[-1] if self.scopes else self.ns)[name] = value

    def would_catch(self, exc: BaseException) -> int | None:
        """Line of the ``except`` that will handle ``exc``, or None if none will."""
        if isinstance(exc, (TcopyError, ControlFlow)) or not isinstance(exc, Exception):
            return None
        for types, line in reversed(self.try_stack):
            if isinstance(exc, types):
                return line
        return None

    def _step(self, stmt: ast.stmt, action: Callable[[], None]) -> bool:
        if self.silent:
            action()
            ok = True
        else:
            ok = self.hook.step(stmt, action)
        if self.pending_return is not _NOTHING:
            value, self.pending_return = self.pending_return, _NOTHING
            raise _Return(value)
        return ok

    def _header(self, stmt: ast.stmt, action: Callable[[], Any]) -> tuple[bool, Any]:
        if self.silent:
            return True, action()
        return self.hook.header(stmt, action)

    # --- statements ------------------------------------------------------------------

    def run(self) -> None:
        """Execute the whole program; steps are reported through the hook."""
        try:
            self._exec_block(self.program.tree.body)
        except (_Break, _Continue):  # pragma: no cover - parse refuses these outside loops
            pass

    def _exec_block(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            self._exec_stmt(stmt)

    def _exec_stmt(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.For):
            self._exec_for(stmt)
        elif isinstance(stmt, ast.If):
            ok, test = self._header(stmt, lambda: self._truth(self.eval(stmt.test)))
            if ok:
                self._exec_block(stmt.body if test else stmt.orelse)
        elif isinstance(stmt, ast.With):
            self._exec_with(stmt, 0)
        elif isinstance(stmt, ast.Break):
            raise _Break()
        elif isinstance(stmt, ast.Continue):
            raise _Continue()
        elif isinstance(stmt, ast.Pass):
            return
        elif isinstance(stmt, ast.While):
            self._exec_while(stmt)
        elif isinstance(stmt, ast.Try):
            self._exec_try(stmt)
        else:
            self._step(stmt, lambda: self.exec_simple(stmt))

    def _loop_limit_hit(self, stmt: ast.stmt, count: int) -> bool:
        """Report (as an error step on the loop header) a loop past --max-iterations."""
        if count <= self.limits.max_iterations:
            return False
        self._header(
            stmt,
            lambda: self._raise_limit(
                f"the loop ran more than {self.limits.max_iterations} iterations", "max_iterations"
            ),
        )
        return True

    def _exec_while(self, stmt: ast.While) -> None:
        count = 0
        while True:
            ok, test = self._header(stmt, lambda: self._truth(self.eval(stmt.test)))
            if not ok:
                return
            if not test:
                break
            count += 1
            if self._loop_limit_hit(stmt, count):
                return
            try:
                self._exec_block(stmt.body)
            except _Break:
                return
            except _Continue:
                continue
        self._exec_block(stmt.orelse)

    def _exception_types(self, node: ast.expr | None) -> tuple[type, ...]:
        if node is None:
            return (Exception,)
        names = node.elts if isinstance(node, ast.Tuple) else [node]
        return tuple(self.builtins[n.id].cls for n in names if isinstance(n, ast.Name))

    def _exec_try(self, stmt: ast.Try) -> None:
        handlers = [(self._exception_types(h.type), h) for h in stmt.handlers]
        caught: BaseException | None = None
        for types, h in handlers:
            self.try_stack.append((types, h.lineno))
        try:
            self._exec_block(stmt.body)
        except Caught as c:
            caught = c.exc
        except Exception as exc:  # raised where no step reports it (hooks, silent calls)
            if self.would_catch_here(exc, handlers) is None:
                raise
            caught = exc
        finally:
            del self.try_stack[len(self.try_stack) - len(handlers) :]
        try:
            if caught is None:
                self._exec_block(stmt.orelse)
            else:
                handler = self.would_catch_here(caught, handlers)
                if handler is None:  # pragma: no cover - would_catch said one matches
                    raise caught
                if handler.name:
                    self._bind(handler.name, caught)
                self.handling.append(caught)
                try:
                    self._exec_block(handler.body)
                finally:
                    self.handling.pop()
        finally:
            self._exec_block(stmt.finalbody)

    def would_catch_here(
        self, exc: BaseException, handlers: list[tuple[tuple[type, ...], ast.ExceptHandler]]
    ) -> ast.ExceptHandler | None:
        """The handler of this try that matches ``exc``."""
        if isinstance(exc, TcopyError):
            return None
        return next((h for types, h in handlers if isinstance(exc, types)), None)

    def _exec_for(self, stmt: ast.For) -> None:
        ok, iterator = self._header(stmt, lambda: iter(self._iterable(self.eval(stmt.iter))))
        if not ok:
            return
        count = 0
        while True:
            ok, item = self._header(stmt, lambda: next(iterator, _Break))
            if not ok or item is _Break:
                break
            count += 1
            if self._loop_limit_hit(stmt, count):
                return
            ok, _ = self._header(stmt, functools.partial(self._assign, stmt.target, item))
            if not ok:
                return
            try:
                self._exec_block(stmt.body)
            except _Break:
                return
            except _Continue:
                continue
        if ok:
            self._exec_block(stmt.orelse)

    def _exec_with(self, stmt: ast.With, index: int) -> None:
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
        try:
            if item.optional_vars is not None:
                self._assign(item.optional_vars, entered)
            self._exec_with(stmt, index + 1)
        finally:
            cm.__exit__(None, None, None)

    def exec_simple(self, stmt: ast.stmt) -> None:
        """Execute one simple statement (the body of one step)."""
        if isinstance(stmt, ast.Expr):
            self.eval(stmt.value)
        elif isinstance(stmt, ast.Assign):
            value = self.eval(stmt.value)
            for target in stmt.targets:
                self._assign(target, value)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                self._assign(stmt.target, self.eval(stmt.value))
        elif isinstance(stmt, ast.AugAssign):
            self._augassign(stmt)
        elif isinstance(stmt, ast.Delete):
            for target in stmt.targets:
                self._delete(target)
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname:
                    self._bind(alias.asname, self.modules[alias.name])
                else:  # import torch.nn binds torch
                    top = alias.name.split(".")[0]
                    self._bind(top, self.modules[top])
        elif isinstance(stmt, ast.ImportFrom):
            mod = self.modules[stmt.module or ""]
            for alias in stmt.names:
                if alias.name not in mod.members:
                    raise NotAllowedError(f"'{alias.name}' is not available from {stmt.module} in this torch")
                self._bind(alias.asname or alias.name, mod.members[alias.name])
        elif isinstance(stmt, ast.Return):
            self.pending_return = self.eval(stmt.value) if stmt.value is not None else None
        elif isinstance(stmt, ast.Raise):
            self._raise(stmt)
        elif isinstance(stmt, ast.Assert):
            if not self._truth(self.eval(stmt.test)):
                if stmt.msg is not None:
                    raise AssertionError(self.eval(stmt.msg))
                raise AssertionError()
        elif isinstance(stmt, ast.FunctionDef):
            self._bind(stmt.name, self._make_function(stmt))
        elif isinstance(stmt, ast.ClassDef):
            self._bind(stmt.name, self._make_class(stmt))
        else:  # pragma: no cover - parse.py refuses everything else
            raise NotAllowedError(f"{type(stmt).__name__} is not allowed here")

    def _assign(self, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name):
            if not is_storable(value):
                raise NotAllowedError(f"{type_name(value)} can't be stored in a variable")
            self._bind(target.id, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = self._unpack(value, len(target.elts))
            for sub, item in zip(target.elts, items):
                self._assign(sub, item)
        elif isinstance(target, ast.Attribute):
            set_attribute(self.eval(target.value), target.attr, value)
        elif isinstance(target, ast.Subscript):
            base = self.eval(target.value)
            self._check_container(base)
            if not is_storable(value):
                raise NotAllowedError(f"{type_name(value)} can't be stored")
            index = self.eval(target.slice)
            check_store(base, index, value, self.limits)
            base[index] = value
        else:  # pragma: no cover
            raise NotAllowedError(f"can't assign to {type(target).__name__}")

    def _unpack(self, value: Any, n: int) -> list[Any]:
        try:
            iter(value)
        except TypeError:
            raise TypeError(f"cannot unpack non-iterable {type(value).__name__} object") from None
        self._check_size(value)
        items = list(value)
        if len(items) > n:
            raise ValueError(f"too many values to unpack (expected {n})")
        if len(items) < n:
            raise ValueError(f"not enough values to unpack (expected {n}, got {len(items)})")
        return items

    def _augassign(self, stmt: ast.AugAssign) -> None:
        # Python's order: the target (and its current value) first, then the right side.
        op = _IOPS[type(stmt.op)]
        target = stmt.target
        if isinstance(target, ast.Name):
            cur = self._lookup(target.id)
            rhs = self.eval(stmt.value)
            self._bind(target.id, self._apply_binop(stmt.op, cur, rhs, op))
        elif isinstance(target, ast.Subscript):
            base = self.eval(target.value)
            self._check_container(base)
            idx = self.eval(target.slice)
            cur = base[idx]
            rhs = self.eval(stmt.value)
            new = self._apply_binop(stmt.op, cur, rhs, op)
            check_store(base, idx, new, self.limits)
            base[idx] = new
        elif isinstance(target, ast.Attribute):
            base = self.eval(target.value)
            cur = get_attribute(base, target.attr)
            rhs = self.eval(stmt.value)
            set_attribute(base, target.attr, self._apply_binop(stmt.op, cur, rhs, op))
        else:  # pragma: no cover
            raise NotAllowedError("can't assign to this target")

    def _delete(self, target: ast.expr) -> None:
        if isinstance(target, ast.Name):
            scope = self.scopes[-1] if self.scopes else self.ns
            if target.id not in scope:
                raise NameError(f"name '{target.id}' is not defined")
            del scope[target.id]
        elif isinstance(target, ast.Subscript):
            base = self.eval(target.value)
            self._check_container(base)
            del base[self.eval(target.slice)]
        elif isinstance(target, (ast.Tuple, ast.List)):
            for sub in target.elts:
                self._delete(sub)
        else:
            raise NotAllowedError("only names and items can be deleted (del x, del lst[0])")

    def _check_container(self, base: Any) -> None:
        if not isinstance(base, (torch.Tensor, list, dict, np.ndarray)):
            raise TypeError(f"'{type_name(base)}' object does not support item assignment")

    # --- expressions -----------------------------------------------------------------

    def eval(self, node: ast.expr, allow_proxy: bool = False) -> Any:
        """Evaluate an expression node. Proxies (modules, functions) only as attribute bases."""
        handler = getattr(self, "_eval_" + type(node).__name__, None)
        if handler is None:
            raise NotAllowedError(f"{type(node).__name__} is not allowed here")
        value = self._eval_Attribute(node, allow_proxy) if isinstance(node, ast.Attribute) else handler(node)
        if not allow_proxy and not is_storable(value):
            raise NotAllowedError(f"{type_name(value)} can only be called or used with '.', not used as a value")
        return value

    def _eval_Lambda(self, node: ast.Lambda) -> ScriptFunction:
        return self._make_function(node)

    def _comprehension(self, generators: list[ast.comprehension], emit: Callable[[], None]) -> None:
        """Run comprehension loops in their own scope, bounded like for loops."""
        self.scopes.append({})
        try:
            self._comp_level(generators, 0, emit, [0])
        finally:
            self.scopes.pop()

    def _comp_level(self, gens: list[ast.comprehension], i: int, emit: Callable[[], None], count: list[int]) -> None:
        if i == len(gens):
            emit()
            return
        gen = gens[i]
        if gen.is_async:
            raise NotAllowedError("async comprehensions are not supported")
        iterable = self._iterable(self.eval(gen.iter))
        self._check_size(iterable)
        for item in iterable:
            count[0] += 1
            self.iterations += 1
            if self.iterations > self.limits.max_iterations * 10:
                self._raise_limit("the script's loops and comprehensions ran too long in all", "max_iterations")
            if count[0] > self.limits.max_iterations:
                self._raise_limit(
                    f"the comprehension ran more than {self.limits.max_iterations} times", "max_iterations"
                )
            self._assign(gen.target, item)
            if all(self._truth(self.eval(cond)) for cond in gen.ifs):
                self._comp_level(gens, i + 1, emit, count)

    def _eval_ListComp(self, node: ast.ListComp) -> list[Any]:
        out: list[Any] = []
        self._comprehension(node.generators, lambda: out.append(self.eval(node.elt)))
        return out

    def _eval_GeneratorExp(self, node: ast.GeneratorExp) -> list[Any]:
        # Evaluated eagerly (a list), bounded like the loops it replaces.
        out: list[Any] = []
        self._comprehension(node.generators, lambda: out.append(self.eval(node.elt)))
        return out

    def _eval_SetComp(self, node: ast.SetComp) -> set[Any]:
        out: set[Any] = set()
        self._comprehension(node.generators, lambda: out.add(self.eval(node.elt)))
        return out

    def _eval_DictComp(self, node: ast.DictComp) -> dict[Any, Any]:
        out: dict[Any, Any] = {}

        def put() -> None:
            out[self.eval(node.key)] = self.eval(node.value)

        self._comprehension(node.generators, put)
        return out

    def _eval_Constant(self, node: ast.Constant) -> Any:
        if isinstance(node.value, str) and len(node.value) > self.limits.max_str_len:
            self._raise_limit("string literal is too long", "max_str_len")
        return node.value

    def _lookup(self, name: str) -> Any:
        if name == "__name__":
            return "__main__"
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        if name in self.ns:
            return self.ns[name]
        if name in self.builtins:
            return self.builtins[name]
        raise NameError(f"name '{name}' is not defined")

    def _eval_Name(self, node: ast.Name) -> Any:
        return self._lookup(node.id)

    def _eval_Attribute(self, node: ast.Attribute, allow_proxy: bool = False) -> Any:
        base = self.eval(node.value, allow_proxy=True)
        if isinstance(base, (SafeFunction,)):
            raise NotAllowedError(f"attributes of {base!r} are not allowed")
        return get_attribute(base, node.attr, allow_proxy)

    def _eval_Subscript(self, node: ast.Subscript) -> Any:
        base = self.eval(node.value)
        index = self.eval(node.slice)
        if isinstance(base, (torch.Tensor, np.ndarray)):
            numel = alloc.estimate_index_numel(tuple(base.shape), index)
            if numel is not None and numel > self.limits.max_elements:
                self._raise_limit(f"this indexing would create {numel:,} elements", "max_elements")
        result = base[index]
        self._check_result(result)
        return result

    def _eval_Slice(self, node: ast.Slice) -> slice:
        return slice(
            self.eval(node.lower) if node.lower else None,
            self.eval(node.upper) if node.upper else None,
            self.eval(node.step) if node.step else None,
        )

    def _eval_Tuple(self, node: ast.Tuple) -> tuple[Any, ...]:
        return tuple(self._eval_elements(node.elts))

    def _eval_List(self, node: ast.List) -> list[Any]:
        return self._eval_elements(node.elts)

    def _eval_Set(self, node: ast.Set) -> set[Any]:
        return set(self._eval_elements(node.elts))

    def _eval_elements(self, elts: list[ast.expr]) -> list[Any]:
        out: list[Any] = []
        for e in elts:
            if isinstance(e, ast.Starred):
                value = self.eval(e.value)
                self._check_size(value)
                out.extend(value)
            else:
                out.append(self.eval(e))
        if len(out) > self.limits.max_str_len:
            self._raise_limit("the list is too long", "max_str_len")
        return out

    def _eval_Dict(self, node: ast.Dict) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                value = self.eval(v)
                if not isinstance(value, dict):
                    raise TypeError(f"'{type_name(value)}' object is not a mapping")
                out.update(value)
            else:
                out[self.eval(k)] = self.eval(v)
        return out

    def _eval_BoolOp(self, node: ast.BoolOp) -> Any:
        value: Any = None
        for sub in node.values:
            value = self.eval(sub)
            truth = self._truth(value)
            if isinstance(node.op, ast.And) and not truth:
                return value
            if isinstance(node.op, ast.Or) and truth:
                return value
        return value

    def _eval_UnaryOp(self, node: ast.UnaryOp) -> Any:
        value = self.eval(node.operand)
        if isinstance(node.op, ast.Not):
            return not self._truth(value)
        return _UNARY[type(node.op)](value)

    def _eval_BinOp(self, node: ast.BinOp) -> Any:
        left = self.eval(node.left)
        right = self.eval(node.right)
        return self._apply_binop(node.op, left, right, _BINOPS[type(node.op)])

    def _eval_Compare(self, node: ast.Compare) -> Any:
        # Classes may be compared (type(x) == torch.Tensor), nothing else about them.
        left = self.eval(node.left, allow_proxy=True)
        result: Any = True
        last = len(node.ops) - 1
        for i, (op, comp) in enumerate(zip(node.ops, node.comparators)):
            right = self.eval(comp, allow_proxy=True)
            for operand in (left, right):
                if not is_storable(operand) and not (
                    isinstance(operand, ClassProxy) and isinstance(op, (ast.Eq, ast.NotEq, ast.Is, ast.IsNot))
                ):
                    raise NotAllowedError(f"{type_name(operand)} can't be compared")
            result = _CMPOPS[type(op)](left, right)
            # Python tests the truth of every result of a chain but the last.
            if i < last and not self._truth(result):
                return result
            left = right
        return result

    def _eval_IfExp(self, node: ast.IfExp) -> Any:
        return self.eval(node.body) if self._truth(self.eval(node.test)) else self.eval(node.orelse)

    def _eval_JoinedStr(self, node: ast.JoinedStr) -> str:
        parts: list[str] = []
        total = 0
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue):
                parts.append(self._format_value(value))
            total += len(parts[-1]) if parts else 0
            if total > self.limits.max_str_len:  # checked per field: each may be near the limit
                self._raise_limit("the formatted string is too long", "max_str_len")
        text = "".join(parts)
        if len(text) > self.limits.max_str_len:
            self._raise_limit("the formatted string is too long", "max_str_len")
        return text

    def _format_value(self, node: ast.FormattedValue) -> str:
        value = self.eval(node.value)
        check_text(value)
        if self._repr_size(value) > self.limits.max_str_len:
            self._raise_limit("the formatted value would be too long", "max_str_len")
        if node.conversion == ord("r"):
            value = repr(value)
        elif node.conversion == ord("a"):
            value = ascii(value)
        elif node.conversion == ord("s"):
            value = str(value)
        spec = ""
        if node.format_spec is not None:
            spec = self._eval_JoinedStr(node.format_spec)  # type: ignore[arg-type]
            for num in _SPEC_NUMBER.findall(spec):
                if len(num) > 7 or int(num) > self.limits.max_str_len:
                    self._raise_limit("the f-string format width is too large", "max_str_len")
        return format(value, spec)

    def _eval_Call(self, node: ast.Call) -> Any:
        func = node.func
        self_tensor: torch.Tensor | None = None
        builtin = False
        if isinstance(func, ast.Name):
            target = self._lookup(func.id)
            if func.id == "isinstance" and target is self.builtins.get("isinstance"):
                return self._isinstance(node)
            if func.id == "super" and target is self.builtins.get("super"):
                return self._super()
            if isinstance(target, (ScriptFunction, ScriptClass)) or (
                isinstance(target, torch.nn.Module) and func.id not in self.builtins
            ):
                call_args, call_kwargs = self._call_arguments(node)
                return self.call_value(target, call_args, call_kwargs)
            builtin = self.builtins.get(func.id) is target
            if isinstance(target, SafeFunction):
                fn, name = target.fn, target.qualname.rsplit(".", 1)[-1]
            elif isinstance(target, ClassProxy):
                fn, name = target.cls, target.qualname.rsplit(".", 1)[-1]
            else:
                raise TypeError(f"'{type_name(target)}' object is not callable")
        else:
            assert isinstance(func, ast.Attribute)
            base = self.eval(func.value, allow_proxy=True)
            if isinstance(base, ScriptClass):
                raise NotAllowedError(f"attributes of {base!r} are not allowed; call the class or its instances")
            fn = resolve_method(base, func.attr)
            name = func.attr
            if isinstance(base, torch.Tensor):
                self_tensor = base
            if isinstance(fn, torch.nn.Module):  # self.fc(x): a submodule stored as an attribute
                call_args, call_kwargs = self._call_arguments(node)
                return self.call_value(fn, call_args, call_kwargs)
        args, kwargs = self._evaluate_arguments(node)
        if name in policy.CALLABLE_TAKERS:
            # Only script functions may be handed over; torch runs hooks inside backward,
            # where no step can be reported, so their statements run without steps.
            silent = name not in ("map", "sorted", "min", "max")
            for value in list(args) + list(kwargs.values()):
                if callable(value) and not isinstance(value, (torch.Tensor, np.ndarray)):
                    raise NotAllowedError(
                        f"{name}() takes only functions the script defined (def or lambda), not {type_name(value)}"
                    )
            args = [self._wrap_callable(a, silent) for a in args]
            kwargs = {k: self._wrap_callable(v, silent) for k, v in kwargs.items()}
        strict = not (builtin and name in _DISPLAY_BUILTINS)
        for value in list(args) + list(kwargs.values()):
            if not isinstance(value, _ScriptCallable):
                self._check_argument(value, strict)
        if builtin and name in _SIZED_BUILTINS:
            for value in args:
                self._check_size(value)
        size_args = args
        if isinstance(func, ast.Attribute) and isinstance(base, ClassProxy) and args:
            # torch.Tensor.method(t, ...) is t.method(...): check it the same way.
            if isinstance(args[0], torch.Tensor):
                self_tensor, size_args = args[0], args[1:]
            base = args[0]
        self._check_call(name, size_args, kwargs, self_tensor)
        if builtin:
            self._check_builtin(name, args, kwargs)
        elif isinstance(func, ast.Attribute):
            self._check_method(name, base, size_args)
        guard_call(fn, args, kwargs, self.limits)
        result = fn(*args, **kwargs)
        self._check_result(result)
        return result

    def _evaluate_arguments(self, node: ast.Call) -> tuple[list[Any], dict[str, Any]]:
        """Positional and keyword arguments of a call, with *args and **kwargs expanded."""
        args = self._eval_elements(node.args)
        kwargs: dict[str, Any] = {}
        for kw in node.keywords:
            value = self.eval(kw.value)
            if kw.arg is None:
                if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
                    raise TypeError("argument after ** must be a mapping with string keys")
                kwargs.update(value)
            else:
                kwargs[kw.arg] = value
        return args, kwargs

    def _call_arguments(self, node: ast.Call) -> tuple[list[Any], dict[str, Any]]:
        """Arguments for a script function, class or module: values only, no callables."""
        args, kwargs = self._evaluate_arguments(node)
        for value in list(args) + list(kwargs.values()):
            self._check_argument(value, True)
        return args, kwargs

    def _wrap_callable(self, value: Any, silent: bool = True) -> Any:
        """A script function handed to torch or a builtin becomes a callable that runs it here."""
        if isinstance(value, ScriptFunction):
            return _ScriptCallable(self, value, silent)
        return value

    def call_value(self, target: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        """Call a script function, a script class (construct) or a module instance."""
        if isinstance(target, ScriptFunction):
            return self.call_function(target, args, kwargs)
        if isinstance(target, ScriptClass):
            result = target.cls(*args, **kwargs)
        else:
            result = target(*args, **kwargs)
        self._check_result(result)
        return result

    def call_function(
        self, fn: ScriptFunction, args: list[Any] | tuple[Any, ...], kwargs: dict[str, Any], silent: bool = False
    ) -> Any:
        """Run a script-defined function or lambda in a new local scope."""
        if len(self.call_stack) >= MAX_CALL_DEPTH:
            raise LimitExceeded(
                f"the script's function calls nested more than {MAX_CALL_DEPTH} deep (endless recursion?)",
                "max_depth",
            )
        try:
            bound = fn.signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{fn.name}() {exc}") from None
        bound.apply_defaults()
        local: dict[str, Any] = dict(bound.arguments)
        saved_scopes, saved_pending = self.scopes, self.pending_return
        self.scopes = [*fn.env, local]
        self.pending_return = _NOTHING
        self.call_stack.append((fn.name, local))
        self.silent += 1 if silent else 0
        try:
            if isinstance(fn.node, ast.Lambda):
                return self.eval(fn.node.body)
            try:
                self._exec_block(fn.node.body)
            except _Return as r:
                return r.value
            return None
        finally:
            self.silent -= 1 if silent else 0
            self.call_stack.pop()
            self.scopes, self.pending_return = saved_scopes, saved_pending

    def _make_function(self, node: ast.FunctionDef | ast.Lambda, owner: str = "") -> ScriptFunction:
        """A ScriptFunction with defaults evaluated now, as Python does."""
        a = node.args
        params: list[inspect.Parameter] = []
        positional = a.posonlyargs + a.args
        defaults = [self.eval(d) for d in a.defaults]
        first_default = len(positional) - len(defaults)
        for i, arg in enumerate(positional):
            kind = (
                inspect.Parameter.POSITIONAL_ONLY if i < len(a.posonlyargs) else inspect.Parameter.POSITIONAL_OR_KEYWORD
            )
            default = defaults[i - first_default] if i >= first_default else inspect.Parameter.empty
            params.append(inspect.Parameter(arg.arg, kind, default=default))
        if a.vararg:
            params.append(inspect.Parameter(a.vararg.arg, inspect.Parameter.VAR_POSITIONAL))
        for arg, d in zip(a.kwonlyargs, a.kw_defaults):
            default = self.eval(d) if d is not None else inspect.Parameter.empty
            params.append(inspect.Parameter(arg.arg, inspect.Parameter.KEYWORD_ONLY, default=default))
        if a.kwarg:
            params.append(inspect.Parameter(a.kwarg.arg, inspect.Parameter.VAR_KEYWORD))
        name = node.name if isinstance(node, ast.FunctionDef) else "<lambda>"
        if owner:
            name = f"{owner}.{name}"
        # Lambdas see the scopes around them; def functions see module names (and their own).
        env = list(self.scopes) if isinstance(node, ast.Lambda) else []
        return ScriptFunction(name, node, inspect.Signature(params), env, owner)

    def _make_class(self, node: ast.ClassDef) -> ScriptClass:
        """A real nn.Module subclass whose methods run in this interpreter."""
        base = self.eval(node.bases[0], allow_proxy=True)
        if not (isinstance(base, ClassProxy) and base.cls is torch.nn.Module):
            raise NotAllowedError("a script class must derive from nn.Module")
        interp = self
        methods: dict[str, Any] = {}
        names: set[str] = set()
        for item in node.body:
            if isinstance(item, ast.FunctionDef):
                if item.name != "forward" and item.name != "__init__" and hasattr(torch.nn.Module, item.name):
                    raise NotAllowedError(
                        f"method '{item.name}' would replace nn.Module's own; only __init__ and forward may be "
                        "defined with names nn.Module already has"
                    )
                fn = self._make_function(item, owner=node.name)

                def method(obj: Any, *args: Any, _fn: ScriptFunction = fn, **kwargs: Any) -> Any:
                    return interp.call_function(_fn, (obj, *args), kwargs)

                method.__name__ = item.name
                methods[item.name] = method
                names.add(item.name)
        methods["_tcopy_methods"] = frozenset(n for n in names if n != "__init__")
        methods["__module__"] = "tcopy_script"
        methods["__qualname__"] = node.name
        cls = type(node.name, (torch.nn.Module,), methods)
        return ScriptClass(node.name, cls, frozenset(names))

    def _super(self) -> SuperProxy:
        if not self.call_stack or not self.scopes or not self.scopes[-1]:
            raise RuntimeError("super(): no arguments")
        first = next(iter(self.scopes[-1].values()))
        if not isinstance(first, torch.nn.Module):
            raise RuntimeError("super() works only inside methods of a script class")
        return SuperProxy(first)

    def _raise(self, stmt: ast.Raise) -> None:
        if stmt.exc is None:
            if not self.handling:
                raise RuntimeError("No active exception to reraise")
            raise self.handling[-1]
        exc = self.eval(stmt.exc, allow_proxy=True)
        if isinstance(exc, ClassProxy) and exc.qualname in policy.SAFE_EXCEPTIONS:
            exc = exc.cls()
        if not isinstance(exc, Exception) or isinstance(exc, TcopyError):
            raise TypeError("exceptions must derive from BaseException")
        raise exc

    def _isinstance(self, node: ast.Call) -> bool:
        if len(node.args) != 2 or node.keywords:
            raise TypeError(f"isinstance expected 2 arguments, got {len(node.args)}")
        obj = self.eval(node.args[0])
        arg = node.args[1]
        if isinstance(arg, ast.Tuple):
            spec: Any = tuple(self.eval(e, allow_proxy=True) for e in arg.elts)
        else:
            spec = self.eval(arg, allow_proxy=True)
        classes = spec if isinstance(spec, tuple) else (spec,)
        resolved: list[type] = []
        for c in classes:
            if isinstance(c, (ClassProxy, TypeView, ScriptClass)):
                resolved.append(c.cls)
            else:
                raise TypeError("isinstance() arg 2 must be a type or tuple of types")
        return isinstance(obj, tuple(resolved))

    def _check_argument(self, value: Any, strict: bool) -> None:
        check_value(value, strict)

    # --- limits ----------------------------------------------------------------------

    def _raise_limit(self, message: str, limit: str) -> None:
        flag = "--" + limit.replace("_", "-")
        raise LimitExceeded(f"{message} (limit {getattr(self.limits, limit):,}; raise it with {flag})", limit)

    def _check_size(self, value: Any) -> None:
        try:
            n = len(value)
        except TypeError:
            return
        if n > self.limits.max_iterations:
            self._raise_limit(f"this would materialise {n:,} items", "max_iterations")

    def _check_call(self, name: str, args: list[Any], kwargs: dict[str, Any], self_tensor: torch.Tensor | None) -> None:
        if name == "tolist" and self_tensor is not None and self_tensor.numel() > self.limits.max_iterations:
            self._raise_limit(f"tolist() of {self_tensor.numel():,} elements", "max_iterations")
        numel = alloc.estimate_numel(name, args, kwargs, self_tensor)
        if numel is not None and numel > self.limits.max_elements:
            self._raise_limit(f"{name}() would create a tensor of {numel:,} elements", "max_elements")

    def _check_builtin(self, name: str, args: list[Any], kwargs: dict[str, Any]) -> None:
        """Builtins whose result could outgrow the limits before any check sees it."""
        lim = self.limits
        if name in ("str", "print"):
            total = sum(self._repr_size(a) for a in args)
            if total > lim.max_str_len:
                self._raise_limit(f"{name}() would build about {total:,} characters", "max_str_len")
        elif name == "round":
            digits = args[1] if len(args) > 1 else kwargs.get("ndigits")
            if isinstance(digits, int) and abs(digits) * 3.33 > lim.max_int_bits:
                self._raise_limit("round() with so many digits needs a huge integer", "max_int_bits")
        elif name == "sum":
            start = args[1] if len(args) > 1 else kwargs.get("start")
            if isinstance(start, (list, tuple, str)) and args:
                total = len(start) + sum(len(x) for x in args[0] if isinstance(x, (list, tuple, str)))
                if total > lim.max_str_len:
                    self._raise_limit(f"sum() would build {total:,} items", "max_str_len")

    def _check_method(self, name: str, base: Any, args: list[Any]) -> None:
        """Methods of strings, lists and arrays whose results are sized before they are built."""
        lim = self.limits
        if isinstance(base, str):
            size = None
            if name == "replace" and len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], str):
                count = base.count(args[0]) if args[0] else len(base) + 1
                size = len(base) + count * (len(args[1]) - len(args[0]))
            elif name == "join" and args:
                items = args[0]
                if isinstance(items, (list, tuple)):
                    size = sum(len(x) for x in items if isinstance(x, str)) + len(base) * max(len(items) - 1, 0)
            if size is not None and size > lim.max_str_len:
                self._raise_limit(f"{name}() would build {size:,} characters", "max_str_len")
        elif isinstance(base, list) and name in ("extend", "append", "insert"):
            added = 1
            if name == "extend" and args:
                try:
                    added = len(args[0])
                except TypeError:
                    added = 0
            if len(base) + added > lim.max_str_len:
                self._raise_limit(f"the list would grow to {len(base) + added:,} items", "max_str_len")
        elif isinstance(base, np.ndarray) and name == "tolist" and base.size > lim.max_iterations:
            self._raise_limit(f"tolist() of {base.size:,} elements", "max_iterations")

    def _repr_size(self, value: Any, depth: int = 0) -> int:
        """A cheap upper estimate of len(str(value)), stopping once over the limit."""
        if isinstance(value, str):
            return len(value) + 2
        if isinstance(value, torch.Tensor):
            return min(value.numel(), 1000) * 16 + 200
        if isinstance(value, np.ndarray):
            return min(value.size, 1000) * 16 + 200
        if isinstance(value, (list, tuple, set, dict)) and depth < 20:
            items = list(value.items()) if isinstance(value, dict) else list(value)
            total = 2
            for item in items:
                total += 2 + (
                    self._repr_size(item[0], depth + 1) + self._repr_size(item[1], depth + 1)
                    if isinstance(value, dict)
                    else self._repr_size(item, depth + 1)
                )
                if total > self.limits.max_str_len:
                    return total
            return total
        if isinstance(value, int) and not isinstance(value, bool):
            return value.bit_length() // 3 + 2
        return 64

    def _check_result(self, result: Any) -> None:
        if isinstance(result, torch.Tensor):
            if result.numel() > self.limits.max_elements:
                self._raise_limit(f"the result has {result.numel():,} elements", "max_elements")
        elif isinstance(result, np.ndarray):
            if result.dtype.hasobject:
                raise NotAllowedError("NumPy arrays of Python objects are not allowed (dtype=object)")
            if result.size > self.limits.max_elements:
                self._raise_limit(f"the result has {result.size:,} elements", "max_elements")
        elif isinstance(result, str) and len(result) > self.limits.max_str_len:
            self._raise_limit("the resulting string is too long", "max_str_len")
        elif isinstance(result, (list, tuple)) and len(result) <= 10_000:
            for item in result:
                if isinstance(item, torch.Tensor) and item.numel() > self.limits.max_elements:
                    self._raise_limit(f"the result has {item.numel():,} elements", "max_elements")

    def _apply_binop(self, op: ast.operator, left: Any, right: Any, fn: Callable[[Any, Any], Any]) -> Any:
        lim = self.limits
        ints = isinstance(left, int) and isinstance(right, int)
        if isinstance(op, ast.Pow) and ints and right > 0 and abs(left) > 1:
            if right * left.bit_length() > lim.max_int_bits:
                self._raise_limit("the integer power is too large", "max_int_bits")
        elif isinstance(op, ast.LShift) and ints and right > 0:
            if left.bit_length() + right > lim.max_int_bits:
                self._raise_limit("the shifted integer is too large", "max_int_bits")
        elif isinstance(op, ast.Mult):
            if ints and left.bit_length() + right.bit_length() > lim.max_int_bits:
                self._raise_limit("the integer product is too large", "max_int_bits")
            for seq, n in ((left, right), (right, left)):
                if (
                    isinstance(seq, (str, list, tuple, bytes))
                    and isinstance(n, int)
                    and len(seq) * max(n, 0) > lim.max_str_len
                ):
                    self._raise_limit("the repeated sequence is too long", "max_str_len")
        elif isinstance(op, ast.Add) and isinstance(left, (str, list, tuple)) and isinstance(right, type(left)):
            if len(left) + len(right) > lim.max_str_len:
                self._raise_limit("the concatenation is too long", "max_str_len")
        elif isinstance(op, ast.Mod) and isinstance(left, str):
            items = right if isinstance(right, tuple) else (right,)
            if not all(isinstance(i, (int, float, str, bool)) or i is None for i in items):
                raise NotAllowedError("'%' formatting is allowed with numbers and strings only; use an f-string")
            widths = [int(n) for n in re.findall(r"%[-#0 +]*(\d+)", left) if len(n) < 12]
            if "*" in left:
                widths += [abs(i) for i in items if isinstance(i, int)]
            widths += [len(i) for i in items if isinstance(i, str)]
            if sum(widths) + len(left) > lim.max_str_len:
                self._raise_limit("the formatted string would be too long", "max_str_len")
        if isinstance(left, list) and isinstance(op, ast.Add) and not isinstance(right, list):
            try:
                if len(left) + len(right) > lim.max_str_len:
                    self._raise_limit("the list would grow too long", "max_str_len")
            except TypeError:
                pass
        arrays = [v for v in (left, right) if isinstance(v, np.ndarray)]
        if arrays:
            shapes = [v.shape for v in (left, right) if isinstance(v, (np.ndarray, torch.Tensor))]
            try:
                numel = math.prod(np.broadcast_shapes(*[tuple(sh) for sh in shapes]))
            except ValueError:
                numel = None
            if isinstance(op, ast.MatMult):
                numel = None
            if numel is not None and numel > lim.max_elements:
                self._raise_limit(f"the result would have {numel:,} elements", "max_elements")
        if isinstance(left, torch.Tensor) or isinstance(right, torch.Tensor):
            name = "__matmul__" if isinstance(op, ast.MatMult) else "binary"
            tensors = [v for v in (left, right) if isinstance(v, torch.Tensor)]
            numel = alloc.estimate_numel(name, tensors, {})
            if numel is not None and numel > lim.max_elements:
                self._raise_limit(f"the result would have {numel:,} elements", "max_elements")
        result = fn(left, right)
        self._check_result(result)
        return result

    def _truth(self, value: Any) -> bool:
        return bool(value)

    def _iterable(self, value: Any) -> Iterable[Any]:
        if isinstance(value, (ModuleProxy, SafeFunction, ClassProxy)):
            raise TypeError(f"'{type_name(value)}' object is not iterable")
        return value  # type: ignore[no-any-return]

    # --- builtins --------------------------------------------------------------------

    def _print(self, *args: Any, **kwargs: Any) -> None:
        unknown = set(kwargs) - {"sep", "end", "flush"}
        if unknown:
            name = sorted(unknown)[0]
            if name == "file":
                raise NotAllowedError("print(file=...) is not allowed: scripts print to tcopy's capture only")
            raise TypeError(f"'{name}' is an invalid keyword argument for print()")
        sep, end = kwargs.get("sep", " "), kwargs.get("end", "\n")
        for value in (sep, end):
            if value is not None and not isinstance(value, str):
                raise TypeError(f"sep and end must be None or a string, not {type(value).__name__}")
        text = (" " if sep is None else str(sep)).join(str(a) for a in args) + ("\n" if end is None else str(end))
        self.printed += len(text)
        if self.printed > self.limits.max_output:
            self._raise_limit("the script printed too much", "max_output")
        self.out.write(text)

    def _make_builtins(self) -> dict[str, Any]:
        import builtins as b

        def _type(obj: Any) -> TypeView:
            return TypeView(type(obj))

        def _enumerate(it: Any, start: int = 0) -> list[tuple[int, Any]]:
            return list(enumerate(it, start))

        def _zip(*its: Any) -> list[tuple[Any, ...]]:
            return list(zip(*its))

        def _reversed(it: Any) -> list[Any]:
            return list(reversed(it))

        table: dict[str, Any] = {
            "print": SafeFunction("print", self._print),
            "type": SafeFunction("type", _type),
            "enumerate": SafeFunction("enumerate", _enumerate),
            "zip": SafeFunction("zip", _zip),
            "reversed": SafeFunction("reversed", _reversed),
        }
        for name in ("len", "abs", "min", "max", "sum", "round", "sorted", "any", "all", "isinstance"):
            table[name] = SafeFunction(name, getattr(b, name))
        for name in ("range", "float", "int", "bool", "str", "list", "tuple", "dict", "set"):
            table[name] = ClassProxy(name, getattr(b, name))
        for name in policy.SAFE_EXCEPTIONS:
            table[name] = ClassProxy(name, getattr(b, name))

        def _map(fn: Any, *its: Any) -> list[Any]:
            if not isinstance(fn, _ScriptCallable):
                raise NotAllowedError("map() takes only functions the script defined (def or lambda)")
            return list(map(fn, *its))

        table["map"] = SafeFunction("map", _map)
        table["super"] = SafeFunction("super", lambda: None)  # handled in _eval_Call
        return table


class _ScriptCallable(Sealed):
    """A script function handed to torch (a hook) or a builtin (map, sorted key).

    Calling it runs the function in the interpreter without reporting steps: its prints
    land in the step that triggered the call (e.g. the backward that ran the hook).
    """

    def __init__(self, interp: Interpreter, fn: ScriptFunction, silent: bool = True) -> None:
        self.interp = interp
        self.fn = fn
        self.silent = silent

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.interp.call_function(self.fn, args, kwargs, silent=self.silent)

    def __repr__(self) -> str:
        return repr(self.fn)
