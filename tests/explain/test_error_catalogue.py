"""The error catalogue: every entry raised for real, by tcopy and by plain PyTorch.

Each case is a small script whose last statement fails. tcopy runs it in-process; the
test checks which entry explained the error and that the explanation names this
script's tensors, call and line (and, for errors caused earlier, the earlier line).
The same script runs under plain Python: it must raise the same type and message,
and the entry's pattern must match that message: the catalogue matches what the
installed torch really says.
"""

from __future__ import annotations

import copy
import re
import subprocess
import sys
import warnings
from dataclasses import dataclass

import pytest
from cli_runs import invoke

from tcopy_cli.explain.errors import CATALOGUE, catalogue_entry, explain_error
from tcopy_cli.pipeline import run_source

F_ = "import torch.nn.functional as F\n"
NN = "import torch.nn as nn\n"


@dataclass(frozen=True)
class Case:
    entry: str
    script: str
    says: tuple[str, ...]
    torch_only: bool = True  # the error comes from torch (not from tcopy's sandbox)


def case(entry: str, script: str, *says: str) -> object:
    return pytest.param(Case(entry, script, says), id=entry + ":" + script.splitlines()[-1].strip()[:30])


CASES = [
    # autograd
    case(
        "autograd.backward-twice",
        "w = torch.ones(3, requires_grad=True)\nloss = (w * w).sum()\nloss.backward()\nloss.backward()",
        "behind loss",
        "step 3 (line 3: loss.backward())",
        "line 3 as loss.backward(retain_graph=True)",
    ),
    case(
        "autograd.no-grad-fn",
        "x = torch.ones(3)\nw = torch.ones(3)\nloss = (x * w).sum()\nloss.backward()",
        "loss has no grad_fn",
        "made at line 3 (loss = (x * w).sum())",
        "None of x and w requires grad",
        "x.requires_grad_()",
    ),
    case(
        "autograd.no-grad-fn",
        "w = torch.ones(3, requires_grad=True)\nwith torch.no_grad():\n    loss = (w * 2).sum()\nloss.backward()",
        "from w, which requires grad",
        "line 3",
    ),
    case(
        "autograd.scalar-output",
        "w = torch.ones(3, requires_grad=True)\ny = w * 2\ny.backward()",
        "y has shape (3,)",
        "y.sum().backward()",
        "y.backward(torch.ones_like(y))",
    ),
    case(
        "inplace.leaf",
        "w = torch.ones(3, requires_grad=True)\nw.add_(1)",
        "w.add_(1) on line 2 writes into w",
        "made at line 1",
        "with torch.no_grad(): w.add_(1)",
        "w = w.add(1)",
    ),
    case("inplace.leaf", "w = torch.ones(3, requires_grad=True)\nw += 1", "w += 1 on line 2", "w = w + 1"),
    case(
        "inplace.view-of-leaf",
        "w = torch.ones(3, requires_grad=True)\nv = w[1:]\nv.mul_(2)",
        "v.mul_(2) on line 3 writes into v, a view of w",
        "made at line 2: v = w[1:]",
        "v = v.clone()",
    ),
    case(
        "inplace.version",
        "x = torch.ones(3, requires_grad=True)\ny = x.sigmoid()\nz = y * 3\ny.mul_(2)\nz.sum().backward()",
        "SigmoidBackward0 saved",
        "step 4 (line 4: y.mul_(2))",
        "line 4 as y = y.mul(2)",
        "on line 5",
    ),
    case(
        "inplace.version",
        "x = torch.ones(3, requires_grad=True)\nh = x * 1\ny = h.sin()\nh += 1\ny.sum().backward()",
        "line 4 as h = h + 1",
    ),
    case(
        "inplace.version",
        "x = torch.ones(4, requires_grad=True)\ny = x.sigmoid()\nv = y[:2]\nv.mul_(2)\ny.sum().backward()",
        "step 4 (line 4: v.mul_(2)) changed y",
        "line 4 as v = v.mul(2) (v shares y's memory",
    ),
    case(
        "inplace.overlap",
        "a = torch.ones(3)\nb = a.expand(2, 3)\nb.add_(1)",
        "b.add_(1) on line 3 writes into b",
        "stride 0 in dim 0",
        "made at line 2: b = a.expand(2, 3)",
        "b = b.clone()",
    ),
    case(
        "inplace.multi-output-view",
        "w = torch.ones(2, 3, requires_grad=True)\nh = w * 1\nu, v = h.unbind()\nu.mul_(2)",
        "u.mul_(2) on line 4 writes into u",
        "Unbind",
        "u = u.mul(2)",
    ),
    case(
        "inplace.no-grad-view",
        "w = torch.ones(2, 3, requires_grad=True)\nh = w * 1\nwith torch.no_grad():\n    v = h[0]\nv.mul_(2)",
        "into v",
        "made at line 4: v = h[0]",
    ),
    case(
        "inplace.detach-view", "a = torch.ones(2, 3)\nv = a[0]\nv.detach_()", "v.detach_() on line 3", "v = v.detach()"
    ),
    case(
        "inference.requires-grad",
        "with torch.inference_mode():\n    t = torch.ones(3)\nt.requires_grad_()",
        "t is an inference tensor",
        "made at line 2",
        "t = t.clone().requires_grad_()",
    ),
    case(
        "inference.saved",
        "w = torch.ones(3, requires_grad=True)\nwith torch.inference_mode():\n    t = torch.ones(3)\ny = w * t",
        "w * t on line 4 uses t",
        "made at line 3",
        "t = t.clone()",
    ),
    case(
        "inference.in-place",
        "with torch.inference_mode():\n    t = torch.ones(3)\nt.add_(1)",
        "t.add_(1) on line 3 writes into t",
        "t = t.clone()",
        # measured: plain torch also writes before it refuses (tests/explain/probes/inference.py)
        "It refused only after writing: t's values did change ([1., 1., 1.] → [2., 2., 2.])",
    ),
    case(
        "autograd.out-argument",
        "a = torch.ones(3, requires_grad=True)\no = torch.empty(3)\ntorch.add(a, 1, out=o)",
        "torch.add(a, 1, out=o) on line 3: a requires grad",
        "o = torch.add(a, 1)",
    ),
    case(
        "autograd.requires-grad-non-leaf",
        "w = torch.ones(2, requires_grad=True)\nh = w * 2\nh.requires_grad = False",
        "h is not a leaf: it has grad_fn MulBackward0",
        "on line 3",
        "h = h.detach()",
    ),
    case(
        "autograd.float-only",
        "a = torch.tensor([1, 2])\na.requires_grad_()",
        "a (int64)",
        "line 2",
        "a = a.float().requires_grad_()",
    ),
    case(
        "autograd.float-only",
        "a = torch.arange(3, requires_grad=True)",
        "on line 1 asks for gradients of a",
        "dtype=torch.float32",
    ),
    case(
        "autograd.unused-input",
        "a = torch.ones(2, requires_grad=True)\nb = torch.ones(2, requires_grad=True)\ny = (a * 2).sum()\n"
        "g = torch.autograd.grad(y, [a, b])",
        "y does not depend on b",
        "line 4",
        "allow_unused=True",
    ),
    case(
        "autograd.retain-grad",
        "a = torch.ones(2)\nh = a * 2\nh.retain_grad()",
        "h.retain_grad() on line 3",
        "h does not require grad",
    ),
    case(
        "autograd.gradient-shape",
        "a = torch.ones(2, requires_grad=True)\ny = a * 2\ny.backward(torch.ones(3))",
        "y.backward(torch.ones(3)) on line 3",
        "y has shape (2)",
        "torch.ones_like(y)",
    ),
    case(
        "autograd.grad-assign",
        "a = torch.ones(2, requires_grad=True)\na.grad = torch.ones(3)",
        "a is (2,) float32",
        "line 2",
        "torch.zeros_like(a)",
    ),
    case(
        "deepcopy.non-leaf",
        "import copy\nw = torch.ones(3, requires_grad=True)\nh = w * 2\nc = copy.deepcopy(h)",
        "h is a result of an operation (grad_fn MulBackward0)",
        "made at line 3",
        "h.detach().clone()",
    ),
    case(
        "numpy.requires-grad",
        "w = torch.ones(3, requires_grad=True)\nn = w.numpy()",
        "w.numpy() on line 2",
        "w.detach().numpy()",
    ),
    case(
        "numpy.device",
        "m = torch.ones(3, device='meta')\nn = m.numpy()",
        "m lives on the meta device",
        "m.cpu().numpy()",
    ),
    case(
        "grad.none",
        "w = torch.ones(2, requires_grad=True)\nh = w * 2\nh.sum().backward()\nh.grad.zero_()",
        "h.grad is None on line 4",
        "h is not a leaf",
        "h.retain_grad()",
    ),
    case(
        "grad.none",
        "w = torch.ones(2, requires_grad=True)\nw.grad.zero_()",
        "no backward() has reached w yet",
    ),
    # shapes
    case(
        "shape.matmul",
        "x = torch.ones(4, 3)\nw = torch.ones(2, 3)\ny = x @ w",
        "x @ w on line 3: x is (4, 3) and w is (2, 3)",
        "Did you mean x @ w.T?",
    ),
    case(
        "shape.matmul",
        "x = torch.ones(4, 3)\nw = torch.ones(5, 2)\ny = torch.mm(x, w)",
        "x is (4, 3) and w is (5, 2)",
        "x's last dim (3) to equal w's first dim (5)",
    ),
    case(
        "shape.matmul",
        NN + "lin = nn.Linear(5, 2)\nx = torch.ones(4, 3)\ny = lin(x)",
        "lin(x) on line 4",
        "lin.weight is (2, 5)",
        "x is (4, 3)",
        "nn.Linear(3, 2)",
    ),
    case(
        "shape.matmul",
        NN + "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.fc = nn.Linear(10, 2)\n\n    def forward(self, x):\n        return self.fc(x)\n\n\n"
        "net = Net()\nx = torch.ones(4, 8)\nout = net(x)",
        "self.fc(x) on line 8",
        "self.fc.weight is (2, 10)",
        "x is (4, 8)",
        "nn.Linear(8, 2)",
    ),
    case(
        "shape.matmul",
        "def f(x):\n    return x @ torch.ones(5, 5)\n\n\ny = f(torch.ones(2, 3))",
        "x @ torch.ones(5, 5) on line 2: x is (2, 3) and torch.ones(5, 5) is (5, 5)",
    ),
    case(
        "shape.broadcast",
        "x = torch.ones(3, requires_grad=True)\n(x * x).sum().backward()\nr = x.grad + torch.ones(4)",
        "x.grad + torch.ones(4) on line 3",
        "3 in x.grad and 4 in torch.ones(4)",
    ),
    case(
        "inplace.view-of-leaf",
        "def g(a):\n    b = a[1:]\n    b.mul_(2)\n    return b\n\n\nw = torch.ones(3, requires_grad=True)\nz = g(w)",
        "b.mul_(2) on line 3 writes into b, a view of a,",
        "made at line 2: b = a[1:]",
    ),
    case(
        "shape.matvec",
        "m = torch.ones(2, 3)\nv = torch.ones(4)\ny = m @ v",
        "m is (2, 3) and v is (4,)",
        "line 3",
    ),
    case(
        "shape.bmm",
        "a = torch.ones(2, 3, 4)\nb = torch.ones(2, 5, 6)\nc = torch.bmm(a, b)",
        "a is (2, 3, 4) and b is (2, 5, 6)",
        "line 3",
    ),
    case(
        "shape.dot",
        "a = torch.ones(3)\nb = torch.ones(4)\nc = torch.dot(a, b)",
        "a has 3 elements and b has 4",
        "line 3",
    ),
    case(
        "shape.broadcast",
        "a = torch.ones(3)\nb = torch.ones(4)\nc = a + b",
        "a + b on line 3: a is (3,) and b is (4,)",
        "a[:, None]",
    ),
    case(
        "shape.in-place-broadcast",
        "a = torch.ones(3)\nb = torch.ones(2, 3)\na.add_(b)",
        "a.add_(b) on line 3 writes its result into a",
        "a2 = a + b",
    ),
    case(
        "shape.view-stride",
        "a = torch.ones(2, 3)\nb = a.t()\nc = b.view(6)",
        "b.view(6) on line 3: b is (3, 2) with strides (1, 3)",
        "made at line 2: b = a.t()",
        "b.reshape(6)",
    ),
    case(
        "shape.invalid-size",
        "a = torch.ones(2, 3)\nc = a.view(4)",
        "a.view(4) on line 2: a is (2, 3), 6 elements",
        "a.view(-1)",
    ),
    case("shape.expand", "a = torch.ones(3)\nb = a.expand(2, 4)", "a.expand(2, 4) on line 2: a is (3,)", "a.repeat"),
    case(
        "shape.cat-dims",
        "a = torch.ones(2, 3)\nb = torch.ones(3)\nc = torch.cat([a, b])",
        "a is (2, 3), b is (3,)",
        "b.unsqueeze(0)",
        "line 3",
    ),
    case(
        "shape.cat-sizes",
        "a = torch.ones(2, 3)\nb = torch.ones(2, 4)\nc = torch.cat([a, b])",
        "b has 4 where 3 is expected",
        "dim=1",
        "line 3",
    ),
    case(
        "shape.stack",
        "a = torch.ones(2)\nb = torch.ones(3)\nc = torch.stack([a, b])",
        "a is [2] and b is [3]",
        "line 3",
    ),
    case("shape.dim-range", "a = torch.ones(2, 3)\ns = a.sum(dim=2)", "a is (2, 3), 2 dims", "line 2", "[-2, 1]"),
    case("shape.permute", "a = torch.ones(2, 3)\nb = a.permute(1, 0, 2)", "a is (2, 3)", "lists 3", "line 2"),
    case(
        "index.out-of-bounds",
        "a = torch.ones(3)\nb = a[5]",
        "a[5] on line 2: a is (3,)",
        "valid indices 0..2",
    ),
    case(
        "index.dtype",
        "a = torch.ones(3)\ni = torch.tensor([0.0, 1.0])\nb = a[i]",
        "i is float32",
        "i.long()",
        "line 3",
    ),
    case(
        "index.embedding",
        NN + "e = nn.Embedding(3, 2)\ni = torch.tensor([0, 5])\nv = e(i)",
        "e has 3 rows",
        "e.weight is (3, 2)",
        "line 4",
    ),
    # dtypes, devices, scalars
    case(
        "dtype.mismatch",
        "a = torch.ones(2, 2)\nb = torch.ones(2, 2, dtype=torch.float64)\nc = a @ b",
        "a is float32, b is float64",
        "b.to(a.dtype)",
        "line 3",
    ),
    case(
        "dtype.mismatch",
        NN + "lin = nn.Linear(2, 2)\nx = torch.ones(3, 2, dtype=torch.float64)\ny = lin(x)",
        "x is float64, lin.weight is float32",
        "x.to(torch.float32)",
        "line 4",
    ),
    case(
        "dtype.mismatch",
        NN + "conv = nn.Conv1d(1, 1, 2)\nx = torch.ones(1, 1, 4, dtype=torch.float64)\ny = conv(x)",
        "x is float64, conv.weight is float32",
        "line 4",
    ),
    case(
        "dtype.cast",
        "a = torch.ones(2, dtype=torch.long)\na.add_(0.5)",
        "a.add_(0.5) on line 2 writes a Float result into a, which is int64",
        "a = a.add(0.5)",
    ),
    case(
        "dtype.float-only",
        "a = torch.tensor([1, 2])\nm = a.mean()",
        "a.mean() on line 2: a is int64",
        "a.float().mean()",
    ),
    case("dtype.float-only", "a = torch.tensor([1, 2])\ns = a.softmax(0)", "a is int64", "a.float().softmax(0)"),
    case(
        "device.mismatch",
        "a = torch.ones(2, device='meta')\nb = torch.ones(2)\nc = a + b",
        "a is on meta, b is on cpu",
        "b = b.to(a.device)",
        "line 3",
    ),
    case("scalar.item", "a = torch.ones(2)\nb = a.item()", "a.item() on line 2: a has 2 elements", "a.sum().item()"),
    case("scalar.bool", "a = torch.ones(2)\nif a > 0:\n    b = 1", "from a > 0", "line 2", "(a > 0).all()"),
    case("scalar.python-number", "a = torch.ones(2)\nb = float(a)", "float(a) on line 2: a has shape (2,)"),
    # training
    case(
        "loss.target-dtype",
        F_ + "x = torch.ones(2, 3)\nt = torch.tensor([0.0, 1.0])\nloss = F.cross_entropy(x, t)",
        "t is float32 with shape (2,)",
        "t.long()",
        "line 4",
    ),
    case(
        "loss.multi-target",
        F_ + "x = torch.ones(2, 3)\nt = torch.tensor([[0, 1, 0], [1, 0, 0]])\nloss = F.cross_entropy(x, t)",
        "t is (2, 3) int64",
        "t.argmax(dim=1)",
        "t.float()",
        "line 4",
    ),
    case(
        "loss.batch-size",
        F_ + "x = torch.ones(2, 3)\nt = torch.tensor([0, 1, 2])\nloss = F.cross_entropy(x, t)",
        "x is (2, 3) (2 samples) but t is (3,)",
        "line 4",
    ),
    case(
        "loss.target-bounds",
        F_ + "x = torch.ones(2, 3)\nt = torch.tensor([0, 3])\nloss = F.cross_entropy(x, t)",
        "t contains 3",
        "3 classes, indices 0..2",
        "line 4",
    ),
    case(
        "loss.bce-range",
        F_ + "p = torch.tensor([1.5, 0.2])\nt = torch.tensor([1.0, 0.0])\nloss = F.binary_cross_entropy(p, t)",
        "p must hold probabilities",
        "binary_cross_entropy_with_logits(p",
        "line 4",
    ),
    case(
        "loss.bce-size",
        F_ + "p = torch.ones(3, 1) / 2\nt = torch.ones(3)\nloss = F.binary_cross_entropy(p, t)",
        "p is (3, 1) but t is (3,)",
        "p.squeeze(-1)",
    ),
    case(
        "loss.one-hot",
        F_ + "t = torch.tensor([0.0, 1.0])\nh = F.one_hot(t)",
        "t is float32",
        "F.one_hot(t.long())",
        "line 3",
    ),
    case(
        "optim.non-leaf",
        "w = torch.ones(2, requires_grad=True)\nv = w * 2\nopt = torch.optim.SGD([v], lr=0.1)",
        "v is not a leaf (v has grad_fn MulBackward0)",
        "made at line 2",
        "Did you mean w",
        "line 3",
    ),
    case(
        "optim.empty",
        NN + "m = nn.ReLU()\nopt = torch.optim.SGD(m.parameters(), lr=0.1)",
        "m has no parameters",
        "line 3",
    ),
    case("optim.empty", "opt = torch.optim.SGD([], lr=0.1)", "the parameter list [] is empty", "line 1"),
    case(
        "script.name",
        "a = torch.ones(2)\nb = a\ndel a\nc = a + 1",
        "a held a tensor from step 1 (line 1: a = torch.ones(2))",
    ),
]

