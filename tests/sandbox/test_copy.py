"""copy/deepcopy can't hand a script tcopy's own objects: no memo, and tcopy's objects
refuse to be copied or pickled."""

from __future__ import annotations

import copy
import inspect
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
from sandbox_guard import guarded, refused

from tcopy_cli.errors import NotAllowedError
from tcopy_cli.limits import Limits
from tcopy_cli.script import sandbox
from tcopy_cli.script.functions import ScriptCallable
from tcopy_cli.script.interp import Interpreter
from tcopy_cli.script.parse import parse_script
from tcopy_cli.trace import run_source
from tcopy_cli.trace.records import Step

_HOOK = "a = torch.ones(2, requires_grad=True)\ndef hook(g):\n    return g\nh = a.register_hook(hook)\n"

MEMO_ATTACKS = [
    # The memo keeps every original deepcopy visits: through a hook handle that reaches
    # the interpreter, its limits and its allow-list tables.
    "import copy\n" + _HOOK + "memo = {}\nb = copy.deepcopy(h, memo)",
    "import copy\n" + _HOOK + "b = copy.deepcopy(h, memo={})",
    "import copy\n" + _HOOK + "args = [{}]\nb = copy.deepcopy(h, *args)",
    "import copy\n" + _HOOK + "kw = {'memo': {}}\nb = copy.deepcopy(h, **kw)",
    "import copy\na = torch.ones(2)\nmemo = {}\nb = copy.deepcopy(a, memo)",
    "import copy\nimport torch.nn as nn\nm = nn.Linear(2, 2)\nmemo = {}\nn = copy.deepcopy(m, memo)",
    "from copy import deepcopy\na = torch.ones(2)\nb = deepcopy(a, {})",
    "import copy\na = [1]\nb = copy.copy(a, {})",
]


@pytest.mark.parametrize("src", MEMO_ATTACKS)
def test_deepcopy_with_a_memo_is_refused(src: str, tmp_path: Path) -> None:
    with guarded(tmp_path):
        step = refused(src)
    assert isinstance(step, Step) and step.error is not None
    assert step.error.type == "NotAllowedError"
    assert "copy" in step.error.message


def test_the_memo_chain_from_the_report_cannot_reach_modules_or_limits(tmp_path: Path) -> None:
    # The reported chain: memo -> the interpreter -> a plain dict into _modules, and the
    # limits edited before allocating a huge tensor. The first link is refused, so no
    # later line runs and nothing past the limit is allocated.
    src = (
        "import copy\nimport torch.nn as nn\nm = nn.Linear(2, 2)\n" + _HOOK + "memo = {}\n"
        "c = copy.deepcopy(h, memo)\n"
        "stash = list(memo.values())\n"
        "big = torch.ones(1000000000)\n"
    )
    with guarded(tmp_path):
        trace = run_source(src)
    assert trace.steps[-1].source == "c = copy.deepcopy(h, memo)"
    assert trace.steps[-1].error is not None and trace.steps[-1].error.type == "NotAllowedError"
    assert trace.summary is not None and trace.summary.status == "error"


TCOPY_OBJECTS = [
    # Values a script may hold that are tcopy's own: copying them would copy the
    # interpreter (a script function's scopes, a hook's interpreter).
    ("def f():\n    return 1\n", "f"),
    ("f = lambda x: x\n", "f"),
    ("a = torch.ones(2)\n", "type(a)"),
    (_HOOK, "h"),
    ("import torch.nn as nn\nclass M(nn.Module):\n    def forward(self, x):\n        return x\n", "M"),
    ("def f():\n    return 1\n", "[1, [2, {'k': f}]]"),
]


# A shallow copy of a hook handle or of a list shares its items (tcopy's objects are not
# copied), so copy.copy is refused only for tcopy's objects themselves.
COPY_CASES = [("deepcopy", setup, expr) for setup, expr in TCOPY_OBJECTS] + [
    ("copy", *TCOPY_OBJECTS[i]) for i in (0, 1, 2, 4)
]


@pytest.mark.parametrize(("fn", "setup", "expr"), COPY_CASES)
def test_tcopy_objects_refuse_to_be_copied(fn: str, setup: str, expr: str, tmp_path: Path) -> None:
    src = "import copy\n" + setup + f"c = copy.{fn}({expr})"
    with guarded(tmp_path):
        step = refused(src)
    assert isinstance(step, Step) and step.error is not None
    assert step.error.type == "NotAllowedError" and "belongs to tcopy" in step.error.message


def _interpreter() -> Interpreter:
    class _Hook:
        def step(self, node: object, action: object) -> bool:  # pragma: no cover - unused
            return True

        def header(self, node: object, action: object) -> tuple[bool, object]:  # pragma: no cover
            return True, None

    return Interpreter(parse_script("x = 1"), Limits(), _Hook())  # type: ignore[arg-type]


def _sealed_instances() -> list[object]:
    interp = _interpreter()
    fn = sandbox.ScriptFunction("f", None, inspect.Signature(), [])
    return [
        sandbox.ModuleProxy("m", {}),
        sandbox.SafeFunction("print", print),
        sandbox.ClassProxy("int", int),
        sandbox.TypeView(int),
        fn,
        sandbox.ScriptClass("M", torch.nn.Module, frozenset()),
        sandbox.SuperProxy(torch.nn.Module()),
        interp,
        ScriptCallable(interp, fn),
    ]


@pytest.mark.parametrize("index", range(9))
def test_every_tcopy_object_refuses_copy_deepcopy_and_pickle(index: int) -> None:
    obj = _sealed_instances()[index]
    for action in (copy.copy, copy.deepcopy, pickle.dumps, lambda o: pickle.dumps(o, protocol=0)):
        with pytest.raises(NotAllowedError, match="belongs to tcopy"):
            action(obj)
    # Nested inside plain data, too.
    with pytest.raises(NotAllowedError):
        copy.deepcopy({"k": [obj]})


def test_a_tensor_with_a_script_hook_copies_like_plain_torch(tmp_path: Path) -> None:
    # torch's deepcopy of a leaf does not copy its hooks: the copy is a new leaf, values
    # equal, own memory, version 1 (plain torch's facts).
    a = torch.ones(2, requires_grad=True)
    a.register_hook(lambda g: g)
    b = copy.deepcopy(a)
    with guarded(tmp_path):
        trace = run_source("import copy\n" + _HOOK + "b = copy.deepcopy(a)")
    step = trace.steps[-1]
    assert step.status == "ok"
    rec = step.tensors["b"]
    assert rec.values == b.tolist()
    assert rec.is_leaf == b.is_leaf and rec.requires_grad == b.requires_grad
    assert rec.version == b._version
    assert rec.data_ptr != step.tensors["a"].data_ptr


def test_plain_deepcopy_and_copy_still_match_python(tmp_path: Path) -> None:
    data = {"a": [1, 2, [3]], "t": (4.5, "x")}
    with guarded(tmp_path):
        trace = run_source(
            "import copy\nd = {'a': [1, 2, [3]], 't': (4.5, 'x')}\ne = copy.deepcopy(d)\nf = copy.copy(d)\n"
            "d['a'][2].append(9)\nprint(e, f)"
        )
    expected_deep = copy.deepcopy(data)
    shallow = copy.copy(data)
    data["a"][2].append(9)  # type: ignore[union-attr]
    assert trace.steps[-1].stdout == f"{expected_deep} {shallow}\n"
    arr = np.arange(3)
    assert np.array_equal(copy.deepcopy(arr), arr)
