"""Calls: script-defined functions, lambdas and classes, the frames their calls run in, and ``on_call``."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from tcopy_cli.errors import NotAllowedError
from tcopy_cli.script import policy
from tcopy_cli.script.builtins import DISPLAY_BUILTINS, SIZED_BUILTINS
from tcopy_cli.script.formatting import bind_format
from tcopy_cli.script.guards import check_argument
from tcopy_cli.script.sandbox import (
    BoundedCount,
    ClassProxy,
    FunctionApply,
    PassableBuiltin,
    SafeFunction,
    ScriptClass,
    ScriptFunction,
    Sealed,
    SuperProxy,
    TypeView,
    class_attribute,
    guard_call,
    is_grad_mode,
    is_script_method,
    resolve_method,
    type_name,
)

if TYPE_CHECKING:
    from tcopy_cli.script.interp import Interpreter

NOTHING: Any = object()
"""No ``return`` has run yet in a frame."""


@dataclass
class Frame:
    """One running call (or the module): where names bind and what the call returns.

    Replaces state that was kept in parallel stacks and saved by hand: a call pushes a
    Frame and pops it, whatever happens in between.
    """

    function: str | None
    """The function's name; None for the module."""
    scopes: list[dict[str, Any]] = field(default_factory=list)
    """Local scopes, innermost last: a lambda's enclosing scopes, the call's locals, comprehensions."""
    locals: dict[str, Any] = field(default_factory=dict)
    """The call's own locals (shown in tables as ``function:name``)."""
    silent: bool = False
    """Its statements run without being reported as steps (hooks, map/sorted keys)."""
    returned: Any = NOTHING
    """The value of a ``return`` that ran in this frame's last step."""
    global_names: frozenset[str] = frozenset()
    """Names declared ``global`` in the function: read and bound in the module's names."""
    outer: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Names declared ``nonlocal``: the enclosing function's scope each binds in."""
    line: int = 0
    """The line of the statement (or block header) running in this frame."""
    called_from: int = 0
    """The line in the calling frame that made this call (0 for the module)."""


class ScriptCallable(Sealed):
    """A script function handed to torch (a hook) or a builtin (map, sorted key).

    Calling it runs the function in the interpreter; when ``silent`` no steps are
    reported and its prints land in the step that triggered the call (e.g. the backward
    that ran the hook).
    """

    def __init__(self, interp: Interpreter, fn: ScriptFunction, silent: bool = True) -> None:
        self.interp = interp
        self.fn = fn
        self.silent = silent

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.interp.call_function(self.fn, args, kwargs, silent=self.silent)

    def __repr__(self) -> str:
        return repr(self.fn)


class BuiltinCallable(Sealed):
    """``print``, ``len`` or ``abs`` handed to torch or a builtin (``c.register_hook(print)``)."""

    def __init__(self, builtin: PassableBuiltin) -> None:
        self.builtin = builtin

    def __call__(self, *args: Any) -> Any:
        return self.builtin.fn(*args)  # positional only: print(file=...) can't be reached this way

    def __repr__(self) -> str:
        return repr(self.builtin)


def wrap_callable(interp: Interpreter, value: Any, silent: bool = True) -> Any:
    """A script function (or ``Function.apply``, or ``print``/``len``/``abs``) handed to torch
    or a builtin becomes a callable that runs it in ``interp``."""
    if isinstance(value, ScriptFunction):
        return ScriptCallable(interp, value, silent)
    if isinstance(value, FunctionApply):
        return ApplyCallable(interp, value)
    if isinstance(value, PassableBuiltin):
        return BuiltinCallable(value)
    return value


class ApplyCallable(Sealed):
    """``MyFunction.apply`` handed to torch (``gradcheck``): its forward runs without steps."""

    def __init__(self, interp: Interpreter, apply: FunctionApply) -> None:
        self.interp = interp
        self.apply = apply

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with self.interp.quiet():
            return self.apply.owner.cls.apply(*args, **kwargs)  # type: ignore[attr-defined]


