"""A step that kept every name's tensor and storage uses the last step's relations, and every fact it
reports is still what observing it in full reports: each script below runs with the reuse on and with
it off, and the steps must be the same."""

from __future__ import annotations

import dataclasses
import textwrap
from typing import Any

import pytest

import tcopy_cli.trace.observe as observe
from tcopy_cli.engine import run_source
from tcopy_cli.limits import Limits
from tcopy_cli.trace.steady import Steady

# Addresses differ from run to run; everything else must match.
_VOLATILE = {"data_ptr", "object_id", "node_id", "reach_ids"}

CHANGES = {
    "in place, one tensor a step": """
        import torch
        a = torch.zeros(3)
        b = torch.ones(3)
        for _ in range(3):
            a.add_(b)
            b.mul_(2.0)
        """,
    "through a NumPy view no name lists": """
        import torch
        class Holder: pass
        h = Holder()
        a = torch.zeros(3)
        h.n = a.numpy()
        b = torch.ones(3)
        h.n += 1
        h.n[0] = 7
        """,
    "through a .data alias no name lists": """
        import torch
        class Holder: pass
        h = Holder()
        a = torch.zeros(3)
        h.d = a.data
        b = torch.ones(3)
        h.d.add_(1)
        h.d[1] = 5
        """,
    "with the dispatch mode off": """
        import torch
        class Holder: pass
        h = Holder()
        a = torch.zeros(3)
        h.d = a.data
        b = torch.ones(3)
        with torch._C.DisableTorchFunction():
            h.d.add_(3)
        c = 1
        """,
    "through memory reached by data_ptr()": """
        import ctypes
        import torch
        a = torch.zeros(3)
        p = a.data_ptr()
        b = torch.ones(3)
        ctypes.memset(p, 0x40, 4)
        c = 1
        """,
    "from another thread": """
        import threading
        import torch
        class Holder: pass
        h = Holder()
        a = torch.zeros(3)
        h.d = a.data
        b = torch.ones(3)
        t = threading.Thread(target=h.d.add_, args=(5,))
        t.start() or t.join()
        c = 1
        """,
    "its memory and place": """
        import torch
        a = torch.zeros(4)
        b = torch.ones(3)
        a.data = torch.ones(5)
        a.resize_(8).fill_(2)
        a.resize_(2)
        a.set_(a.untyped_storage(), 1, (3,), (1,))
        a.set_(torch.arange(6.0).untyped_storage())
        m = torch.zeros(2, 3)
        m.t_()
        m.unsqueeze_(0)
        m.as_strided_((2,), (2,))
        """,
    "its flags and gradient": """
        import torch
        a = torch.zeros(3)
        b = torch.ones(3)
        a.requires_grad_()
        a.requires_grad_(False)
        b.grad = torch.ones(3)
        b.grad = None
        a.requires_grad = True
        """,
    "the names and what they hold": """
        import torch
        a = torch.zeros(3)
        b = torch.ones(3)
        c = a
        d = a.detach()
        e = a.data
        del c
        a, b = b, a
        d.add_(1)
        e.add_(1)
        """,
    "swapped tensors (version counters change hands)": """
        import torch
        a = torch.zeros(3)
        b = a.data
        c = a.detach()
        n = 1
        torch.utils.swap_tensors(a, b)
        c.add_(1)
        b.add_(1)
        """,
    "impls swapped without swap_tensors (version counters change hands)": """
        import torch
        a = torch.zeros(3)
        b = a.data
        c = a.detach()
        n = 1
        torch._C._swap_tensor_impl(a, b)
        c.add_(1)
        n = 2
        """,
    "large tensors written unseen": """
        import torch
        class Holder: pass
        h = Holder()
        w = torch.zeros(500)
        h.n = w.numpy()
        b = torch.ones(3)
        h.n += 1
        w.add_(1)
        c = 1
        """,
    "tensors held where no name lists them": """
        import torch
        s = set()
        a = torch.zeros(3)
        s.add(torch.zeros(1000))
        s.add(torch.zeros(1000))
        a.add_(1)
        """,
}


def _facts(steps: list[Any]) -> list[dict[str, Any]]:
    out = []
    for step in steps:
        fact = dataclasses.asdict(step)
        for record in fact["tensors"].values():
            for key in _VOLATILE:
                record.pop(key, None)
            if record.get("grad"):
                for key in _VOLATILE:
                    record["grad"].pop(key, None)
        for record in fact["arrays"].values():
            record.pop("data_ptr", None)
        out.append(fact)
    return out


def _run(src: str, reuse: bool, monkeypatch: pytest.MonkeyPatch, limits: Limits | None = None) -> list[Any]:
    with monkeypatch.context() as m:
        if not reuse:
            m.setattr(Steady, "again", lambda self, *args: None)
        return run_source(src, limits=limits).steps


@pytest.mark.parametrize("how", list(CHANGES))
def test_every_fact_is_what_a_full_observation_reports(how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    src = textwrap.dedent(CHANGES[how])
    assert _facts(_run(src, True, monkeypatch)) == _facts(_run(src, False, monkeypatch))


def test_bytes_held_where_no_name_lists_them_still_count(monkeypatch: pytest.MonkeyPatch) -> None:
    src = textwrap.dedent(CHANGES["tensors held where no name lists them"]).lstrip()
    steps = _run(src, True, monkeypatch, Limits(max_bytes=6000))
    assert steps[-1].error is not None and steps[-1].error.type == "LimitExceeded"
    assert steps[-1].line == 5  # the second 4,000 bytes in the set
    assert _facts(steps) == _facts(_run(src, False, monkeypatch, Limits(max_bytes=6000)))


def test_steps_that_keep_every_tensor_in_place_are_not_observed_in_full(monkeypatch: pytest.MonkeyPatch) -> None:
    full = 0
    snapshot = observe.Observer._snapshot

    def counted(self: observe.Observer, *args: Any) -> Any:
        nonlocal full
        full += 1
        return snapshot(self, *args)

    monkeypatch.setattr(observe.Observer, "_snapshot", counted)
    steps = run_source(textwrap.dedent(CHANGES["in place, one tensor a step"])).steps
    assert len(steps) == 9
    assert full == 3  # import torch, a = ..., b = ... (new names); the loop's six steps reuse the relations
    assert steps[-1].tensors["a"].values == [7.0, 7.0, 7.0]
    assert steps[-2].tensors["b"] is steps[-3].tensors["b"]  # unchanged: the same record
