"""The argument check reaches every item at every depth, and only values a script may
hold can become text (f-strings, str, %)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch
from sandbox_guard import guarded, refused

from tcopy_cli.errors import NotAllowedError
from tcopy_cli.script import sandbox
from tcopy_cli.trace import run_source
from tcopy_cli.trace.records import Step

# A graph node and a grad-mode context manager: a script may hold and print them, but
# they are callable, so they may not be handed to code that could call them.
NODE = "a = torch.ones(2, requires_grad=True)\ng = (a * 2).grad_fn\n"
CM = "g = torch.no_grad()\n"

DEEP_CALLABLES = [
    NODE + "t = torch.tensor([[[[g]]]])",
    NODE + "t = torch.tensor([[[[[[[[g]]]]]]]])",
    NODE + "items = [0] * 1500 + [g]\nt = torch.tensor(items)",
    NODE + "items = [[0] * 1500 + [g]]\nt = sorted(items)",
    NODE + "t = sorted([{g: 1}])",
    NODE + "t = max([({'k': [g]},)])",
    NODE + "s = {g}\nt = list([s])",
    CM + "t = torch.tensor([[[[g]]]])",
    CM + "t = torch.cat([[[[g]]]])",
    NODE + "import torch.nn as nn\nm = nn.Sequential(*[nn.Linear(1, 1)] * 3)\nt = m([[[[g]]]])",
    NODE + "import copy\nc = copy.deepcopy([[[[[g]]]]])",
]


@pytest.mark.parametrize("src", DEEP_CALLABLES)
def test_callables_are_refused_at_any_depth_and_position(src: str, tmp_path: Path) -> None:
    with guarded(tmp_path):
        step = refused(src)
    assert isinstance(step, Step) and step.error is not None
    assert step.error.type == "NotAllowedError", step.error
    assert "can't be" in step.error.message


def test_a_cyclic_list_is_checked_once(tmp_path: Path) -> None:
    with guarded(tmp_path):
        trace = run_source("a = [1, 2]\na.append(a)\nn = len([a, a])\nprint(n)")
    assert trace.steps[-1].stdout == "2\n"


def test_the_check_costs_little_on_large_plain_data() -> None:
    data = [[float(i)] * 10 for i in range(100_000)]
    start = time.perf_counter()
    sandbox.check_value(data, strict=True)
    assert time.perf_counter() - start < 5.0
    assert torch.tensor(data).shape == (100_000, 10)


TEXT_OF_TCOPY_VALUES = [
    "s = f'{torch.ones}'",
    "s = f'{torch}'",
    "s = f'{torch.ones!r}'",
    "s = str(torch)",
    "s = str(torch.nn)",
    "s = '%s' % torch.ones",
    "s = '%r' % (torch,)",
    "import math\ns = f'{math.sqrt}'",
    "s = f'{sorted}'",
    "s = str([sorted])",
]


@pytest.mark.parametrize("src", TEXT_OF_TCOPY_VALUES)
def test_tcopy_values_never_become_text(src: str, tmp_path: Path) -> None:
    with guarded(tmp_path):
        step = refused(src)
    if isinstance(step, Step):
        assert step.error is not None and step.error.type == "NotAllowedError", step.error


@pytest.mark.parametrize(
    "value",
    [
        [1, [2, [3, [sandbox.SafeFunction("print", print)]]]],
        {"k": {"j": sandbox.ModuleProxy("torch", {})}},
        ({sandbox.SafeFunction("sorted", sorted): 1},),
        frozenset({sandbox.SuperProxy(torch.nn.Module())}),
    ],
)
def test_text_check_reaches_nested_values(value: object) -> None:
    with pytest.raises(NotAllowedError, match="shown as text"):
        sandbox.check_text(value)


def test_values_a_script_may_hold_still_print_like_python(tmp_path: Path) -> None:
    a = torch.ones(2, requires_grad=True)
    formatted = "%s-%d" % ("v", 3)  # noqa: UP031 - the script uses % formatting
    expected = f"{[[[[1.5]]]]} {[a.shape]} {(1, 'x')!s} {formatted}\n"
    with guarded(tmp_path):
        trace = run_source(
            "a = torch.ones(2, requires_grad=True)\n"
            'print(f\'{[[[[1.5]]]]} {[a.shape]} {str((1, "x"))} {"%s-%d" % ("v", 3)}\')'
        )
    assert trace.steps[-1].stdout == expected
