"""Sandbox tests for the language added for user code: functions, lambdas, hooks, classes,
exceptions, while loops, comprehensions, builtins over script functions, torch.nn,
optimizers and NumPy.

As in tests/sandbox/test_security.py, every attempt must end in one of two ways: the script is
refused before it runs (``ScriptRejected`` with a line and column), or its last step is
an error step. Never a Python traceback out of ``run_source``, never a file written or a
process spawned, never a change to torch or NumPy that outlives the run.

Scripts that could hang or take the process down if a bound were missing (endless
loops, recursion, loops in hooks, exceptions that swallow a limit) do not run in the
pytest process: they run in one child process, one after another, each under small
``Limits`` and a wall-clock deadline; a script that hangs or kills the child fails only
its own test and the child restarts for the rest.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from sandbox_guard import guarded, refused
from torch import nn

from tcopy_cli.errors import ScriptRejected
from tcopy_cli.limits import Limits
from tcopy_cli.trace import run_source
from tcopy_cli.trace.records import Step

NN = "import torch.nn as nn\n"
NP = "import numpy as np\n"
LEAF = "a = torch.ones(2, requires_grad=True)\n"
MODEL = NN + "m = nn.Linear(2, 1)\n"
SMALL = Limits(max_steps=200, timeout=5)
_CLASS = NN + "class M(nn.Module):\n"
_INIT = _CLASS + "    def __init__(self):\n        super().__init__()\n"
_BACKWARD = "h = a.register_hook(hook)\nb = (a * 2).sum()\nb.backward()"


# --- the guard: side effects and the working directory -------------------------------


def _warm_up() -> None:
    # torch's first optimizer in a process imports machinery that creates
    # /tmp/torchinductor_<user>: a side effect of torch, not of a script, so it happens
    # here, before any guard is on.
    p = nn.Parameter(torch.ones(1))
    p.grad = torch.ones(1)
    torch.optim.SGD([p], lr=0.1).step()


_warm_up()


@pytest.fixture
def guard(tmp_path: Path) -> Iterator[Path]:
    """Run in an empty directory; fail if a file appears or a process/file event fires."""
    with guarded(tmp_path) as path:
        yield path


# --- script functions: no way to their interpreter-level insides ---------------------

_F = "def f(x=1):\n    return x\n"
_M = NN + "class M(nn.Module):\n    def forward(self, x):\n        return x\n\n\nm = M()\n"
_E = "try:\n    z = 1 / 0\nexcept ZeroDivisionError as e:\n    "

FUNCTION_INTROSPECTION = [
    *(
        _F + f"y = f.{attr}"
        for attr in (
            "__globals__ __code__ __closure__ __defaults__ __kwdefaults__ __dict__ __builtins__ "
            "__module__ __qualname__ __wrapped__ __call__ __class__ __reduce__ __get__"
        ).split()
    ),
    _F + "y = f.__globals__['torch']",
    _F + "y = f.__code__.co_consts",
    _F + "y = f.__get__(1)",
    "def f():\n    return f.__globals__\n\n\ny = f()",
    "def f():\n    return globals()\n\n\ny = f()",
    "def f():\n    return locals()\n\n\ny = f()",
    "def f():\n    return vars()\n\n\ny = f()",
    "def f():\n    return __builtins__\n\n\ny = f()",
    "def f():\n    return dir()\n\n\ny = f()",
    "def f(x, g=globals()):\n    return x",
    "def f(x, p=sorted):\n    return x",
    "def f(x, p=torch.load):\n    return x",
    # whatever tcopy represents a script function with, its own attributes stay hidden
    *(
        _F + f"y = f.{attr}"
        for attr in (
            "env scope node body args defaults closure globals interp interpreter program limits "
            "func fn tree source code frame runner hook module owner cls im_func func_globals"
        ).split()
    ),
    _M + "y = m.forward.__func__",
    _M + "y = m.forward.__self__",
    _M + "y = m.forward.__globals__",
    _M + "y = M.forward.__globals__",
    _M + "y = M.__init__.__globals__",
    _M + "y = M.__dict__",
    _M + "y = M.__mro__",
    _M + "y = M.__subclasses__()",
    _M + "y = M.__bases__",
    _M + "y = m.__class__",
    _M + "y = m.__dict__",
    _M + "y = m._modules",
    _M + "y = m._parameters",
    _M + "y = m._forward_hooks",
    _M + "y = m.forward.env",
    _M + "y = m.forward.func",
    # frames: generators and coroutines are not part of the language
    "def f():\n    yield 1",
    "def f():\n    yield from [1]",
    "async def f():\n    return 1",
    "g = (x for x in [1])\nfr = g.gi_frame",
    "g = (x for x in [1])\nc = g.gi_code",
    "g = (x for x in [1])\nfr = g.gi_frame.f_globals",
    # the function type itself, and types reached through classes
    _F + "t = type(f)\ny = t(f)",
    _F + "y = type(f)(f, {})",
    _M + "t = type(M)\nX = t('X', (), {})",
    _M + "o = M.mro()[-1]\nx = o()",
    _M + "t = type(m)\ny = t.mro()[-1]()",
    # tracebacks and frames from caught exceptions
    *(_E + f"y = e.{attr}" for attr in "__traceback__ __context__ __cause__ __class__ __dict__ __reduce__".split()),
    _E + "y = e.__traceback__.tb_frame.f_globals",
    _E + "y = e.with_traceback(None).__traceback__",
]


@pytest.mark.parametrize("src", FUNCTION_INTROSPECTION)
def test_functions_and_methods_do_not_expose_their_insides(src: str, guard: Path) -> None:
    refused(src)


# --- classes: nn.Module subclasses with plain methods only ----------------------------

DUNDER_METHODS = """
    __getattr__ __setattr__ __getattribute__ __delattr__ __reduce__ __reduce_ex__ __del__ __call__
    __new__ __init_subclass__ __class_getitem__ __eq__ __hash__ __repr__ __str__ __format__ __iter__
    __len__ __getitem__ __setitem__ __enter__ __exit__ __get__ __set__ __set_name__ __getstate__
    __setstate__ __deepcopy__ __copy__ __torch_function__ __torch_dispatch__ __bool__ __index__
    __array__ __dir__ __instancecheck__ __subclasscheck__ __mro_entries__ __add__ __radd__ __init
""".split()
# Methods nn.Module itself calls, by their private names: an override would run script
# code from inside torch.
PRIVATE_METHODS = """
    _call_impl _wrapped_call_impl _apply _load_from_state_dict _save_to_state_dict _get_name
    _named_members _forward_unimplemented _slow_forward _replicate_for_data_parallel _helper
