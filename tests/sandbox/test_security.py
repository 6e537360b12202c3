"""Sandbox escapes and resource limits.

Every escape must end in one of two ways: the script is refused before it runs
(``ScriptRejected`` with a line and column), or the statement is an error step. Never
a Python traceback from tcopy, never a file written, never a process spawned. An
audit hook (active only inside these tests) records process, network and file-write
events while a script runs; the current directory is an empty ``tmp_path`` that must
stay empty.

Resource limits are exercised with small ``Limits`` where possible so the tests stay
fast; the ones that must be refused *before* allocating run with the defaults and a
time bound.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from sandbox_guard import AUDIT, guarded, refused
from typer.testing import CliRunner

from tcopy_cli.cli import app
from tcopy_cli.engine import run_source
from tcopy_cli.errors import ScriptRejected
from tcopy_cli.limits import Limits
from tcopy_cli.trace.records import Step

# --- the guard: audit events and the working directory -----------------------------


@pytest.fixture
def guard(tmp_path: Path) -> Iterator[Path]:
    """Run in an empty directory; fail if a file appears or a process/file event fires."""
    with guarded(tmp_path) as path:
        yield path


def test_the_guard_sees_files_and_processes(tmp_path: Path) -> None:
    # The audit hook itself works: a write and a spawn made while it is on are recorded.
    AUDIT["events"] = []
    AUDIT["on"] = True
    try:
        with open(tmp_path / "written.txt", "w") as fh:
            fh.write("x")
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    finally:
        AUDIT["on"] = False
    kinds = {event for event, _ in AUDIT["events"]}
    AUDIT["events"] = []
    assert {"open", "subprocess.Popen"} <= kinds


def limit_step(src: str, limits: Limits | None = None) -> Step:
    """Run ``src``; its last step must be a LimitExceeded error step."""
    trace = run_source(src, limits=limits)
    step = trace.steps[-1]
    assert step.status == "error", f"no limit was hit: {[(s.source, s.status) for s in trace.steps][-3:]}"
    assert step.error is not None
    assert step.error.type in ("LimitExceeded", "TimeoutExceeded"), (step.error.type, step.error.message)
    return step


# --- escapes -------------------------------------------------------------------------

DUNDER_CHAINS = [
    "x = ().__class__.__bases__[0].__subclasses__()",
    "a = torch.ones(1)\ng = a.__class__.__init__.__globals__",
    "x = [].__class__.__mro__[-1].__subclasses__()",
    "x = (1).__class__",
    "a = torch.ones(1)\nd = a.__dict__",
    "x = torch.__dict__",
    "x = torch.__builtins__",
    "x = __builtins__",
    "x = __loader__",
    "x = __spec__",
    "x = __file__",
    "x = __name__.__class__",
    "x = print.__self__",
    "x = print.__call__",
    "x = type(1).__subclasses__()",
    "x = type(torch.ones(1)).__init__",
    "x = torch.Tensor.__init__",
    "x = torch.ones.__module__",
    "a = torch.ones(1, requires_grad=True)\nb = (a * 2).grad_fn.__class__",
]


@pytest.mark.parametrize("src", DUNDER_CHAINS)
def test_dunder_chains(src: str, guard: Path) -> None:
    refused(src)


UNDERSCORE_ATTRIBUTES = [
    "a = torch.ones(1, requires_grad=True)\nb = a * 2\nn = b.grad_fn.next_functions[0][0]\nv = n._variable",
    "a = torch.ones(1)\nx = a._cdata",
    "a = torch.ones(1)\nx = a._make_subclass",
    "a = torch.ones(1)\nx = a.untyped_storage()._share_filename_cpu_()",
    "a = torch.ones(1)\nx = a.untyped_storage()._share_fd_cpu_()",
    "a = torch.ones(1)\nx = a.untyped_storage()._new_shared(4)",
    "a = torch.ones(1)\nx = a.__reduce_ex__(2)",
    "a = torch.ones(1)\nx = a.__reduce__()",
    "a = torch.ones(1)\nx = a.__setstate__",
    "a = torch.ones(1)\na._version = 5",
    "a = torch.ones(1)\na._base = a",
    "x = torch._C",
    "x = torch._C._get_tracing_state()",
    "x = torch._dynamo",
    "x = torch._utils",
    "x = torch.ones(1)\n_y = x",
    "import torch as _t",
    "a = torch.ones(1, requires_grad=True)\nb = a * 2\ns = b.grad_fn._saved_unknown",
    "a = torch.ones(1, requires_grad=True)\nb = a * 2\nb.grad_fn._saved_self = a",
    "a = torch.ones(1, requires_grad=True)\nb = a * 2\ns = b.grad_fn._raw_saved_self.unpack()",
]


@pytest.mark.parametrize("src", UNDERSCORE_ATTRIBUTES)
def test_underscore_attributes(src: str, guard: Path) -> None:
    refused(src)


FORBIDDEN_BUILTINS = """
    open eval exec compile getattr setattr delattr hasattr __import__ globals locals vars
    input exit quit help dir memoryview object super id hash callable iter next
    format repr ascii chr ord bytes bytearray map filter classmethod staticmethod property
