"""Routes an independent review of the sandbox found to raw memory and to tcopy's own objects.

- ``cdata=`` on the legacy constructors (``x.new``, ``torch.Tensor``) takes a raw address.
- A module entry registered under a dunder name (``add_module("__deepcopy__", m)``, a
  ``ModuleDict`` key) is what ``copy.deepcopy`` and NumPy look up on the instance: deepcopy
  would call it with its memo (real ids, and the modules' private state dicts), NumPy would
  trust an ``__array_interface__`` with any address.
- A module passed to NumPy or a tensor factory.
- ``d |= x`` / ``l += x`` merge x's items into a container: data only, as ``d.update(x)``.

Each must end in a refusal or an error step (``sandbox_guard.refused``); the module lookup
guard is checked against the lookup plain torch does.
"""

from __future__ import annotations

import copy

import pytest
import torch
from sandbox_guard import refused

from tcopy_cli.script.sandbox import guard_module_lookup
from tcopy_cli.trace import run_source

GRAB = (
    "import torch\nimport torch.nn as nn\nimport copy\n"
    "class Grab(nn.Module):\n    def forward(self, memo):\n        print('memo', len(memo))\n        return None\n"
)


@pytest.mark.parametrize(
    "src",
    [
        "import torch\nx = torch.zeros(4)\ny = x.new(cdata=4096)",
        "import torch\ny = torch.Tensor(cdata=64)",
        "import torch\ny = torch.FloatTensor(cdata=0)",
        "import torch\nx = torch.zeros(4)\ny = torch.Tensor.new(x, cdata=0)",
    ],
)
def test_cdata_is_refused(src: str) -> None:
    step = refused(src)
    assert "cdata" in str(getattr(step, "error", None) or step)


@pytest.mark.parametrize(
    "call",
    [
        "holder.add_module('__deepcopy__', Grab())",
        "holder.register_buffer('__array_interface__', torch.ones(1))",
        "holder.register_parameter('__array__', nn.Parameter(torch.ones(1)))",
        "holder.add_module('_hidden', Grab())",
    ],
)
def test_registering_a_name_with_an_underscore_is_refused(call: str) -> None:
    step = refused(GRAB + f"holder = nn.Linear(1, 1)\n{call}")
    assert "starts with '_'" in str(getattr(step, "error", None) or step)


def test_deepcopy_never_calls_a_module_registered_under_its_protocol_name() -> None:
    trace = run_source(GRAB + "md = nn.ModuleDict({'__deepcopy__': Grab()})\nc = copy.deepcopy([md])\nprint('done')")
    assert "".join(s.stdout for s in trace.steps) == "done\n"  # Grab.forward never saw the memo


def test_the_module_lookup_guard_only_hides_dunder_entries() -> None:
    guard_module_lookup()
    md = torch.nn.ModuleDict({"__deepcopy__": torch.nn.Identity(), "body": torch.nn.Identity()})
    assert isinstance(md.body, torch.nn.Identity)  # ordinary names still answer
    with pytest.raises(AttributeError):
        md.__deepcopy__  # noqa: B018
    assert isinstance(copy.deepcopy(md), torch.nn.ModuleDict)  # deepcopy by state, not through the entry


@pytest.mark.parametrize(
    "call",
    ["np.asarray(m)", "np.array([m])", "torch.as_tensor(m)", "torch.tensor(m)", "torch.asarray(m)"],
)
def test_a_module_is_no_array(call: str) -> None:
    step = refused(f"import torch\nimport numpy as np\nimport torch.nn as nn\nm = nn.Linear(1, 1)\nx = {call}")
    assert "module" in str(getattr(step, "error", None) or step)


@pytest.mark.parametrize("op", ["d |= {'n': y.grad_fn}", "l += [y.grad_fn]", "l += [[y.grad_fn]]"])
def test_an_in_place_merge_takes_what_a_method_call_takes(op: str) -> None:
    """A graph node may be held, but not passed to code (d.update(...), l.extend(...)): nor merged."""
    head = "import torch\nx = torch.ones(1, requires_grad=True)\ny = x * 2\nd = {}\nl = []\n"
    as_method = op.replace("d |= ", "d.update(").replace("l += ", "l.extend(") + ")"
    assert "can't be passed" in str(refused(head + as_method).error)
    assert "can't be passed" in str(refused(head + op).error)
    data = run_source(head + op.replace("y.grad_fn", "y.item()"))
    assert data.summary is not None and data.summary.status == "ok"  # merging data still runs