""".split()


@pytest.mark.parametrize("method", DUNDER_METHODS + PRIVATE_METHODS)
def test_class_methods_other_than_init_forward_and_plain_names_are_refused(method: str, guard: Path) -> None:
    src = NN + f"class M(nn.Module):\n    def {method}(self, a=None, b=None):\n        return 1\n"
    with pytest.raises(ScriptRejected):
        run_source(src)
    with pytest.raises(ScriptRejected):
        run_source(src + "\n\nm = M()\nprint(m)\n")


CLASS_BODIES = [
    "class M(nn.Module):\n    forward = print",
    "class M(nn.Module):\n    __call__ = print",
    "class M(nn.Module):\n    __slots__ = ()",
    "class M(nn.Module):\n    __getattr__ = None",
    "class M(nn.Module):\n    _version = 2",
    "class M(nn.Module):\n    import os",
    "class M(nn.Module):\n    x = torch.load",
    "class M(nn.Module):\n    class Inner(object):\n        pass",
]

BASES = [
    "class A:\n    pass",
    "class A(object):\n    pass",
    "class A(torch.Tensor):\n    pass",
    "class A(nn.Module, object):\n    pass",
    "class A(nn.Module, torch.Tensor):\n    pass",
    "class A(nn.Module, metaclass=type):\n    pass",
    "class A(metaclass=type):\n    pass",
    "class A(Exception):\n    pass",
    "class A(ValueError):\n    pass",
    "class A(BaseException):\n    pass",
    "class A(dict):\n    pass",
    "class A(type):\n    pass",
    "class A(int):\n    pass",
    "class A(nn.Module.__class__):\n    pass",
    "class A(type(nn.Module)):\n    pass",
    "class A(nn.Module if True else object):\n    pass",
    "bases = [nn.Module]\nclass A(*bases):\n    pass",
    "class A(nn.Module, **{}):\n    pass",
]

DECORATORS = [
    "@property\ndef f(x):\n    return x",
    "@staticmethod\ndef f(x):\n    return x",
    "@classmethod\ndef f(x):\n    return x",
    "@torch.jit.script\ndef f(x):\n    return x",
    "@print\ndef f(x):\n    return x",
    "def d(g):\n    return g\n\n\n@d\ndef f(x):\n    return x",
    "@print\nclass M(nn.Module):\n    pass",
    "@torch.no_grad()\nclass M(nn.Module):\n    pass",
    # decorators that return something else than a grad-mode switch
    "no_grad = print\n@no_grad\ndef f(x):\n    return x",
    "def no_grad():\n    return print\n\n\n@no_grad()\ndef f(x):\n    return x",
    "def no_grad(f):\n    return f\n\n\n@no_grad\ndef f(x):\n    return x",
    "@torch.no_grad()()\ndef f(x):\n    return x",
    "@torch.no_grad().__call__\ndef f(x):\n    return x",
    "@torch.set_grad_enabled\ndef f(x):\n    return x",
    "@torch.no_grad(print)\ndef f(x):\n    return x",
    "@(torch.no_grad())\ndef f(x):\n    return x\n\n\ny = f.__wrapped__",
    "@torch.no_grad()\ndef f(x):\n    return x\n\n\ny = f.__wrapped__",
    "@torch.no_grad()\ndef f(x):\n    return x\n\n\ny = [f][0]\nz = torch.autograd.grad(y, [])",
    "class M(nn.Module):\n    @property\n    @staticmethod\n    def w(self):\n        return 1",
    "class M(nn.Module):\n    @w.setter\n    def w(self, v):\n        pass",
    "class M(nn.Module):\n    @property\n    def w(self):\n        return 1\n\n\nm = M()\nm.w = 2",
    "class M(nn.Module):\n    @property\n    def w(self):\n        return 1\n\n\np = M.w",
    "class M(nn.Module):\n    @property\n    def w(self):\n        return 1\n\n\np = M.w.fget",
    "class M(nn.Module):\n    @staticmethod\n    def s(x):\n        return x\n\n\np = M.s",
    "class M(nn.Module):\n    @staticmethod\n    def s(x):\n        return x\n\n\np = M().s",
    "class M(nn.Module):\n    @staticmethod\n    def s(x):\n        return x\n\n\np = M.s(M.s)",
    "class M(nn.Module):\n    @classmethod\n    def c(cls):\n        return cls\n\n\nk = M.c()\nk.__subclasses__()",
    "class M(nn.Module):\n    @classmethod\n    def c(cls):\n        return cls.__mro__\n\n\nk = M.c()",
    "class M(nn.Module):\n    @classmethod\n    def c(cls):\n        return cls.mro()\n\n\nk = M.c()",
    "class M(nn.Module):\n    @classmethod\n    def c(cls):\n        return type(cls)('X', (), {})\n\n\nk = M.c()",
    "class M(nn.Module):\n    @classmethod\n    def c(cls, x):\n        return x\n\n\nk = M.c(_fn=1)",
    "class M(nn.Module):\n    def f(self, x):\n        return x\n\n\nk = M().f(1, _fn=print)",
    "class M(nn.Module):\n    @staticmethod\n    def parameters():\n        return []",
    "class M(nn.Module):\n    @property\n    def training(self):\n        return 1",
]


@pytest.mark.parametrize("src", CLASS_BODIES + BASES + DECORATORS)
def test_other_bases_metaclasses_decorators_and_class_attributes_are_refused(src: str, guard: Path) -> None:
    refused(NN + src)


MODULE_CALLABLES = [
    MODEL + "h = m.register_forward_hook(sorted)",
    MODEL + "h = m.register_forward_pre_hook(sorted)",
    MODEL + "h = m.register_full_backward_hook(sorted)",
    MODEL + "h = m.register_full_backward_pre_hook(sorted)",
    MODEL + "h = m.register_backward_hook(print)",
    MODEL + "h = m.register_state_dict_pre_hook(print)",
    MODEL + "h = m.register_load_state_dict_post_hook(print)",
    MODEL + "m.apply(print)",
    MODEL + "m.apply(torch.nn.init.zeros_)",
    MODEL + "m.share_memory()",
    MODEL + "m.add_module('p', print)",
    MODEL + "m.forward = print",
    MODEL + "m.extra_repr = print",
    MODEL + "m.weight.register_hook(sorted)",
    MODEL + "x = m._call_impl",
    MODEL + "opt = torch.optim.SGD(m.parameters(), lr=0.1)\nopt.step(sorted)",
    MODEL + "opt = torch.optim.SGD(m.parameters(), lr=0.1)\nh = opt.register_step_pre_hook(print)",
    MODEL + "opt = torch.optim.SGD(m.parameters(), lr=0.1)\nh = opt.register_step_post_hook(print)",
    MODEL + "opt = torch.optim.SGD(m.parameters(), lr=0.1)\nh = opt.register_state_dict_pre_hook(print)",
    MODEL + "opt = torch.optim.SGD(m.parameters(), lr=0.1)\ns = torch.optim.lr_scheduler.LambdaLR(opt, print)",
    MODEL + "opt = torch.optim.Adam(m.parameters())\nx = opt._optimizer_step_code",
    _INIT + "        self.f = sorted\n\n\nm = M()",
    _INIT + "        super().__setattr__('f', 1)\n\n\nm = M()",
    _INIT + "        g = super().__getattribute__\n\n\nm = M()",
    _M + "h = m.register_forward_hook(sorted)",
    NN + "s = super()",
]


@pytest.mark.parametrize("src", MODULE_CALLABLES)
def test_modules_and_optimizers_take_no_builtin_callables(src: str, guard: Path) -> None:
    refused(src)


# --- process-wide state: torch and NumPy are the same after the run ------------------

MONKEYPATCHES = [
    NN + "nn.Linear.forward = lambda self, x: x",
    NN + "nn.Module.forward = print",
    NN + "nn.Module.__call__ = None",
    NN + "nn.Linear.extra_repr = lambda self: 'x'",
    NN + "nn.Module.dump_patches = True",
    NN + "nn.ReLU.inplace = True",
    NN + "nn.functional.relu = None",
    "import torch.nn.functional as F\nF.relu = lambda t: t",
    "torch.Tensor.backward = lambda self: None",
    "torch.Tensor.grad = None",
    "torch.optim.SGD.step = lambda self: None",
    NP + "np.zeros = None",
    NP + "np.ndarray.copy = None",
    NN + "class M(nn.Module):\n    def forward(self, x):\n        return x\n\n\nnn.Linear.forward = M.forward",
    NN + "m = nn.Linear(1, 1)\nm.__class__ = nn.ReLU",
    "torch.nn.modules.module.register_module_forward_hook(lambda *a: None)",
    "h = torch.nn.modules.module.register_module_forward_pre_hook(lambda *a: None)",
    "h = torch.nn.modules.module.register_module_full_backward_hook(lambda *a: None)",
    "h = torch.optim.optimizer.register_optimizer_step_pre_hook(lambda *a: None)",
    LEAF + "h = torch.autograd.graph.register_multi_grad_hook([a], lambda g: None)",
    LEAF + "with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):\n    b = a * 2",
    "torch.autograd.graph.disable_saved_tensors_hooks('no')",
    NP + "np.set_printoptions(precision=1)",
    NP + "np.seterr(all='ignore')",
]


def _process_state() -> tuple[Any, ...]:
    from torch.nn.modules import module as module_mod
    from torch.optim import optimizer as optimizer_mod

    hooks = tuple(
        len(getattr(module_mod, name, {}))
        for name in (
            "_global_forward_hooks",
            "_global_forward_pre_hooks",
            "_global_backward_hooks",
            "_global_backward_pre_hooks",
            "_global_parameter_registration_hooks",
        )
    )
    return (
        nn.Linear.forward,
        nn.Module.forward,
        nn.Module.__call__,
        nn.Linear.extra_repr,
        nn.Module.dump_patches,
        nn.ReLU.__init__,
        F.relu,
        nn.functional.relu,
        torch.Tensor.backward,
        torch.Tensor.grad,
        torch.optim.SGD.step,
        np.zeros,
        np.ndarray.copy,
        hooks,
        len(getattr(optimizer_mod, "_global_optimizer_pre_hooks", {})),
        len(getattr(optimizer_mod, "_global_optimizer_post_hooks", {})),
        torch.is_anomaly_enabled(),
        np.get_printoptions()["precision"],
        tuple(sorted(np.geterr().items())),
    )


@pytest.mark.parametrize("src", MONKEYPATCHES)
def test_torch_and_numpy_classes_and_global_hooks_are_not_writable(src: str, guard: Path) -> None:
    before = _process_state()
    refused(src)
    assert _process_state() == before
    assert F.relu(torch.tensor([-1.0])).item() == 0.0


# --- hooks take lambdas and script functions, nothing else ---------------------------

HOOK_TARGETS = [
    "torch.zero_",
    "torch.Tensor.zero_",
    "a.zero_",
    "torch.nn.functional.relu",
    "torch.relu",
    "torch.ones_like",
    "nn.ReLU()",
    "torch.autograd.grad",
    "copy.deepcopy",
    "max",
    "map",
    "super",
    "type",
    "sorted",
    "str",
]


@pytest.mark.parametrize("target", HOOK_TARGETS)
@pytest.mark.parametrize(
    "template",
    [
        "h = a.register_hook({target})\nb = (a * 2).sum()\nb.backward()",
        "h = a.register_post_accumulate_grad_hook({target})\nb = (a * 2).sum()\nb.backward()",
        "b = a * 2\nh = b.grad_fn.register_hook({target})\nc = b.sum()\nc.backward()",
        "hooks = [{target}]\nh = a.register_hook(hooks[0])",
    ],
)
def test_hooks_take_no_builtin_or_torch_callables(template: str, target: str, guard: Path) -> None:
    refused("import copy\n" + NN + LEAF + template.format(target=target))


HOOK_TRICKS = [
    LEAF + "h = a.register_hook(lambda g: print)\nb = (a * 2).sum()\nb.backward()",
    LEAF + "h = a.register_hook(lambda g, p=sorted: p(g))\nb = (a * 2).sum()\nb.backward()",
    LEAF + "def hook(g, p=sorted):\n    return p(g)\n\n\nh = a.register_hook(hook)",
    LEAF + "h = a.register_hook(lambda g: torch.load('x.pt'))\nb = (a * 2).sum()\nb.backward()",
    LEAF + "h = a.register_hook(lambda g: g.__class__)\nb = (a * 2).sum()\nb.backward()",
    LEAF + "h = a.register_hook(lambda g: [].__class__.__mro__)\nb = (a * 2).sum()\nb.backward()",
    LEAF + "h = a.register_hook(lambda g: g.numpy().tofile('x.bin'))\nb = (a * 2).sum()\nb.backward()",
    LEAF + "def hook(g):\n    return globals()\n\n\nh = a.register_hook(hook)\nb = (a * 2).sum()\nb.backward()",
    LEAF + "def hook(g):\n    raise ValueError('from a hook')\n\n\n" + _BACKWARD,
    LEAF + "h = a.register_hook(lambda g: 1 / 0)\nb = (a * 2).sum()\nb.backward()",
    LEAF + "h = a.register_hook(lambda g: g.register_hook(print))\nb = (a * 2).sum()\nb.backward()",
    LEAF + "h = a.register_hook(lambda g: h.remove.__self__)\nb = (a * 2).sum()\nb.backward()",
    LEAF + "b = a * 2\nh = b.grad_fn.register_prehook(sorted)",
    LEAF + "x = torch.autograd.functional.jacobian(print, a)",
]


@pytest.mark.parametrize("src", HOOK_TRICKS)
def test_hooks_cannot_smuggle_callables_or_escape(src: str, guard: Path) -> None:
    refused(src)


# --- script functions go nowhere but hooks and map -----------------------------------

_G = "def f(x):\n    return x * 2\n\n\n"

FUNCTION_SINKS = [
    _G + "y = torch.func.grad(f)(torch.ones(()))",
    _G + "y = torch.vmap(f)(torch.ones(2))",
    _G + "y = torch.compile(f)",
    _G + "y = torch.jit.script(f)",
    _G + "y = torch.jit.trace(f, torch.ones(1))",
    _G + "y = torch.fx.symbolic_trace(f)",
    _G + "y = torch.utils.checkpoint.checkpoint(f, torch.ones(1))",
    _G + "a = torch.ones(2)\na.apply_(f)",
    _G + "a = torch.ones(2)\na.map_(a, f)",
    _G + NP + "y = np.vectorize(f)",
    _G + NP + "y = np.frompyfunc(f, 1, 1)",
    _G + NP + "y = np.apply_along_axis(f, 0, np.zeros(2))",
    _G + "y = torch.tensor([f])",
    _G + "d = torch.no_grad()\ny = d(f)",
    "y = list(map(sorted, [1]))",
    "y = list(map(sorted, [1]))",
    "y = list(map(torch.zero_, [torch.ones(1)]))",
    "y = list(map(torch.Tensor.zero_, [torch.ones(1)]))",
    "import torch.nn.functional as F\ny = list(map(F.relu, [torch.ones(1)]))",
    "y = list(map(str, [1]))",
    "y = map(sorted, [1])",
    "y = list(map(torch.load, ['x.pt']))",
]


@pytest.mark.parametrize("src", FUNCTION_SINKS)
def test_script_functions_are_not_passed_to_other_apis(src: str, guard: Path) -> None:
    refused(src)


# --- imports: only the listed forms --------------------------------------------------

IMPORTS7 = [
    "import torch.nn.modules.module as mm",
    "from torch.nn.modules import module",
    "from torch.nn.modules.module import register_module_forward_hook",
    "from torch.nn import modules",
    "import torch.nn.functional as _F",
    "import torch.nn as _nn",
    "from torch import nn as _nn",
    "from torch import nn, hub",
    "from torch import optim, load",
    "from torch import nn, jit",
    "from torch.autograd.graph import saved_tensors_hooks",
    "from torch.autograd import Variable, grad_mode",
    "from torch.autograd import *",
    "from torch.nn import *",
    "from torch.optim import lr_scheduler",
    "from torch.optim.optimizer import register_optimizer_step_pre_hook",
    "import torch.optim.optimizer as o",
    "from torch.nn import utils",
    "import torch.nn.utils as u",
    "import numpy.ctypeslib as c",
    "import numpy as _np",
    "from numpy import ctypeslib",
    "from numpy import load",
    "from numpy import *",
    "from numpy.lib import format",
    "import numpy.f2py as f2py",
    "from numpy import testing",
    "import torch.nn as os\nos.system('touch pwned')",
    "import numpy as os\nos.system('touch pwned')",
]


@pytest.mark.parametrize("src", IMPORTS7)
def test_imports_outside_the_listed_forms(src: str, guard: Path) -> None:
    refused(src)


# --- NumPy: arrays of numbers, no files, no objects, no settings ----------------------

# Small element limit: an array built past it without a check costs 80 MB here, not 8 GB.
NUMPY_LIMITS = Limits(max_elements=10**6, timeout=10)
NUMPY7 = [
    "x = np.array([print])",
    "x = np.array([torch.load])",
    "x = np.array([1], dtype=object)",
    "x = np.zeros(3, dtype=object)",
    "x = np.ones(2, dtype='O')",
    "x = np.load('x.npy')",
    "np.save('x.npy', np.zeros(1))",
    "np.savetxt('x.txt', np.zeros(1))",
    "x = np.loadtxt('x.txt')",
    "x = np.genfromtxt('x.txt')",
    "x = np.fromfile('x.bin')",
    "x = np.memmap('x.bin')",
    "x = np.DataSource()",
    "x = np.ctypeslib",
    "x = np.lib",
    "x = np.lib.stride_tricks.as_strided(np.zeros(3), (10**6,), (0,))",
    "x = np.get_include()",
    "np.show_config()",
    "x = np.vectorize(print)",
    "x = np.frompyfunc(print, 1, 1)",
    "a = np.zeros(2)\nx = a.ctypes",
    "a = np.zeros(2)\na.tofile('x.bin')",
    "a = np.zeros(2)\na.dump('x.pkl')",
    "a = np.zeros(2)\nx = a.__array_interface__",
    "a = np.zeros(2)\nx = a.base",
    "a = np.zeros(2)\nx = a.astype(object)",
    "a = np.zeros(2)\na[0] = print",
    "a = np.zeros(3)\nx = a.copy().__reduce__()",
    # sizes over NUMPY_LIMITS.max_elements, refused before NumPy allocates them
    "x = np.zeros(10**12)",
    "x = np.ones((10**6, 10**6))",
    "x = np.zeros(10**7)",
    "x = np.ones((10**3, 10**4))",
    "x = np.array([0] * 10**7)",
    "x = np.array([[0.0] * 10**3] * 10**4)",
    "a = np.zeros(10**4)\nx = np.array([a] * 10**3)",
    "a = np.zeros(10**4)\nt = torch.as_tensor([a] * 10**3)",
    "a = np.zeros(10**4)\nt = torch.tensor([a] * 10**3)",
    "a = np.zeros(10**4)\nb = a.copy()\nb.resize(10**7, refcheck=False)",
    "a = np.ones(2)\nx = a.copy(order='K').view('S8')",
]


@pytest.mark.parametrize("src", NUMPY7)
def test_numpy_arrays_stay_numbers_in_memory(src: str, guard: Path) -> None:
    step = refused(NP + src, NUMPY_LIMITS)
    if isinstance(step, Step) and "10**" in src:
        assert step.error is not None
        assert step.error.type in ("LimitExceeded", "NotAllowedError"), (step.error.type, step.error.message)


NUMPY_BUILT_FROM_LISTS = [
    "a = np.zeros(10**4)\nx = np.array([a] * 10**3)",
    "x = np.array([[0.0] * 10**3] * 10**4)",
    "a = np.zeros(10**4)\nx = np.stack([a] * 10**3)",
    "a = np.zeros(10**4)\nx = np.concatenate([a] * 10**3)",
    "x = np.zeros(10**7)",
    "x = np.ones((10**3, 10**4))",
]


@pytest.mark.parametrize("src", NUMPY_BUILT_FROM_LISTS)
def test_numpy_results_are_checked_before_numpy_allocates_them(src: str, guard: Path) -> None:
    # NumPy reports its allocations to tracemalloc: the 80 MB result must never exist.
    tracemalloc.start()
    try:
        step = refused(NP + src, NUMPY_LIMITS)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    if isinstance(step, Step):
        assert step.error is not None and step.error.type in ("LimitExceeded", "NotAllowedError")
    assert peak < 40 * 2**20, f"{peak:,} bytes were allocated before the limit was applied"


# --- exceptions: only the listed classes, and never tcopy's own ----------------------

OUTSIDE_EXCEPTIONS = """
    BaseException SystemExit KeyboardInterrupt GeneratorExit StopIteration RecursionError MemoryError
    NameError OSError ImportError NotImplementedError LookupError ArithmeticError Warning UserWarning
    type print torch.Tensor ValueError.mro()[2] (ValueError,SystemExit) (KeyboardInterrupt,)
