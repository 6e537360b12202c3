"""Memory past --max-bytes/--max-elements is refused before it is allocated, and the
byte count sees every tensor a script keeps alive."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from sandbox_guard import guarded

from tcopy_cli.engine import alloc, run_source
from tcopy_cli.limits import Limits
from tcopy_cli.trace.observe import Observer

NP = "import numpy as np\n"

# Each would allocate far past the default limits (4 GiB, 50 million elements).
BEFORE_ALLOCATING = [
    ("a = torch.ones(1000)\nb = torch.einsum('i,j,k->ijk', a, a, a)", "einsum"),
    ("a = torch.ones(1000)\nb = torch.einsum('i,j,k', a, a, a)", "einsum"),
    ("a = torch.ones(1000)\nb = torch.einsum('i,j,k->ijk', [a, a, a])", "einsum"),
    ("a = torch.ones(8, 1000)\nb = torch.einsum('...i,...j,...k->...ijk', a, a, a)", "einsum"),
    ("a = torch.ones(400)\nb = torch.cartesian_prod(torch.ones(2), a, a, a)", "cartesian_prod"),
    ("a = torch.ones(10)\nb = torch.cartesian_prod(a, a, a, a, a, a, a, a)", "cartesian_prod"),
    ("import torch.nn.functional as F\nb = F.one_hot(torch.tensor([0]), 700000000)", "one_hot"),
    ("import torch.nn.functional as F\nb = F.one_hot(torch.tensor([0]), num_classes=700000000)", "one_hot"),
    ("import torch.nn.functional as F\nb = F.one_hot(torch.tensor([700000000]))", "one_hot"),
]


@pytest.mark.parametrize(("src", "what"), BEFORE_ALLOCATING)
def test_huge_results_are_refused_before_allocating(src: str, what: str, tmp_path: Path) -> None:
    with guarded(tmp_path):
        trace = run_source(src)
    step = trace.steps[-1]
    assert step.error is not None and step.error.type == "LimitExceeded", step.error
    # "would": the estimate refused the call before torch allocated anything.
    assert "would" in step.error.message
    assert what in step.error.message
    assert "b" not in step.tensors and "a" not in step.arrays


EQUATIONS = [
    ("i,j,k->ijk", [(3,), (4,), (5,)]),
    ("i,j,k", [(3,), (4,), (5,)]),
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("...i,...j", [(6, 3), (1, 4)]),
    ("i, j -> j i", [(3,), (7,)]),
    ("ij->", [(3, 4)]),
    ("bi,bj->bij", [(1, 3), (5, 4)]),
]


@pytest.mark.parametrize(("equation", "shapes"), EQUATIONS)
def test_einsum_estimate_is_the_size_torch_gives(equation: str, shapes: list[tuple[int, ...]]) -> None:
    operands = [torch.ones(s) for s in shapes]
    expected = torch.einsum(equation, *operands).numel()
    assert alloc.estimate_numel("einsum", [equation, *operands], {}) == expected
    assert alloc.estimate_numel("einsum", [equation, operands], {}) == expected


@pytest.mark.parametrize("sizes", [(3,), (2, 3), (2, 3, 4), (1, 5, 2, 3)])
def test_cartesian_prod_estimate_counts_every_argument(sizes: tuple[int, ...]) -> None:
    tensors = [torch.arange(n) for n in sizes]
    assert alloc.estimate_numel("cartesian_prod", tensors, {}) == torch.cartesian_prod(*tensors).numel()


@pytest.mark.parametrize(("values", "classes"), [([0, 2, 1], 5), ([3, 1], -1), ([[0, 1], [2, 3]], 7)])
def test_one_hot_estimate_is_the_size_torch_gives(values: list[int], classes: int) -> None:
    t = torch.tensor(values)
    assert alloc.estimate_numel("one_hot", [t, classes], {}) == F.one_hot(t, classes).numel()
    assert alloc.estimate_numel("one_hot", [t], {"num_classes": classes}) == F.one_hot(t, classes).numel()


@pytest.mark.parametrize(
    ("shape", "pad"),
    [
        ((3,), (1, 2)),
        ((2, 3), (0, 1, 2, 0)),
        ((2, 3, 4), (-1, 2)),
        ((4, 5), [2, -3, 1, 1]),
        ((1, 2, 3), (0, 0, 0, 0, 1, 1)),
    ],
)
def test_pad_estimate_is_the_size_torch_gives(shape: tuple[int, ...], pad: tuple[int, ...]) -> None:
    t = torch.ones(shape)
    assert alloc.estimate_numel("pad", [t, pad], {}) == F.pad(t, pad).numel()
    assert alloc.estimate_numel("pad", [t], {"pad": pad}) == F.pad(t, pad).numel()
    assert alloc.estimate_numel("pad", [], {"input": t, "pad": pad}) == F.pad(t, pad).numel()


@pytest.mark.parametrize(
    ("a", "b", "dims"),
    [
        ((3, 4), (4, 5), 1),
        ((2, 3, 4), (3, 4, 5), 2),
        ((3,), (5,), 0),
        ((2, 3, 4), (4, 3, 6), ([1, 2], [1, 0])),
        ((2, 3), (3, 2), ([-1], [0])),
        ((2, 3), (2, 7), ([0], [0])),
        ((2, 3), (4,), ([], [])),
    ],
)
def test_tensordot_estimate_is_the_size_torch_gives(a: tuple[int, ...], b: tuple[int, ...], dims: Any) -> None:
    x, y = torch.ones(a), torch.ones(b)
    expected = torch.tensordot(x, y, dims=dims).numel()
    assert alloc.estimate_numel("tensordot", [x, y], {"dims": dims}) == expected
    assert alloc.estimate_numel("tensordot", [x, y, dims], {}) == expected
    assert alloc.estimate_numel("tensordot", [x], {"b": y, "dims": dims}) == expected
    assert alloc.estimate_numel("tensordot", [], {"a": x, "b": y, "dims": dims}) == expected
    if not isinstance(dims, int) and all(isinstance(d, list) for d in dims) and len(dims[0]):
        as_tensor = torch.tensor(dims)
        assert alloc.estimate_numel("tensordot", [x, y, as_tensor], {}) == torch.tensordot(x, y, as_tensor).numel()


def test_embedding_estimate_is_the_size_torch_gives() -> None:
    idx, weight = torch.tensor([[0, 2, 1], [1, 1, 0]]), torch.ones(3, 5)
    expected = F.embedding(idx, weight).numel()
    assert alloc.estimate_numel("embedding", [idx, weight], {}) == expected
    assert alloc.estimate_numel("embedding", [idx], {"weight": weight}) == expected
    assert alloc.estimate_numel("embedding", [], {"input": idx, "weight": weight, "padding_idx": 0}) == expected
    # not the broadcast of the two shapes (which refused a small lookup in a large table)
    idx = torch.zeros(20, 1, 1, dtype=torch.long)
    assert alloc.estimate_numel("embedding", [idx], {"weight": torch.ones(100, 100)}) == 2_000


@pytest.mark.parametrize(
    ("shape", "kwargs"),
    [
        ((1, 1, 5), {"scale_factor": 2.5}),
        ((2, 3, 5, 7), {"scale_factor": (1.5, 0.3), "mode": "bilinear"}),
        ((2, 3, 5, 7), {"scale_factor": 1.7, "mode": "bicubic", "align_corners": False}),
        ((1, 2, 3, 4, 5), {"size": 6, "mode": "trilinear"}),
        ((1, 2, 4, 4), {"size": (3, 9), "mode": "area"}),
    ],
)
def test_interpolate_estimate_is_the_size_torch_gives(shape: tuple[int, ...], kwargs: dict[str, Any]) -> None:
    x = torch.ones(shape)
    expected = F.interpolate(x, **kwargs).numel()
    assert alloc.estimate_numel("interpolate", [x], kwargs) == expected
    assert alloc.estimate_numel("interpolate", [], {"input": x, **kwargs}) == expected
    if "scale_factor" in kwargs and not isinstance(kwargs["scale_factor"], tuple):
        # factors torch also takes: NumPy numbers, and one-element tensors
        for factor in (np.float64(kwargs["scale_factor"]), torch.tensor(kwargs["scale_factor"])):
            spelled = {**kwargs, "scale_factor": factor, "recompute_scale_factor": True}
            assert alloc.estimate_numel("interpolate", [x], spelled) == F.interpolate(x, **spelled).numel()


def test_interpolate_estimate_counts_buffers_and_leaves_torch_its_errors() -> None:
    # an empty batch still makes torch build buffers for every output position: one plane counted
    assert alloc.estimate_numel("interpolate", [torch.ones(0, 1, 10)], {"scale_factor": 5 * 10**7}) == 5 * 10**8
    # calls torch refuses with its own (catchable) error get no estimate
    x = torch.ones(1, 1, 4)
    assert alloc.estimate_numel("interpolate", [x], {"size": 10**9, "scale_factor": 2.0}) is None
    assert alloc.estimate_numel("interpolate", [x], {"size": 10**9, "mode": "bilinear"}) is None


def _storage_bytes(*tensors: torch.Tensor) -> int:
    return sum({t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in tensors}.values())


def test_byte_count_includes_tensors_held_in_sets() -> None:
    a, b, c = torch.ones(1000), torch.ones(500, dtype=torch.float64), torch.ones(7)
    ns = {"s": {a, b}, "nested": [1, {"k": frozenset({c})}], "again": {a}}
    assert Observer().snapshot(ns).total_bytes == _storage_bytes(a, b, c)


def test_byte_count_includes_tensors_the_graph_keeps_alive() -> None:
    x = torch.ones(1000, requires_grad=True)
    mid = x.exp()  # saved by the second exp (its input) and by the first (its result)
    y = mid.exp()
    expected = _storage_bytes(x, mid, y)
    del mid
    assert Observer().snapshot({"y": y}).total_bytes == expected
    y.sum().backward()  # backward frees what the graph saved; the leaf stays behind it
    assert Observer().snapshot({"y": y}).total_bytes == _storage_bytes(x, y) + _storage_bytes(x.grad)  # type: ignore[arg-type]


def test_byte_count_includes_tensors_past_the_items_the_records_show() -> None:
    # Records list the first items of a long list; the byte count sees all of them.
    big = torch.ones(10_000)
    big.grad = torch.ones(10_000)
    ns = {"items": [0.5] * 1500 + [torch.ones(1)] * 20 + [[big]], "plain": list(range(100_000))}
    snap = Observer().snapshot(ns)
    assert snap.total_bytes == _storage_bytes(ns["items"][1500], big, big.grad)  # type: ignore[arg-type]


def test_byte_count_does_not_count_shared_storage_twice() -> None:
    a = torch.ones(1000)
    ns = {"a": a, "s": {a[2:], a.view(10, 100)}}
    assert Observer().snapshot(ns).total_bytes == _storage_bytes(a)


@pytest.mark.parametrize(
    "src",
    [
        "x = torch.ones(100000, requires_grad=True)\ny = x\nfor i in range(20):\n    y = y.exp()",
        "s = set()\nfor i in range(20):\n    s = s | {torch.ones(100000)}",
        "s = [1, [2, set()]]\nfor i in range(20):\n    s[1][1] = s[1][1] | {torch.ones(100000)}",
    ],
)
def test_tensors_only_the_graph_or_a_set_holds_reach_max_bytes(src: str, tmp_path: Path) -> None:
    limits = Limits(max_bytes=2_000_000)
    with guarded(tmp_path):
        trace = run_source(src, limits=limits)
    step = trace.steps[-1]
    assert step.error is not None and step.error.type == "LimitExceeded"
    assert "--max-bytes" in step.error.message
    # Stopped at the first step past the limit: at most one 400 kB tensor over it.
    used = int(step.error.message.split("tensors now use ")[1].split(" bytes")[0].replace(",", ""))
    assert limits.max_bytes < used <= limits.max_bytes + 400_000 * 2


def test_numpy_item_sizes_count_in_bytes_not_elements() -> None:
    # 5000 elements is far under --max-elements; 5000 strings of a million characters are
    # 20 GB, which is what NumPy would allocate.
    assert np.dtype("U1000000").itemsize * 5000 > Limits().max_bytes


@pytest.mark.parametrize(
    ("size", "stride"),
    [((2,), (1,)), ((3, 4), (4, 1)), ((3, 4), (1, 3)), ((2, 3), (10, 2)), ((0, 5), (7, 1)), ((4,), (0,))],
)
def test_empty_strided_estimate_covers_the_memory_torch_allocates(
    size: tuple[int, ...], stride: tuple[int, ...]
) -> None:
    t = torch.empty_strided(size, stride)
    estimate = alloc.estimate_numel("empty_strided", [size, stride], {})
    assert estimate is not None
    assert estimate * t.element_size() >= t.untyped_storage().nbytes()
    assert estimate == max(t.numel(), t.untyped_storage().nbytes() // t.element_size())


def test_empty_strided_with_huge_strides_is_refused_before_allocating(tmp_path: Path) -> None:
    with guarded(tmp_path):
        trace = run_source("t = torch.empty_strided((2,), (2**31,))")
    step = trace.steps[-1]
    assert step.error is not None and step.error.type == "LimitExceeded"
    assert "would" in step.error.message


def test_a_script_method_named_like_a_torch_function_is_not_sized_as_it() -> None:
    # m.normal(...) runs the script's own method: torch.normal's size rule does not apply
    src = (
        "import torch\nimport torch.nn as nn\n"
        "class M(nn.Module):\n"
        "    def normal(self, mean, std, shape):\n        return len(shape)\n"
        "    def pad(self, x, widths):\n        return x.sum()\n"
        "    def zeros(self, n):\n        return n + 1\n"
        "m = M()\n"
        "print(m.normal(0.0, 1.0, (10**5, 10**4)))\n"
        "print(m.pad(torch.ones(3), (0, 10**9)))\n"
        "print(m.zeros(10**12))\n"
    )
    python: dict[str, Any] = {}
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(src, python)
    trace = run_source(src)
    assert all(s.error is None for s in trace.steps)
    assert "".join(s.stdout for s in trace.steps) == out.getvalue() == "2\ntensor(3.)\n1000000000001\n"
