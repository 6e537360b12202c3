"""NumPy and torch raw-memory routes: object dtypes, np.ndarray(buffer=...), torch sharing
read-only or foreign memory, resize_ of memory that can't grow."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from sandbox_guard import guarded, refused

from tcopy_cli.errors import NotAllowedError
from tcopy_cli.limits import Limits
from tcopy_cli.script.sandbox import guard_call
from tcopy_cli.trace import run_source
from tcopy_cli.trace.records import Step

NP = "import numpy as np\n"
MODULE = "import torch.nn as nn\nm = nn.Linear(2, 2)\n"

OBJECT_DTYPES = [
    NP + "a = np.zeros(2, dtype=[('o', 'O')])",
    NP + "a = np.empty(2, [('x', 'f8'), ('o', 'O')])",
    NP + "a = np.array([(1,)], dtype=[('o', 'O')])",
    NP + "a = np.zeros(2, dtype=[('s', [('o', 'O')])])",
    NP + "a = np.zeros(2, 'O')",
    NP + "a = np.ones(3).astype([('o', 'O')])",
    NP + "a = np.ones(3).astype('O')",
    NP + "a = np.full(2, 1, [('o', 'O')])",
    NP + "a = np.ndarray((2,), [('o', 'O')])",
    # The structured array holding an nn.Module that once failed JSON encoding.
    NP + MODULE + "a = np.array([(m,)], dtype=[('o', 'O')])",
    NP + MODULE + "a = np.array([m, m])",
    NP + MODULE + "a = np.full(2, m)",
]


@pytest.mark.parametrize("src", OBJECT_DTYPES)
def test_dtypes_holding_python_objects_are_refused(src: str, tmp_path: Path) -> None:
    with guarded(tmp_path):
        step = refused(src)
    assert isinstance(step, Step) and step.error is not None
    assert step.error.type == "NotAllowedError"
    assert "object" in step.error.message
    assert "a" not in step.arrays


def test_a_structured_array_of_a_module_ends_with_a_json_error_event(tmp_path: Path) -> None:
    src = NP + MODULE + "a = np.array([(m,)], dtype=[('o', 'O')])\nprint('after')\n"
    proc = subprocess.run(
        [sys.executable, "-m", "tcopy_cli", "run", "-e", src, "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert events[-1]["event"] == "end" and events[-1]["status"] == "error"
    last = events[-2]
    assert last["status"] == "error" and last["error"]["type"] == "NotAllowedError"
    assert all("after" not in (e.get("stdout") or "") for e in events)


RAW_CONSTRUCTORS = [
    NP + "a = np.ndarray((1,), np.uint8, b'a')",
    NP + "a = np.ndarray((1,), dtype=np.uint8, buffer=b'a')",
    NP + "a = np.ndarray(shape=(1,), dtype=np.uint8, buffer=b'a', offset=0)",
    NP + "b = np.zeros(4)\na = np.ndarray((4,), np.float64, b, 0, (0,))",
    NP + "b = np.zeros(4)\na = np.ndarray((4,), dtype=np.float64, buffer=b, strides=(8,))",
    NP + "b = np.zeros(4)\na = np.ndarray((2,), dtype=np.float64, buffer=b, offset=16)",
    # The reported write into Python's cached b"a" through torch.
    NP + "a = np.ndarray((1,), np.uint8, b'a')\nt = torch.from_numpy(a)\nt.fill_(66)",
]


@pytest.mark.parametrize("src", RAW_CONSTRUCTORS)
def test_ndarray_over_raw_memory_is_refused(src: str, tmp_path: Path) -> None:
    with guarded(tmp_path):
        step = refused(src)
    assert isinstance(step, Step) and step.error is not None
    assert step.error.type == "NotAllowedError"
    assert "buffer" in step.error.message
    assert bytes([97]) == b"a"  # Python's cached one-byte object is untouched


def test_ndarray_with_a_shape_alone_still_allocates_like_numpy(tmp_path: Path) -> None:
    with guarded(tmp_path):
        trace = run_source(NP + "a = np.ndarray((2, 3), np.float32)")
    rec = trace.steps[-1].arrays["a"]
    expected = np.ndarray((2, 3), np.float32)
    assert rec.shape == list(expected.shape) and rec.dtype == str(expected.dtype)


def _foreign_arrays() -> list[np.ndarray]:
    read_only = np.zeros(3)
    read_only.setflags(write=False)
    return [
        np.frombuffer(b"a", dtype=np.uint8),  # Python's own bytes object
        np.frombuffer(bytearray(8), dtype=np.uint8),  # writable, but not NumPy's memory
        read_only,
        np.broadcast_to(np.zeros(3), (2, 3)),  # read-only view
        np.zeros((3, 3)).diagonal(),  # read-only view
    ]


@pytest.mark.parametrize("index", range(5))
@pytest.mark.parametrize("fn", [torch.from_numpy, torch.as_tensor, torch.asarray])
def test_torch_does_not_share_read_only_or_foreign_numpy_memory(index: int, fn: object) -> None:
    arr = _foreign_arrays()[index]
    with pytest.raises(NotAllowedError, match="can't share"):
        guard_call(fn, [arr], {}, Limits())


@pytest.mark.parametrize("fn", [torch.from_numpy, torch.as_tensor, torch.asarray])
def test_torch_shares_numpy_owned_memory_as_in_plain_torch(fn: object) -> None:
    for arr in (np.zeros(3), np.zeros((2, 4))[:, 1:], torch.ones(3).numpy()):
        guard_call(fn, [arr], {}, Limits())  # allowed: no exception
        assert fn(arr).data_ptr() == arr.__array_interface__["data"][0]  # type: ignore[operator]


def test_frombuffer_is_not_in_the_allow_list(tmp_path: Path) -> None:
    with guarded(tmp_path):
        refused(NP + "a = np.frombuffer(b'a', np.uint8)\nt = torch.from_numpy(a)")
        refused("t = torch.frombuffer(b'a', dtype=torch.uint8)")


def test_from_numpy_shares_memory_in_the_script_as_in_plain_torch(tmp_path: Path) -> None:
    with guarded(tmp_path):
        trace = run_source(NP + "a = np.zeros(3)\nt = torch.from_numpy(a)\nt.fill_(2.0)")
    step = trace.steps[-1]
    assert step.status == "ok"
    assert step.tensors["t"].data_ptr == step.arrays["a"].data_ptr
    assert step.arrays["a"].values == [2.0, 2.0, 2.0]


RESIZE_HEAP_READS = [
    # A failed resize_ on a NumPy-backed tensor left its sizes past its memory, and
    # clone() then copied 1 MB of heap (PyTorch issue 170298).
    NP + "t = torch.from_numpy(np.zeros(4))\nt.resize_(131072)\nc = t.clone()",
    NP + "t = torch.from_numpy(np.zeros(4))\ntorch.Tensor.resize_(t, 131072)\nc = t.clone()",
    NP + "t = torch.from_numpy(np.zeros(4))\nbig = torch.zeros(131072)\nt.resize_as_(big)\nc = t.clone()",
    "a = torch.zeros(4)\nn = a.numpy()\na.resize_(131072)\nc = a.clone()",
    NP + "t = torch.as_tensor(np.zeros(4))\nt.resize_(131072)\nc = t.clone()",
]


@pytest.mark.parametrize("src", RESIZE_HEAP_READS)
def test_resize_of_memory_that_cannot_grow_is_refused_before_torch_runs_it(src: str, tmp_path: Path) -> None:
    with guarded(tmp_path):
        trace = run_source(src)
    step = trace.steps[-1]
    assert "resize" in step.source
    assert step.error is not None and step.error.type == "NotAllowedError"
    # (torch 2.1 has no resizable(): there every resize_ is refused, saying why)
    assert "can't grow" in step.error.message or "can't tell whether" in step.error.message
    # The tensor was left as it was: shape and memory unchanged, and clone() never ran.
    name = "t" if "t =" in src else "a"
    assert step.tensors[name].shape == [4]
    assert step.tensors[name].storage_nbytes == (32 if name == "t" else 16)


def test_resize_of_a_tensor_that_owns_its_memory_behaves_like_plain_torch(tmp_path: Path) -> None:
    if not hasattr(torch.zeros(1).untyped_storage(), "resizable"):
        pytest.skip("this torch can't tell whether memory can grow, so tcopy refuses resize_ here")
    a = torch.zeros(4)
    a.resize_(2, 3)
    with guarded(tmp_path):
        trace = run_source("a = torch.zeros(4)\na.resize_(2, 3)")
    rec = trace.steps[-1].tensors["a"]
    assert trace.steps[-1].status == "ok"
    assert rec.shape == list(a.shape) and rec.storage_nbytes == a.untyped_storage().nbytes()


@pytest.mark.parametrize(
    "dtype",
    ["'S3'", "'V4'", "'M8[s]'", "'m8[s]'", "[('a', 'S2'), ('t', 'm8[s]'), ('f', 'f8')]", "[('x', 'f8'), ('y', 'i4')]"],
)
def test_arrays_of_every_plain_dtype_encode_as_json(dtype: str, tmp_path: Path) -> None:
    # Bytes, void, datetime and structured items have no JSON type: they are written as
    # text (NaN inside a structured item as "nan"), never as an internal error.
    src = NP + f"a = np.zeros(2, dtype={dtype})"
    with guarded(tmp_path):
        trace = run_source(src)
    step = trace.steps[-1]
    assert step.status == "ok", step.error
    text = json.dumps(step.to_json(), allow_nan=False)
    expected = np.zeros(2, dtype=ast.literal_eval(dtype)).tolist()
    values = json.loads(text)["arrays"]["a"]["values"]
    flat = [list(v) if isinstance(v, tuple) else v for v in expected]
    assert values == [
        [x if isinstance(x, (int, float)) else str(x) for x in v]
        if isinstance(v, list)
        else (v if isinstance(v, (int, float)) else str(v))
        for v in flat
    ]


def test_nan_inside_a_structured_item_is_valid_json(tmp_path: Path) -> None:
    with guarded(tmp_path):
        trace = run_source(NP + "a = np.zeros(2, dtype=[('x', 'f8'), ('y', 'i4')])\na[0] = (float('nan'), 1)")
    step = trace.steps[-1]
    assert json.loads(json.dumps(step.to_json(), allow_nan=False))["arrays"]["a"]["values"] == [["nan", 1], [0.0, 0]]


@pytest.mark.parametrize(
    "call",
    [
        "np.random.normal(np.zeros((100, 1)), np.ones((1, 100)))",  # array parameters broadcast, no size=
        "np.add([[1.0] * 100], [[1.0]] * 100)",  # nested lists count with their full shape
        "np.clip(np.zeros((100, 1)), np.zeros((1, 100)), 1.0)",  # not a ufunc, still broadcast
        "np.random.uniform(0, 1, size=np.array([100, 100]))",  # size= given as an array
    ],
)
def test_broadcast_results_are_counted_before_they_are_made(call: str) -> None:
    space = {"np": np}
    exec(f"r = {call}", space)  # what plain NumPy makes: more elements than the limit below
    assert space["r"].size == 10_000  # type: ignore[attr-defined]
    step = refused(f"import numpy as np\nr = {call}", limits=Limits(max_elements=1_000))
    assert isinstance(step, Step) and step.error is not None
    assert "would create an array of 10,000 elements" in step.error.message


def test_a_size_that_is_no_shape_is_refused() -> None:
    step = refused("import numpy as np\nr = np.random.uniform(0, 1, size='big')")
    assert isinstance(step, Step) and step.error is not None and "size=" in step.error.message