""".split()


@pytest.mark.parametrize("cls", OUTSIDE_EXCEPTIONS)
@pytest.mark.parametrize(
    "template",
    [
        "try:\n    x = 1\nexcept {cls}:\n    pass",
        "try:\n    x = 1 / 0\nexcept {cls} as e:\n    print('caught')",
        "try:\n    x = 1 / 0\nexcept ZeroDivisionError:\n    pass\nexcept {cls}:\n    pass",
    ],
)
def test_exception_classes_outside_the_allow_list_cannot_be_caught(cls: str, template: str, guard: Path) -> None:
    refused(template.format(cls=cls))


RAISES = [
    "raise SystemExit",
    "raise SystemExit(0)",
    "raise KeyboardInterrupt",
    "raise KeyboardInterrupt()",
    "raise BaseException('x')",
    "raise GeneratorExit",
    "raise StopIteration",
    "raise RecursionError",
    "raise MemoryError",
    "raise NotImplementedError",
    "raise OSError('x')",
    "raise ValueError('x') from SystemExit()",
    "raise ValueError('x') from KeyboardInterrupt",
    "raise ValueError.mro()[2]('x')",
    "raise RuntimeError.__base__",
    "raise print",
    "raise torch.ones(1)",
    "raise",
    "E = SystemExit\nraise E",
    "try:\n    x = 1 / 0\nexcept ZeroDivisionError:\n    raise SystemExit",
    "def f():\n    raise KeyboardInterrupt\n\n\nf()",
    "def f():\n    raise SystemExit(3)\n\n\ntry:\n    f()\nexcept Exception:\n    pass",
    LEAF + "h = a.register_hook(lambda g: exit())\nb = (a * 2).sum()\nb.backward()",
    LEAF + "def hook(g):\n    raise SystemExit(3)\n\n\nh = a.register_hook(hook)\nb = (a * 2).sum()\nb.backward()",
    LEAF + "def hook(g):\n    raise KeyboardInterrupt\n\n\nh = a.register_hook(hook)\nb = (a * 2).sum()\nb.backward()",
    _CLASS + "    def forward(self, x):\n        raise SystemExit(2)\n\n\nm = M()\ny = m(torch.ones(1))",
]


@pytest.mark.parametrize("src", RAISES)
def test_raising_outside_the_allow_list_is_refused_or_an_error_step(src: str, guard: Path) -> None:
    step = refused(src)
    if isinstance(step, Step):
        assert step.error is not None
        assert step.error.type not in ("SystemExit", "KeyboardInterrupt", "GeneratorExit", "BaseException")


# tcopy's own refusals and limits are not Python errors the script can handle: an
# `except Exception` (or RuntimeError, or bare except) around them changes nothing.
UNCATCHABLE = [
    "try:\n    f = sorted\nexcept Exception:\n    pass\nprint('continued')",
    "try:\n    x = torch.load('x.pt')\nexcept Exception:\n    pass",
    "try:\n    x = torch.ones(10**10)\nexcept Exception:\n    pass\nprint('continued')",
    "try:\n    x = torch.ones(10**10)\nexcept RuntimeError:\n    pass\nprint('continued')",
    "try:\n    x = 'a' * 10**9\nexcept Exception:\n    pass\nprint('continued')",
    "try:\n    x = 10 ** (10**7)\nexcept Exception:\n    pass\nprint('continued')",
    "try:\n    x = [i for i in range(10**9)]\nexcept Exception:\n    pass\nprint('continued')",
    "try:\n    x = list(range(10**9))\nexcept Exception:\n    pass\nprint('continued')",
    "def f():\n    g = sorted\n\n\ntry:\n    f()\nexcept Exception:\n    pass\nprint('continued')",
    "try:\n    x = torch.ones(10**10)\nexcept Exception as e:\n    print(str(e))\nprint('continued')",
    "try:\n    x = torch.ones(10**10)\nexcept ValueError:\n    pass\nelse:\n    pass\n"
    "finally:\n    y = 1\nprint('continued')",
]


@pytest.mark.parametrize("src", UNCATCHABLE)
def test_refusals_and_limits_cannot_be_caught(src: str, guard: Path) -> None:
    step = refused(src)
    if isinstance(step, Step):
        assert step.error is not None
        assert step.error.type in ("NotAllowedError", "LimitExceeded", "TimeoutExceeded"), step.error.type


def test_bare_except_is_refused_or_does_not_catch_limits(guard: Path) -> None:
    step = refused("try:\n    x = torch.ones(10**10)\nexcept:\n    pass\nprint('continued')")
    if isinstance(step, Step):
        assert step.error is not None and step.error.type == "LimitExceeded"


# --- comprehensions and builtins over script values stay within the limits ----------

# Each bounded by AMPLIFIER_LIMITS.max_iterations (10,000 items of a loop or a builtin)
# even if nothing else checks it, so they can run in this process.
AMPLIFIER_LIMITS = Limits(timeout=3, max_bytes=10**7, max_iterations=10**4)
AMPLIFIERS7 = [
    "x = [i for i in range(10**9)]",
    "x = {i: i for i in range(10**9)}",
    "x = sorted(range(10**9))",
    "x = sorted([0] * 10**9)",
    "x = list(reversed(range(10**9)))",
    "x = list(zip(range(10**9), range(10**9)))",
    "x = list(enumerate(range(10**9)))",
    "x = all([True for i in range(10**9)])",
    "x = [torch.ones(10**3) for i in range(10**6)]",
    "x = {i: torch.ones(10**3) for i in range(10**6)}",
    "def f(v):\n    return v\n\n\nx = list(map(f, range(10**9)))",
    "def f(n):\n    return 'a' * n\n\n\nx = f(10**9)",
    "def f(n):\n    return torch.ones(n)\n\n\nx = f(10**10)",
]


@pytest.mark.parametrize("src", AMPLIFIERS7)
def test_comprehensions_and_builtins_are_held_to_the_limits(src: str, guard: Path) -> None:
    start = time.perf_counter()
    step = refused(src, AMPLIFIER_LIMITS)
    assert time.perf_counter() - start < 5
    if isinstance(step, Step):
        assert step.error is not None
        assert step.error.type in ("LimitExceeded", "TimeoutExceeded"), (step.error.type, step.error.message)


# --- termination: run in a child process under a deadline ---------------------------

_HOOKED = LEAF + _BACKWARD

# name -> script; each must end as an error step (a limit, a timeout, or a recursion
# error) or be refused; never hang, never crash the process, never run past the step
# limit because a handler swallowed it.
TERMINATION: dict[str, str] = {
    "loop_in_jacobian": "from torch.autograd.functional import jacobian\n"
    "def f(a):\n    while True:\n        a = a\n\n\nj = jacobian(f, torch.ones(2))",
    "loop_in_forward_hook": NN + "def hook(m, i, o):\n    while True:\n        pass\n\n\n"
    "lin = nn.Linear(1, 1)\nh = lin.register_forward_hook(hook)\ny = lin(torch.ones(1))",
    "loop_in_full_backward_hook": NN + "def hook(m, gi, go):\n    while True:\n        pass\n\n\n"
    "lin = nn.Linear(1, 1)\nh = lin.register_full_backward_hook(hook)\nlin(torch.ones(1)).sum().backward()",
    "loop_in_function_backward": "class F(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
    "        return x * 2\n\n    @staticmethod\n    def backward(ctx, g):\n        while True:\n            g = g\n\n\n"
    + LEAF
    + "b = F.apply(a).sum()\nb.backward()",
    "recursive_function_forward": "class F(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
    "        return F.apply(x)\n\n    @staticmethod\n    def backward(ctx, g):\n        return g\n\n\n"
    + LEAF
    + "b = F.apply(a)",
    "while_true_pass": "while True:\n    pass",
    "while_true_step": "while True:\n    x = 1",
    "while_one_continue": "while 1:\n    continue",
    "while_tensor_condition": "t = torch.ones(1)\nwhile t:\n    t = t * 1",
    "while_in_function": "def spin():\n    while True:\n        pass\n\n\nspin()",
    "while_in_forward": _CLASS + "    def forward(self, x):\n        while True:\n            x = x\n"
    "        return x\n\n\nm = M()\ny = m(torch.ones(1))",
    "except_exception_around_limit": "while True:\n    try:\n        while True:\n            x = 1\n"
    "    except Exception:\n        pass",
    "except_runtimeerror_around_limit": "while True:\n    try:\n        while True:\n            x = 1\n"
    "    except RuntimeError:\n        pass",
    "bare_except_around_limit": "while True:\n    try:\n        while True:\n            x = 1\n"
    "    except:\n        pass",
    "except_exception_around_timeout": "while True:\n    try:\n        while True:\n            pass\n"
    "    except Exception:\n        pass",
    "finally_around_timeout": "try:\n    while True:\n        pass\nfinally:\n    while True:\n        pass",
    "finally_loops_again": "try:\n    while True:\n        x = 1\nfinally:\n    while True:\n        y = 2",
    "finally_return_swallows": "def f():\n    try:\n        while True:\n            x = 1\n    finally:\n"
    "        return 0\n\n\nwhile True:\n    f()",
    "finally_return_swallows_timeout": "def f():\n    try:\n        while True:\n            pass\n    finally:\n"
    "        return 0\n\n\nwhile True:\n    f()",
    "recursion_simple": "def f(n):\n    return f(n + 1)\n\n\nf(0)",
    "recursion_mutual": "def a(n):\n    return b(n)\n\n\ndef b(n):\n    return a(n)\n\n\na(0)",
    "recursion_tensor": "def f(t):\n    return f(t * 1)\n\n\nf(torch.ones(1))",
    "recursion_default_args": "def f(n=0, acc=None):\n    return f(n=n + 1, acc=acc)\n\n\nf()",
    "recursion_caught_exception": "def f(n):\n    try:\n        return f(n + 1)\n    except Exception:\n"
    "        return f(n + 1)\n\n\nf(0)",
    "recursion_caught_runtimeerror": "def f(n):\n    try:\n        return f(n + 1)\n    except RuntimeError:\n"
    "        return f(n + 1)\n\n\nf(0)",
    "recursion_in_finally": "def f(n):\n    try:\n        return f(n + 1)\n    finally:\n        f(n + 1)\n\n\nf(0)",
    "recursion_forward": _CLASS + "    def forward(self, x):\n        return self(x)\n\n\n"
    "m = M()\ny = m(torch.ones(1))",
    "recursion_method": _CLASS + "    def g(self, n):\n        return self.g(n + 1)\n\n\nm = M()\nm.g(0)",
    "recursion_init": _INIT + "        self.child = M()\n\n\nm = M()",
    "recursion_map": "def f(n):\n    return list(map(f, [n]))\n\n\nf(0)",
    "recursion_comprehension": "def f(n):\n    return [f(i) for i in [n]]\n\n\nf(0)",
    "recursion_dict_comprehension": "def f(n):\n    return {k: f(k) for k in [n]}\n\n\nf(0)",
    "recursion_sorted": "def f(n):\n    return sorted([f(n)])\n\n\nf(0)",
    # (plain Python hangs on this one: past a depth, autograd moves reentrant backward
    # passes to new threads)
    "recursion_reentrant_backward": LEAF + "def hook(g):\n    with torch.enable_grad():\n"
    "        (a * 2).sum().backward()\n    return g\n\n\nh = a.register_hook(hook)\n(a * 2).sum().backward()",
    "recursion_autograd_grad_in_hook": LEAF + "def hook(g):\n    with torch.enable_grad():\n"
    "        gg = torch.autograd.grad((a * 2).sum(), a)\n    return g\n\n\n"
    "h = a.register_hook(hook)\n(a * 2).sum().backward()",
    "loop_in_hook": "def hook(g):\n    while True:\n        x = 1\n\n\n" + _HOOKED,
    "pass_loop_in_hook": "def hook(g):\n    while True:\n        pass\n\n\n" + _HOOKED,
    "loop_in_post_accumulate_hook": "def hook(p):\n    while True:\n        x = 1\n\n\n"
    + LEAF
    + "h = a.register_post_accumulate_grad_hook(hook)\nb = (a * 2).sum()\nb.backward()",
    "loop_in_node_hook": "def hook(gi, go):\n    while True:\n        x = 1\n\n\n"
    + LEAF
    + "b = a * 2\nh = b.grad_fn.register_hook(hook)\nc = b.sum()\nc.backward()",
    "comprehension_in_lambda_hook": LEAF + "h = a.register_hook(lambda g: [0 for i in range(10**9)])\n"
    "b = (a * 2).sum()\nb.backward()",
    "except_in_hook_swallows": "def hook(g):\n    while True:\n        try:\n"
    "            while True:\n                x = 1\n        except Exception:\n            pass\n\n\n" + _HOOKED,
    "loop_in_map": "def f(v):\n    while True:\n        pass\n\n\nx = list(map(f, [1]))",
    "loop_in_comprehension_call": "def f(v):\n    while True:\n        v = v\n\n\nx = [f(i) for i in range(3)]",
    # amplifiers that only a per-step or global bound stops (every loop stays under the
    # per-loop iteration limit): the timeout ends them at the latest
    "nested_comprehension": "x = [[j for j in range(10**5)] for i in range(10**5)]",
    "double_for_comprehension": "x = [0 for i in range(10**5) for j in range(10**5)]",
    "lists_from_a_function": "def f(v):\n    return [v] * 10**6\n\n\nx = [f(i) for i in range(10**4)]",
    "deepcopy_recursive_module": "import copy\n" + _CLASS + "    def __init__(self):\n        super().__init__()\n"
    "        self.fc = nn.Linear(1, 1)\n\n    def forward(self, x):\n        return copy.deepcopy(self)(x)\n\n\n"
    "m = M()\ny = m(torch.ones(1))",
}

# Overrides of methods the observer might call to list a module's tensors: whether
# tcopy calls them or not, the run ends in time, without a traceback, and nothing the
# override prints shows up unless the script itself called it.
OBSERVER: dict[str, str] = {
    f"observer_{method}": _CLASS
    + f"    def {method}(self, *args, **kwargs):\n        print('observer ran me')\n        while True:\n"
    "            pass\n\n\nm = M()\nx = torch.ones(1)\ny = x * 2"
    for method in (
        "named_parameters",
        "named_buffers",
        "named_modules",
        "named_children",
        "parameters",
        "buffers",
        "modules",
        "children",
        "state_dict",
        "extra_repr",
        "train",
    )
}

_CHILD = textwrap.dedent(
    """
    import json, sys, time, traceback
    from tcopy_cli.errors import ScriptRejected
    from tcopy_cli.limits import Limits
    from tcopy_cli.trace import run_source

    for name, src in json.loads(sys.stdin.readline()):
        print(json.dumps({"start": name}), flush=True)
        t0 = time.perf_counter()
        out = {"name": name}
        try:
            trace = run_source(src, limits=Limits(max_steps=200, max_iterations=10_000, timeout=3))
        except ScriptRejected as exc:
            out.update(outcome="rejected", line=exc.line, column=exc.column)
        except BaseException as exc:
            out.update(outcome="crash", error=f"{type(exc).__name__}: {exc}", tb=traceback.format_exc()[-3000:])
        else:
            last = trace.steps[-1] if trace.steps else None
            out.update(
                outcome=last.status if last is not None else "no-steps",
                error_type=last.error.type if last is not None and last.error is not None else None,
                summary=trace.summary.status if trace.summary is not None else None,
                steps=len(trace.steps),
                stdout="".join(s.stdout for s in trace.steps),
            )
        out["seconds"] = time.perf_counter() - t0
        print(json.dumps(out), flush=True)
    """
)
SCRIPT_DEADLINE = 30.0  # seconds one script may take in the child, imports excluded


def _run_isolated(scripts: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Run each script in a child process (max_steps=200, max_iterations=10,000, timeout=3); name -> result.

    A result is the child's report (``outcome``: rejected, ok, error or crash) or, for a
    script that outlived SCRIPT_DEADLINE or took the child down, ``hung`` or ``died``;
    a new child then runs the scripts after it.
    """
    results: dict[str, dict[str, Any]] = {}
    pending = list(scripts.items())
    while pending:
        with tempfile.TemporaryFile(mode="w+") as errors:
            proc = subprocess.Popen(
                [sys.executable, "-c", _CHILD],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=errors,
                text=True,
            )
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(json.dumps(pending) + "\n")
            proc.stdin.close()
            lines: queue.Queue[str | None] = queue.Queue()
            stream = proc.stdout

            def read(stream: Any = stream, sink: queue.Queue[str | None] = lines) -> None:
                for line in stream:
                    sink.put(line)
                sink.put(None)

            threading.Thread(target=read, daemon=True).start()
            current: str | None = None
            ended = "died"
            deadline = time.monotonic() + 120.0  # `import torch` and tcopy before the first script
            while True:
                try:
                    line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
                except queue.Empty:
                    ended = "hung"
                    break
                if line is None:
                    break
                try:
                    msg = json.loads(line)
                except json.JSONDecodeError:
                    continue  # not a report (tcopy writes nothing to stdout; be lenient)
                if "start" in msg:
                    current = msg["start"]
                    deadline = time.monotonic() + SCRIPT_DEADLINE
                else:
                    results[msg["name"]] = msg
                    current = None
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            errors.seek(0)
            stderr = errors.read()[-3000:]
        failure = {"outcome": ended, "rc": proc.returncode, "stderr": stderr}
        if current is not None:
            results[current] = {"name": current, **failure}
        pending = [(n, src) for n, src in pending if n not in results]
        if current is None:  # the child ended between scripts: it would again
            results.update({n: {"name": n, **failure} for n, _ in pending})
            pending = []
    return results