# Entries about tcopy itself (limits, what the confined worker refuses), not about torch; the
# permission entries are raised for real by the confined worker in tests/cli/test_permissions.py.
TCOPY_ONLY = {"script.limit", "permission.denied", "permission.module", "permission.inside_torch"}


def _plain(script: str) -> BaseException | None:
    """Run ``script`` under plain Python and torch; the exception it raised, if any."""
    import torch

    namespace = {"torch": torch, "copy": copy}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            exec(compile(script, "<case>", "exec"), namespace)
        except Exception as exc:
            return exc
    return None


@pytest.mark.parametrize("c", CASES)
def test_entry_explains_this_script(c: Case) -> None:
    step = run_source(c.script).steps[-1]
    error = step.error
    assert error is not None, "the last statement must fail"
    assert catalogue_entry(error.type, error.message) == c.entry, (error.type, error.message)
    assert error.explained
    for phrase in c.says:
        assert phrase in error.explanation, f"{phrase!r} not in:\n{error.explanation}"


@pytest.mark.parametrize("c", CASES)
def test_pattern_matches_what_torch_raises(c: Case) -> None:
    exc = _plain(c.script)
    assert exc is not None, "plain Python did not fail"
    entry = next(e for e in CATALOGUE if e.id == c.entry)
    assert type(exc).__name__ in entry.types, type(exc).__name__
    assert entry.pattern.search(str(exc)), str(exc)
    tcopy = run_source(c.script).steps[-1].error
    assert tcopy is not None and tcopy.type == type(exc).__name__
    assert re.sub(r"\. Did you mean: .*$", "", tcopy.message) == str(exc)


