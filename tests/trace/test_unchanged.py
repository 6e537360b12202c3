"""A large tensor's summary is made again after every write, seen by torch or not, and only then.

Each script's top-level statements are run one by one in plain Python too; after each, the
summary tcopy showed must be the summary of the tensor as Python holds it then.
"""

from __future__ import annotations

import ast
import textwrap
from typing import Any

import pytest
import torch

import tcopy_cli.trace.observe as observe
from tcopy_cli.engine import run_source
from tcopy_cli.trace.summary import summarize

WRITES = {
    "through .data, whose version counter is its own": """
        import torch
        w = torch.zeros(500)
        d = w.data
        d.add_(1)
        n = w.numel()
        d[3] = 7.0
        """,
    "through a NumPy view made earlier": """
        import torch
        w = torch.zeros(500)
        a = w.numpy()
        n = 1
        a += 2
        a[5] = -3.0
        """,
    "through the array a tensor was made from": """
        import numpy as np
        import torch
        a = np.zeros(500, dtype=np.float32)
        w = torch.from_numpy(a)
        n = 1
        a[:10] = 4.0
        """,
    "through an array made by DLPack": """
        import numpy as np
        import torch
        w = torch.zeros(500)
        a = np.from_dlpack(w)
        n = 1
        a += 5
        """,
    "through memory reached by data_ptr()": """
        import ctypes
        import torch
        w = torch.zeros(500)
        p = w.data_ptr()
        n = 1
        ctypes.memset(p, 0x40, 8)
        """,
    "through a view and in place": """
        import torch
        w = torch.zeros(500)
        v = w[100:200]
        n = 1
        v.fill_(2.0)
        w.mul_(3.0)
        """,
    "through a storage handed out": """
        import torch
        w = torch.zeros(500)
        s = w.untyped_storage()
        n = 1
        w2 = torch.tensor([], dtype=torch.float32).set_(s)
        w2[0] = 9.0
        """,
    "through a storage held while resize_ moved its memory": """
        import torch
        w = torch.zeros(200)
        s = w.untyped_storage()
        w.resize_(500).zero_()
        n = 1
        s.fill_(7)
        """,
    "from another thread (the dispatch mode is the script thread's)": """
        import threading
        import torch
        w = torch.zeros(500)
        d = w.data
        n = 1
        t = threading.Thread(target=d.add_, args=(5,))
        t.start() or t.join()
        m = 2
        """,
    "from a hook during backward (the mode is off while backward runs)": """
        import torch
        w = torch.zeros(500)
        d = w.data
        p = torch.ones(3, requires_grad=True)
        def hook(g):
            d.add_(5)
        h = p.register_hook(hook)
        n = 1
        p.sum().backward()
        """,
    "from a saved_tensors_hooks pack hook": """
        import torch
        w = torch.zeros(500)
        d = w.data
        x = torch.ones(3, requires_grad=True)
        def pack(t):
            d.add_(1)
            return t
        n = 1
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            y = x * x
        m = 2
        """,
    "in a function torch.compile made (it runs without the mode)": """
        import torch
        w = torch.zeros(500)
        d = w.data
        def f(x):
            d.add_(1)
            return x * 2
        g = torch.compile(f, backend="eager")
        x = torch.ones(3)
        n = 1
        y = g(x)
        m = 2
        """,
    "in a function torch.jit.trace runs (it runs without the mode)": """
        import torch
        w = torch.zeros(500)
        d = w.data
        def f(x):
            d.add_(1)
            return x * 2
        x = torch.ones(3)
        n = 1
        tr = torch.jit.trace(f, (x,))
        m = 2
        """,
    "from a __deepcopy__ that deepcopying a tensor calls": """
        import copy
        import torch
        w = torch.zeros(500)
        d = w.data
        class Writes:
            def __deepcopy__(self, memo):
                d.add_(6)
                return self
        t = torch.ones(3)
        t.note = Writes()
        n = 1
        t2 = copy.deepcopy(t)
        m = 2
        """,
    "by a fused optimizer step (no version counter moves)": """
        import torch
        torch.manual_seed(0)
        lin = torch.nn.Linear(30, 30)
        w = lin.weight
        opt = torch.optim.AdamW(lin.parameters(), lr=0.1, fused=True)
        lin(torch.ones(2, 30)).sum().backward()
        n = 1
        opt.step()
        m = 2
        """,
    "by GradScaler's unscaling kernel (no version counter moves)": """
        import torch
        w = torch.ones(500)
        found = torch.zeros(1)
        inv = torch.full((1,), 0.5)
        n = 1
        torch._amp_foreach_non_finite_check_and_unscale_([w], found, inv)
        m = 2
        """,
    "by batch norm's update of its running statistics (no version counter moves)": """
        import torch
        torch.manual_seed(0)
        bn = torch.nn.BatchNorm1d(200)
        w = bn.running_mean
        x = torch.randn(8, 200)
        n = 1
        y = bn(x)
        m = 2
        z = torch.nn.functional.batch_norm(x, w, torch.ones(200), training=True)
        k = 3
        """,
    "from the function apply_ calls": """
        import torch
        w = torch.zeros(500)
        d = w.data
        c = torch.ones(3)
        n = 1
        def f(v):
            d.add_(1)
            return v
        c.apply_(f)
        """,
    "from a tensor subclass's __torch_function__": """
        import torch
        w = torch.zeros(500)
        d = w.data
        class Sub(torch.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                if func is torch.Tensor.add:
                    d.add_(1)
                return super().__torch_function__(func, types, args, kwargs or {})
        s = torch.ones(3).as_subclass(Sub)
        n = 1
        r = s + 1
        """,
}


def _python_states(src: str) -> list[torch.Tensor]:
    """``w`` (cloned) after each top-level statement, as plain Python runs them."""
    namespace: dict[str, Any] = {"__name__": "__main__"}
    states = []
    for node in ast.parse(src).body:
        exec(compile(ast.Module([node], []), "<test>", "exec"), namespace)
        w = namespace.get("w")
        states.append(w.clone() if isinstance(w, torch.Tensor) else None)
    return states


@pytest.mark.parametrize("how", list(WRITES))
def test_a_summary_follows_every_write(how: str) -> None:
    src = textwrap.dedent(WRITES[how])
    steps = run_source(src).steps
    states = _python_states(src)
    assert len(steps) == len(states)
    for step, state in zip(steps, states):
        if state is None:
            assert "w" not in step.tensors
            continue
        assert step.tensors["w"].preview == summarize(state), (step.line, step.source)


def test_a_summary_is_made_once_while_nothing_writes_the_tensor(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading a large tensor (as an operation's input) is no write; an in-place write is."""
    made: list[int] = []
    original = observe.tensor_values

    def counted(d: torch.Tensor, max_values: int) -> tuple[Any, str]:
        if d.numel() == 1000:
            made.append(d.numel())
        return original(d, max_values)

    monkeypatch.setattr(observe, "tensor_values", counted)
    src = textwrap.dedent(
        """\
        import torch
        w = torch.linspace(0, 1, 1000)
        for _ in range(5):
            y = (w * 2).sum()
        w.add_(1)
        z = w.mean()
        """
    )
    steps = run_source(src).steps
    assert [s.source for s in steps].count("y = (w * 2).sum()") == 5
    # made when w appears, again after w.add_(1); the other eight steps show the same summary
    assert len(made) == 2
    assert steps[-1].tensors["w"].preview == summarize(torch.linspace(0, 1, 1000) + 1)