@pytest.fixture(scope="module")
def isolated() -> dict[str, dict[str, Any]]:
    return _run_isolated({**TERMINATION, **OBSERVER})


@pytest.mark.parametrize("name", sorted(TERMINATION))
def test_loops_recursion_and_hooks_always_end(name: str, isolated: dict[str, dict[str, Any]]) -> None:
    result = isolated[name]
    assert result["outcome"] in ("rejected", "error"), result
    if result["outcome"] == "error":
        assert result["summary"] == "error"
        assert result["error_type"] in ("LimitExceeded", "TimeoutExceeded", "RecursionError"), result
        assert result["seconds"] < 30.0, result  # a hang guard (timeout=3), loose enough for a loaded machine
        # a step limit that an except, finally or return swallowed shows as thousands of steps
        assert result["steps"] <= 2 * 200, f"{result['steps']} steps under max_steps=200"


@pytest.mark.parametrize("name", sorted(OBSERVER))
def test_observing_a_module_never_runs_its_overrides(name: str, isolated: dict[str, dict[str, Any]]) -> None:
    result = isolated[name]
    assert result["outcome"] in ("rejected", "ok", "error"), result
    if result["outcome"] != "rejected":
        assert result["seconds"] < 30.0, result
        assert "observer ran me" not in result["stdout"], "tcopy ran a script method while observing"
        if result["outcome"] == "error":
            assert result["error_type"] in ("LimitExceeded", "TimeoutExceeded", "NotAllowedError"), result


