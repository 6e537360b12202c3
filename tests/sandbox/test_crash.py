"""A worker that crashes, hangs or floods ends the run with an error step, exit 1 and an `end` event."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from typing import Any

import pytest
from cli_runs import environ, tcopy

from tcopy_cli.limits import Limits
from tcopy_cli.program import parse_program
from tcopy_cli.supervise import WorkerOptions, run_in_worker
from tcopy_cli.trace.records import RunInfo, Step
from tcopy_cli.worker import TEST_HOOK_ENV

pytestmark = pytest.mark.e2e  # through the real command line and worker

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# A ceiling for waits on a worker, never a measure of speed: a loaded machine may be slow.
CEILING_S = 600


def tcopy_run(*args: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    """``tcopy run ARGS`` in a process of its own (``env``: more environment variables)."""
    return tcopy("run", *args, timeout=timeout, env=environ(PYTHONPATH=ROOT, **env), cwd=ROOT)


def cli(*args: str, timeout: float = 120) -> tuple[int, list[dict[str, Any]], str]:
    proc = tcopy_run(*args, "--format", "json", timeout=timeout)
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines()], proc.stderr


def run_with_hook(source: str, line: int, code: str, monkeypatch: pytest.MonkeyPatch) -> tuple[list[Step], Any]:
    monkeypatch.setenv(TEST_HOOK_ENV, "1")
    steps: list[Step] = []
    infos: list[RunInfo] = []
    summary = run_in_worker(
        parse_program(source, "<t>"), WorkerOptions(test_hook={"line": line, "code": code}), steps.append, infos.append
    )
    assert infos, "the run started"
    return steps, summary


def test_sigfpe_inside_torch_is_an_error_step_naming_the_line() -> None:
    src = (
        "a = torch.ones(2)\nb = a * 2\n"
        "c = torch.div(torch.tensor(-2**31, dtype=torch.int32), -1, rounding_mode='trunc')\nd = 1\n"
    )
    code, events, err = cli("-e", src)
    if events[-2]["status"] == "ok" and events[-1]["status"] == "ok":
        pytest.skip("this torch no longer crashes on INT32_MIN // -1")
    assert code == 1
    assert [e["event"] for e in events] == ["start", "step", "step", "step", "end"]
    crash = events[3]
    assert crash["status"] == "error" and crash["line"] == 3 and crash["index"] == 3
    assert crash["error"]["type"] == "ProcessCrashed"
    assert "SIGFPE inside torch at line 3" in crash["error"]["message"]
    assert "torch.div(" in crash["error"]["message"]
    assert "not a Python error in your script" in crash["error"]["message"]
    assert crash["source"].startswith("c = torch.div(")
    assert events[-1] == {"event": "end", "status": "error", "steps": 3, "errors": 1}
    assert "line 3" in err and "SIGFPE" in err


@pytest.mark.parametrize("sig", ["SIGSEGV", "SIGKILL", "SIGBUS", "SIGABRT"])
def test_a_worker_killed_by_a_signal_is_reported_at_its_statement(sig: str, monkeypatch: pytest.MonkeyPatch) -> None:
    src = "a = torch.ones(3)\nb = a + 1\nc = b * 2\n"
    steps, summary = run_with_hook(src, 2, f"import os, signal; os.kill(os.getpid(), signal.{sig})", monkeypatch)
    assert [s.status for s in steps] == ["ok", "error"]
    crash = steps[-1]
    assert crash.line == 2 and crash.source == "b = a + 1" and crash.index == 2
    assert crash.error is not None and crash.error.type == "ProcessCrashed"
    assert sig in crash.error.message and "at line 2: `b = a + 1`" in crash.error.message
    assert summary.status == "error" and summary.steps == 2 and summary.errors == 1
    assert summary.stopped_by == "crash"


def test_a_crash_inside_a_function_names_the_inner_statement(monkeypatch: pytest.MonkeyPatch) -> None:
    src = "def f(x):\n    y = x * 2\n    return y\na = torch.ones(2)\nb = f(a)\n"
    steps, _ = run_with_hook(src, 3, "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)", monkeypatch)
    assert steps[-1].line == 3 and steps[-1].source == "return y"
    assert [s.line for s in steps[:-1]] == [1, 4, 2]


def test_an_exit_without_end_is_never_ok(monkeypatch: pytest.MonkeyPatch) -> None:
    steps, summary = run_with_hook("a = 1\nb = 2\n", 2, "import os; os._exit(0)", monkeypatch)
    assert steps[-1].status == "error" and steps[-1].line == 2
    assert steps[-1].error is not None and "ended unexpectedly (exit status 0)" in steps[-1].error.message
    assert summary.status == "error"


def test_a_gil_holding_loop_is_stopped_by_timeout() -> None:
    # The statement never ends by itself: the run returning at all (within the ceiling) and the
    # TimeoutExceeded step show the timeout stopped it; how soon is not asserted.
    src = "a = torch.ones(2)\nb = 1.5 in range(10**18)\nc = 3\n"
    code, events, _ = cli("-e", src, "--timeout", "2", timeout=CEILING_S)
    assert code == 1
    assert [e["event"] for e in events] == ["start", "step", "step", "end"]
    stuck = events[2]
    assert stuck["line"] == 2 and stuck["error"]["type"] == "TimeoutExceeded"
    assert "longer than 2 s" in stuck["error"]["message"] and "1.5 in range" in stuck["error"]["message"]
    assert stuck["observed"] is False and stuck["tensors"] == {}  # nothing looked at, not "a" removed
    assert "observed" not in events[1]
    assert events[-1]["status"] == "error"


def test_a_step_not_observed_does_not_say_its_names_were_removed() -> None:
    src = "a = torch.ones(2)\nb = 1.5 in range(10**18)\n"
    proc = tcopy_run("-e", src, "--timeout", "2", COLUMNS="80")
    assert proc.returncode == 1
    text = " ".join(proc.stdout.split())
    assert "TimeoutExceeded" in text and "the tensors after this statement are unknown" in text
    assert "removed:" not in proc.stdout


def test_python_level_timeout_is_still_reported_by_the_worker() -> None:
    code, events, _ = cli("-e", "i = 0\nwhile True:\n    i = i + 1\n", "--timeout", "2", "--max-steps", "10000000")
    assert code == 1 and events[-1]["event"] == "end"
    steps = [e for e in events if e["event"] == "step"]
    assert steps[-1]["error"]["type"] == "TimeoutExceeded"  # a loop event may follow the last step


def test_output_cap_counts_everything_the_worker_sends() -> None:
    steps: list[Step] = []
    src = "t = torch.arange(50.0)\nfor i in range(2000):\n    u = t + i\n"
    summary = run_in_worker(
        parse_program(src, "<t>"), WorkerOptions(max_values=100, max_wire_bytes=200_000), steps.append, lambda i: None
    )
    assert summary.status == "error" and summary.stopped_by == "max_output"
    last = steps[-1]
    assert last.error is not None and last.error.type == "LimitExceeded" and "200,000 bytes" in last.error.message
    assert len(steps) < 200


ENDLESS = "a = 1\nb = 1.5 in range(10**18)\n"


def test_ctrl_c_stops_the_worker_and_exits_130() -> None:
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tcopy_cli", "run", "-e", ENDLESS, "-f", "json", "--timeout", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert proc.stdout is not None
    try:
        # Interrupt once the worker has sent the first statement's step: it is then inside the
        # endless second one, however long a loaded machine took to start it.
        for line in proc.stdout:
            if json.loads(line)["event"] == "step":
                break
        else:
            raise AssertionError(proc.stderr.read() if proc.stderr else "no step event")
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=CEILING_S)
    finally:
        proc.kill()
    assert proc.returncode == 130
    assert "interrupted" in err


def test_memory_past_rlimit_as_is_a_clean_error() -> None:
    """On the CPU, RLIMIT_AS turns a huge allocation into an error, not an OOM kill."""
    limits = Limits(max_bytes=64 * 1024**2, max_elements=10**11)
    steps: list[Step] = []
    summary = run_in_worker(
        parse_program("a = torch.empty(16 * 1024**3, dtype=torch.uint8)\n", "<t>"),
        WorkerOptions(limits=limits),
        steps.append,
        lambda i: None,
    )
    assert summary.status == "error"
    assert steps[-1].error is not None
    assert steps[-1].error.type in ("RuntimeError", "MemoryError", "LimitExceeded", "OutOfMemoryError")