@pytest.mark.parametrize("c", CASES)
def test_explains_from_the_message_alone(c: Case) -> None:
    """Without a script around it (the public explain_error), every entry still says something."""
    exc = _plain(c.script)
    assert exc is not None
    text = explain_error(type(exc).__name__, str(exc))
    assert text and "{" not in text


def test_non_leaf_grad_warning_names_the_tensor() -> None:
    script = "w = torch.ones(2, requires_grad=True)\nh = w * 2\nh.sum().backward()\ng = h.grad"
    notes = [n for n in run_source(script).steps[-1].explanations if n.kind == "warning.non-leaf-grad"]
    assert len(notes) == 1 and notes[0].tensors == ("h",)
    assert "Reading h.grad gives None: h is not a leaf (grad_fn MulBackward0)" in notes[0].text
    assert "h.retain_grad()" in notes[0].text


def test_every_entry_is_raised_by_a_case() -> None:
    tested = {p.values[0].entry for p in CASES}  # type: ignore[attr-defined]
    ids = [e.id for e in CATALOGUE]
    assert len(ids) == len(set(ids))
    assert set(ids) - TCOPY_ONLY <= tested, set(ids) - TCOPY_ONLY - tested
    assert len(set(ids) - TCOPY_ONLY - {"script.name"}) >= 30