def test_step_limit_counts_steps_inside_functions(guard: Path) -> None:
    src = "def f(n):\n    x = n\n    y = n\n    return x\n\n\nfor i in range(1000):\n    z = f(i)"
    trace = run_source(src, limits=Limits(max_steps=100, timeout=5))
    step = trace.steps[-1]
    assert step.error is not None and step.error.type == "LimitExceeded"
    assert len(trace.steps) <= 101
    assert any(s.line in (2, 3, 4) for s in trace.steps), "function bodies make steps"


def test_recursion_depth_is_bounded_in_process(guard: Path, isolated: dict[str, dict[str, Any]]) -> None:
    # Only once the child process showed that it ends: then here too, as an error step
    # (tcopy's depth limit or a RecursionError), and the next run is unaffected.
    if isolated["recursion_simple"]["outcome"] not in ("rejected", "error"):
        pytest.skip("unbounded recursion did not end cleanly in the child process")
    trace = run_source("def f(n):\n    return f(n + 1)\n\n\nx = torch.ones(1)\ny = f(0)", limits=SMALL)
    step = trace.steps[-1]
    assert step.status == "error" and step.error is not None
    assert step.error.type in ("LimitExceeded", "RecursionError"), step.error.type
    assert sys.getrecursionlimit() <= 10_000
    later = run_source("def g(n):\n    return n\n\n\ny = g(1)\nz = g(y)")
    assert later.summary is not None and later.summary.status == "ok"
    assert all(s.status == "ok" for s in later.steps)


