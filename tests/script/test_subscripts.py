"""Subscript reads and writes. Each runs through tcopy and under plain Python."""

from __future__ import annotations

from script.snippets import (
    assert_same_as_python,
    last,
)

# --- subscripts --------------------------------------------------------------------


def test_subscript_reads() -> None:
    trace = assert_same_as_python(
        """
        x = torch.arange(6).reshape(2, 3)
        print(x[0, 1:], x[..., None].shape, x[:, -1], x[1][::2], x[None].shape, x[x.gt(2)])
        l = [0, 1, 2, 3]
        print(l[1:3], l[-1], l[::-1], (1, 2, 3)[1], "abc"[1:], {"k": 5}["k"])
        """
    )
    assert last(trace).tensors["x"].shape == [2, 3]


def test_subscript_writes_are_in_place() -> None:
    trace = assert_same_as_python(
        """
        d = torch.ones(2, 3)
        d[:] = 1
        d[0, 1:] = torch.tensor([5.0, 6.0])
        d[..., 0] = 7
        l = [1, 2, 3]
        l[0] = 9
        l[1:] = [8]
        m = {}
        m["a"] = 1
        print(d, l, m)
        """
    )
    versions = [s.tensors["d"].version for s in trace.steps[:4]]
    assert versions == [0, 1, 2, 3]
    storages = {s.tensors["d"].storage for s in trace.steps[:4]}
    assert len(storages) == 1


def test_view_write_shows_in_base() -> None:
    trace = assert_same_as_python("base = torch.zeros(4)\nv = base[2:]\nv[0] = 1\nprint(base)")
    step = last(trace)
    assert step.tensors["base"].values == [0.0, 0.0, 1.0, 0.0]
    assert step.tensors["v"].storage == step.tensors["base"].storage
    assert step.tensors["v"].storage_offset == 2