def test_version_error_from_version_counters_alone() -> None:
    """Without the saved-tensor events, the step where the tensor's version moved is still found."""
    from tcopy_cli.engine import run_source as run_facts
    from tcopy_cli.explain import Explainer
    from tcopy_cli.explain.errors import explain_step_error

    script = "x = torch.ones(3, requires_grad=True)\nh = x * 1\ny = h.sin()\nh.add_(1)\ny.sum().backward()"
    steps = run_facts(script).steps
    explainer = Explainer([], explain_step_error)
    error = [explainer.explain(s) for s in steps][-1].error
    assert error is not None and error.explained
    assert "h has that shape and version, and step 4 (line 4: h.add_(1)) changed it" in error.explanation
    assert "line 4 as h = h.add(1)" in error.explanation


def test_an_unknown_error_keeps_its_message() -> None:
    step = run_source("a = torch.ones(2, 2)\nb = torch.linalg.inv(a[0])").steps[-1]
    assert step.error is not None and not step.error.explained
    assert "no further explanation" in step.error.explanation


# --- did you mean ------------------------------------------------------------------


def test_misspelled_name() -> None:
    step = run_source("tensor = torch.ones(2)\ny = tensr + 1").steps[-1]
    assert step.error is not None and step.error.type == "NameError"
    assert step.error.message == "name 'tensr' is not defined. Did you mean: 'tensor'?"
    assert "line 2" in step.error.explanation