# --- input as a name, id(), global, breakpoint() ---------------------------------------


def _printed(src: str) -> str:
    trace = run_source(src)
    assert trace.summary is not None and trace.summary.status == "ok", [s.error for s in trace.steps]
    return "".join(s.stdout for s in trace.steps)


NEW_BUILTIN_MISUSE = [
    "x = input()",
    "x = input('> ')",
    "f = input",
    "x = [input]",
    "x = id",
    "print(id)",
    "x = id.__self__",
    "x = id.numbers",
    "x = id.__call__",
    "x = [id][0]",
    "x = sorted([1], key=id)",
    "x = breakpoint",
    "x = breakpoint.__doc__",
    "def f():\n    global __builtins__\n    __builtins__ = 1",
    "def f():\n    global _secret\n    _secret = 1",
    "def f():\n    global eval\n    eval = 1",
    "def f():\n    global open\n    return open('x', 'w')\n\n\nf()",
    "nonlocal x",
]


@pytest.mark.parametrize("src", NEW_BUILTIN_MISUSE)
def test_input_id_global_and_breakpoint_stay_bounded(src: str, guard: Path) -> None:
    refused(src)


def test_input_is_an_ordinary_name(guard: Path) -> None:
    src = "def f(input):\n    return input * 2\n\n\ninput = 3\nprint(f(input), f(input=1))"
    assert _printed(src) == "6 2\n"