def bind_arguments(fn: ScriptFunction, args: list[Any] | tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The new call's locals, as Python binds them (defaults applied)."""
    try:
        bound = fn.signature.bind(*args, **kwargs)
    except TypeError as exc:
        raise TypeError(f"{fn.name}() {exc}") from None
    bound.apply_defaults()
    return dict(bound.arguments)


def grad_mode_decorators(interp: Interpreter, node: ast.FunctionDef) -> tuple[Any, ...]:
    """The grad-mode context managers of ``@torch.no_grad()`` and friends, outermost first.

    ``@staticmethod``, ``@classmethod`` and ``@property`` are left to ``make_class``;
    the validator refused every other decorator.
    """
    modes: list[Any] = []
    for dec in node.decorator_list:
        if isinstance(dec, ast.Name) and dec.id in policy.METHOD_DECORATORS:
            continue
        # @torch.no_grad (no parentheses) is @torch.no_grad(), as torch allows it.
        call = dec if isinstance(dec, ast.Call) else ast.Call(func=dec, args=[], keywords=[])
        cm = on_call(interp, ast.copy_location(call, dec))
        if not is_grad_mode(cm):
            raise NotAllowedError(
                "only @torch.no_grad(), @torch.enable_grad(), @torch.inference_mode() and "
                "@torch.set_grad_enabled(...) decorate script functions"
            )
        modes.append(cm)
    return tuple(modes)


def make_function(interp: Interpreter, node: ast.FunctionDef | ast.Lambda, owner: str = "") -> ScriptFunction:
    """A ScriptFunction with defaults evaluated now, as Python does."""
    grad_modes = grad_mode_decorators(interp, node) if isinstance(node, ast.FunctionDef) else ()
    a = node.args
    params: list[inspect.Parameter] = []
    positional = a.posonlyargs + a.args
    defaults = [interp.eval(d) for d in a.defaults]
    first_default = len(positional) - len(defaults)
    for i, arg in enumerate(positional):
        kind = inspect.Parameter.POSITIONAL_ONLY if i < len(a.posonlyargs) else inspect.Parameter.POSITIONAL_OR_KEYWORD
        default = defaults[i - first_default] if i >= first_default else inspect.Parameter.empty
        params.append(inspect.Parameter(arg.arg, kind, default=default))
    if a.vararg:
        params.append(inspect.Parameter(a.vararg.arg, inspect.Parameter.VAR_POSITIONAL))
    for arg, d in zip(a.kwonlyargs, a.kw_defaults):
        default = interp.eval(d) if d is not None else inspect.Parameter.empty
        params.append(inspect.Parameter(arg.arg, inspect.Parameter.KEYWORD_ONLY, default=default))
    if a.kwarg:
        params.append(inspect.Parameter(a.kwarg.arg, inspect.Parameter.VAR_KEYWORD))
    name = node.name if isinstance(node, ast.FunctionDef) else "<lambda>"
    if owner:
        name = f"{owner}.{name}"
    # A function sees the scopes around it where it is defined (an enclosing function's
    # locals: a closure, read when it runs, as Python's cells are), then the module's names.
    env = list(interp.frame.scopes)
    own = list(own_nodes(node))
    declared = frozenset(n for sub in own if isinstance(sub, ast.Global) for n in sub.names)
    fn = ScriptFunction(name, node, inspect.Signature(params), env, owner, declared)
    fn.nonlocal_names = frozenset(n for sub in own if isinstance(sub, ast.Nonlocal) for n in sub.names)
    fn.grad_modes = grad_modes
    return fn


def own_nodes(node: ast.FunctionDef | ast.Lambda) -> Iterator[ast.AST]:
    """The nodes of a function's own body: not those of functions, lambdas or classes inside it."""
    stack: list[ast.AST] = list(node.body) if isinstance(node, ast.FunctionDef) else [node.body]
    while stack:
        sub = stack.pop()
        yield sub
        if not isinstance(sub, (ast.FunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(sub))


def enclosing_scope(fn: ScriptFunction, name: str, module: dict[str, Any]) -> dict[str, Any]:
    """Where a ``nonlocal`` name of ``fn`` binds: the innermost enclosing scope that has it
    (else the enclosing function's own, where Python's compiler found it assigned)."""
    env: list[dict[str, Any]] = fn.env
    found = [scope for scope in env if name in scope]
    if found:
        return found[-1]
    return env[-1] if env else module


def _decorator_kind(node: ast.FunctionDef) -> str:
    """``staticmethod``, ``classmethod``, ``property`` or ``method``."""
    names = [d.id for d in node.decorator_list if isinstance(d, ast.Name) and d.id in policy.METHOD_DECORATORS]
    return names[0] if names else "method"


def make_class(interp: Interpreter, node: ast.ClassDef) -> ScriptClass:
    """A real nn.Module or torch.autograd.Function subclass whose methods run in the interpreter."""
    base = interp.eval(node.bases[0], allow_proxy=True)
    bases = (torch.nn.Module, torch.autograd.Function)
    if not (isinstance(base, ClassProxy) and base.cls in bases):
        raise NotAllowedError("a script class must derive from nn.Module or torch.autograd.Function")
    is_function = base.cls is torch.autograd.Function
    methods: dict[str, Any] = {}
    names: set[str] = set()
    properties: set[str] = set()
    class_methods: dict[str, tuple[ScriptFunction, bool]] = {}
    owner: list[ScriptClass] = []  # the ScriptClass, once made: what a classmethod gets as cls
    for item in node.body:
        if not isinstance(item, ast.FunctionDef):
            continue
        if item.name not in _OWN_METHODS and hasattr(base.cls, item.name):
            raise NotAllowedError(
                f"method '{item.name}' would replace {base.qualname}'s own; only "
                + ", ".join(sorted(_OWN_METHODS))
                + " may be defined with names the base class already has"
            )
        kind = _decorator_kind(item)
        if kind == "property" and item.name in policy.MODULE_ATTRS:
            raise NotAllowedError(f"a property can't be named '{item.name}': torch reads that attribute itself")
        if is_function and kind in ("method", "property"):
            kind = "staticmethod"  # forward/backward are looked up on the class: plain functions
        fn = make_function(interp, item, owner=node.name)
        # Torch calls backward (and jvp) from autograd: like hooks, it runs within the
        # step that started the backward pass.
        silent = is_function and item.name in ("backward", "vjp", "jvp")

        method = _method(interp, fn, item.name, owner if kind == "classmethod" else None, silent)
        if kind == "staticmethod":
            methods[item.name] = staticmethod(method)
            class_methods[item.name] = (fn, False)
        elif kind == "classmethod":
            methods[item.name] = method  # called on an instance: the instance is replaced by the class
            class_methods[item.name] = (fn, True)
        elif kind == "property":
            methods[item.name] = property(method)
            properties.add(item.name)
        else:
            methods[item.name] = method
        names.add(item.name)
    methods["_tcopy_methods"] = frozenset(n for n in names if n != "__init__" and n not in properties)
    methods["_tcopy_properties"] = frozenset(properties)
    methods["__module__"] = "tcopy_script"
    methods["__qualname__"] = node.name
    cls = type(node.name, (base.cls,), methods)
    script_class = ScriptClass(node.name, cls, frozenset(names), class_methods)
    owner.append(script_class)
    return script_class


def _method(
    interp: Interpreter, fn: ScriptFunction, name: str, owner: list[ScriptClass] | None, silent: bool
) -> Callable[..., Any]:
    """What the real class holds for a script method: a call into the interpreter.

    A closure, not default arguments, so no keyword a caller passes can replace what it runs.
    ``owner`` (a class method): the first argument is replaced by the script class.
    """

    def method(*args: Any, **kwargs: Any) -> Any:
        if owner is not None:
            args = (owner[0], *args[1:])
        return interp.call_function(fn, args, kwargs, silent=silent)

    method.__name__ = name
    method.__signature__ = fn.signature  # type: ignore[attr-defined]
    return method


_OWN_METHODS = frozenset({"__init__", "forward", "backward", "setup_context", "jvp", "vjp"})
"""Methods a script class may define although its base class has them."""


def super_of(frame: Frame) -> SuperProxy:
    """``super()`` inside a method: the module instance that is the method's first argument."""
    if frame.function is None or not frame.scopes or not frame.scopes[-1]:
        raise RuntimeError("super(): no arguments")
    first = next(iter(frame.scopes[-1].values()))
    if not isinstance(first, torch.nn.Module):
        raise RuntimeError("super() works only inside methods of a script class")
    return SuperProxy(first)


# --- calls ---------------------------------------------------------------------------


def on_call(interp: Interpreter, node: ast.Call) -> Any:
    """A call: script functions, classes and modules run here; builtins and torch after the guards."""
    func = node.func
    self_tensor: torch.Tensor | None = None
    receiver: Any = None
    builtin = False
    script_method = False  # m.normal(...) of the script's own class: not sized as torch.normal
    if isinstance(func, ast.Name):
        target = interp.lookup(func.id)
        if func.id == "isinstance" and target is interp.builtins.get("isinstance"):
            return call_isinstance(interp, node)
        if func.id == "super" and target is interp.builtins.get("super"):
            return super_of(interp.frame)
        if isinstance(target, (ScriptFunction, ScriptClass, FunctionApply)) or (
            isinstance(target, torch.nn.Module) and func.id not in interp.builtins
        ):
            return recorded_call_value(interp, node, func.id, target)
        # A builtin also under another name (p = print, t = type([])): its guards apply all the same.
        builtin = interp.builtins.get(getattr(target, "qualname", func.id)) is target
        if isinstance(target, SafeFunction):
            fn, name = target.fn, target.qualname.rsplit(".", 1)[-1]
        elif isinstance(target, ClassProxy):
            fn, name = target.cls, target.qualname.rsplit(".", 1)[-1]
        else:
            raise TypeError(f"'{type_name(target)}' object is not callable")
    else:
        assert isinstance(func, ast.Attribute)
        base = interp.eval(func.value, allow_proxy=True)
        if isinstance(base, ScriptClass):
            return call_value(interp, class_attribute(base, func.attr), *call_arguments(interp, node))
        if isinstance(base, str) and func.attr in policy.FORMAT_METHODS:
            fn = bind_format(interp.formatter, base, func.attr)
        else:
            fn = resolve_method(base, func.attr)
            script_method = is_script_method(base, func.attr)
        name = func.attr
        if isinstance(base, torch.Tensor):
            self_tensor = base
        if isinstance(base, (torch.Tensor, np.ndarray)):
            receiver = base
        if isinstance(fn, torch.nn.Module):  # interp.fc(x): a submodule stored as an attribute
            return recorded_call_value(interp, node, func.attr, fn)
    args, kwargs = evaluate_arguments(interp, node)
    if name in policy.CALLABLE_TAKERS:
        # Only script functions may be handed over; torch runs hooks inside backward,
        # where no step can be reported, so their statements run without steps.
        silent = name not in ("map", "sorted", "min", "max") and name not in policy.FORWARD_HOOK_TAKERS
        for value in list(args) + list(kwargs.values()):
            handed = isinstance(value, (ScriptFunction, FunctionApply, PassableBuiltin))
            foreign = isinstance(value, Sealed) and not handed and not isinstance(value, BoundedCount)
            if foreign or (callable(value) and not isinstance(value, (torch.Tensor, np.ndarray))):
                raise NotAllowedError(
                    f"{name}() takes only functions the script defined (def or lambda), or print, len and abs; "
                    f"not {type_name(value)}"
                )
        args = [wrap_callable(interp, a, silent) for a in args]
        kwargs = {k: wrap_callable(interp, v, silent) for k, v in kwargs.items()}
    strict = not (builtin and name in DISPLAY_BUILTINS)
    for value in list(args) + list(kwargs.values()):
        if not isinstance(value, (ScriptCallable, ApplyCallable, BuiltinCallable)):
            check_argument(value, strict)
    if builtin and name in SIZED_BUILTINS:
        for value in args:
            interp.guards.size(value)
    size_args = args
    if isinstance(func, ast.Attribute) and isinstance(base, ClassProxy) and args:
        # torch.Tensor.method(t, ...) is t.method(...): check it the same way.
        if isinstance(args[0], torch.Tensor):
            self_tensor, size_args = args[0], args[1:]
        base = args[0]
    if not script_method:
        interp.guards.call(name, size_args, kwargs, self_tensor)
    if builtin:
        interp.guards.builtin(name, args, kwargs)
    elif isinstance(func, ast.Attribute):
        interp.guards.method(name, base, size_args)
    guard_call(fn, args, kwargs, interp.limits)
    if builtin or interp.ops is None:
        result = fn(*args, **kwargs)
    else:
        inputs = call_inputs(node, receiver, args, kwargs)
        result = interp.recorded(node, "call", name, inputs, lambda: fn(*args, **kwargs))
    interp.guards.result(result)
    return result


def call_inputs(
    node: ast.Call, receiver: Any, args: list[Any], kwargs: dict[str, Any]
) -> list[tuple[str, ast.AST | None, Any]]:
    """(role, node, value) of a call's receiver and arguments, for the operation record."""
    out: list[tuple[str, ast.AST | None, Any]] = []
    if receiver is not None:
        assert isinstance(node.func, ast.Attribute)
        out.append(("self", node.func.value, receiver))
    plain = len(node.args) == len(args) and not any(isinstance(a, ast.Starred) for a in node.args)
    for i, value in enumerate(args):
        out.append((f"arg{i}", node.args[i] if plain else None, value))
    nodes = {kw.arg: kw.value for kw in node.keywords if kw.arg is not None}
    for k, value in kwargs.items():
        out.append((f"{k}=", nodes.get(k), value))
    return out


def recorded_call_value(interp: Interpreter, node: ast.Call, name: str, target: Any) -> Any:
    """A script function, class or module called, reported to the operation record."""
    args, kwargs = call_arguments(interp, node)
    if interp.ops is None:
        return call_value(interp, target, args, kwargs)
    inputs = call_inputs(node, None, args, kwargs)
    if isinstance(target, torch.nn.Module):
        inputs += module_inputs(node, target)
    return interp.recorded(node, "call", name, inputs, lambda: call_value(interp, target, args, kwargs))


MODULE_INPUTS = 32
"""Parameters of a called module recorded as inputs of the call (the first ones)."""


def module_inputs(node: ast.Call, module: torch.nn.Module) -> list[tuple[str, ast.AST | None, Any]]:
    """A called module's parameters as inputs of the call, each with the role the table
    would name it by through the module as written (``fc1.weight``, ``model.0.bias``)."""
    owner = ast.unparse(node.func)
    out: list[tuple[str, ast.AST | None, Any]] = []
    # nn.Module's own method, never a script class's override.
    for pname, param in torch.nn.Module.named_parameters(module):
        if len(out) >= MODULE_INPUTS:
            break
        out.append((f"{owner}.{pname}", None, param))
    return out


def call_isinstance(interp: Interpreter, node: ast.Call) -> bool:
    if len(node.args) != 2 or node.keywords:
        raise TypeError(f"isinstance expected 2 arguments, got {len(node.args)}")
    obj = interp.eval(node.args[0])
    arg = node.args[1]
    if isinstance(arg, ast.Tuple):
        spec: Any = tuple(interp.eval(e, allow_proxy=True) for e in arg.elts)
    else:
        spec = interp.eval(arg, allow_proxy=True)
    classes = spec if isinstance(spec, tuple) else (spec,)
    resolved: list[type] = []
    for c in classes:
        if isinstance(c, (ClassProxy, TypeView, ScriptClass)):
            resolved.append(c.cls)
        else:
            raise TypeError("isinstance() arg 2 must be a type or tuple of types")
    return isinstance(obj, tuple(resolved))


def evaluate_arguments(interp: Interpreter, node: ast.Call) -> tuple[list[Any], dict[str, Any]]:
    """Positional and keyword arguments of a call, with *args and **kwargs expanded."""
    args = elements(interp, node.args)
    kwargs: dict[str, Any] = {}
    for kw in node.keywords:
        value = interp.eval(kw.value)
        if kw.arg is None:
            if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
                raise TypeError("argument after ** must be a mapping with string keys")
            kwargs.update(value)
        else:
            kwargs[kw.arg] = value
    return args, kwargs


def call_arguments(interp: Interpreter, node: ast.Call) -> tuple[list[Any], dict[str, Any]]:
    """Arguments for a script function, class or module: values only, no callables."""
    args, kwargs = evaluate_arguments(interp, node)
    for value in list(args) + list(kwargs.values()):
        check_argument(value, True)
    return args, kwargs


def call_value(interp: Interpreter, target: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """Call a script function, a script class (construct), a module instance, ``Function.apply``
    or a static or class method of a script class."""
    if isinstance(target, ScriptFunction):
        return interp.call_function(target, args, kwargs)
    if isinstance(target, tuple):  # a static or class method: (function, the class to pass or None)
        fn, owner = target
        return interp.call_function(fn, args if owner is None else [owner, *args], kwargs)
    if isinstance(target, FunctionApply):
        result = target.owner.cls.apply(*args, **kwargs)  # type: ignore[attr-defined]
    elif isinstance(target, ScriptClass):
        if target.is_function:
            raise NotAllowedError(f"call {target.name}.apply(...): autograd Functions are not instantiated")
        result = target.cls(*args, **kwargs)
    else:
        result = target(*args, **kwargs)
    interp.guards.result(result)
    return result


def elements(interp: Interpreter, elts: list[ast.expr]) -> list[Any]:
    """The items of a display or of positional arguments, with ``*x`` expanded."""
    out: list[Any] = []
    for e in elts:
        if isinstance(e, ast.Starred):
            value = interp.eval(e.value)
            interp.guards.size(value)
            out.extend(value)
        else:
            out.append(interp.eval(e))
    interp.guards.items(out)
    return out
