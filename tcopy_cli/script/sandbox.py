"""Runtime side of the allow-list: the values a script may hold and what they expose.

A script never sees a Python module, function or class object. It sees tensors,
NumPy arrays, plain data (numbers, strings, containers, dtypes, devices, sizes) and
the proxies defined here. Attribute access and calls go through ``get_attribute`` and
``resolve_method``, which consult the tables in ``policy.py`` by the value's type.
"""

from __future__ import annotations

import copy
import inspect
import math
import random
import time
import timeit
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from tcopy_cli.errors import NotAllowedError
from tcopy_cli.limits import Limits
from tcopy_cli.script import alloc, policy
from tcopy_cli.suggest import did_you_mean


class Sealed:
    """tcopy's own objects: a script can't copy or pickle them.

    ``copy``/``deepcopy`` of a value that holds one (a tensor with a hook, a module
    whose hook closes over the interpreter) would otherwise copy tcopy's interpreter,
    its limits and its allow-list tables into the script's hands.
    """

    def _refuse(self, what: str) -> NotAllowedError:
        return NotAllowedError(f"{type(self).__name__} belongs to tcopy and can't be {what}")

    def __copy__(self) -> Any:
        raise self._refuse("copied")

    def __deepcopy__(self, memo: Any) -> Any:
        raise self._refuse("copied")

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise self._refuse("pickled")

    def __reduce__(self) -> Any:
        raise self._refuse("pickled")

    def __getstate__(self) -> Any:
        raise self._refuse("pickled")


class ModuleProxy(Sealed):
    """What ``import torch`` (or copy, math, torch.cuda ...) binds in a script."""

    def __init__(self, name: str, members: dict[str, Any]) -> None:
        self.name = name
        self.members = members

    def __repr__(self) -> str:
        return f"<module '{self.name}'>"


class Placeholder(Sealed):
    """What importing a module tcopy does not offer binds (``import os``, ``from sys import argv``).

    The run goes on; the first use of the name (any use: attribute, call, subscript,
    passing it, a base class) fails at its line, naming the module.
    """

    def __init__(self, module: str) -> None:
        self.module = module

    def used(self) -> NotAllowedError:
        """The error for a use of this placeholder."""
        return NotAllowedError(
            f"'{self.module}' is not available in tcopy's sandbox (its import only bound a placeholder); "
            "if you trust this script, run it with --trust to use Python's own modules"
        )

    def __repr__(self) -> str:
        return f"<placeholder for {self.module}>"


class SafeFunction(Sealed):
    """A function a script may call (torch.ones, print, copy.deepcopy ...)."""

    def __init__(self, qualname: str, fn: Callable[..., Any]) -> None:
        self.qualname = qualname
        self.fn = fn

    def __repr__(self) -> str:
        return f"<function {self.qualname}>"


class ClassProxy(Sealed):
    """A class a script may call or use in isinstance (torch.Tensor, int, torch.device)."""

    def __init__(self, qualname: str, cls: type, methods: frozenset[str] = frozenset()) -> None:
        self.qualname = qualname
        self.cls = cls
        self.methods = methods

    def __repr__(self) -> str:
        return f"<class '{self.qualname}'>"


class PassableBuiltin(SafeFunction):
    """A builtin a script may also hold and hand over as a callback: ``print``, ``len``, ``abs``.

    ``c.register_hook(print)``, ``sorted(xs, key=len)``, ``p = print``. Each only reads
    its arguments and returns a plain value; what it runs is tcopy's own function
    (``print`` writes to the step's capture), never a Python builtin that reaches code,
    names or attributes.
    """

    def __repr__(self) -> str:
        return f"<built-in function {self.qualname}>"


class TypeView(Sealed):
    """What ``type(x)`` returns for a class the script has no name for: printable and comparable, not callable."""

    def __init__(self, cls: type) -> None:
        self.cls = cls

    def __repr__(self) -> str:
        return repr(self.cls)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (TypeView, ClassProxy)):
            return self.cls is other.cls
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.cls)


_GRAD_MODE_TYPES: tuple[type, ...] = (
    torch.no_grad,
    torch.enable_grad,
    torch.inference_mode,
    torch.set_grad_enabled,
)
_CONTEXT_TYPES: tuple[type, ...] = (
    *_GRAD_MODE_TYPES,
    torch.autograd.detect_anomaly,
    torch.autograd.set_detect_anomaly,
)


def is_context_manager(value: Any) -> bool:
    """Only torch's grad-mode and anomaly-mode context managers may be used in ``with``."""
    return isinstance(value, _CONTEXT_TYPES)


def is_grad_mode(value: Any) -> bool:
    """A grad-mode switch (``torch.no_grad()`` ...): what may decorate a script function."""
    return isinstance(value, _GRAD_MODE_TYPES)


# Bounds on torch.set_printoptions, so printing a tensor stays within the string limits.
_PRINT_BOUNDS = {"precision": 20, "threshold": 10_000, "edgeitems": 10, "linewidth": 1_000}