def test_id_is_a_small_per_run_number_not_an_address(guard: Path) -> None:
    src = "a = torch.ones(2)\nb = a.view(2)\nprint(id(a), id(b), id(a) == id(a), id(a) == id(b), id(a.data) == id(a))"
    first, second, same, view_same, data_same = _printed(src).split()
    assert (same, view_same, data_same) == ("True", "False", "False")
    assert first != second and int(first) < 1000 and int(second) < 1000


def test_global_binds_in_the_module_only(guard: Path) -> None:
    src = (
        "n = 0\n"
        "def f():\n    global n\n    n += 1\n    m = [n for n in range(3)]\n    return m\n\n\n"
        "def g():\n    n = 10\n    return n\n\n\n"
        "f()\nf()\nprint(n, g(), n)"
    )
    assert _printed(src) == "2 10 2\n"


def test_breakpoint_is_a_no_op(guard: Path) -> None:
    assert _printed("a = 1\nbreakpoint()\nprint(a)") == "1\n"


# --- custom autograd Functions: the class, ctx and apply stay inside the sandbox -------

_FN = (
    "class F(torch.autograd.Function):\n"
    "    @staticmethod\n    def forward(ctx, x):\n        CTX\n        return x * 2\n\n"
    "    @staticmethod\n    def backward(ctx, g):\n        BACK\n        return g * 2\n\n\n"
    "x = torch.ones(2, requires_grad=True)\n"
)


def _fn(ctx_line: str = "pass", back_line: str = "pass", after: str = "y = F.apply(x)\ny.sum().backward()") -> str:
    return _FN.replace("CTX", ctx_line).replace("BACK", back_line) + after


FUNCTION_ESCAPES = [
    *(
        _fn(after=f"y = F.{attr}")
        for attr in (
            "__subclasses__ __mro__ __bases__ __dict__ __class__ _backward_cls forward backward vjp "
            "mro apply.__self__ apply.__func__ apply.owner apply.owner.cls"
        ).split()
    ),
    _fn(after="y = F.__subclasses__()"),
    _fn(after="y = F.mro()"),
    _fn(after="f = F()"),
    _fn(after="f = F.apply\ng = f.__call__"),
    _fn(after="y = torch.autograd.Function.apply(x)"),
    _fn(after="y = torch.autograd.Function.__subclasses__()"),
    _fn(after="y = torch.autograd.Function"),
    *(
        _fn(ctx_line=f"y = ctx.{attr}")
        for attr in (
            "__class__ _forward_cls to_save dirty_tensors non_differentiable saved_variables _raw_saved_tensors "
            "apply metadata __dict__ _materialize_non_diff_grads materialize_grads requires_grad"
        ).split()
    ),
    _fn(ctx_line="ctx.save_for_backward = print"),
    _fn(ctx_line="ctx.apply = 1"),
    _fn(ctx_line="ctx._x = 1"),
    _fn(ctx_line="ctx.__class__ = int"),
    _fn(ctx_line="ctx.to_save = (x,)"),
    _fn(ctx_line="ctx.mark_dirty(print)"),
    _fn(ctx_line="ctx.save_for_backward(print)"),
    _fn(ctx_line="h = ctx.register_hook(sorted)"),
    _fn(ctx_line="f = ctx.save_for_backward"),
    _fn(ctx_line="y = ctx.apply(x)"),
    _fn(ctx_line="y = ctx._forward_cls.forward(ctx, x)"),
    _fn(ctx_line="ctx.fn = sorted"),
    _fn(back_line="y = ctx.__class__.__mro__"),
    _fn(back_line="y = ctx.saved_tensors.__class__"),
    _fn(back_line="y = type(ctx)('z', (), {})"),
    # keeping ctx past the run of forward
    "kept = []\n" + _fn(ctx_line="kept.append(ctx)", after="y = F.apply(x)\nz = kept[0].__class__"),
    "kept = []\n" + _fn(ctx_line="kept.append(ctx)", after="y = F.apply(x)\nz = kept[0]._forward_cls"),
    # defining what torch itself calls
    "class F(torch.autograd.Function):\n    def apply(self, x):\n        return x",
    "class F(torch.autograd.Function):\n    def _backward_cls(self):\n        return 1",
    "class F(torch.autograd.Function):\n    def __call__(self, x):\n        return x",
    "class F(torch.autograd.Function):\n    def mark_dirty(self, x):\n        return x",
    "class F(torch.autograd.Function):\n    x = 1",
    "class F(torch.autograd.Function, nn.Module):\n    pass",
    "from torch.autograd.function import once_differentiable",
    "from torch.autograd.function import BackwardCFunction",
    "from torch.autograd.function import FunctionCtx",
    "import torch.autograd.function as fn\nx = fn.FunctionCtx",
]


@pytest.mark.parametrize("src", FUNCTION_ESCAPES)
def test_autograd_functions_expose_no_class_internals_or_ctx_internals(src: str, guard: Path) -> None:
    refused(NN + src)


def test_autograd_function_backward_runs_in_the_backward_step(guard: Path) -> None:
    trace = run_source(_fn(back_line="print('in backward', g)"))
    assert trace.summary is not None and trace.summary.status == "ok"
    (step,) = [s for s in trace.steps if s.stdout]
    assert step.source == "y.sum().backward()" and step.stdout == "in backward tensor([1., 1.])\n"


# --- str.format, format_map and format(): fields reach only what the script could -----

FORMAT_ESCAPES = [
    'x = "{0.__class__}".format(torch.ones(1))',
    'x = "{0.__class__.__mro__}".format(1)',
    'x = "{0._version}".format(torch.ones(1))',
    'x = "{0._x}".format(torch.ones(1))',
    'x = "{0[__x]}".format({"__x": 1})',
    'x = "{0[_x]}".format({"_x": 1})',
    'x = "{a.__init__.__globals__}".format(a=torch.ones(1))',
    'x = "{a._base}".format_map({"a": torch.ones(1)})',
    'x = "{0.grad_fn._saved_self}".format(torch.ones(1, requires_grad=True) * 2)',
    'x = "{0.storage}".format(torch.ones(1))',
    'x = "{0.data_ptr}".format(torch.ones(1))',
    'x = "{0.register_hook}".format(torch.ones(1))',
    'x = "{0.save}".format(torch.ones(1))',
    'x = "{0.real.__class__}".format(1)',
    'x = "{0.weight.__class__}".format(nn.Linear(1, 1))',
    'x = "{0._modules}".format(nn.Linear(1, 1))',
    'x = "{0.forward}".format(nn.Linear(1, 1))',
    'x = "{0[0].__dict__}".format([1])',
    'x = "{0}".format(sorted)',
    'x = "{0}".format(torch)',
    'x = "{0}".format([torch.ones])',
    'x = "{0.ones}".format(torch)',
    'x = "{0:{1}}".format(1, print)',
    'x = "{0:{1}}".format(1, "{0.__class__}")',
    'x = "{0:{1:{2}}}".format(1, 2, 3)',
    'x = "{0:>{1}}".format("a", 10**9)',
    'x = "{0:>100000000}".format("a")',
    'x = "{0:{1}}".format("a", ">100000000")',
    'x = "{0!r:>99999999}".format("a")',
    'x = format("a", ">100000000")',
    'x = format(sorted, "")',
    "x = format(1, print)",
    'x = ("{0}" * 10**6).format(*["a" * 1000])',
    'x = "{:.1000000000f}".format(1.0)',
    'f = "{}".format',
    'f = "{}".format_map',
    'x = str.format("{0.__class__}", 1)',
    'x = "{a}".format_map(torch)',
    'x = "{a}".format_map([1])',
    "x = format",
    'x = "".format.__self__',
]