def test_misspelled_module_name() -> None:
    step = run_source("x = torhc.ones(2)").steps[-1]
    assert step.error is not None and "Did you mean: 'torch'?" in step.error.message


@pytest.mark.parametrize(
    ("script", "suggestion"),
    [
        ("x = torch.ones(2, 3)\ny = x.tranpose(0, 1)", "Did you mean: 'transpose'?"),
        ("x = torch.ones(2, 3)\ny = x.shpe", "Did you mean: 'shape'?"),
        ("import torch.nn.functional as F\ny = F.rleu(torch.ones(2))", "Did you mean: 'rrelu'?"),
        ("from torch import nn\nm = nn.Flaten()", "Did you mean: 'Flatten'?"),
        ("import numpy as np\nn = np.lnspace(0, 1, 3)", "Did you mean: 'linspace'?"),
    ],
)
def test_misspelled_method_or_function(script: str, suggestion: str) -> None:
    # The message ends as plain Python's traceback ends it (Python adds the suggestion when it prints).
    step = run_source(script).steps[-1]
    assert step.error is not None and step.error.type == "AttributeError"
    assert step.error.message.endswith(suggestion), step.error.message
    assert step.line == len(script.splitlines())
    done = subprocess.run([sys.executable, "-c", "import torch\n" + script], capture_output=True, text=True)
    assert done.stderr.strip().splitlines()[-1] == f"AttributeError: {step.error.message}"