def set_printoptions(
    precision: int | None = None,
    threshold: int | None = None,
    edgeitems: int | None = None,
    linewidth: int | None = None,
    profile: str | None = None,
    sci_mode: bool | None = None,
) -> None:
    """``torch.set_printoptions`` with bounded values (the run restores torch's own after)."""
    if profile not in (None, "default", "short"):
        raise NotAllowedError("set_printoptions(profile=...) may be 'default' or 'short' ('full' prints everything)")
    given = {"precision": precision, "threshold": threshold, "edgeitems": edgeitems, "linewidth": linewidth}
    for name, value in given.items():
        bound = _PRINT_BOUNDS[name]
        if value is not None and not (isinstance(value, int) and 0 <= value <= bound):
            raise NotAllowedError(f"set_printoptions({name}=...) must be a whole number from 0 to {bound:,} here")
    if sci_mode is not None and not isinstance(sci_mode, bool):
        raise TypeError("set_printoptions(sci_mode=...) must be True, False or None")
    torch.set_printoptions(precision, threshold, edgeitems, linewidth, profile, sci_mode)  # type: ignore[no-untyped-call]


def set_default_device(device: Any) -> None:
    """``torch.set_default_device``: accepted for the device the run already uses (a no-op)."""
    current = torch.empty(()).device
    try:
        wanted = torch.device(device) if device is not None else torch.device("cpu")
    except (RuntimeError, TypeError) as exc:
        raise type(exc)(str(exc)) from None
    if wanted.type != current.type or (wanted.index is not None and wanted.index != current.index):
        raise NotAllowedError(
            f"torch.set_default_device({str(wanted)!r}) is not allowed: this run uses {str(current)!r}; "
            "choose the device with tcopy's --device option"
        )


