"""Constructs the retired allow-list refused, each run by the engine and by plain Python.

Every case must run to the end with exactly what ``python`` prints, and the tensors its names hold at
the end must have python's values. Output that depends on addresses or timing is masked.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pytest
import torch

from tcopy_cli.engine import run_source

CASES = {
    "torch.func.vmap and grad": """
        import torch
        from torch.func import vmap, grad
        x = torch.arange(3.0)
        sq = vmap(lambda t: t * t)(x)
        g = grad(lambda t: (t ** 3).sum())(x)
        print(sq.tolist(), g.tolist())
    """,
    "torch.func.functional_call": """
        import torch
        from torch.func import functional_call
        torch.manual_seed(0)
        model = torch.nn.Linear(2, 1)
        params = {k: torch.ones_like(v) for k, v in model.named_parameters()}
        out = functional_call(model, params, (torch.ones(1, 2),))
        print(out.tolist())
    """,
    "torch.distributions": """
        import torch
        from torch.distributions import Normal
        torch.manual_seed(0)
        mu = torch.tensor(0.5, requires_grad=True)
        d = Normal(mu, 1.0)
        lp = d.log_prob(torch.tensor(1.0))
        lp.backward()
        print(round(lp.item(), 6), round(mu.grad.item(), 6))
    """,
    "saved_tensors_hooks": """
        import torch
        def pack(x):
            print("pack", tuple(x.shape))
            return x
        def unpack(x):
            print("unpack", tuple(x.shape))
            return x
        a = torch.ones(3, requires_grad=True)
        with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
            y = (a * a).sum()
        y.backward()
        print(a.grad.tolist())
    """,
    "once_differentiable": """
        import torch
        from torch.autograd.function import once_differentiable
        class Double(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2
            @staticmethod
            @once_differentiable
            def backward(ctx, g):
                return g * 2
        x = torch.ones(2, requires_grad=True)
        Double.apply(x).sum().backward()
        print(x.grad.tolist())
    """,
    "timeit and os": """
        import os
        import timeit
        import torch
        t = timeit.timeit(lambda: torch.ones(2), number=3)
        print(t >= 0, os.path.basename("a/b.py"), os.sep)
    """,
    "names starting with _": """
        import torch
        _y = torch.ones(2)
        def _test_setitem(t):
            t[0] = 5
            return t
        _z = _test_setitem(_y.clone())
        print(_y.tolist(), _z.tolist())
    """,
    "a torch function passed as a value": """
        import torch
        import torch.nn.functional as F
        def layer(x, activation=F.relu):
            return activation(x)
        out = layer(torch.tensor([-1.0, 2.0]))
        act = torch.sigmoid
        print(out.tolist(), act(torch.zeros(1)).tolist())
    """,
    "a method reference": """
        import torch
        copy = torch.ones(2)
        ptr = copy.data_ptr
        print(ptr() == copy.data_ptr())
    """,
    "a legacy TypedStorage written by item": """
        import warnings
        warnings.simplefilter("ignore")
        import torch
        t = torch.zeros(3)
        s = t.storage()
        s[0] = 7.0
        print(t.tolist())
    """,
    "NumPy scalar types": """
        import numpy as np
        import torch
        v = np.float64(42)
        t = torch.tensor(v)
        print(t.dtype, t.item())
    """,
    "nn.init and sparse tensors": """
        import torch
        torch.manual_seed(0)
        w = torch.empty(2, 3)
        torch.nn.init.xavier_normal_(w)
        i = torch.tensor([[0, 1], [1, 0]])
        s = torch.sparse_coo_tensor(i, torch.tensor([3.0, 4.0]), (2, 2))
        print(tuple(w.shape), s.to_dense().tolist())
    """,
    "a CUDA branch that does not run here": """
        import torch
        device = "cpu"
        if torch.cuda.is_available() and False:
            device = torch.cuda.get_device_name(0)
            x = torch.ones(2, device="cuda").pin_memory()
        x = torch.ones(2)
        print(device, x.tolist())
    """,
    # Found by measuring snippets from outside (PyTorch docs and issues):
    "torch.jit.trace of a module defined in the script": """
        import torch
        class Cell(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.linear = torch.nn.Linear(4, 4)
            def forward(self, x, h):
                return torch.tanh(self.linear(x) + h)
        torch.manual_seed(0)
        cell = Cell()
        x, h = torch.rand(3, 4), torch.rand(3, 4)
        traced = torch.jit.trace(cell, (x, h))
        print(torch.equal(traced(x, h), cell(x, h)))
    """,
    "torch.compile of a function defined in the script": """
        import torch
        def foo(x, y):
            return torch.sin(x) + torch.cos(y)
        opt = torch.compile(foo, backend="eager")
        x, y = torch.ones(3), torch.zeros(3)
        print(torch.allclose(opt(x, y), foo(x, y)))
    """,
    "a MaskedTensor (a wrapper subclass with no memory of its own)": """
        import torch
        from torch.masked import as_masked_tensor
        x = torch.tensor([1.0, 1.0], requires_grad=True)
        div = torch.tensor([0.0, 1.0])
        y = x / div
        mask = div != 0
        loss = as_masked_tensor(y, mask).sum()
        loss.backward()
        print(x.grad)
    """,
    "a sparse tensor a graph saved": """
        import torch
        a = torch.randn(2, 3).to_sparse().requires_grad_(True)
        b = torch.randn(3, 2).to_sparse()
        y = torch.sparse.mm(a, b)
        print(y.is_sparse, y.requires_grad)
    """,
    "torch.utils.swap_tensors (it refuses a tensor anything holds a weak reference to)": """
        import torch
        t1 = torch.arange(2)
        t2 = torch.arange(3)
        torch.utils.swap_tensors(t1, t2)
        print(t1, t2)
        torch.__future__.set_swap_module_params_on_conversion(True)
        torch.manual_seed(0)
        m = torch.nn.Linear(3, 5)
        w = m.weight
        m.bfloat16()
        print(m.weight.dtype, w is m.weight)
        torch.__future__.set_swap_module_params_on_conversion(False)
    """,
    "a library's deprecation warning is not the script's": """
        import warnings
        import torch
        warnings.warn("the script's own", DeprecationWarning)
        import torch._dynamo
        print(len(torch.ones(2)))
    """,
}
ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


def _floats(values: object) -> object:
    """Values as python's tolist() gives them (the record writes inf and nan as strings, as JSON must)."""
    if isinstance(values, list):
        return [_floats(v) for v in values]
    return float(values) if isinstance(values, str) else values


def _python(source: str) -> str:
    done = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("source", CASES.values(), ids=list(CASES))
def test_runs_as_in_python(source: str) -> None:
    source = textwrap.dedent(source).strip() + "\n"
    trace = run_source(source, origin="<t>")
    errors = [(s.line, s.error) for s in trace.steps if s.error is not None]
    assert not errors, errors
    assert trace.summary is not None and trace.summary.status == "ok"
    printed = "".join(s.stdout for s in trace.steps)
    assert ADDRESS.sub("0x…", printed) == ADDRESS.sub("0x…", _python(source))
    ns: dict[str, object] = {"__name__": "__main__"}
    exec(compile(source, "<t>", "exec"), ns)
    last = trace.steps[-1].tensors
    for name, value in ns.items():
        plain = type(value) in (torch.Tensor, torch.nn.Parameter)
        if plain and not value.is_sparse and name in last and value.numel() <= 100:
            assert _floats(last[name].values) == value.detach().tolist() or "randn" in source, name


def test_the_operation_record_names_what_torch_func_was_given() -> None:
    trace = run_source(textwrap.dedent(CASES["torch.func.vmap and grad"]).strip())
    vmapped = next(s for s in trace.steps if s.source.startswith("sq ="))
    assert any(i.name == "x" for op in vmapped.ops for i in op.inputs), [o.call for o in vmapped.ops]


def test_warnings_are_the_ones_python_shows() -> None:
    """Python's default filters: the script's own deprecations show, a library's don't; each step shows its own."""
    source = textwrap.dedent(CASES["a library's deprecation warning is not the script's"]).strip()
    shown = [w for s in run_source(source).steps for w in s.warnings]
    assert shown == ["the script's own"]