def test_no_suggestion_when_nothing_is_close() -> None:
    step = run_source("y = qqqqqqq + 1").steps[-1]
    assert step.error is not None and step.error.message == "name 'qqqqqqq' is not defined"


@pytest.mark.parametrize("args", [["run", "--example", "clne"], ["examples", "clne"]])
def test_misspelled_example_name(args: list[str]) -> None:
    result = invoke(*args)
    assert result.exit_code == 2
    assert "no example named 'clne'; did you mean 'clone'?" in result.stderr


@pytest.mark.parametrize(
    ("script", "product"),
    [
        ("a = torch.ones(1, 3)\nc = a @ torch.ones(2, 1)", "torch.ones(1, 3) * torch.ones(2, 1)"),
        ("c = torch.ones(2, 3) @ torch.ones(4, 5)", "torch.ones(2, 3) * torch.ones(4, 5)"),
    ],
)
def test_a_matrix_product_suggests_an_elementwise_one_only_where_it_would_run(script: str, product: str) -> None:
    """``a * b`` is offered only where plain python runs it: (1, 3) with (2, 1) broadcast, (2, 3) with (4, 5) do not."""
    runs = subprocess.run([sys.executable, "-c", f"import torch; {product}"], capture_output=True).returncode == 0
    error = run_source(script).steps[-1].error
    assert error is not None and error.explanation is not None
    assert ("for an elementwise product" in error.explanation) is runs, error.explanation
