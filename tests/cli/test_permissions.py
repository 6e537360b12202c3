"""What a run may do: confined by default, ``--allow-read`` to read files, ``--trust`` to lift the wall.

Every script runs with real Python in the worker; the permissions only decide what the kernel lets it
touch. Each is visible in the header and the JSON ``start`` event, and never implied.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runs import environ, invoke, tcopy

from tcopy_cli.trace.records import TRUSTED_HEADER

pytestmark = pytest.mark.e2e  # through the real command line and worker


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
    env = environ(NO_COLOR="1", PYTHONIOENCODING="utf-8")
    return tcopy("run", *args, input=stdin, cwd=cwd, env=env, timeout=180)


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


def test_confined_the_local_module_is_unreadable_until_allowed(project: Path) -> None:
    done = _tcopy("main.py", "-f", "json", cwd=project)
    assert done.returncode == 1
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert "trusted" not in events[0] and events[0]["allow_read"] == []
    error = [e for e in events if e["event"] == "step"][-1]
    assert (error["line"], error["error"]["type"]) == (4, "ModuleNotFoundError")
    assert "--allow-read lets the script read its own directory" in error["error"]["explanation"]
    assert not (project / "result.txt").exists()


def test_allow_read_imports_the_module_and_still_no_file_is_written(project: Path) -> None:
    done = _tcopy("main.py", "--allow-read", "-f", "json", cwd=project)
    assert done.returncode == 1
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert events[0]["allow_read"] == [str(project.resolve())]
    error = [e for e in events if e["event"] == "step"][-1]
    assert (error["line"], error["error"]["type"]) == (8, "PermissionError")
    assert "Permission denied: 'result.txt'" in error["error"]["message"]
    assert "write files (here 'result.txt')" in error["error"]["explanation"]
    assert "--trust" in error["error"]["explanation"]
    assert not (project / "result.txt").exists()
    # plain python, for the same statements before the write: a.grad is [2., 2.]
    assert [e for e in events if e["event"] == "step"][-2]["tensors"]["a"]["grad"]["values"] == [2.0, 2.0]


def test_a_write_torch_refuses_inside_its_own_code_names_trust(tmp_path: Path) -> None:
    """torch.save reports the kernel's refusal as its own RuntimeError: the explanation still names the flag."""
    (tmp_path / "save.py").write_text("import torch\nt = torch.ones(2)\ntorch.save(t, 'saved.pt')\n")
    done = _tcopy("save.py", "-f", "json", cwd=tmp_path)
    assert done.returncode == 1
    error = [json.loads(line) for line in done.stdout.splitlines()][-2]
    assert error["line"] == 3 and error["error"]["type"] == "RuntimeError"
    assert "Permission denied" in error["error"]["message"]
    assert "refused to let torch write the file" in error["error"]["explanation"]
    assert "--trust" in error["error"]["explanation"]
    assert not (tmp_path / "saved.pt").exists()


