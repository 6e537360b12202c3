"""The command line: every format and option, exit codes, stdin, a real pipe."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from cli_runs import cli, environ, piped, tcopy

from tcopy_cli import __version__

COLOUR = re.compile(rb"\x1b\[(?:[0-9;]*;)?(?:3[0-8]|9[0-7])[;m]")

DEMO = """\
# A small demo
import torch
a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
b = a.clone()
d = a.detach()
(b * b).sum().backward()
print(a.grad)
"""


def events(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    path = tmp_path / "demo.py"
    path.write_text(DEMO)
    return path


def test_version_and_help() -> None:
    code, out, _ = cli("--version")
    assert code == 0 and out.strip() == f"tcopy {__version__}"
    code, out, _ = cli("--help")
    assert code == 0 and "run" in out and "examples" in out


def test_table_output(demo: Path) -> None:
    code, out, err = cli("run", str(demo))
    assert code == 0, err
    assert "Step 5 · line 6" in out
    assert "CloneBackward0" in out
    assert "tensor([2., 4., 6.])" in out  # the print
    assert "\x1b[" not in out  # no ANSI codes when not a terminal
    assert "6 steps, 0 errors" in out


def test_json_output_follows_spec(demo: Path) -> None:
    code, out, _ = cli("run", str(demo), "--format", "json")
    assert code == 0
    evs = events(out)
    assert evs[0]["event"] == "start" and evs[0]["format"] == "tcopy.jsonl/1"
    assert evs[0]["torch"] == torch.__version__ and evs[0]["device"] == "cpu" and evs[0]["source"] == str(demo)
    steps = [e for e in evs if e["event"] == "step"]
    assert [s["index"] for s in steps] == [1, 2, 3, 4, 5, 6]
    assert [s["line"] for s in steps] == [2, 3, 4, 5, 6, 7]
    last = steps[-1]
    assert last["stdout"] == "tensor([2., 4., 6.])\n"
    a = last["tensors"]["a"]
    for key in (
        "shape",
        "dtype",
        "device",
        "values",
        "preview",
        "data_ptr",
        "storage",
        "storage_offset",
        "shares_memory_with",
        "requires_grad",
        "is_leaf",
        "grad_fn",
        "grad",
        "version",
    ):
        assert key in a
    assert a["grad"]["values"] == [2.0, 4.0, 6.0]
    assert a["shares_memory_with"] == ["d"]
    assert last["tensors"]["b"]["grad_fn"] == "CloneBackward0"
    assert last["tensors"]["d"]["storage"] == a["storage"] != last["tensors"]["b"]["storage"]
    assert evs[-1] == {"event": "end", "status": "ok", "steps": 6, "errors": 0}


def test_markdown_output(demo: Path) -> None:
    code, out, _ = cli("run", str(demo), "--format", "markdown")
    assert code == 0
    assert out.startswith("# A small demo")
    assert "### Step 3 · line 4" in out
    assert "```python\nb = a.clone()\n```" in out
    assert "| CloneBackward0 |" in out


def test_inline_code_and_stdin(demo: Path) -> None:
    code, out, _ = cli("run", "-e", "a = torch.ones(2); b = a + 1", "-f", "json")
    assert code == 0
    steps = [e for e in events(out) if e["event"] == "step"]
    assert [s["source"] for s in steps] == ["a = torch.ones(2)", "b = a + 1"]
    assert events(out)[0]["source"] == "<inline>"
    code, out, _ = cli("run", "-", "-f", "json", input=DEMO)
    assert code == 0 and events(out)[0]["source"] == "-"
    code, out, _ = cli("run", "-f", "json", input=DEMO)  # no path, piped stdin
    assert code == 0 and events(out)[-1]["steps"] == 6


def test_error_step_and_keep_going() -> None:
    script = "a = torch.ones(2)\nb = a.view(3)\nc = a * 2\n"
    code, out, err = cli("run", "-e", script, "-f", "json")
    assert code == 1
    evs = events(out)
    steps = [e for e in evs if e["event"] == "step"]
    assert len(steps) == 2 and steps[-1]["status"] == "error"
    assert (
        steps[-1]["error"]["type"] == "RuntimeError" and "invalid for input of size 2" in steps[-1]["error"]["message"]
    )
    assert evs[-1] == {"event": "end", "status": "error", "steps": 2, "errors": 1}
    assert "line 2" in err and "Traceback" not in err + out
    code, out, _ = cli("run", "-e", script, "-f", "json", "--keep-going")
    assert code == 1
    steps = [e for e in events(out) if e["event"] == "step"]
    assert [s["status"] for s in steps] == ["ok", "error", "ok"] and "c" in steps[-1]["tensors"]


def test_refused_script_table_and_json() -> None:
    # What Python can't compile is refused before a worker starts: the line, a caret, nothing on stdout.
    code, out, err = cli("run", "-e", "return 1\nx = 2")
    assert code == 1 and out == ""
    assert "line 1, column 1" in err and "return 1" in err and "^" in err and "'return' outside function" in err
    code, out, err = cli("run", "-e", "x = 1\nnonlocal y", "-f", "json")
    assert code == 1
    evs = events(out)
    assert [e["event"] for e in evs] == ["start", "rejected", "end"]
    assert evs[1]["line"] == 2 and "nonlocal" in evs[1]["message"]
    assert evs[2]["status"] == "error" and evs[2]["steps"] == 0


def test_syntax_error_points_at_line() -> None:
    code, _, err = cli("run", "-e", "a = torch.ones(2)\nb = (a +\n")
    assert code == 1 and "line 2" in err and "syntax error" in err


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    assert cli("run", str(tmp_path / "missing.py"))[0] == 2
    assert cli("run", str(tmp_path))[0] == 2
    assert cli("run", "-e", "x = 1", "--format", "xml")[0] == 2
    assert cli("run", "-e", "x = 1", "--example", "clone")[0] == 2
    assert cli("run", "--example", "no-such-example")[0] == 2
    if not torch.cuda.is_available():
        code, _, err = cli("run", "-e", "x = 1", "--device", "cuda")
        assert code == 2 and "not available" in err and "cpu" in err
    assert cli("run", "-e", "x = 1", "--device", "banana")[0] == 2


def test_device_auto_and_cpu() -> None:
    code, out, _ = cli("run", "-e", "a = torch.ones(1)", "--device", "auto", "-f", "json")
    assert code == 0
    start = events(out)[0]
    step = events(out)[1]
    assert step["tensors"]["a"]["device"] == start["device"] or start["device"].startswith(
        step["tensors"]["a"]["device"]
    )


def _md_rows(section: str) -> list[str]:
    """Names in the Markdown table rows of one step section."""
    return [ln.split("|")[2].strip() for ln in section.splitlines() if ln.startswith("| ") and "float32" in ln]


def test_only_changed_and_watch(demo: Path) -> None:
    code, out, _ = cli("run", str(demo), "--only-changed", "-f", "markdown")
    assert code == 0
    sections = out.split("### Step ")
    assert _md_rows(sections[5]) == ["a"]  # backward changed only a (its grad)
    # d is new; a now shares memory with d, but none of a's own facts changed
    assert _md_rows(sections[4]) == ["d"]
    code, out, _ = cli("run", str(demo), "--watch", "b", "-f", "markdown")
    rows = [name for sec in out.split("### Step ")[1:] for name in _md_rows(sec)]
    assert rows and set(rows) == {"b"}
    code, out, _ = cli("run", str(demo), "--watch", "b", "--only-changed")
    assert code == 0 and "(no watched tensor changed)" in out


def test_max_values_summarises(tmp_path: Path) -> None:
    code, out, _ = cli("run", "-e", "a = torch.arange(10.0)", "-f", "json", "--max-values", "4")
    rec = events(out)[1]["tensors"]["a"]
    assert rec["values"] is None and "min 0." in rec["preview"] and "max 9." in rec["preview"]
    code, out, _ = cli("run", "-e", "a = torch.arange(10.0)", "-f", "json")
    assert code == 0 and events(out)[1]["tensors"]["a"]["values"] == [float(i) for i in range(10)]


def test_no_explain_hides_notes() -> None:
    script = "a = torch.ones(2, requires_grad=True)\nb = torch.tensor(a)"
    _, out, _ = cli("run", "-e", script)
    assert "•" in out
    _, out, _ = cli("run", "-e", script, "--no-explain")
    assert "•" not in out
    _, out, _ = cli("run", "-e", script, "-f", "json", "--no-explain")
    assert events(out)[2]["notes"]  # JSON always carries the notes


def test_examples_command() -> None:
    code, out, _ = cli("examples", "-f", "json")
    listing = events(out)
    names = {e["name"] for e in listing}
    assert {"clone", "detach", "data", "deepcopy", "views"} <= names
    assert all(e["title"] for e in listing)
    code, out, _ = cli("examples", "clone")
    assert code == 0 and "b = a.clone()" in out
    code, out, _ = cli("examples", "clone", "--run")
    assert code == 0 and "CloneBackward0" in out


def test_limits_are_options() -> None:
    code, out, _ = cli("run", "-e", "a = torch.ones(1000)", "--max-elements", "10", "-f", "json")
    assert code == 1
    step = events(out)[1]
    assert step["error"]["type"] == "LimitExceeded" and "--max-elements" in step["error"]["message"]
    code, out, _ = cli("run", "-e", "for i in range(100):\n    x = i", "--max-steps", "5", "-f", "json")
    assert code == 1 and events(out)[-1]["steps"] == 6


def test_real_subprocess_through_a_pipe(demo: Path) -> None:
    """python -m tcopy_cli as a user runs it, stdout into a pipe and through a consumer."""
    produce = tcopy("run", "-", "--format", "json", input=DEMO.encode(), env=environ("FORCE_COLOR"), text=False)
    out, err = produce.stdout, produce.stderr
    assert produce.returncode == 0, err
    assert err == b""  # no warnings (e.g. numpy) leak
    evs = [json.loads(line) for line in out.decode().splitlines()]
    assert evs[-1]["event"] == "end"
    table = tcopy("run", str(demo), env=environ("FORCE_COLOR"), text=False)
    assert table.returncode == 0 and b"\x1b[" not in table.stdout and b"CloneBackward0" in table.stdout


def test_closed_pipe_exits_quietly(tmp_path: Path) -> None:
    script = tmp_path / "many.py"
    script.write_text("for i in range(300):\n    x = torch.ones(3) * i\n")
    proc = piped(["run", str(script)], "head -1", env=environ("FORCE_COLOR"))
    assert proc.stdout.count(b"\n") == 1
    assert b"Traceback" not in proc.stderr and b"BrokenPipe" not in proc.stderr


def test_no_color_env(demo: Path) -> None:
    colored = tcopy("run", str(demo), env=environ(FORCE_COLOR="1"), text=False)
    assert COLOUR.search(colored.stdout)
    plain = tcopy("run", str(demo), env=environ(FORCE_COLOR="1", NO_COLOR="1"), text=False)
    assert not COLOUR.search(plain.stdout)  # no colour codes (bold/italic may remain)
    plain2 = tcopy("run", str(demo), "--no-color", env=environ(FORCE_COLOR="1"), text=False)
    assert not COLOUR.search(plain2.stdout)