@pytest.mark.parametrize("src", FORMAT_ESCAPES)
def test_format_fields_reach_only_allowed_attributes(src: str, guard: Path) -> None:
    refused(NN + src)


def test_format_matches_python_for_ordinary_fields(guard: Path) -> None:
    src = (
        "a = torch.tensor([1.5, 2.25])\n"
        'print("{0:.3f} {1} {2.shape} {3[k]} {w:>4}|".format(a.sum().item(), 3, a, {"k": 9}, w="z"))'
    )
    assert _printed(src) == "3.750 3 torch.Size([2]) 9    z|\n"


# --- storages and private autograd attributes: read-only, by exact name ----------------

_SAVED = "a = torch.ones(2, requires_grad=True)\nb = a * a\n"
PRIVATE_READS = [
    "x = torch.ones(2).storage()\nx[0] = 5",
    "x = torch.ones(2).untyped_storage()\nx[0] = 5",
    "x = torch.ones(2).storage()\nx.fill_(1)",
    "x = torch.ones(2).storage()\nx.copy_(torch.ones(2).storage())",
    "x = torch.ones(2).storage()\nx.resize_(100)",
    "x = torch.ones(2).storage()\nx.share_memory_()",
    "x = torch.ones(2).storage()\ny = x.from_file('f', True, 10)",
    "x = torch.ones(2).storage()\ny = x.from_buffer(b'1234')",
    "x = torch.ones(2).storage()\ny = x.pickle_storage_type()",
    "x = torch.ones(2).storage()\ny = x._untyped_storage",
    "x = torch.ones(2).storage()\ny = x.filename",
    "x = torch.ones(2).untyped_storage()\ny = x._new_shared(10)",
    "x = torch.ones(2).untyped_storage()\ny = x.__class__",
    "x = torch.ones(2).storage()\ndel x[0]",
    _SAVED + "b.grad_fn._saved_self = torch.zeros(2)",
    _SAVED + "b.grad_fn._saved_self += 1",
    _SAVED + "del b.grad_fn._saved_self",
    _SAVED + "y = b.grad_fn._saved_self()",
    _SAVED + "y = b.grad_fn._saved_self.__class__",
    _SAVED + "y = b.grad_fn._saved_weird",
    _SAVED + "y = b.grad_fn.__saved_self",
    _SAVED + "y = b.grad_fn._raw_saved_self.unpack()",
    _SAVED + "y = b.grad_fn._raw_saved_self.data",
    _SAVED + "y = b.grad_fn._raw_saved_self.__class__",
    _SAVED + "y = b.grad_fn._raw_saved_self.register_hooks(print, print)",
    _SAVED + "def f(t):\n    return t\n\n\ny = b.grad_fn._raw_saved_self.register_hooks(f, f)",
    _SAVED + "y = b.grad_fn._raw_saved_self.register_hooks(torch.clone, torch.clone)",
    _SAVED + "h = b.grad_fn._raw_saved_self.register_hooks",
    _SAVED + "y = b._is_view",
    _SAVED + "b._is_view = 1",
    _SAVED + "b._base = a",
    _SAVED + "b._version = 3",
    _SAVED + "y = b._is_leaf()",
    _SAVED + "y = b._grad_fn",
    _SAVED + "y = b.__is_view()",
    _SAVED + "y = a._saved_self",
    _SAVED + "y = b.grad_fn._saved_self._base.__class__",
]


@pytest.mark.parametrize("src", PRIVATE_READS)
def test_storages_and_private_autograd_attributes_are_read_only(src: str, guard: Path) -> None:
    refused(src)


# --- settings, derivatives of script functions, module hooks, small additions ----------

MISC_MISUSE = [
    "torch.set_printoptions(threshold=10**9)",
    "torch.set_printoptions(profile='full')",
    "torch.set_printoptions(linewidth=10**8)",
    "torch.set_printoptions(edgeitems=10**6)",
    "torch.set_printoptions(precision=-1)",
    "torch.set_printoptions(precision='10')",
    "torch.set_printoptions(sci_mode=print)",
    "torch.set_printoptions(threshold=float('inf'))",
    "torch.set_printoptions(file=1)",
    "f = torch.set_printoptions",
    "torch.autograd.set_detect_anomaly(print)",
    "a = torch.autograd.detect_anomaly()\nb = a.__enter__",
    "a = torch.autograd.detect_anomaly()\nb = a.prev",
    "from torch.autograd.functional import jacobian\nj = jacobian(torch.sin, torch.ones(2))",
    "from torch.autograd.functional import jacobian\nj = jacobian(print, torch.ones(2))",
    "from torch.autograd.functional import hessian\nj = hessian(torch.sum, torch.ones(2))",
    "from torch.autograd.functional import jacobian\nj = jacobian(lambda a: a.__class__, torch.ones(2))",
    "from torch.autograd.functional import jacobian\nj = jacobian(nn.Linear(2, 2), torch.ones(2))",
    "g = torch.autograd.gradcheck(torch.load, (torch.ones(1),))",
    "g = torch.autograd.gradcheck(copy.deepcopy, (torch.ones(1),))",
    "import torch.autograd.functional as af\nx = af.torch",
    "import torch.autograd.functional as af\nx = af._autograd_grad",
    "from torch.autograd.functional import _as_tuple",
    "from torch.autograd.graph import saved_tensors_hooks",
    "from torch.autograd.graph import register_multi_grad_hook",
    "x = torch.autograd.graph.Node.register_hook",
    "x = torch.autograd.graph.Node()",
    "lin = nn.Linear(1, 1)\nh = lin.register_forward_hook(sorted)",
    "lin = nn.Linear(1, 1)\nh = lin.register_forward_hook(torch.relu)",
    "lin = nn.Linear(1, 1)\nh = lin.register_forward_pre_hook(copy.deepcopy)",
    "lin = nn.Linear(1, 1)\nh = lin.register_full_backward_hook(torch.load)",
    "lin = nn.Linear(1, 1)\nh = lin.register_forward_hook(lin)\ny = lin(torch.ones(1))",
    "lin = nn.Linear(1, 1)\nf = lin.register_forward_hook",
    "lin = nn.LazyLinear(2)\nw = lin.weight.materialize((2, 2))",
    "lin = nn.LazyLinear(2)\nw = lin.weight.cls_to_become",
    "x = torch.ones(1).new(10**6, 10**6)",
    "x = torch.ones(1).new(*([10] * 10))",
    "x = torch.ones(1).new(print)",
    "x = globals()",
    "x = globals",
    "s = slice(0, 2)\nx = s.indices(10)",
    "s = slice(0, 2)\nx = s.__reduce__()",
    "s = slice(sorted, 2)",
    "x = slice.__new__(slice, 1)",
    "import random\nx = random.choices([1], k=10**9)",
    "import random\nx = random.sample(range(10**9), 10**8)",
    "import random\nx = random.sample(range(10**9), k=10**8)",
    "import random\nx = random.getrandbits(10**9)",
    "import random\nx = random.Random()",
    "import random\nx = random.SystemRandom",
    "import random\nx = random._inst",
    "import random\nx = random.seed.__self__",
    "import random\nx = random.random",
    "import time\ntime.sleep(100)",
    "import time\nx = time.time",
    "import pdb\npdb.Pdb().set_trace()",
    "import pdb\npdb.run('import os')",
    "import timeit\nx = timeit.timeit('1')",
]


@pytest.mark.parametrize("src", MISC_MISUSE)
def test_settings_derivatives_and_module_hooks_stay_bounded(src: str, guard: Path) -> None:
    refused("import copy\n" + NN + src)


def test_print_options_and_anomaly_mode_do_not_outlive_the_run(guard: Path) -> None:
    src = "torch.set_printoptions(precision=1)\ntorch.autograd.set_detect_anomaly(True)\nprint(torch.tensor([1.234]))"
    assert _printed(src) == "tensor([1.2])\n"
    assert str(torch.tensor([1.234])) == "tensor([1.2340])"
    assert not torch.is_anomaly_enabled()