def test_the_script_reads_its_own_file_as_python_does(tmp_path: Path) -> None:
    """inspect.getsource and torch.compile read the script's own file: the run may, and nothing else beside it."""
    script = (
        "import inspect\n"
        "def f(x):\n"
        "    return x + 1\n"
        "print(inspect.getsource(f))\n"
        "print(open(inspect.getfile(f)).read().count('def'))\n"
        "try:\n"
        "    open('other.txt').read()\n"
        "    print('other: read')\n"
        "except PermissionError:\n"
        "    print('other: refused')\n"
    )
    (tmp_path / "own.py").write_text(script)
    (tmp_path / "other.txt").write_text("secret")
    python = subprocess.run([sys.executable, "own.py"], cwd=tmp_path, capture_output=True, text=True, check=True)
    done = _tcopy("own.py", "-f", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    printed = "".join(e.get("stdout", "") for e in map(json.loads, done.stdout.splitlines()) if e["event"] == "step")
    assert python.stdout.endswith("other: read\n") and printed.endswith("other: refused\n")
    assert printed.split("other:")[0] == python.stdout.split("other:")[0]  # the source and its 'def' count


def test_allow_read_names_paths_and_refuses_missing_ones(
    project: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    data = tmp_path_factory.mktemp("data")
    (data / "numbers.txt").write_text("1 2 3")
    script = "import torch\nx = torch.tensor([float(v) for v in open(PATH).read().split()])\n"
    script = script.replace("PATH", repr(str(data / "numbers.txt")))
    refused = _tcopy("-e", script, "-f", "json", cwd=project)
    assert refused.returncode == 1 and "PermissionError" in refused.stdout
    allowed = _tcopy("-e", script, f"--allow-read={data}", "-f", "json", cwd=project)
    assert allowed.returncode == 0, allowed.stderr
    assert [json.loads(line) for line in allowed.stdout.splitlines()][-2]["tensors"]["x"]["values"] == [1.0, 2.0, 3.0]
    missing = _tcopy("-e", script, f"--allow-read={data / 'nope'}", cwd=project)
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_a_syntax_error_gets_no_trust_hint() -> None:
    result = invoke("run", "-e", "x = (1 +\n")
    assert result.exit_code == 1 and "syntax error" in result.stderr
    assert "--trust" not in result.stderr


def test_the_table_header_says_trusted(project: Path) -> None:
    result = invoke("run", "main.py", "--trust", "--no-color", "--width", "120")
    assert result.exit_code == 0, result.stderr
    header = result.stdout.split("Step 1")[0]
    assert TRUSTED_HEADER in header and "none (--trust)" in header
    result = invoke("run", "main.py", "--trust", "-f", "markdown")
    assert result.exit_code == 0 and TRUSTED_HEADER in result.stdout.split("## ")[0]


def test_a_confined_run_is_not_marked_trusted() -> None:
    result = invoke("run", "-e", "x = 1", "-f", "json")
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
    done = _tcopy("bad.py", "-f", "json", cwd=project)
    assert done.returncode == 1
    steps = [e for e in map(json.loads, done.stdout.splitlines()) if e["event"] == "step"]
    last = steps[-1]
    assert (last["status"], last["line"], last["function"], last["error"]["type"]) == ("error", 3, "f", "RuntimeError")
    assert last["error"]["explanation"]


def test_a_crash_is_an_error_step(tmp_path: Path) -> None:
    (tmp_path / "crash.py").write_text("import ctypes\nx = 1\nctypes.string_at(0)\nprint('never')\n")
    for flags in ((), ("--trust",)):
        done = _tcopy("crash.py", *flags, "-f", "json", cwd=tmp_path)
        assert done.returncode == 1
        last = [json.loads(line) for line in done.stdout.splitlines()][-2]
        assert (last["line"], last["error"]["type"]) == (3, "ProcessCrashed")
        assert "SIGSEGV" in last["error"]["message"]


def test_an_expected_error_lets_the_run_go_on_and_exit_0(tmp_path: Path) -> None:
    script = tmp_path / "e.py"
    script.write_text(
        "import torch\na = torch.ones(2, requires_grad=True)\na.add_(1)  # expect: RuntimeError\nprint('after')\n"
    )
    result = invoke("run", "--format", "json", str(script))
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


def test_loops_with_a_local_module_fold_and_are_summed_up(project: Path) -> None:
    (project / "loop.py").write_text(LOOP)
    table = _tcopy("loop.py", "--allow-read", "--width", "100", cwd=project)
    assert table.returncode == 0, table.stderr
    out = table.stdout
    assert "Step 4 · line 6 · iteration 1/5" in out  # the first turn in full
    folded = [line.strip() for line in out.splitlines() if line.strip().startswith("↻")]
    assert [line.split(" · ")[0] for line in folded] == [f"↻ iteration {k}/5" for k in range(2, 6)]
    assert "total 2 → 4" in folded[0].replace(".0", "")  # 2.0 → 4.0: double(1) added each turn
    assert "loop at line 5: 5 iterations" in out
    done = _tcopy("loop.py", "--allow-read", "-f", "json", cwd=project)
    events = [json.loads(line) for line in done.stdout.splitlines()]
    loops = [e for e in events if e["event"] == "loop"]
    assert len(loops) == 1 and loops[0]["iterations"] == 5 and loops[0]["total"] == 5
    turns = [e["loops"] for e in events if e["event"] == "step" and e["line"] == 6]
    assert turns == [[{"line": 5, "iteration": k, "total": 5}] for k in range(1, 6)]


def test_require_confinement_refuses_where_the_wall_is_missing_and_runs_where_it_stands(project: Path) -> None:
    from tcopy_cli import confine

    done = _tcopy("-e", "x = 1", "--require-confinement", "-f", "json", cwd=project)
    wall = "landlock" in confine.available() and "seccomp" in confine.available()
    assert done.returncode == (0 if wall else 1), done.stderr
    env_done = tcopy("run", "-e", "x = 1", "--trust", env=environ(TCOPY_REQUIRE_CONFINEMENT="1"), timeout=180)
    assert env_done.returncode == 2 and "--require-confinement" in env_done.stderr
