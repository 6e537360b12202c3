"""tcopy's resource limits on real Python: each ends the run with an error step, never a traceback.

An audit hook (active only inside these tests) records process, network and file-write events while
a script runs; the current directory is an empty ``tmp_path`` that must stay empty.

Resource limits are exercised with small ``Limits`` where possible so the tests stay
fast; the ones that must be refused *before* allocating run with the defaults and a
time bound.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from cli_runs import invoke
from sandbox_guard import AUDIT, refused

from tcopy_cli.engine import run_source
from tcopy_cli.limits import Limits
from tcopy_cli.trace.records import Step

pytestmark = pytest.mark.e2e  # through the real command line and worker

# --- the guard (the fixture ``guard``, in conftest.py): audit events and the working directory ---


def test_the_guard_sees_files_and_processes(tmp_path: Path) -> None:
    # The audit hook itself works: a write and a spawn made while it is on are recorded.
    AUDIT["events"] = []
    AUDIT["on"] = True
    try:
        with open(tmp_path / "written.txt", "w") as fh:
            fh.write("x")
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    finally:
        AUDIT["on"] = False
    kinds = {event for event, _ in AUDIT["events"]}
    AUDIT["events"] = []
    assert {"open", "subprocess.Popen"} <= kinds


def limit_step(src: str, limits: Limits | None = None) -> Step:
    """Run ``src``; its last step must be a LimitExceeded error step."""
    trace = run_source(src, limits=limits)
    step = trace.steps[-1]
    assert step.status == "error", f"no limit was hit: {[(s.source, s.status) for s in trace.steps][-3:]}"
    assert step.error is not None
    assert step.error.type in ("LimitExceeded", "TimeoutExceeded"), (step.error.type, step.error.message)
    return step


# --- escapes -------------------------------------------------------------------------


# Modules tcopy does not offer bind an inert placeholder: the import runs, nothing
# happens, and every use of the name fails at its line, naming the module.


# --- resource limits -------------------------------------------------------------------

HUGE_TENSORS = [
    "x = torch.ones(100000, 100000)",
    "x = torch.empty(2**40)",
    "x = torch.zeros((10**6, 10**6), dtype=torch.float64)",
    "x = torch.zeros(size=(10**6, 10**6))",
    "x = torch.full((10**5, 10**5), 1.0)",
    "x = torch.randn(10**11)",
    "x = torch.rand(10**6, 10**6)",
    "x = torch.randint(0, 9, (10**6, 10**6))",
    "x = torch.normal(0.0, 1.0, (10**5, 10**4))",
    "x = torch.normal(2.0, 3.0, size=(10**5, 10**4))",
    "x = torch.arange(10**11)",
    "x = torch.linspace(0, 1, 10**11)",
    "x = torch.eye(10**6)",
    "x = torch.empty_strided((10**6, 10**6), (1, 1))",
    "a = torch.ones(2)\nx = a.new_zeros(10**11)",
    "a = torch.ones(2)\nx = a.new_full((10**6, 10**6), 2.0)",
    "a = torch.ones(1)\na.resize_(10**11)",
    "x = torch.ones(10**5).repeat(10**5)",
    "x = torch.ones(10**5).repeat_interleave(10**6)",
    "x = torch.ones(10**5).tile((10**5,))",
    "a = torch.ones(10**5)\nx = a[:, None] * a",
    "a = torch.ones(10**5)\nx = a[:, None] + a[None, :]",
    "a = torch.ones(10**5, 1)\nx = a @ a.T",
    "a = torch.ones(10**5, 1)\nx = torch.mm(a, a.T)",
    "a = torch.ones(10**5)\nx = torch.outer(a, a)",
    "x = torch.ones(1).expand(10**6, 10**6).contiguous()",
    "x = torch.nn.functional.pad(torch.ones(1), (0, 10**9))",
    "x = torch.nn.functional.pad(torch.ones(2, 2), (0, 10**5, 10**4, 0))",
    "a = torch.ones(31623)\nx = torch.tensordot(a, a, dims=0)",
    "a = torch.ones(31623, 2)\nx = torch.tensordot(a, a, dims=([1], [1]))",
    "import torch.nn.functional as F\nx = F.embedding(torch.zeros(10**4, dtype=torch.long), torch.ones(1, 10**5))",
    "import torch.nn.functional as F\ni = torch.zeros(10**4, dtype=torch.long)\n"
    "x = F.embedding(input=i, weight=torch.ones(1, 10**5))",
    "x = torch.nn.functional.pad(input=torch.ones(1), pad=(0, 10**9))",
    "x = torch.nn.functional.interpolate(torch.ones(1, 1, 10), scale_factor=10**8)",
    "x = torch.nn.functional.interpolate(torch.ones(1, 1, 2, 2), size=(10**5, 10**4))",
    "x = torch.nn.functional.interpolate(torch.ones(1, 1, 2), scale_factor=float('inf'))",
    "x = torch.nn.functional.interpolate(torch.ones(1, 1, 10), scale_factor=torch.tensor(5 * 10**7),"
    " recompute_scale_factor=True)",
    "import numpy as np\nk = np.array([5 * 10**7])[0]\n"
    "x = torch.nn.functional.interpolate(torch.ones(1, 1, 10), scale_factor=k)",
    "x = torch.nn.functional.interpolate(torch.ones(0, 1, 10), scale_factor=5 * 10**7, mode='linear')",
    "a = torch.ones(31623)\nx = torch.tensordot(a, b=a, dims=([], []))",
    # the same calls spelled through the class: torch.Tensor.method(tensor, ...)
    "a = torch.ones(2)\nx = torch.Tensor.new_zeros(a, 2**62)",
    "a = torch.ones(2)\nx = torch.Tensor.new_empty(a, 2**62)",
    "a = torch.ones(2)\nx = torch.Tensor.new_full(a, (2**62,), 1.0)",
    "a = torch.ones(2)\nx = torch.Tensor.repeat(a, 10**6, 10**6)",
]


@pytest.mark.parametrize("src", HUGE_TENSORS)
def test_huge_tensors_are_refused_before_allocating(src: str, guard: Path) -> None:
    start = time.perf_counter()
    step = limit_step(src)
    assert time.perf_counter() - start < 2.0
    assert step.error is not None and "element" in step.error.message
    for record in step.tensors.values():
        assert math_prod(record.shape) <= Limits().max_elements


def math_prod(shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def test_tensor_growth_in_a_loop_hits_the_element_limit(guard: Path) -> None:
    limits = Limits(max_elements=100_000)
    trace = run_source("x = torch.ones(1000)\nfor i in range(100):\n    x = torch.cat([x, x])", limits=limits)
    step = trace.steps[-1]
    assert step.error is not None and step.error.type == "LimitExceeded"
    assert len(trace.steps) < 20
    assert max(math_prod(s.tensors["x"].shape) for s in trace.steps) <= limits.max_elements


def test_tensor_growth_in_a_loop_hits_the_default_limit(guard: Path) -> None:
    start = time.perf_counter()
    step = limit_step("x = torch.ones(1000)\nfor i in range(100):\n    x = torch.cat([x, x])")
    assert time.perf_counter() - start < 10.0
    assert math_prod(step.tensors["x"].shape) <= Limits().max_elements


def test_many_tensors_hit_the_byte_limit(guard: Path) -> None:
    limits = Limits(max_bytes=10**7)
    trace = run_source("l = []\nfor i in range(100):\n    l.append(torch.ones(10**6))", limits=limits)
    step = trace.steps[-1]
    assert step.error is not None and step.error.type == "LimitExceeded"
    assert "bytes" in step.error.message
    assert len(trace.steps) <= 4


def test_step_limit_stops_a_long_loop(guard: Path) -> None:
    start = time.perf_counter()
    trace = run_source("for i in range(10**9):\n    x = i", limits=Limits(max_steps=50))
    assert time.perf_counter() - start < 5.0
    assert len(trace.steps) == 51
    step = trace.steps[-1]
    assert step.error is not None and step.error.type == "LimitExceeded"
    assert "--max-steps" in step.error.message
    assert trace.summary is not None and trace.summary.stopped_by == "max_steps"


def test_iteration_limit_stops_a_loop_without_steps(guard: Path) -> None:
    trace = run_source("for i in range(10**9):\n    pass", limits=Limits(max_iterations=1000))
    step = trace.steps[-1]
    assert step.error is not None and step.error.type == "LimitExceeded"
    assert "iterations" in step.error.message


def test_output_limit(guard: Path) -> None:
    step = limit_step('for i in range(100):\n    print("a" * 100)', Limits(max_output=1000))
    assert step.error is not None and "print" in step.error.message


def test_timeout_ends_a_python_level_loop(guard: Path) -> None:
    limits = Limits(timeout=0.5, max_steps=10**7, max_iterations=10**8)
    start = time.perf_counter()
    trace = run_source("for i in range(10**8):\n    x = i", limits=limits)
    assert time.perf_counter() - start < 4.0
    step = trace.steps[-1]
    assert step.error is not None and step.error.type == "TimeoutExceeded"
    assert trace.summary is not None and trace.summary.stopped_by == "timeout"
    assert torch.is_grad_enabled()
    # The alarm is disarmed: a later run in the same process is unaffected.
    later = run_source("x = 1\ny = 2")
    assert [s.status for s in later.steps] == ["ok", "ok"]


def test_timeout_ends_a_loop_that_makes_no_steps(guard: Path) -> None:
    limits = Limits(timeout=0.5, max_steps=10**7, max_iterations=10**8)
    start = time.perf_counter()
    trace = run_source("for i in range(10**4):\n    for j in range(10**4):\n        pass", limits=limits)
    assert time.perf_counter() - start < 4.0
    step = trace.steps[-1]
    assert step.error is not None and step.error.type == "TimeoutExceeded"


def test_timeout_inside_no_grad_restores_grad_mode(guard: Path) -> None:
    limits = Limits(timeout=0.3, max_steps=10**7, max_iterations=10**8)
    trace = run_source("with torch.no_grad():\n    for i in range(10**8):\n        x = i", limits=limits)
    assert trace.steps[-1].error is not None
    assert trace.steps[-1].error.type == "TimeoutExceeded"
    assert torch.is_grad_enabled()


BROKEN_TENSORS = [
    # A failed resize_ leaves the tensor's sizes changed but its storage as it was.
    "a = torch.ones(2)\nb = a.numpy()\na.resize_(1000)",
    "a = torch.ones(2)\nb = a.numpy()\na.resize_(6)",
    "a = torch.ones(4)\na.resize_(-1)",
    "a = torch.ones(2)\ntorch.Tensor.resize_(a, 2**62)",
]


@pytest.mark.parametrize("src", BROKEN_TENSORS)
def test_a_tensor_left_inconsistent_by_a_failed_op_is_an_error_step(src: str, guard: Path) -> None:
    # torch itself raises (or tcopy's size check refuses first); tcopy must report that as
    # the step's error, not crash while observing the damaged tensor (nor read past the end
    # of its storage).
    # A resize_ of memory that can't grow (shared with NumPy) is refused before torch runs it.
    step = refused(src)
    assert isinstance(step, Step)
    assert step.error is not None
    assert step.error.type in ("RuntimeError", "SystemError", "LimitExceeded")


# --- amplification: one allowed-size value turned into a huge one --------------------


TENSOR_AMPLIFIERS = [
    "a = torch.ones(1, 1000)\ni = torch.zeros(1000, dtype=torch.long)\nb = a[i]",
    "a = torch.ones(100)\nb = a[[0] * 20000]",
    "a = torch.ones(100, 100)\nb = a[[0] * 1000]",
    "x = torch.diag(torch.ones(1000))",
    "x = torch.ones(1000).diag_embed()",
    "x = torch.diagflat(torch.ones(1000))",
    "x = torch.bincount(torch.tensor([10**6]))",
    "x = torch.combinations(torch.arange(100), r=3)",
    "a = torch.ones(1000)\nx = torch.einsum('i,j->ij', a, a)",
    "x = torch.histc(torch.ones(2), bins=10**6)",
    "x = torch.ones(100).expand(1000, 100).contiguous()",
    "x = torch.cartesian_prod(torch.arange(1000), torch.arange(1000))",
    "x = torch.vander(torch.ones(1000))",
    "x = torch.kron(torch.ones(100, 100), torch.ones(10, 10))",
    "x = torch.tril_indices(1000, 1000)",
    "x = torch.block_diag(torch.ones(100, 100), torch.ones(100, 100))",
    "a = torch.ones(10, 1000)\nb = a.unfold(1, 10, 1)",
    "x = torch.multinomial(torch.ones(2), 10**6, replacement=True)",
]


@pytest.mark.parametrize("src", TENSOR_AMPLIFIERS)
def test_every_way_to_make_a_tensor_is_held_to_the_element_limit(src: str, guard: Path) -> None:
    limits = Limits(max_elements=10_000)
    trace = run_source(src, limits=limits)
    step = trace.steps[-1]
    assert step.error is not None and step.error.type == "LimitExceeded", [
        (name, math_prod(r.shape)) for name, r in step.tensors.items()
    ]
    for s in trace.steps:
        for record in s.tensors.values():
            assert math_prod(record.shape) <= limits.max_elements


def test_observing_nested_containers_stays_cheap(guard: Path) -> None:
    # Three lists of 100 items, nested: the observer must not visit 100**3 items after
    # a step (with 1000 instead of 100, one step would take the better part of an hour).
    src = "l = [0] * 100\nm = [l] * 100\nk = [m] * 100"
    start = time.perf_counter()
    trace = run_source(src)
    elapsed = time.perf_counter() - start
    assert [s.status for s in trace.steps] == ["ok"] * 3
    assert elapsed < 0.25, f"{elapsed:.2f} s for three steps"


# --- through the command line --------------------------------------------------------

CLI_SAMPLES = [
    # What plain Python refuses, and what the kernel refuses the confined worker: an error step each.
    "x = torch.ones(2).view(3)",
    "a = torch.ones(1, requires_grad=True)\nb = a * 2\ns = b.grad_fn._saved_unknown",
    'f = open("pwned.txt", "w")',
    "import os\nos.listdir(os.path.expanduser('~'))",
    'T = torch\nT.save(T.ones(1), "pwned.pt")',
    'a = torch.ones(2)\na.numpy().tofile("pwned.bin")',
    "import socket\nsocket.create_connection(('127.0.0.1', 9))",
    "import subprocess\nsubprocess.run(['true'])",
    "x = torch.ones(100000, 100000)",
    "x = torch.empty(2**40)",
    '"a" * 10**10',
    "x = " + "-" * 200 + "1 +",
    "a = torch.ones(2)\nb = a.numpy()\na.resize_(1000)",
]


@pytest.mark.parametrize("fmt", ["table", "json"])
@pytest.mark.parametrize("src", CLI_SAMPLES)
def test_cli_exits_1_without_a_traceback(src: str, fmt: str, guard: Path) -> None:
    result = invoke("run", "-e", src, "--format", fmt, "--no-color")
    assert result.exit_code == 1, result.output
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    if fmt == "json":
        events = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
        assert events[0]["event"] == "start"
        assert events[-1]["event"] == "end" and events[-1]["status"] == "error"


def test_cli_step_limit_and_timeout(guard: Path) -> None:
    loop = "for i in range(10**9):\n    x = i"
    result = invoke("run", "-e", loop, "--max-steps", "20", "--format", "json")
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    steps = [e for e in map(json.loads, result.stdout.splitlines()) if e["event"] == "step"]
    assert len(steps) == 21 and steps[-1]["error"]["type"] == "LimitExceeded"
    args = ["run", "-e", loop, "--timeout", "0.5", "--max-steps", "10000000", "--max-iterations", "100000000"]
    start = time.perf_counter()
    result = invoke(*args, "--format", "json")
    # The worker's start-up (importing torch, seconds on a busy machine) is not part of
    # --timeout; the loop itself would run for hours.
    assert time.perf_counter() - start < 30.0
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    last = [e for e in map(json.loads, result.stdout.splitlines()) if e["event"] == "step"][-1]
    assert last["error"]["type"] == "TimeoutExceeded"