def _members(mod: Any, names: frozenset[str], prefix: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in sorted(names):
        obj = getattr(mod, name, None)
        if obj is None:
            continue
        if callable(obj) and not isinstance(obj, torch.dtype):
            out[name] = SafeFunction(f"{prefix}.{name}", obj)
        else:
            out[name] = obj
    return out


def build_torch_proxy() -> ModuleProxy:
    """The ``torch`` a script sees: only the allow-listed names."""
    members = _members(torch, policy.TORCH_FACTORIES | policy.TORCH_OPS, "torch")
    for name in policy.TORCH_CONSTANTS:
        if hasattr(torch, name):
            members[name] = getattr(torch, name)
    for name in policy.TORCH_CLASSES:
        cls = getattr(torch, name, None)
        if isinstance(cls, type):
            methods = policy.TENSOR_METHODS if issubclass(cls, torch.Tensor) else frozenset()
            # named as Python shows the class (torch.Generator is torch._C.Generator), so that
            # type(g) gives this proxy back: type(g) is torch.Generator holds, as in Python
            members[name] = ClassProxy(f"{cls.__module__}.{cls.__qualname__}", cls, methods)
    for sub, names in policy.TORCH_SUBMODULES.items():
        mod = getattr(torch, sub, None)
        if mod is not None:
            members[sub] = ModuleProxy(f"torch.{sub}", _members(mod, names, f"torch.{sub}"))
    autograd = members.get("autograd")
    if isinstance(autograd, ModuleProxy):
        function = ClassProxy("torch.autograd.Function", torch.autograd.Function)
        autograd.members["Function"] = function
        autograd.members["function"] = ModuleProxy("torch.autograd.function", {"Function": function})
        autograd.members["functional"] = ModuleProxy(
            "torch.autograd.functional",
            _members(torch.autograd.functional, policy.AUTOGRAD_FUNCTIONAL_NAMES, "torch.autograd.functional"),
        )
        autograd.members["graph"] = ModuleProxy(
            "torch.autograd.graph", {"Node": ClassProxy("torch.autograd.graph.Node", torch.autograd.graph.Node)}
        )
    members["set_printoptions"] = SafeFunction("torch.set_printoptions", set_printoptions)
    members["set_default_device"] = SafeFunction("torch.set_default_device", set_default_device)
    members["__version__"] = torch.__version__
    members["nn"] = build_nn_proxy()
    members["optim"] = ModuleProxy("torch.optim", _classes(torch.optim, policy.OPTIM_NAMES, "torch.optim"))
    return ModuleProxy("torch", members)


def _classes(mod: Any, names: frozenset[str], prefix: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in sorted(names):
        obj = getattr(mod, name, None)
        if isinstance(obj, type):
            out[name] = ClassProxy(f"{prefix}.{name}", obj)
    return out


def build_nn_proxy() -> ModuleProxy:
    """``torch.nn``: layer and loss classes, Parameter, functional and init."""
    nn = torch.nn
    members = _classes(nn, policy.NN_NAMES - {"functional", "init"}, "torch.nn")
    members["functional"] = ModuleProxy(
        "torch.nn.functional", _members(nn.functional, policy.FUNCTIONAL_NAMES, "torch.nn.functional")
    )
    members["init"] = ModuleProxy("torch.nn.init", _members(nn.init, policy.NN_INIT_NAMES, "torch.nn.init"))
    return ModuleProxy("torch.nn", members)


def build_numpy_proxy() -> ModuleProxy:
    """``numpy``: array creation and a few read-only helpers; dtypes as np.dtype values."""
    members: dict[str, Any] = {"__version__": str(np.__version__)}
    for name in sorted(policy.NUMPY_NAMES - {"random"}):
        obj = getattr(np, name, None)
        if obj is None:
            continue
        if isinstance(obj, type) and issubclass(obj, np.generic):
            members[name] = np.dtype(obj)
        elif isinstance(obj, type):
            members[name] = ClassProxy(f"numpy.{name}", obj)
        elif callable(obj):
            members[name] = SafeFunction(f"numpy.{name}", obj)
    # The legacy global functions (np.random.seed, randn ...) on a RandomState of this run's
    # own: seeding it gives NumPy's own sequence and touches no other generator.
    members["random"] = ModuleProxy(
        "numpy.random", _members(np.random.RandomState(), policy.NUMPY_RANDOM_NAMES, "numpy.random")
    )
    return ModuleProxy("numpy", members)


class BoundedCount(Sealed):
    """``itertools.count(start, step)``: endless, so consuming it is bounded by --max-iterations."""

    def __init__(self, limits: Limits, start: Any = 0, step: Any = 1) -> None:
        for value in (start, step):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError("itertools.count() takes numbers (int or float) here")
        self.limits = limits
        self.start, self.step = start, step
        self.next_value = start
        self.produced = 0

    def __iter__(self) -> BoundedCount:
        return self

    def __next__(self) -> Any:
        self.produced += 1
        if self.produced > self.limits.max_iterations:
            raise self.limits.exceeded(
                "max_iterations", f"itertools.count() was read more than {self.limits.max_iterations:,} times"
            )
        value, self.next_value = self.next_value, self.next_value + self.step
        return value

    def __repr__(self) -> str:
        rest = f", {self.step!r}" if self.step != 1 else ""
        return f"count({self.next_value!r}{rest})"


class ScriptFunction(Sealed):
    """A function or lambda the script defined; only tcopy's interpreter runs its body."""

    def __init__(
        self,
        name: str,
        node: Any,
        signature: inspect.Signature,
        env: list[dict[str, Any]],
        owner: str = "",
        global_names: frozenset[str] = frozenset(),
    ) -> None:
        self.name = name
        self.node = node
        self.signature = signature
        self.env = env
        self.owner = owner
        self.global_names = global_names
        """Names its ``global`` statements declare: they bind in the module, not in the call."""
        self.nonlocal_names: frozenset[str] = frozenset()
        """Names its ``nonlocal`` statements declare: they bind in the enclosing function's scope."""
        self.grad_modes: tuple[Any, ...] = ()
        """Grad-mode context managers of its decorators (``@torch.no_grad()``), entered per call."""

    def __repr__(self) -> str:
        return f"<function {self.name}>"


class ScriptClass(Sealed):
    """A script-defined subclass of nn.Module or torch.autograd.Function (the real class
    stays inside the sandbox).

    ``class_methods`` are its ``@staticmethod``/``@classmethod`` functions by name, with
    whether the class is passed first; a script calls them as ``Cls.name(...)``.
    """

    def __init__(
        self,
        name: str,
        cls: type,
        methods: frozenset[str],
        class_methods: dict[str, tuple[ScriptFunction, bool]] | None = None,
    ) -> None:
        self.name = name
        self.cls = cls
        self.methods = methods
        self.class_methods = class_methods or {}

    @property
    def is_function(self) -> bool:
        """A custom autograd Function (called through ``.apply``)."""
        return issubclass(self.cls, torch.autograd.Function)

    def __repr__(self) -> str:
        return f"<class '{self.name}'>"


class FunctionApply(Sealed):
    """``MyFunction.apply``: a value a script may store (``relu = MyReLU.apply``) and call.

    It is not callable from Python, so torch and builtins can't call it unless tcopy
    hands it over itself (``gradcheck``, ``jacobian``).
    """

    def __init__(self, owner: ScriptClass) -> None:
        self.owner = owner

    def __repr__(self) -> str:
        return f"<bound method {self.owner.name}.apply>"


def class_attribute(owner: ScriptClass, attr: str) -> Any:
    """``Cls.attr`` of a script class: ``apply`` of a Function, or a static/class method (to call)."""
    if attr == "apply" and owner.is_function:
        return FunctionApply(owner)
    if attr in owner.class_methods:
        fn, with_class = owner.class_methods[attr]
        return (fn, owner if with_class else None)
    raise NotAllowedError(
        f"attributes of {owner!r} are not allowed; call the class, its instances, its static and class "
        "methods" + (", or .apply" if owner.is_function else "")
    )


class SuperProxy(Sealed):
    """What ``super()`` gives inside a method: only ``__init__`` and nn.Module methods."""

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __repr__(self) -> str:
        return "<super>"


def build_modules(limits: Limits | None = None) -> dict[str, ModuleProxy]:
    """Importable modules by name."""
    bound = limits or Limits()

    def count(start: Any = 0, step: Any = 1) -> BoundedCount:
        return BoundedCount(bound, start, step)

    math_members: dict[str, Any] = {}
    for name in policy.MATH_NAMES:
        obj = getattr(math, name, None)
        if obj is not None:
            math_members[name] = SafeFunction(f"math.{name}", obj) if callable(obj) else obj
    return {
        "torch": build_torch_proxy(),
        "copy": ModuleProxy(
            "copy",
            {
                "copy": SafeFunction("copy.copy", script_copy),
                "deepcopy": SafeFunction("copy.deepcopy", script_deepcopy),
            },
        ),
        "math": ModuleProxy("math", math_members),
        "time": ModuleProxy("time", _members(time, policy.TIME_NAMES, "time")),
        "timeit": ModuleProxy("timeit", _members(timeit, policy.TIMEIT_NAMES, "timeit")),
        "random": build_random_proxy(),
        "pdb": ModuleProxy("pdb", {"set_trace": SafeFunction("pdb.set_trace", _no_debugger)}),
        "itertools": ModuleProxy("itertools", {"count": SafeFunction("itertools.count", count)}),
    }


def _no_debugger(*args: Any, **kwargs: Any) -> None:
    """``pdb.set_trace()``: a no-op; tcopy already stops after every statement (--pause steps)."""


def build_random_proxy() -> ModuleProxy:
    """``random``: the module's functions on a generator of this run's own (seeding it touches nothing else)."""
    generator = random.Random()
    return ModuleProxy("random", _members(generator, policy.RANDOM_NAMES, "random"))


_MODULE_GETATTR = torch.nn.Module.__getattr__


def _module_getattr(self: torch.nn.Module, name: str) -> Any:
    """``nn.Module.__getattr__`` that answers no ``__dunder__`` name from the registered entries."""
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
    return _MODULE_GETATTR(self, name)


def guard_module_lookup() -> None:
    """Make nn.Module's attribute fallback refuse ``__dunder__`` names, for the sandbox's runs.

    A module answers a missing attribute from its parameters, buffers and submodules. Python
    and NumPy look protocol names up on the instance (``copy.deepcopy`` calls
    ``x.__deepcopy__(memo)``, ``np.asarray`` trusts ``x.__array_interface__``), so an entry
    registered under such a name (``add_module``, a ``ModuleDict`` key, a ``Sequential`` of an
    ``OrderedDict``) would be called with tcopy's objects or read as a raw address. The
    registering calls refuse these names too; this closes every other way of registering one.
    No module of torch's own is registered under a dunder name.
    """
    torch.nn.Module.__getattr__ = _module_getattr  # type: ignore[method-assign]


def build_all_modules(limits: Limits | None = None) -> dict[str, ModuleProxy]:
    """Every importable module, including dotted names (torch.nn.functional ...)."""
    guard_module_lookup()
    mods = build_modules(limits)
    torch_proxy = mods["torch"]
    nn_proxy = torch_proxy.members["nn"]
    mods["torch.nn"] = nn_proxy
    mods["torch.nn.functional"] = nn_proxy.members["functional"]
    mods["torch.nn.init"] = nn_proxy.members["init"]
    mods["torch.optim"] = torch_proxy.members["optim"]
    mods["torch.autograd"] = torch_proxy.members["autograd"]
    for sub in ("function", "functional", "graph"):
        mods[f"torch.autograd.{sub}"] = mods["torch.autograd"].members[sub]
    mods["numpy"] = build_numpy_proxy()
    mods["numpy.random"] = mods["numpy"].members["random"]
    return mods


# --- attribute access by value type -------------------------------------------------

_TYPE_TABLES: list[tuple[type | tuple[type, ...], frozenset[str], frozenset[str]]] = [
    # (types, readable attributes, callable methods)
    (torch.Size, frozenset(), policy.SIZE_METHODS),
    (torch.dtype, policy.DTYPE_ATTRS, frozenset()),
    (torch.device, policy.DEVICE_ATTRS, frozenset()),
    (torch.Generator, policy.GENERATOR_ATTRS, policy.GENERATOR_METHODS),
    ((torch.UntypedStorage, torch.TypedStorage), policy.STORAGE_ATTRS, policy.STORAGE_METHODS),
    (torch._C._autograd.SavedTensor, frozenset(), policy.SAVED_TENSOR_METHODS),
    (np.ndarray, policy.NDARRAY_ATTRS, policy.NDARRAY_METHODS),
    (np.dtype, policy.NPDTYPE_ATTRS, frozenset()),
    (str, frozenset(), policy.STR_METHODS),
    (list, frozenset(), policy.LIST_METHODS),
    (dict, frozenset(), policy.DICT_METHODS),
    (bool, frozenset(), frozenset()),
    ((int, float, complex, np.number), policy.NUMBER_ATTRS, policy.NUMBER_METHODS),
    (range, policy.RANGE_ATTRS, frozenset()),
]


def _is_node(value: Any) -> bool:
    return isinstance(value, torch.autograd.graph.Node)


def is_function_ctx(value: Any) -> bool:
    """The ``ctx`` of a custom autograd Function (also its outputs' ``grad_fn``)."""
    return isinstance(value, torch.autograd.function.FunctionCtx)


def _ctx_own(ctx: Any, attr: str) -> bool:
    """An attribute the script itself set on a ctx (``ctx.alpha = 2``), never torch's own."""
    own = getattr(ctx, "__dict__", {})
    return not attr.startswith("_") and attr in own and not hasattr(type(ctx), attr)


def _is_return_type(value: Any) -> bool:
    return isinstance(value, tuple) and type(value).__module__ == "torch.return_types"


def _script_methods(value: Any) -> frozenset[str]:
    methods: frozenset[str] = getattr(type(value), "_tcopy_methods", frozenset())
    return methods


def is_script_method(value: Any, attr: str) -> bool:
    """Whether ``value.attr`` is a method the script's own class defines (not torch's)."""
    return isinstance(value, torch.nn.Module) and attr in _script_methods(value)


def _module_attribute(value: torch.nn.Module, attr: str) -> Any:
    if attr.startswith("_"):
        raise NotAllowedError(f"attribute '{attr}' is private")
    if attr in getattr(type(value), "_tcopy_properties", ()):
        return getattr(value, attr)  # a @property of the script class: runs in the interpreter
    if attr in _script_methods(value) or attr in policy.MODULE_METHODS:
        raise NotAllowedError(f"'.{attr}' is a method: call it")
    registered = (
        value.__dict__.get("_parameters", {}),
        value.__dict__.get("_buffers", {}),
        value.__dict__.get("_modules", {}),
    )
    if any(attr in d for d in registered) or attr in value.__dict__ or attr in policy.MODULE_ATTRS:
        return getattr(value, attr)
    raise AttributeError(f"'{type(value).__name__}' object has no attribute '{attr}'")


def get_attribute(value: Any, attr: str, allow_proxy: bool = False) -> Any:
    """``value.attr`` outside a call: data attributes and module members only.

    With ``allow_proxy`` (the attribute is itself the base of another attribute, as
    ``torch.Tensor`` in ``torch.Tensor.detach(a)``) a class or module member is returned.
    """
    if isinstance(value, torch.nn.Module):
        return _module_attribute(value, attr)
    if isinstance(value, torch.optim.Optimizer):
        if attr in policy.OPTIMIZER_ATTRS:
            return getattr(value, attr)
        raise _missing(value, attr, "attribute")
    if isinstance(value, BaseException):
        if attr == "args":
            return value.args
        raise _missing(value, attr, "attribute")
    if isinstance(value, ModuleProxy):
        if attr not in value.members:
            raise NotAllowedError(f"'{value.name}.{attr}' is not in tcopy's allow-list" + _member_hint(value, attr))
        member = value.members[attr]
        if isinstance(member, ClassProxy) and allow_proxy:
            return member
        if isinstance(member, (SafeFunction, ClassProxy)):
            raise NotAllowedError(f"'{value.name}.{attr}' is a function: call it; functions can't be stored or passed")
        return member
    if isinstance(value, ScriptClass):
        member = class_attribute(value, attr)
        if not isinstance(member, FunctionApply):
            raise NotAllowedError(f"'{value.name}.{attr}' is a method: call it")
        return member
    if isinstance(value, torch.Tensor):
        if attr in policy.TENSOR_PROPERTIES:
            return getattr(value, attr)
        if attr in policy.TENSOR_METHODS:
            raise NotAllowedError(f"'.{attr}' is a method: call it, e.g. x.{attr}()")
        if attr not in dir(value):
            raise AttributeError(f"'Tensor' object has no attribute '{attr}'" + _tensor_hint(attr))
        raise NotAllowedError(f"tensor attribute '.{attr}' is not in tcopy's allow-list")
    if is_function_ctx(value) and (attr in policy.CTX_ATTRS or _ctx_own(value, attr)):
        if attr in policy.CTX_METHODS:
            raise NotAllowedError(f"'.{attr}' is a method: call it")
        return getattr(value, attr)
    if _is_return_type(value):
        if attr in policy.RETURN_TYPE_FIELDS and hasattr(value, attr):
            return getattr(value, attr)
        raise NotAllowedError(f"'{type(value).__name__}' has no allowed attribute '{attr}'")
    if _is_node(value):
        if attr in policy.NODE_ATTRS:
            return getattr(value, attr)
        raise NotAllowedError(f"graph node attribute '.{attr}' is not in tcopy's allow-list")
    for types, attrs, methods in _TYPE_TABLES:
        if isinstance(value, types):
            if attr in attrs:
                return getattr(value, attr)
            if attr in methods:
                raise NotAllowedError(f"'.{attr}' is a method: call it")
            break
    raise _missing(value, attr, "attribute")


def _tensor_hint(attr: str) -> str:
    """Python's "Did you mean" for a misspelled tensor attribute, from what tcopy allows."""
    return did_you_mean(attr, policy.TENSOR_METHODS | policy.TENSOR_PROPERTIES)


def _member_hint(module: ModuleProxy, attr: str) -> str:
    """ "Did you mean" for a misspelled module member (``torch.zero`` -> ``torch.zeros``)."""
    return did_you_mean(attr, module.members, prefix=module.name + ".")


def _missing(value: Any, attr: str, what: str) -> Exception:
    """Python's AttributeError when the attribute doesn't exist at all, else a refusal."""
    try:
        exists = attr in dir(value)
    except Exception:  # pragma: no cover - dir() of a safe value does not fail
        exists = True
    if not exists:
        return AttributeError(f"'{type(value).__name__}' object has no attribute '{attr}'")
    return NotAllowedError(f"'{type_name(value)}' value has no allowed {what} '{attr}'")


def resolve_method(value: Any, attr: str) -> Callable[..., Any]:
    """The callable for ``value.attr(...)``, or NotAllowedError."""
    if isinstance(value, SuperProxy):
        if attr == "__init__":
            return lambda *a, **k: torch.nn.Module.__init__(value.obj)
        if attr in policy.MODULE_METHODS:
            return getattr(torch.nn.Module, attr).__get__(value.obj)  # type: ignore[no-any-return]
        raise NotAllowedError(f"super().{attr} is not allowed")
    if isinstance(value, torch.nn.Module):
        if attr in _script_methods(value) or attr in policy.MODULE_METHODS:
            return getattr(value, attr)  # type: ignore[no-any-return]
        if attr.startswith("_"):
            raise NotAllowedError(f"method '{attr}' is private")
        sub = _module_attribute(value, attr)
        if isinstance(sub, torch.nn.Module):
            return sub  # calling a submodule stored under that name: self.fc(x)
        raise TypeError(f"'{type(sub).__name__}' object is not callable")
    if isinstance(value, torch.optim.Optimizer):
        if attr in policy.OPTIMIZER_METHODS:
            return getattr(value, attr)  # type: ignore[no-any-return]
        raise _missing(value, attr, "method")
    if type(value).__name__ == "RemovableHandle" and attr == "remove":
        return value.remove  # type: ignore[no-any-return]
    if isinstance(value, ModuleProxy):
        member = value.members.get(attr)
        if isinstance(member, SafeFunction):
            return member.fn
        if isinstance(member, ClassProxy):
            return member.cls
        hint = _member_hint(value, attr) if member is None else ""
        raise NotAllowedError(f"'{value.name}.{attr}' is not a function tcopy allows" + hint)
    if isinstance(value, ClassProxy):
        if attr in value.methods:
            fn = getattr(value.cls, attr, None)
            if fn is not None:
                return fn  # type: ignore[no-any-return]
        raise NotAllowedError(f"'{value.qualname}.{attr}' is not in tcopy's allow-list")
    if isinstance(value, torch.Tensor):
        if attr in policy.TENSOR_METHODS:
            fn = getattr(value, attr, None)
            if fn is not None:
                return fn  # type: ignore[no-any-return]
        if attr not in dir(value):
            raise AttributeError(f"'Tensor' object has no attribute '{attr}'" + _tensor_hint(attr))
        raise NotAllowedError(f"tensor method '.{attr}()' is not in tcopy's allow-list")
    if is_function_ctx(value) and attr in policy.CTX_METHODS:
        return getattr(value, attr)  # type: ignore[no-any-return]
    if _is_node(value):
        if attr in policy.NODE_METHODS:
            return getattr(value, attr)  # type: ignore[no-any-return]
        raise NotAllowedError(f"graph node method '.{attr}()' is not in tcopy's allow-list")
    for types, _attrs, methods in _TYPE_TABLES:
        if isinstance(value, types):
            if attr in methods:
                return getattr(value, attr)  # type: ignore[no-any-return]
            break
    if isinstance(value, tuple) and attr in policy.TUPLE_METHODS:
        return getattr(value, attr)  # type: ignore[no-any-return]
    raise _missing(value, attr, "method")


def type_name(value: Any) -> str:
    """A short readable type name for messages."""
    if isinstance(value, (ModuleProxy, SafeFunction, ClassProxy)):
        return repr(value)
    t = type(value)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__name__}"


def set_attribute(target: Any, attr: str, value: Any) -> None:
    """``target.attr = value``: requires_grad, grad and data of tensors; public module attributes."""
    if isinstance(target, torch.Tensor) and attr in policy.TENSOR_SETTABLE:
        setattr(target, attr, value)
        return
    if isinstance(target, torch.nn.Module) and not attr.startswith("_") and attr not in policy.MODULE_METHODS:
        if attr in _script_methods(target):
            raise NotAllowedError(f"'{attr}' is a method of the class; it can't be replaced")
        setattr(target, attr, value)
        return
    if is_function_ctx(target) and not attr.startswith("_") and not hasattr(type(target), attr):
        setattr(target, attr, value)  # ctx.alpha = alpha: the script's own data for backward
        return
    raise NotAllowedError(
        f"assigning '.{attr}' is not allowed; tensors allow: " + ", ".join(sorted(policy.TENSOR_SETTABLE))
    )


def is_storable(value: Any) -> bool:
    """True for values a script may hold in a variable or container.

    Callables never are, except graph nodes (``b.grad_fn``) and torch's grad-mode
    context managers, which scripts can only inspect or use in ``with``. Classes
    (``RuntimeError``, ``torch.Tensor``) and ``print``/``len``/``abs`` are held as
    tcopy's proxies, which nothing outside the interpreter can call.
    """
    if isinstance(value, (ClassProxy, PassableBuiltin)):
        return True  # a class or print/len/abs as a value: printable, comparable, callable by name
    if isinstance(value, (ModuleProxy, SafeFunction, SuperProxy)):
        return False
    if callable(value) and not isinstance(value, (torch.Tensor, np.ndarray, torch.nn.Module)):
        return _is_node(value) or is_context_manager(value)
    return True


def is_passable(value: Any) -> bool:
    """True for values that may be passed to torch and to builtins that could call them.

    nn.Module instances are callable but only run their own (or the script's
    interpreted) forward, so layers can be passed to nn.Sequential and friends.
    """
    return is_storable(value) and not (
        callable(value) and not isinstance(value, (torch.Tensor, np.ndarray, torch.nn.Module))
    )


# --- defence in depth: checks made just before a call runs ---------------------------


def script_copy(x: Any, *rest: Any, **kwargs: Any) -> Any:
    """``copy.copy(x)``: one value, nothing else."""
    if rest or kwargs:
        raise NotAllowedError("copy.copy() takes exactly one value here: copy.copy(x)")
    check_value(x, strict=False)
    return copy.copy(x)


def script_deepcopy(x: Any, *rest: Any, **kwargs: Any) -> Any:
    """``copy.deepcopy(x)`` without a memo: a memo dict would keep every object deepcopy
    visits, handing the script the originals of whatever it copied."""
    if rest or kwargs:
        raise NotAllowedError(
            "copy.deepcopy(x, memo) is not allowed: the memo would hand the script every object deepcopy "
            "visits; call copy.deepcopy(x)"
        )
    check_value(x, strict=False)
    return copy.deepcopy(x)


_PLAIN_TYPES = frozenset({int, float, bool, str, complex, type(None), bytes, type(Ellipsis)})


def check_value(value: Any, strict: bool, what: str = "passed as an argument") -> None:
    """Refuse ``value`` if it, or any item of any container in it at any depth, is a
    value the script may not hold (``strict``: may not pass to code that could call it).

    Keys of dicts and members of sets count too. Each container is visited once, so
    cycles and shared items cost nothing extra.
    """
    stack = [value]
    seen: set[int] = set()
    while stack:
        v = stack.pop()
        if type(v) in _PLAIN_TYPES:
            continue
        if not (is_passable(v) if strict else is_storable(v)):
            raise NotAllowedError(f"{type_name(v)} can't be {what}")
        if isinstance(v, (list, tuple, set, frozenset, dict)) and not isinstance(v, torch.Size):
            if id(v) in seen:
                continue
            seen.add(id(v))
            if isinstance(v, dict):
                stack.extend(v.keys())
                stack.extend(v.values())
            else:
                stack.extend(v)


def check_text(value: Any) -> None:
    """Only values a script may hold may be turned into text (f-strings, str, %)."""
    check_value(value, strict=False, what="shown as text")


# dtype's position among the positional arguments of NumPy calls that take one.
_NUMPY_DTYPE_POSITION = {
    "array": 1,
    "asarray": 1,
    "zeros": 1,
    "ones": 1,
    "empty": 1,
    "full": 2,
    "ndarray": 1,
    "astype": 0,
    "arange": 3,
    "linspace": 5,
    "sum": 2,
    "mean": 2,
}
_NDARRAY_RAW_ARGUMENTS = ("buffer", "offset", "strides")


def _numpy_dtype(spec: Any) -> np.dtype[Any] | None:
    if spec is None:
        return None
    try:
        dtype: np.dtype[Any] = np.dtype(spec)
        return dtype
    except (TypeError, ValueError, SyntaxError):
        return None


def _is_numpy_call(fn: Any, owner: Any) -> bool:
    return fn is np.ndarray or isinstance(owner, np.ndarray) or str(getattr(fn, "__module__", "")).startswith("numpy")


# Keywords a NumPy ufunc call may take (signature=/extobj= pick inner loops; refused).
_UFUNC_KEYWORDS = frozenset({"out", "where", "dtype", "casting", "order"})
# numpy.random functions: where their size is given (position among the arguments; None: *dims).
_RANDOM_SIZE_POSITION: dict[str, int | None] = {
    "rand": None,
    "randn": None,
    "randint": 2,
    "random": 0,
    "random_sample": 0,
    "standard_normal": 0,
    "normal": 2,
    "uniform": 2,
    "choice": 1,
    "permutation": 0,
}


def _numel_of_shape(value: Any) -> int | None:
    """Elements of a NumPy ``size=``/shape argument (an int or a tuple of ints)."""
    dims = alloc._size_from([value])
    return alloc._prod(dims) if dims is not None else None


def _broadcast_numel(values: Any) -> int | None:
    """Elements of the broadcast of ``values``, nested lists with their full shape (None: they don't broadcast)."""
    shapes = [shape for shape in map(alloc.data_shape, values) if shape is not None]
    try:
        return alloc._prod(alloc.broadcast_shapes(*shapes))
    except RuntimeError:
        return None


def _random_size(size: Any) -> int:
    """Elements of a numpy.random ``size=`` (an int, a tuple of ints, or a small array of them)."""
    if isinstance(size, (np.ndarray, torch.Tensor)) and size.ndim <= 1 and size.shape[0] <= 64:
        size = size.tolist()
    numel = _numel_of_shape(size)
    if numel is None:
        raise NotAllowedError("numpy.random's size= must be an int or a tuple of ints")
    return numel


def _numpy_numel(fn: Any, name: str, args: list[Any], kwargs: dict[str, Any]) -> int | None:
    """Elements a NumPy call would allocate, when known up front.

    Ufuncs and other calls broadcast their operands (a nested list counts with its full
    shape); numpy.random also makes ``size=`` elements, or the broadcast of its array
    parameters (``loc``, ``scale`` ...) when there is no size.
    """
    if isinstance(fn, np.ufunc):
        return _broadcast_numel(args[: fn.nin])
    operands = [*args, *(v for k, v in kwargs.items() if k != "out")]
    if isinstance(getattr(fn, "__self__", None), np.random.RandomState) and name in _RANDOM_SIZE_POSITION:
        position = _RANDOM_SIZE_POSITION[name]
        if position is None:
            return _numel_of_shape(list(args)) if args else 1
        if name == "permutation":
            first = args[0] if args else kwargs.get("x")
            return first if isinstance(first, int) and not isinstance(first, bool) else None
        size = kwargs.get("size", args[position] if len(args) > position else None)
        params = [v for i, v in enumerate(args) if i != position] + [v for k, v in kwargs.items() if k != "size"]
        return max(1 if size is None else _random_size(size), _broadcast_numel(params) or 1)
    return _broadcast_numel(operands)


def _check_numpy_call(fn: Any, name: str, owner: Any, args: list[Any], kwargs: dict[str, Any], limits: Limits) -> None:
    if isinstance(fn, np.ufunc):
        unknown = sorted(set(kwargs) - _UFUNC_KEYWORDS)
        if unknown:
            raise NotAllowedError(f"numpy.{name}({unknown[0]}=...) is not allowed here")
    sized = _numpy_numel(fn, name, args, kwargs)
    if sized is not None and sized > limits.max_elements:
        raise limits.exceeded("max_elements", f"{name}() would create an array of {sized:,} elements")
    if fn is np.ndarray:
        raw = [k for k in _NDARRAY_RAW_ARGUMENTS if k in kwargs]
        if raw or len(args) > 2:
            raise NotAllowedError(
                "np.ndarray(...) with buffer=, offset= or strides= is not allowed: it reads raw memory; "
                "use np.zeros(shape) or np.array(data)"
            )
    position = _NUMPY_DTYPE_POSITION.get(name)
    spec = kwargs.get("dtype")
    if spec is None and position is not None and len(args) > position:
        spec = args[position]
    dtype = _numpy_dtype(spec)
    if dtype is not None and dtype.hasobject:
        raise NotAllowedError(
            f"NumPy dtype {dtype} holds Python objects; arrays of objects (dtype=object, or a field of type 'O') "
            "are not allowed"
        )
    if dtype is None:
        return
    if name == "astype" and isinstance(owner, np.ndarray):
        numel: int | None = int(owner.size)
    elif fn is np.ndarray:
        dims = alloc._size_from([kwargs["shape"]] if "shape" in kwargs else args[:1])
        numel = alloc._prod(dims) if dims is not None else None
    else:
        numel = alloc.estimate_numel(name, args, kwargs)
    if numel is not None and numel * dtype.itemsize > limits.max_bytes:
        raise limits.exceeded(
            "max_bytes",
            f"{name}() would allocate {numel * dtype.itemsize:,} bytes ({numel:,} items of {dtype.itemsize:,} bytes)",
        )


def _foreign_buffer(a: np.ndarray) -> str | None:
    """Why torch must not share ``a``'s memory, or None when it may."""
    if not a.flags.writeable:
        return "it is read-only"
    base: Any = a
    while isinstance(base, np.ndarray) and not base.flags.owndata:
        base = base.base
    if isinstance(base, (np.ndarray, torch.Tensor)):
        return None
    return "its memory belongs to another object"


_SHARING_FROM_NUMPY = frozenset({"from_numpy", "as_tensor", "asarray"})
_REGISTERING = frozenset({"add_module", "register_module", "register_buffer", "register_parameter"})


def guard_call(fn: Any, args: list[Any], kwargs: dict[str, Any], limits: Limits) -> None:
    """Refusals that depend on the callee and its arguments, checked just before the call.

    Raw-memory routes: ``np.ndarray(buffer=...)``, object dtypes, torch sharing a
    read-only or foreign NumPy buffer, and ``resize_`` of a storage that can't grow
    (PyTorch then leaves the tensor's sizes past its memory, and ``clone()`` reads the heap).
    """
    owner = getattr(fn, "__self__", None)
    name = getattr(fn, "__name__", "") or ""
    if "cdata" in kwargs:  # torch.Tensor(cdata=N), x.new(cdata=N): N is taken as the address of a tensor
        raise NotAllowedError(f"{name or 'this call'}(cdata=...) is not allowed: it takes a raw memory address")
    if name in _REGISTERING and isinstance(owner, torch.nn.Module):
        given = args[0] if args else kwargs.get("name")
        if isinstance(given, str) and given.startswith("_"):
            raise NotAllowedError(
                f"{name}() with a name that starts with '_' ({given!r}) is not allowed: Python and NumPy look up "
                "such names on the module (__deepcopy__, __array_interface__ ...)"
            )
    numpy_call = _is_numpy_call(fn, owner)
    if numpy_call or name in _SHARING_FROM_NUMPY or name in alloc.DATA_FACTORIES:
        for value in [*args, *kwargs.values()]:
            if isinstance(value, torch.nn.Module) or (
                isinstance(value, (list, tuple)) and any(isinstance(v, torch.nn.Module) for v in value)
            ):
                raise NotAllowedError(
                    f"a module (nn.Module) is a Python object, not data: it can't be passed to {name}(); "
                    "pass its tensors"
                )
    if numpy_call:
        _check_numpy_call(fn, name, owner, args, kwargs, limits)
        return
    if name in _SHARING_FROM_NUMPY and not isinstance(owner, torch.Tensor):
        for value in [*args[:1], kwargs.get("obj"), kwargs.get("ndarray")]:
            if isinstance(value, np.ndarray):
                if value.dtype.hasobject:
                    raise NotAllowedError("NumPy arrays of Python objects are not allowed (dtype=object)")
                reason = _foreign_buffer(value)
                if reason is not None:
                    raise NotAllowedError(f"torch.{name}() can't share this NumPy array's memory: {reason}")
    if name in ("resize_", "resize_as_"):
        target = owner if isinstance(owner, torch.Tensor) else (args[0] if args else None)
        if isinstance(target, torch.Tensor):
            storage = target.untyped_storage()
            if not hasattr(storage, "resizable"):  # older releases (2.1) have no resizable()
                raise NotAllowedError(
                    f".{name}() is not allowed on torch {torch.__version__}: this release can't tell whether a "
                    "tensor's memory can grow, and a failed resize leaves the tensor pointing past its memory"
                )
            try:
                resizable = storage.resizable()
            except (RuntimeError, NotImplementedError):
                resizable = False
            if not resizable:
                raise NotAllowedError(
                    f".{name}() on a tensor whose memory can't grow (it belongs to a NumPy array or "
                    "another owner) is not allowed: a failed resize leaves the tensor pointing past its memory"
                )


def check_store(base: Any, index: Any, value: Any, limits: Limits) -> None:
    """``base[index] = value``: a slice assignment may grow a list past the limit."""
    if not (isinstance(base, list) and isinstance(index, slice)):
        return
    try:
        added = len(value)
    except TypeError:
        return
    removed = len(range(*index.indices(len(base))))
    size = len(base) - removed + added
    if size > limits.max_str_len:
        raise limits.exceeded("max_str_len", f"the list would grow to {size:,} items")
