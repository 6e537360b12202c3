"""The command line under awkward input and signals: each case with its exit code and message."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from cli_runs import cli, environ, piped, tcopy

pytestmark = pytest.mark.e2e  # through the real command line and worker


def test_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "secret.py"
    path.write_text("x = 1\n")
    path.chmod(0)
    try:
        if os.access(path, os.R_OK):
            pytest.skip("running as a user who can read any file (root)")
        code, _, err = cli("run", str(path))
        assert code == 2 and "can't read" in err
    finally:
        path.chmod(0o600)


def test_directory_and_missing_file(tmp_path: Path) -> None:
    code, _, err = cli("run", str(tmp_path))
    assert code == 2 and "is a directory" in err
    code, _, err = cli("run", str(tmp_path / "nope.py"))
    assert code == 2 and "no such file" in err


def test_non_utf8_bytes(tmp_path: Path) -> None:
    path = tmp_path / "latin1.py"
    path.write_bytes(b"x = 1\ny = '\xe9'\n")
    code, out, err = cli("run", str(path), "-f", "json")
    assert code == 1 and "not valid UTF-8" in err and "line 2" in err
    events = [json.loads(x) for x in out.splitlines()]
    assert events[1]["event"] == "rejected" and events[1]["line"] == 2


def test_empty_script(tmp_path: Path) -> None:
    path = tmp_path / "empty.py"
    path.write_text("")
    code, out, _ = cli("run", str(path), "-f", "json")
    assert code == 0
    events = [json.loads(x) for x in out.splitlines()]
    assert [e["event"] for e in events] == ["start", "end"] and events[-1]["steps"] == 0


def test_ten_megabyte_script_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "huge.py"
    path.write_text("x = 1\n" * (10 * 1024 * 1024 // 6 + 1))
    start = time.perf_counter()
    code, _, err = cli("run", str(path))
    assert code == 1 and "larger than" in err and "--max-script-bytes" in err
    assert time.perf_counter() - start < 10


def test_windows_line_endings_and_bom(tmp_path: Path) -> None:
    path = tmp_path / "win.py"
    path.write_bytes(b"\xef\xbb\xbfimport torch\r\na = torch.ones(2)\r\nb = a * 2\r\n")
    code, out, _ = cli("run", str(path), "-f", "json")
    assert code == 0
    steps = [json.loads(x) for x in out.splitlines() if '"step"' in x]
    assert [s["source"] for s in steps] == ["import torch", "a = torch.ones(2)", "b = a * 2"]
    assert [s["line"] for s in steps] == [1, 2, 3]


def test_unknown_format_and_bad_device() -> None:
    code, _, err = cli("run", "-e", "x = 1", "--format", "yaml")
    assert code == 2 and "yaml" in err
    if not torch.cuda.is_available():
        code, _, err = cli("run", "-e", "x = 1", "--device", "cuda")
        assert code == 2 and "available: cpu" in err


def _env() -> dict[str, str]:
    return environ("FORCE_COLOR", NO_COLOR="1")


def test_sigint_mid_run_exits_130(tmp_path: Path) -> None:
    script = tmp_path / "long.py"
    script.write_text("x = torch.zeros(1)\nfor i in range(100000):\n    x = x + 1\n")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tcopy_cli",
            "run",
            str(script),
            "-f",
            "json",
            "--max-steps",
            "1000000",
            "--max-iterations",
            "1000000",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
    )
    assert proc.stdout is not None
    # wait until steps are flowing, then interrupt
    for _ in range(5):
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else ""
    proc.send_signal(signal.SIGINT)
    # A ceiling only: the exit code is what is checked, not how soon it comes.
    _out, err = proc.communicate(timeout=600)
    assert proc.returncode == 130
    assert b"interrupted" in err and b"Traceback" not in err


def test_closed_stdout_pipe_is_quiet(tmp_path: Path) -> None:
    script = tmp_path / "many.py"
    script.write_text("for i in range(500):\n    x = torch.ones(2) * i\n")
    proc = piped(["run", str(script), "--format", "json"], "head -2", env=_env())
    assert proc.stdout.count(b"\n") == 2
    assert proc.stderr == b""


@pytest.mark.slow
def test_timeout_stops_a_long_single_operation(tmp_path: Path) -> None:
    """A single C operation can't be interrupted: the watchdog ends the process."""
    script = tmp_path / "slow.py"
    script.write_text("a = torch.ones(6000, 6000, dtype=torch.float64)\nfor i in range(50):\n    b = a @ a\n")
    start = time.perf_counter()
    proc = tcopy("run", str(script), "-f", "json", "--timeout", "1", env=_env(), text=False)
    elapsed = time.perf_counter() - start
    assert proc.returncode == 1
    assert b"timed out" in proc.stderr or b"TimeoutExceeded" in proc.stdout
    assert b"Traceback" not in proc.stderr
    assert elapsed < 60


@pytest.mark.parametrize(
    ("script", "code", "steps"),
    [
        ("import sys\nx = 1\nsys.exit(0)\nraise RuntimeError('never')\n", 0, 3),
        ("import sys\ndef leave():\n    sys.exit()\nleave()\nprint('never')\n", 0, 3),
        ("import sys\nx = 1\nsys.exit(3)\nprint('never')\n", 1, 3),
    ],
    ids=["sys.exit(0)", "sys.exit() in a function", "sys.exit(3)"],
)
def test_sys_exit_ends_the_run_as_python_does(tmp_path: Path, script: str, code: int, steps: int) -> None:
    """Python ends at sys.exit: the statements after it never run, and exit status 0 is a run that ended ok."""
    path = tmp_path / "leave.py"
    path.write_text(script)
    python = subprocess.run([sys.executable, str(path)], capture_output=True, check=False)
    got, out, err = cli("run", str(path), "-f", "json")
    events = [json.loads(x) for x in out.splitlines()]
    assert (got, events[-1]["steps"]) == (code, steps), err
    assert (python.returncode == 0) == (code == 0) and "never" not in out