""".split()


@pytest.mark.parametrize("name", FORBIDDEN_BUILTINS)
@pytest.mark.parametrize(
    "template",
    ["x = {name}()", "x = {name}('x.txt', 'w')", "x = {name}", "f = [{name}][0]", "print({name})"],
)
def test_forbidden_builtins(name: str, template: str, guard: Path) -> None:
    refused(template.format(name=name))


def test_forbidden_builtins_with_real_arguments(guard: Path) -> None:
    for src in [
        'f = open("pwned.txt", "w")',
        "eval(\"__import__('os').system('touch pwned')\")",
        'exec("import os")',
        'c = compile("1", "f", "eval")',
        'x = getattr(torch, "load")',
        'setattr(torch, "ones", 1)',
        '__import__("os").system("touch pwned")',
        "g = globals()",
        "v = vars(torch)",
        "x = input()",
        "input = 1\ndel input\nx = input('> ')",
        "exit(3)",
        "quit()",
    ]:
        refused(src)


IMPORTS = [
    "import numpy.ctypeslib",
    "import torch.utils",
    "import torch.hub",
    "import torch.utils.data",
    "import torch.nn.parallel",
    "from torch.nn import modules",
    "import math.os",
    "from torch import hub",
    "from torch import load",
    "from torch import *",
    "from torch.utils import data",
    "from math import *",
    "from math import system",
    "from copy import _reconstruct",
    "from copy import sys",
    "from . import x",
    "import torch as os\nos.system('touch pwned')",
    "import copy as os\nos.system('touch pwned')",
    "import math as _m",
]


@pytest.mark.parametrize("src", IMPORTS)
def test_imports(src: str, guard: Path) -> None:
    refused(src)


# Modules tcopy does not offer bind an inert placeholder: the import runs, nothing
# happens, and every use of the name fails at its line, naming the module.
PLACEHOLDER_IMPORTS = {
    "import os": "os",
    "import sys": "sys",
    "import subprocess": "subprocess",
    "import builtins": "builtins",
    "import importlib": "importlib",
    "import pickle": "pickle",
    "import ctypes": "ctypes",
    "import shutil": "shutil",
    "import os.path": "os",
    "import os.path as osp": "osp",
    "from os import system": "system",
    "from os import system as s": "s",
    "import os as torch": "torch",
    "import matplotlib.pyplot as plt": "plt",
}
PLACEHOLDER_USES = [
    "x = {n}",
    "{n}",
    "{n}.system('touch pwned')",
    "{n}.getcwd()",
    "{n}('touch pwned')",
    "x = {n}[0]",
    "x = {n}.__dict__",
    "x = {n}.path.join('a', 'b')",
    "x = [{n}]",
    "x = ({n},)",
    "x = {{'k': {n}}}",
    "print({n})",
    "x = f'{{{n}}}'",
    "x = str({n})",
    "x = type({n})",
    "x = id({n})",
    "x = {n} is None",
    "x = {n} == 1",
    "x = not {n}",
    "for i in {n}:\n    pass",
    "x = [i for i in {n}]",
    "with {n}:\n    pass",
    "def f(m={n}):\n    return m",
    "def f():\n    return {n}\n\n\nx = f()",
    "def f():\n    global {n}\n    return {n}.system('x')\n\n\nx = f()",
    "f = lambda: {n}\nx = f()",
    "x = torch.ones(1) + {n}",
    "{n} += 1",
    "x = copy.deepcopy({n})",
    "x = isinstance(1, {n})",
    "class M({n}.Module):\n    pass",
    "raise {n}",
    "try:\n    x = {n}\nexcept Exception:\n    x = 1\nx = {n}",
    "x = '{{}}'.format({n})",
    "x = '%s' % ({n},)",
]


@pytest.mark.parametrize("use", PLACEHOLDER_USES)
@pytest.mark.parametrize("src", sorted(PLACEHOLDER_IMPORTS))
def test_unavailable_modules_are_inert_placeholders(src: str, use: str, guard: Path) -> None:
    trace = run_source(src)
    assert trace.summary is not None and trace.summary.status == "ok"
    name = PLACEHOLDER_IMPORTS[src]
    prelude = "import copy\n" if "copy" in use and name != "copy" else ""
    result = refused(prelude + src + "\n" + use.format(n=name))
    if isinstance(result, Step) and result.error is not None and result.error.type == "NotAllowedError":
        assert "--trust" in result.error.message


TORCH_IO_AND_CODE_LOADING = [
    'torch.load("x.pt")',
    'x = torch.load("x.pt", weights_only=False)',
    'torch.save(torch.ones(1), "x.pt")',
    'x = torch.from_file("x.bin", size=4)',
    'torch.hub.load("owner/repo", "model")',
    'x = torch.hub.list("owner/repo")',
    'torch.hub.download_url_to_file("http://example.com/x", "x")',
    "x = torch.jit.script(torch.ones(1))",
    'x = torch.jit.load("m.pt")',
    'torch.jit.save(torch.ones(1), "m.pt")',
    "x = torch.compile(torch.ones(1))",
    "x = torch.ops.aten.ones([1])",
    'torch.ops.load_library("x.so")',
    'torch.classes.load_library("x.so")',
    "x = torch.classes",
    "x = torch.utils.data.DataLoader([1])",
    'x = torch.utils.cpp_extension.load_inline("x", "")',
    'x = torch.library.Library("x", "DEF")',
    'x = torch.serialization.load("x.pt")',
    'x = torch.UntypedStorage.from_file("x.bin", True, 4)',
    'a = torch.ones(1)\ns = a.untyped_storage()\nx = s.from_file("x.bin", True, 4)',
    'x = torch.package.PackageImporter("x.pt")',
    'x = torch.export.load("x.pt2")',
    "torch.multiprocessing.spawn(print)",
    'torch.set_default_device("meta")',
    # the same through aliases and rebinding
    'T = torch\nT.load("x.pt")',
    'T = torch\nT.save(T.ones(1), "x.pt")',
    'import torch as T\nT.save(T.ones(1), "x.pt")',
    'import torch as T\nx = T.hub.load("owner/repo", "model")',
    'import torch as T\nx = T.jit.load("m.pt")',
    'm = [torch]\nm[0].load("x.pt")',
    'd = {"t": torch}\nd["t"].save(torch.ones(1), "x.pt")',
    'a = torch.ones(1)\nx = a.save("x.pt")',
    "x = torch.ops",
    "x = torch.hub",
    "x = torch.utils",
    "x = torch.jit",
]


@pytest.mark.parametrize("src", TORCH_IO_AND_CODE_LOADING)
def test_torch_io_and_code_loading(src: str, guard: Path) -> None:
    refused(src)


def test_rebinding_torch_itself_is_refused(guard: Path) -> None:
    refused("T = torch")
    refused("m = [torch]")
    refused("import torch as T\nU = T")


BACKENDS = [
    "torch.backends.cudnn.enabled = False",
    "torch.backends.cudnn.deterministic = True",
    "torch.backends.cudnn.benchmark = True",
    "torch.backends.cuda.matmul.allow_tf32 = True",
    "torch.backends.mkldnn.enabled = False",
    "x = torch.backends",
    "T = torch\nT.backends.cudnn.enabled = False",
    "import torch as T\nT.backends.cudnn.enabled = False",
    "torch.set_num_threads(1)",
    "torch.use_deterministic_algorithms(True)",
    "torch.set_printoptions(profile='full')",
    "torch.ones = torch.zeros",
    "torch.pi = 3",
    "torch.float32.is_floating_point = False",
]


@pytest.mark.parametrize("src", BACKENDS)
def test_process_wide_settings_are_not_writable(src: str, guard: Path) -> None:
    before = (
        torch.backends.cudnn.enabled,
        torch.backends.cudnn.deterministic,
        torch.backends.cudnn.benchmark,
        torch.backends.mkldnn.enabled,
        torch.get_num_threads(),
        torch.are_deterministic_algorithms_enabled(),
        torch.pi,
    )
    refused(src)
    after = (
        torch.backends.cudnn.enabled,
        torch.backends.cudnn.deterministic,
        torch.backends.cudnn.benchmark,
        torch.backends.mkldnn.enabled,
        torch.get_num_threads(),
        torch.are_deterministic_algorithms_enabled(),
        torch.pi,
    )
    assert after == before
    assert torch.ones(1).item() == 1.0


NUMPY_AND_STORAGE = [
    'a = torch.ones(2)\na.numpy().tofile("x.bin")',
    'n = torch.ones(2).numpy()\nn.tofile("x.bin")',
    'n = torch.ones(2).numpy()\nn.dump("x.pkl")',
    "n = torch.ones(2).numpy()\nx = n.dumps()",
    "n = torch.ones(2).numpy()\nx = n.tobytes()",
    "n = torch.ones(2).numpy()\nx = n.ctypes",
    "n = torch.ones(2).numpy()\nx = n.base",
    "n = torch.ones(2).numpy()\nx = n.data",
    "n = torch.ones(2).numpy()\nx = n.__array_interface__",
    'n = torch.ones(2).numpy()\nx = n.view("S4")',
    "n = torch.ones(2).numpy()\nx = n.astype(object)",
    "a = torch.ones(1)\nx = a.untyped_storage()._share_filename_cpu_()",
    "a = torch.ones(1)\nx = a.untyped_storage().share_memory_()",
    "a = torch.ones(1)\nx = a.share_memory_()",
    "a = torch.ones(1)\nx = a.storage()\nx[0] = 5",
    "a = torch.ones(1)\nx = a.__reduce_ex__(2)",
    "a = torch.ones(1)\nx = a.untyped_storage().__reduce__()",
    'a = torch.ones(1)\nx = a.type("os.system")',
    "a = torch.ones(1)\nx = a.set_(torch.ones(100).untyped_storage())",
    "a = torch.ones(3)\nx = a.as_strided((1000000,), (1,))",
]


@pytest.mark.parametrize("src", NUMPY_AND_STORAGE)
def test_numpy_and_storage_escapes(src: str, guard: Path) -> None:
    refused(src)


CALLABLES = [
    "a = torch.ones(1, requires_grad=True)\na.register_hook(sorted)",
    "a = torch.ones(1, requires_grad=True)\na.register_post_accumulate_grad_hook(sorted)",
    "a = torch.ones(1, requires_grad=True)\nb = a * 2\nb.grad_fn.register_hook(sorted)",
    "a = torch.ones(1, requires_grad=True)\nb = a * 2\nb.grad_fn.register_prehook(sorted)",
    "a = torch.ones(2)\na.apply_(abs)",
    "a = torch.ones(2)\na.map_(a, max)",
    "a = torch.ones(2)\nx = torch.Tensor.register_hook(a, print)",
    "f = torch.ones\nf(2)",
    "x = [torch.ones][0](2)",
    "x = {'f': torch.ones}['f'](2)",
    "x = (torch.ones if True else torch.zeros)(2)",
    "x = sorted([3, 1], key=sorted)",
    "x = max([1, 2], key=sorted)",
    "x = min([1, 2], key=print)",
    "x = [1, 2]\nx.sort(key=abs)",
    "f = sorted",
    "p = [sorted]",
    "d = {'k': sorted}",
    "d = {sorted: 1}",
    "x = dict(f=sorted)",
    "x = {1: 2}.get(3, sorted)",
    "import copy\nx = copy.deepcopy(print)",
    "import copy\nx = copy.copy(torch)",
    "a = torch.ones(2, requires_grad=True)\nx = torch.autograd.grad(print, a)",
    "x = torch.tensor([print])",
    "x = str(torch.ones)",
    "x = len(torch)",
    "c = torch.no_grad()\nf = c(print)",
    "c = torch.no_grad()\ny = sorted([2, 1], key=c)",
    "x = torch.no_grad()(print)",
    "a = torch.ones(1, requires_grad=True)\nb = a * 2\nf = b.grad_fn\nx = f(a)",
    "a = torch.ones(1, requires_grad=True)\nb = a * 2\nx = b.grad_fn(a)",
    "a = torch.ones(1, requires_grad=True)\nt = type((a * 2).grad_fn)\nx = t(2)",
    "a = torch.ones(1)\nx = type(a)(2)",
    "x = list(map(sorted, [1]))",
    "x = torch.Tensor(print)",
    "x = (lambda: 1)()",
]


@pytest.mark.parametrize("src", CALLABLES)
def test_callables_are_never_passed_stored_or_called_indirectly(src: str, guard: Path) -> None:
    refused(src)


STRING_FORMATTING = [
    'x = "{0.__class__}".format(torch.ones(1))',
    'f = "{0.__globals__}"\nx = f.format(print)',
    'x = str.format("{}", 1)',
    'a = torch.ones(1)\nx = f"{a.__class__}"',
    'x = f"{().__class__.__base__}"',
    'x = f"{torch}"',
    'x = f"{sorted}"',
    'x = f"{sorted!r}"',
    'x = f"{torch.ones}"',
    'x = f"{1:{print}}"',
    'x = "%s" % torch',
    'x = "%s" % (torch,)',
    'x = "%r" % print',
    'x = "%s" % torch.ones',
    'x = "%(a)s" % {"a": print}',
    'x = "%s" % [print]',
    'x = "".join([print])',
    'x = "%s" % torch.ones(1)',
]


@pytest.mark.parametrize("src", STRING_FORMATTING)
def test_string_formatting_escapes(src: str, guard: Path) -> None:
    refused(src)


def test_refusals_point_at_the_statement(guard: Path) -> None:
    exc = refused("x = 1\ny = 2\nz = torch.load('x.pt')")
    assert isinstance(exc, ScriptRejected)
    assert (exc.line, exc.column) == (3, 5)
    step = refused("x = 1\nf = sorted")
    assert isinstance(step, Step)
    assert step.line == 2 and step.error is not None
    assert step.error.type == "NotAllowedError"


def test_a_refused_script_runs_nothing(guard: Path) -> None:
    # The refusal is for the whole script: the print on line 1 never runs.
    with pytest.raises(ScriptRejected):
        run_source('print("ran")\nimport torch.hub')


# --- resource limits -------------------------------------------------------------------

HUGE_TENSORS = [
    "x = torch.ones(100000, 100000)",
    "x = torch.empty(2**40)",
    "x = torch.zeros((10**6, 10**6), dtype=torch.float64)",
    "x = torch.zeros(size=(10**6, 10**6))",
    "x = torch.full((10**5, 10**5), 1.0)",
    "x = torch.randn(10**11)",
    "x = torch.rand(10**6, 10**6)",
    "x = torch.randint(0, 9, (10**6, 10**6))",
    "x = torch.normal(0.0, 1.0, (10**5, 10**4))",
    "x = torch.normal(2.0, 3.0, size=(10**5, 10**4))",
    "x = torch.arange(10**11)",
    "x = torch.linspace(0, 1, 10**11)",
    "x = torch.eye(10**6)",
    "x = torch.Tensor(10**11)",
    "x = torch.FloatTensor(10**6, 10**6)",
    "x = torch.empty_strided((10**6, 10**6), (1, 1))",
    "a = torch.ones(2)\nx = a.new_zeros(10**11)",
    "a = torch.ones(2)\nx = a.new_full((10**6, 10**6), 2.0)",
    "a = torch.ones(1)\na.resize_(10**11)",
    "x = torch.ones(10**5).repeat(10**5)",
    "x = torch.ones(10**5).repeat_interleave(10**6)",
    "x = torch.ones(10**5).tile((10**5,))",
    "a = torch.ones(10**5)\nx = a[:, None] * a",
    "a = torch.ones(10**5)\nx = a[:, None] + a[None, :]",
    "a = torch.ones(10**5, 1)\nx = a @ a.T",
    "a = torch.ones(10**5, 1)\nx = torch.mm(a, a.T)",
    "a = torch.ones(10**5)\nx = torch.outer(a, a)",
    "x = torch.ones(1).expand(10**6, 10**6).contiguous()",
    "x = torch.nn.functional.pad(torch.ones(1), (0, 10**9))",
    "x = torch.nn.functional.pad(torch.ones(2, 2), (0, 10**5, 10**4, 0))",
    "a = torch.ones(31623)\nx = torch.tensordot(a, a, dims=0)",
    "a = torch.ones(31623, 2)\nx = torch.tensordot(a, a, dims=([1], [1]))",
    "import torch.nn.functional as F\nx = F.embedding(torch.zeros(10**4, dtype=torch.long), torch.ones(1, 10**5))",
    "import torch.nn.functional as F\ni = torch.zeros(10**4, dtype=torch.long)\n"
    "x = F.embedding(input=i, weight=torch.ones(1, 10**5))",
    "x = torch.nn.functional.pad(input=torch.ones(1), pad=(0, 10**9))",
    "x = torch.nn.functional.interpolate(torch.ones(1, 1, 10), scale_factor=10**8)",
    "x = torch.nn.functional.interpolate(torch.ones(1, 1, 2, 2), size=(10**5, 10**4))",
    "x = torch.nn.functional.interpolate(torch.ones(1, 1, 2), scale_factor=float('inf'))",
    "x = torch.nn.functional.interpolate(torch.ones(1, 1, 10), scale_factor=torch.tensor(5 * 10**7),"
    " recompute_scale_factor=True)",
    "import numpy as np\nk = np.array([5 * 10**7])[0]\n"
    "x = torch.nn.functional.interpolate(torch.ones(1, 1, 10), scale_factor=k)",
    "x = torch.nn.functional.interpolate(torch.ones(0, 1, 10), scale_factor=5 * 10**7, mode='linear')",
    "a = torch.ones(31623)\nx = torch.tensordot(a, b=a, dims=([], []))",
    # the same calls spelled through the class: torch.Tensor.method(tensor, ...)
    "a = torch.ones(2)\nx = torch.Tensor.new_zeros(a, 2**62)",
    "a = torch.ones(2)\nx = torch.Tensor.new_empty(a, 2**62)",
    "a = torch.ones(2)\nx = torch.Tensor.new_full(a, (2**62,), 1.0)",
    "a = torch.ones(2)\nx = torch.Tensor.repeat(a, 10**6, 10**6)",
]


@pytest.mark.parametrize("src", HUGE_TENSORS)
def test_huge_tensors_are_refused_before_allocating(src: str, guard: Path) -> None:
    start = time.perf_counter()
    step = limit_step(src)
    assert time.perf_counter() - start < 2.0
    assert step.error is not None and "element" in step.error.message
    for record in step.tensors.values():
        assert math_prod(record.shape) <= Limits().max_elements


def math_prod(shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def test_tensor_growth_in_a_loop_hits_the_element_limit(guard: Path) -> None:
    limits = Limits(max_elements=100_000)
    trace = run_source("x = torch.ones(1000)\nfor i in range(100):\n    x = torch.cat([x, x])", limits=limits)
    step = trace.steps[-1]
    assert step.error is not None and step.error.type == "LimitExceeded"
    assert len(trace.steps) < 20
    assert max(math_prod(s.tensors["x"].shape) for s in trace.steps) <= limits.max_elements


def test_tensor_growth_in_a_loop_hits_the_default_limit(guard: Path) -> None:
    start = time.perf_counter()
    step = limit_step("x = torch.ones(1000)\nfor i in range(100):\n    x = torch.cat([x, x])")
    assert time.perf_counter() - start < 10.0
    assert math_prod(step.tensors["x"].shape) <= Limits().max_elements


def test_many_tensors_hit_the_byte_limit(guard: Path) -> None:
    limits = Limits(max_bytes=10**7)
    trace = run_source("l = []\nfor i in range(100):\n    l.append(torch.ones(10**6))", limits=limits)
    step = trace.steps[-1]
    assert step.error is not None and step.error.type == "LimitExceeded"
    assert "bytes" in step.error.message
    assert len(trace.steps) <= 4


BIG_PYTHON_VALUES = [
    "x = 10 ** 10 ** 10",
    "x = 2 ** 10 ** 8",
    "x = 7\nx **= 10**9",
    "x = 1 << 10 ** 9",
    "x = (1 << 60000) * (1 << 60000)",
    "x = 1 << 60000\ny = x * x",
    'x = "a" * 10**10',
    'x = 10**10 * "a"',
    'x = b"a" * 10**10',
    "x = [0] * 10**10",
    "x = (0,) * 10**10",
    'x = "a" * 10**6\nx = x + x',
    'x = "a" * 10**6\nx += x',
    "x = [0] * 10**6\nx += x",
    "x = [0] * 10**6\nx *= 10**6",
    "x = list(range(10**9))",
    "x = tuple(range(10**9))",
    "x = sorted(range(10**9))",
    "x = [*range(10**9)]",
    "x = sum(range(10**9))",
    "x = max(range(10**9))",
    "x = dict(enumerate(range(10**9)))",
    "x = list(zip(range(10**9)))",
    "x = list(reversed(range(10**9)))",
    "x = torch.arange(10**7).tolist()",
    'x = f"{1:>100000000}"',
    'x = f"{1.5:.100000000f}"',
]


@pytest.mark.parametrize("src", BIG_PYTHON_VALUES)
def test_big_python_values_are_refused_fast(src: str, guard: Path) -> None:
    start = time.perf_counter()
    limit_step(src)
    assert time.perf_counter() - start < 2.0


def test_round_with_a_huge_negative_ndigits_is_limited(guard: Path) -> None:
    # round(1, -n) computes 10**n internally: an integer far past --max-int-bits
    # (with n = 10**9 the single C call runs for minutes and only the hard watchdog ends it).
    start = time.perf_counter()
    limit_step("x = round(1, -10**6)")
    assert time.perf_counter() - start < 2.0


def test_step_limit_stops_a_long_loop(guard: Path) -> None:
    start = time.perf_counter()
    trace = run_source("for i in range(10**9):\n    x = i", limits=Limits(max_steps=50))
    assert time.perf_counter() - start < 5.0
    assert len(trace.steps) == 51
    step = trace.steps[-1]
    assert step.error is not None and step.error.type == "LimitExceeded"
    assert "--max-steps" in step.error.message
    assert trace.summary is not None and trace.summary.stopped_by == "max_steps"


def test_iteration_limit_stops_a_loop_without_steps(guard: Path) -> None:
    trace = run_source("for i in range(10**9):\n    pass", limits=Limits(max_iterations=1000))
    step = trace.steps[-1]
    assert step.error is not None and step.error.type == "LimitExceeded"
    assert "iterations" in step.error.message


def test_output_limit(guard: Path) -> None:
    step = limit_step('for i in range(100):\n    print("a" * 100)', Limits(max_output=1000))
    assert step.error is not None and "print" in step.error.message


DEEP_NESTING = [
    "x = " + "(1 + " * 200 + "1" + ")" * 200,
    "x = " + "-" * 200 + "1",
    "x = " + "~" * 200 + "1",
    "x = " + "not " * 300 + "1",
    "x = " + "[" * 150 + "]" * 150,
    "x = " + "{1: " * 150 + "1" + "}" * 150,
    "x = " + "(" * 500 + "1" + ")" * 500,
    "x = " + "-" * 100_000 + "1",
    "x = " + "+1" * 100_000,
    "x = 1" + " if 1 else 1" * 500,
    "x = torch.ones(1)" + ".T" * 500,
    "x = [1]" + "[0]" * 500,
    "x = " + "abs(" * 150 + "1" + ")" * 150,
    "".join(" " * i + "if 1:\n" for i in range(120)) + " " * 120 + "x = 1",
]


@pytest.mark.parametrize("src", DEEP_NESTING, ids=range(len(DEEP_NESTING)))
def test_deeply_nested_scripts_are_refused(src: str, guard: Path) -> None:
    start = time.perf_counter()
    with pytest.raises(ScriptRejected) as info:
        run_source(src)
    assert time.perf_counter() - start < 2.0
    assert info.value.line is not None and info.value.line >= 1
    assert info.value.column is not None and info.value.column >= 1


def test_timeout_ends_a_python_level_loop(guard: Path) -> None:
    limits = Limits(timeout=0.5, max_steps=10**7, max_iterations=10**8)
    start = time.perf_counter()
    trace = run_source("for i in range(10**8):\n    x = i", limits=limits)
    assert time.perf_counter() - start < 4.0
    step = trace.steps[-1]
    assert step.error is not None and step.error.type == "TimeoutExceeded"
    assert trace.summary is not None and trace.summary.stopped_by == "timeout"
    assert torch.is_grad_enabled()
    # The alarm is disarmed: a later run in the same process is unaffected.
    later = run_source("x = 1\ny = 2")
    assert [s.status for s in later.steps] == ["ok", "ok"]


def test_timeout_ends_a_loop_that_makes_no_steps(guard: Path) -> None:
    limits = Limits(timeout=0.5, max_steps=10**7, max_iterations=10**8)
    start = time.perf_counter()
    trace = run_source("for i in range(10**4):\n    for j in range(10**4):\n        pass", limits=limits)
    assert time.perf_counter() - start < 4.0
    step = trace.steps[-1]
    assert step.error is not None and step.error.type == "TimeoutExceeded"


def test_timeout_inside_no_grad_restores_grad_mode(guard: Path) -> None:
    limits = Limits(timeout=0.3, max_steps=10**7, max_iterations=10**8)
    trace = run_source("with torch.no_grad():\n    for i in range(10**8):\n        x = i", limits=limits)
    assert trace.steps[-1].error is not None
    assert trace.steps[-1].error.type == "TimeoutExceeded"
    assert torch.is_grad_enabled()


BROKEN_TENSORS = [
    # A failed resize_ leaves the tensor's sizes changed but its storage as it was.
    "a = torch.ones(2)\nb = a.numpy()\na.resize_(1000)",
    "a = torch.ones(2)\nb = a.numpy()\na.resize_(6)",
    "a = torch.ones(4)\na.resize_(-1)",
    "a = torch.ones(2)\ntorch.Tensor.resize_(a, 2**62)",
]


@pytest.mark.parametrize("src", BROKEN_TENSORS)
def test_a_tensor_left_inconsistent_by_a_failed_op_is_an_error_step(src: str, guard: Path) -> None:
    # torch itself raises (or tcopy's size check refuses first); tcopy must report that as
    # the step's error, not crash while observing the damaged tensor (nor read past the end
    # of its storage).
    # A resize_ of memory that can't grow (shared with NumPy) is refused before torch runs it.
    step = refused(src)
    assert isinstance(step, Step)
    assert step.error is not None
    assert step.error.type in ("RuntimeError", "SystemError", "LimitExceeded", "NotAllowedError")


# --- amplification: one allowed-size value turned into a huge one --------------------

STRING_AMPLIFIERS = [
    "s = 'a' * 4000\nt = s.replace('a', s)",
    "s = 'a' * 4000\nt = ''.join([s] * 4000)",
    "s = 'a' * 4000\nt = s.join([s] * 4000)",
    "x = '%*d' % (16 * 10**6, 1)",
    "x = '%16000000d' % 1",
    "s = 'a' * 4000\nm = [s] * 4000\nt = str(m)",
    "s = 'a' * 4000\nm = [s] * 4000\nprint(m)",
    "s = 'a' * 4000\nm = [s] * 4000\nt = f'{m}'",
]


@pytest.mark.parametrize("src", STRING_AMPLIFIERS)
def test_strings_are_refused_before_they_are_built(src: str, guard: Path) -> None:
    # Each of these builds a 16 MB string from values within a 4,000-character limit.
    limits = Limits(max_str_len=4000, max_iterations=4000, max_output=4000)
    tracemalloc.start()
    try:
        step = limit_step(src, limits)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert step.error is not None
    assert peak < 8_000_000, f"built {peak:,} bytes before refusing"


CONTAINER_AMPLIFIERS = [
    "l = [0] * 1000\nfor i in range(10):\n    l.extend(l)",
    "l = []\nl.extend(range(10**6))",
    "x = sum([[0] * 100] * 1000, [])",
    "n = torch.zeros(5000).numpy()\nx = n.tolist()",
    "a = torch.zeros(5000)\nx = torch.Tensor.tolist(a)",
]


@pytest.mark.parametrize("src", CONTAINER_AMPLIFIERS)
def test_lists_are_held_to_the_limits(src: str, guard: Path) -> None:
    limit_step(src, Limits(max_str_len=1000, max_iterations=1000))


TENSOR_AMPLIFIERS = [
    "a = torch.ones(1, 1000)\ni = torch.zeros(1000, dtype=torch.long)\nb = a[i]",
    "a = torch.ones(100)\nb = a[[0] * 20000]",
    "a = torch.ones(100, 100)\nb = a[[0] * 1000]",
    "x = torch.diag(torch.ones(1000))",
    "x = torch.ones(1000).diag_embed()",
    "x = torch.diagflat(torch.ones(1000))",
    "x = torch.bincount(torch.tensor([10**6]))",
    "x = torch.combinations(torch.arange(100), r=3)",
    "a = torch.ones(1000)\nx = torch.einsum('i,j->ij', a, a)",
    "x = torch.histc(torch.ones(2), bins=10**6)",
    "x = torch.ones(100).expand(1000, 100).contiguous()",
    "x = torch.cartesian_prod(torch.arange(1000), torch.arange(1000))",
    "x = torch.vander(torch.ones(1000))",
    "x = torch.kron(torch.ones(100, 100), torch.ones(10, 10))",
    "x = torch.tril_indices(1000, 1000)",
    "x = torch.block_diag(torch.ones(100, 100), torch.ones(100, 100))",
    "a = torch.ones(10, 1000)\nb = a.unfold(1, 10, 1)",
    "x = torch.multinomial(torch.ones(2), 10**6, replacement=True)",
]


@pytest.mark.parametrize("src", TENSOR_AMPLIFIERS)
def test_every_way_to_make_a_tensor_is_held_to_the_element_limit(src: str, guard: Path) -> None:
    limits = Limits(max_elements=10_000)
    trace = run_source(src, limits=limits)
    step = trace.steps[-1]
    assert step.error is not None and step.error.type == "LimitExceeded", [
        (name, math_prod(r.shape)) for name, r in step.tensors.items()
    ]
    for s in trace.steps:
        for record in s.tensors.values():
            assert math_prod(record.shape) <= limits.max_elements


def test_numpy_arrays_are_held_to_the_limits(guard: Path) -> None:
    # NumPy arithmetic allocates outside torch: an outer product of two 1000-element arrays.
    limits = Limits(max_elements=10_000, max_bytes=1_000_000)
    step = limit_step("n = torch.ones(1000).numpy()\nm = n[:, None] * n", limits)
    assert "m" not in step.arrays


def test_observing_nested_containers_stays_cheap(guard: Path) -> None:
    # Three lists of 100 items, nested: the observer must not visit 100**3 items after
    # a step (with 1000 instead of 100, one step would take the better part of an hour).
    src = "l = [0] * 100\nm = [l] * 100\nk = [m] * 100"
    start = time.perf_counter()
    trace = run_source(src)
    elapsed = time.perf_counter() - start
    assert [s.status for s in trace.steps] == ["ok"] * 3
    assert elapsed < 0.25, f"{elapsed:.2f} s for three steps"


# --- through the command line --------------------------------------------------------

CLI_SAMPLES = [
    "x = ().__class__.__bases__[0].__subclasses__()",
    "a = torch.ones(1, requires_grad=True)\nb = a * 2\ns = b.grad_fn._saved_unknown",
    'f = open("pwned.txt", "w")',
    "import os\nos.system('touch pwned')",
    "import torch as os\nos.system('touch pwned')",
    'T = torch\nT.save(T.ones(1), "pwned.pt")',
    'a = torch.ones(2)\na.numpy().tofile("pwned.bin")',
    "a = torch.ones(1, requires_grad=True)\na.register_hook(sorted)",
    "f = torch.ones\nf(2)",
    "x = sorted([3, 1], key=sorted)",
    'x = "{0.__class__}".format(torch.ones(1))',
    'x = "%s" % torch',
    "x = torch.ones(100000, 100000)",
    "x = torch.empty(2**40)",
    "x = 10 ** 10 ** 10",
    '"a" * 10**10',
    "x = list(range(10**9))",
    "x = " + "-" * 200 + "1",
    "a = torch.ones(2)\nb = a.numpy()\na.resize_(1000)",
]


@pytest.mark.parametrize("fmt", ["table", "json"])
@pytest.mark.parametrize("src", CLI_SAMPLES)
def test_cli_exits_1_without_a_traceback(src: str, fmt: str, guard: Path) -> None:
    result = CliRunner().invoke(app, ["run", "-e", src, "--format", fmt, "--no-color"])
    assert result.exit_code == 1, result.output
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    if fmt == "json":
        events = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
        assert events[0]["event"] == "start"
        assert events[-1]["event"] == "end" and events[-1]["status"] == "error"


def test_cli_step_limit_and_timeout(guard: Path) -> None:
    runner = CliRunner()
    loop = "for i in range(10**9):\n    x = i"
    result = runner.invoke(app, ["run", "-e", loop, "--max-steps", "20", "--format", "json"])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    steps = [e for e in map(json.loads, result.stdout.splitlines()) if e["event"] == "step"]
    assert len(steps) == 21 and steps[-1]["error"]["type"] == "LimitExceeded"
    args = ["run", "-e", loop, "--timeout", "0.5", "--max-steps", "10000000", "--max-iterations", "100000000"]
    start = time.perf_counter()
    result = runner.invoke(app, [*args, "--format", "json"])
    # The worker's start-up (importing torch, seconds on a busy machine) is not part of
    # --timeout; the loop itself would run for hours.
    assert time.perf_counter() - start < 30.0
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    last = [e for e in map(json.loads, result.stdout.splitlines()) if e["event"] == "step"][-1]
    assert last["error"]["type"] == "TimeoutExceeded"


def test_cli_subprocess_refuses_escapes(tmp_path: Path) -> None:
    # One real process: nothing written, no traceback, exit status 1.
    script = tmp_path / "escape.py"
    script.write_text("import os\nos.system('touch pwned')\n")
    for args in ([str(script)], ["-e", "f = sorted\nf('x')"]):
        proc = subprocess.run(
            [sys.executable, "-m", "tcopy_cli", "run", *args, "--no-color"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "NO_COLOR": "1"},
        )
        assert proc.returncode == 1, proc.stderr
        assert "Traceback" not in proc.stdout + proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["escape.py"]
