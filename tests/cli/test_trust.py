"""``tcopy run --trust``: real Python in the worker, visible as such, never implied."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tcopy_cli.cli import app
from tcopy_cli.cli.present import TRUST_HINT
from tcopy_cli.trace.records import TRUSTED_HEADER

runner = CliRunner()

MAIN = """\
# writes its result next to itself
import os
import torch
from helper import double
a = torch.ones(2, requires_grad=True)
b = double(a)
b.sum().backward()
with open("result.txt", "w") as fh:
    fh.write(str(a.grad.tolist()))
print(os.path.exists("result.txt"))
"""
HELPER = "def double(t):\n    return t * 2\n"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "helper.py").write_text(HELPER)
    (tmp_path / "main.py").write_text(MAIN)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _tcopy(*args: str, stdin: str | None = None, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "PYTHONIOENCODING": "utf-8"}
    return subprocess.run(
        [sys.executable, "-m", "tcopy_cli", "run", *args],
        input=stdin,
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
        check=False,
    )


def test_trust_runs_imports_and_writes_files_in_the_worker(project: Path) -> None:
    done = _tcopy("main.py", "--trust", "--format", "json", cwd=project)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    start, end = events[0], events[-1]
    assert start["trusted"] is True and start["confinement"] == "none (--trust)"
    assert end == {"event": "end", "status": "ok", "steps": 8, "errors": 0}
    steps = events[1:-1]
    assert [s["line"] for s in steps] == [2, 3, 4, 5, 6, 7, 9, 10]  # a "with" header is no step
    assert steps[-1]["stdout"] == "True\n"
    assert steps[-1]["tensors"]["a"]["grad"]["values"] == [2.0, 2.0]
    assert (project / "result.txt").read_text() == "[2.0, 2.0]"


def test_without_trust_the_same_script_is_refused_with_a_hint(project: Path) -> None:
    result = runner.invoke(app, ["run", "main.py"])
    assert result.exit_code == 1
    assert "'open' is not allowed" in result.stderr
    assert " ".join(TRUST_HINT.split()) in " ".join(result.stderr.split())
    assert not (project / "result.txt").exists()


def test_a_syntax_error_gets_no_trust_hint() -> None:
    result = runner.invoke(app, ["run", "-e", "x = (1 +\n"])
    assert result.exit_code == 1 and "syntax error" in result.stderr
    assert "--trust" not in result.stderr


def test_the_table_header_says_trusted(project: Path) -> None:
    result = runner.invoke(app, ["run", "main.py", "--trust", "--no-color", "--width", "120"])
    assert result.exit_code == 0, result.stderr
    header = result.stdout.split("Step 1")[0]
    assert TRUSTED_HEADER in header and "none (--trust)" in header
    result = runner.invoke(app, ["run", "main.py", "--trust", "-f", "markdown"])
    assert result.exit_code == 0 and TRUSTED_HEADER in result.stdout.split("## ")[0]


def test_a_sandboxed_run_is_not_marked_trusted() -> None:
    result = runner.invoke(app, ["run", "-e", "x = 1", "-f", "json"])
    start = json.loads(result.stdout.splitlines()[0])
    assert "trusted" not in start and not start["confinement"].startswith("none")


def test_piped_input_is_never_trusted_implicitly(project: Path) -> None:
    done = _tcopy("--trust", stdin=MAIN, cwd=project)
    assert done.returncode == 2 and "give '-'" in done.stderr
    assert done.stdout == "" and not (project / "result.txt").exists()
    done = _tcopy("-", "--trust", "-f", "json", stdin=MAIN, cwd=project)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[0])["trusted"] is True
    assert (project / "result.txt").exists()


def test_an_error_exits_1_and_reports_the_innermost_line(project: Path) -> None:
    (project / "bad.py").write_text(
        "import torch\ndef f(t, i):\n    return t.view(i)\nfor i in (2, 3):\n    x = f(torch.ones(2), i)\n"
    )
    done = _tcopy("bad.py", "--trust", "-f", "json", cwd=project)
    assert done.returncode == 1
    steps = [e for e in map(json.loads, done.stdout.splitlines()) if e["event"] == "step"]
    last = steps[-1]
    assert (last["status"], last["line"], last["function"], last["error"]["type"]) == ("error", 3, "f", "RuntimeError")
    assert last["error"]["explanation"]


def test_a_crash_is_an_error_step_that_blames_no_one_in_particular(tmp_path: Path) -> None:
    (tmp_path / "crash.py").write_text("import ctypes\nx = 1\nctypes.string_at(0)\nprint('never')\n")
    done = _tcopy("crash.py", "--trust", "-f", "json", cwd=tmp_path)
    assert done.returncode == 1
    last = [json.loads(line) for line in done.stdout.splitlines()][-2]
    assert (last["line"], last["error"]["type"]) == (3, "ProcessCrashed")
    assert "SIGSEGV" in last["error"]["message"] and "--trust" in last["error"]["message"]


def test_an_expected_error_lets_a_trusted_run_go_on_and_exit_0(tmp_path: Path) -> None:
    script = tmp_path / "e.py"
    script.write_text(
        "import torch\n"
        "a = torch.ones(2, requires_grad=True)\n"
        "a.add_(1)  # expect: RuntimeError\n"
        "print('after')\n"
    )
    result = runner.invoke(app, ["run", "--trust", "--format", "json", str(script)])
    events = [json.loads(line) for line in result.stdout.splitlines()]
    steps = [e for e in events if e["event"] == "step"]
    assert result.exit_code == 0
    assert steps[2]["error"]["expected"] is True
    assert steps[-1]["stdout"] == "after\n"
    assert events[-1]["status"] == "ok" and events[-1]["expected_errors"] == 1


LOOP = """\
# sums in a loop, with a local helper module
import torch
from helper import double
total = torch.zeros(1)
for i in range(5):
    total = total + double(torch.ones(1))
print(total.item())
"""


def test_trusted_loops_fold_and_are_summed_up_as_in_the_sandbox(project: Path) -> None:
    (project / "loop.py").write_text(LOOP)
    table = _tcopy("loop.py", "--trust", "--width", "100", cwd=project)
    assert table.returncode == 0, table.stderr
    out = table.stdout
    assert "Step 4 · line 6 · iteration 1/5" in out  # the first turn in full
    folded = [line.strip() for line in out.splitlines() if line.strip().startswith("↻")]
    assert [line.split(" · ")[0] for line in folded] == [f"↻ iteration {k}/5" for k in range(2, 6)]
    assert "total 2 → 4" in folded[0].replace(".0", "")  # 2.0 → 4.0: double(1) added each turn
    assert "loop at line 5: 5 iterations" in out
    events = [json.loads(line) for line in _tcopy("loop.py", "--trust", "-f", "json", cwd=project).stdout.splitlines()]
    loops = [e for e in events if e["event"] == "loop"]
    assert len(loops) == 1 and loops[0]["iterations"] == 5 and loops[0]["total"] == 5
    turns = [e["loops"] for e in events if e["event"] == "step" and e["line"] == 6]
    assert turns == [[{"line": 5, "iteration": k, "total": 5}] for k in range(1, 6)]
