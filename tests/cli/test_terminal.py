"""tcopy in a real terminal: tmux on a socket of this test's own draws what a person sees.

Each test starts ``tcopy`` in a detached tmux window of a given width, presses keys with
``send-keys`` and reads the screen with ``capture-pane``: a prompt that wraps, a line left
behind or two messages run together show there as they would to a presenter.
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import cli_runs
import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")]

ROOT = Path(__file__).resolve().parents[2]
EIGHT_STEPS = "; ".join(["a = torch.ones(2)", *(f"a = a + {i}" for i in range(1, 8))])
WAIT = 90.0  # the most seconds to wait for the screen to show something (a loaded machine starts torch slowly)


class Screen:
    """One tmux window on a private server."""

    def __init__(self, socket: str, width: int, height: int = 40) -> None:
        self.socket = socket
        self.width = width
        self.height = height

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], check=True, capture_output=True, text=True).stdout

    def start(self, shell_command: str) -> None:
        env = {"PYTHONPATH": str(ROOT), "NO_COLOR": "1", "TERM": "xterm-256color", "LC_ALL": "C.UTF-8"}
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        # the shell stays after tcopy ends (Ctrl-C included: its trap runs, it goes on), so the screen
        # can be read; EXIT= tells how tcopy ended
        script = (
            f"trap 'true' INT; cd {shlex.quote(str(ROOT))}; export {exports}; {shell_command}; echo EXIT=$?; sleep 600"
        )
        self.tmux("new-session", "-d", "-s", "t", "-x", str(self.width), "-y", str(self.height), "sh", "-c", script)

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "t", *keys)

    def text(self) -> str:
        """The screen and what scrolled off it, as a person sees them (wrapped lines stay wrapped)."""
        return self.tmux("capture-pane", "-p", "-t", "t", "-S", "-2000")

    def wait_for(self, pattern: str, count: int = 1) -> str:
        """The screen once ``pattern`` shows on it ``count`` times (fails after ``WAIT`` seconds)."""
        end = time.monotonic() + WAIT
        while True:
            screen = self.text()
            if len(re.findall(pattern, screen, flags=re.M)) >= count:
                return screen
            if time.monotonic() > end:
                pytest.fail(f"{pattern!r} never showed {count} times:\n{screen}")
            time.sleep(0.2)


@pytest.fixture
def screen(request: pytest.FixtureRequest) -> Iterator[object]:
    socket = f"tcopy-test-{os.getpid()}-{request.node.name}"[:80]
    made: list[Screen] = []

    def make(width: int) -> Screen:
        s = Screen(socket, width)
        made.append(s)
        return s

    yield make
    subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True)


def tcopy(*args: str) -> str:
    return " ".join(shlex.quote(a) for a in [sys.executable, "-m", "tcopy_cli", *args])


def through_a_pipe(*args: str, input: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``tcopy ARGS`` with ``input`` on its standard input and its output into pipes (no terminal)."""
    env = cli_runs.environ(PYTHONPATH=str(ROOT), NO_COLOR="1", **env)
    return cli_runs.tcopy(*args, input=input, cwd=ROOT, env=env, timeout=300)


PROMPT_START = r"^── (step \d+|loop at line \d+)"


def test_the_pause_prompt_is_one_line_at_80_columns_and_none_is_left_behind(screen) -> None:  # type: ignore[no-untyped-def]
    s = screen(80)
    s.start(tcopy("run", "-e", EIGHT_STEPS, "--pause"))
    s.wait_for(PROMPT_START)
    for shown in (2, 3, 4):
        s.keys("Space")
        s.wait_for(rf"^Step {shown} ·")
        s.wait_for(PROMPT_START)
    lines = s.text().splitlines()
    prompts = [line for line in lines if re.match(PROMPT_START, line)]
    assert len(prompts) == 1, "\n".join(lines)  # the one waiting now: every earlier one was erased whole
    at = lines.index(prompts[0])
    assert "q" in prompts[0] and len(prompts[0]) < 80
    assert not lines[at + 1 :] or not lines[at + 1].strip(), "\n".join(lines)  # nothing wrapped under it
    s.keys("q")
    s.wait_for("EXIT=0")


def test_ctrl_c_at_the_pause_says_interrupted_on_a_line_of_its_own(screen) -> None:  # type: ignore[no-untyped-def]
    s = screen(100)
    s.start(tcopy("run", "-e", EIGHT_STEPS, "--pause"))
    s.wait_for(PROMPT_START)
    s.keys("C-c")
    lines = s.wait_for("EXIT=130").splitlines()
    assert "tcopy: interrupted" in lines, "\n".join(lines)
    assert not any(re.match(PROMPT_START, line) for line in lines), "\n".join(lines)


def test_pause_reads_keys_from_the_terminal_when_the_script_is_piped(screen) -> None:  # type: ignore[no-untyped-def]
    s = screen(100)
    script = "import torch\\nx = torch.ones(2)\\ny = x * 2\\n"
    s.start(f"printf {shlex.quote(script)} | " + tcopy("run", "-", "--pause"))
    first = s.wait_for(PROMPT_START)
    assert "needs a terminal" not in first and " · <stdin>" in first, first
    # the first stop is the first step with a table: import torch, its rule alone, goes by with it
    assert re.search(r"^Step 1 · line 1 · import torch ─+\nStep 2 · line 2", first, re.M), first
    s.keys("Space")
    s.wait_for(r"^Step 3 ·")
    s.keys("q")
    out = s.wait_for("EXIT=0")
    assert "stopped after step 3" in out, out


def test_keys_pressed_while_a_step_computes_are_not_echoed(screen) -> None:  # type: ignore[no-untyped-def]
    s = screen(100)
    s.start(tcopy("run", "-e", "__import__('time').sleep(4)\nx = torch.ones(2)\n", "--pause") + "; stty -a")
    s.wait_for(r"^tcopy \S+ · torch")  # tcopy is up (its header drawn): the sleep, its first step, runs now
    s.keys("z", "z", "z")
    first = s.wait_for(PROMPT_START)
    assert "zzz" not in first, first  # nor drawn into the output; the prompt reads them (and ignores them)
    s.keys("q")
    out = s.wait_for("EXIT=0")
    assert "zzz" not in out and re.search(r"(^| )echo( |$)", out, re.M), out  # the terminal echoes again after tcopy


def test_a_leading_comment_block_keeps_its_lines_through_a_pipe() -> None:
    script = "# source: https://example.com/snippet\n# about: views share memory\n# notes:\n#   - one\nimport torch\n"
    done = through_a_pipe("run", "-", "--width", "100", input=script)
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stderr
    assert lines[0].endswith(" · <stdin>")  # standard input is named so, not "-"
    assert lines[1:5] == ["source: https://example.com/snippet", "about: views share memory", "notes:", "- one"]


TWICE = "x = torch.ones(2, requires_grad=True)\ny = (x * 2).sum()\ny.backward()\ny.backward()\n"


def test_an_explained_failure_ends_in_one_short_line_of_whole_words(screen) -> None:  # type: ignore[no-untyped-def]
    s = screen(80)
    s.start(tcopy("run", "-e", TWICE))
    lines = s.wait_for("EXIT=1").splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("tcopy: line 4: RuntimeError"))
    tail = lines[at : lines.index("EXIT=1")]
    # torch's message is in the step above, whole; stderr says what and where, between words
    assert len(tail) <= 2, "\n".join(lines)
    words = set(" ".join(lines[:at]).split()) | {"tcopy:", "line", "4:", "RuntimeError:", "…", "(or"}
    assert all(w in words for line in tail for w in line.split()), "\n".join(tail)


def test_graph_of_a_script_that_fails_says_why_on_stderr() -> None:
    done = through_a_pipe("graph", "-", input="import torch\n" + TWICE)
    assert done.returncode == 1
    assert "SumBackward0" in done.stdout  # the graph as it was when the line failed
    assert done.stderr.startswith("tcopy: line 5: RuntimeError: Trying to backward through the graph"), done.stderr


def test_graph_of_a_script_that_fails_before_any_graph_says_there_was_none() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tcopy_cli", "graph", "-e", "a = torch.ones(6)\nb = a.view(4, 4)"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"},
        timeout=300,
    )
    assert done.returncode == 1 and done.stdout == ""
    assert "the graph is empty" in done.stderr
    assert "the graph above" not in done.stderr and "with no graph" in done.stderr, done.stderr


def test_repl_zeroing_a_grad_already_zero_says_so_not_that_it_changed() -> None:
    entries = "x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\n(x * 2).sum().backward()\n"
    entries += "for i in range(2):\n    x.grad.zero_()\n\n:quit\n"
    done = through_a_pipe("repl", input=entries, COLUMNS="100")
    second = done.stdout.split("iteration 2/2")[-1]
    assert "x.grad was zeroed in place again: its values were 0 already." in second, done.stdout
    assert "→ [0., 0., 0.]" not in done.stdout, done.stdout


def test_repl_export_holds_what_was_typed_and_the_pipe_does_not(tmp_path: Path) -> None:
    out = tmp_path / "session.txt"
    entries = f"x = torch.ones(2)\nfor i in range(2):\n    x = x + i\n\n:help\n:export {out}\n:quit\n"
    done = through_a_pipe("repl", input=entries, COLUMNS="100")
    exported = out.read_text()
    for typed in (">>> x = torch.ones(2)", ">>> for i in range(2):", "...     x = x + i", ">>> :help"):
        assert typed in exported, exported  # a picture of the session shows what each answer answers
        assert typed not in done.stdout  # stdout is not a terminal: nothing echoed, nothing added
    assert exported.index(">>> :help") < exported.index(":export FILE")  # the command above its answer


SGD = """\
import torch
w = torch.zeros(3, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
x = torch.ones(3)
for i in range(30):
    loss = ((w * x).sum() - 1) ** 2
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_watch_w_in_a_training_loop_never_draws_an_empty_folded_line() -> None:
    done = through_a_pipe("run", "-", "--watch", "w", "--width", "100", input=SGD)
    folded = [line for line in done.stdout.splitlines() if "↻ iteration" in line]
    assert len(folded) > 3, done.stdout
    assert all(" · " in line for line in folded), done.stdout  # each says what its turns did to w


def test_repl_leaves_torch_to_its_worker() -> None:
    # the worker resolves --device and imports torch; the command line importing it too cost the
    # first prompt seconds
    done = cli_runs.python(
        "-X", "importtime", "-m", "tcopy_cli", "repl", input=":quit\n",
        env=cli_runs.environ(PYTHONPATH=str(ROOT), NO_COLOR="1"), cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    imported = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time")]
    assert "tcopy_cli.cli.repl" in imported and "torch" not in imported, done.stderr[-2000:]


def test_repl_refuses_a_device_this_machine_lacks() -> None:
    done = through_a_pipe("repl", "--device", "cuda:7", input=":quit\n")
    assert done.returncode == 2 and done.stdout == "", done.stdout
    assert "device 'cuda:7' is not available" in done.stderr, done.stderr


PARAGRAPHS = "# Views share memory\n#\n# A view is a window\n# onto the same storage.\n#\n#\n# Try it.\nimport torch\n"


def test_a_leading_comment_block_keeps_its_paragraphs_through_a_pipe() -> None:
    table = through_a_pipe("run", "-", "--width", "100", input=PARAGRAPHS).stdout.splitlines()
    assert table[1:7] == ["Views share memory", "", "A view is a window", "onto the same storage.", "", "Try it."]
    markdown = through_a_pipe("run", "-", "-f", "markdown", input=PARAGRAPHS).stdout
    expected = "# Views share memory\n\nA view is a window  \nonto the same storage.  \n\nTry it.  \n\n"
    assert markdown.startswith(expected)
    start = through_a_pipe("run", "-", "-f", "json", input=PARAGRAPHS).stdout.splitlines()[0]
    assert '"title": "Views share memory\\nA view is a window\\nonto the same storage.\\nTry it."' in start  # as before


def test_narrowing_the_terminal_at_the_pause_draws_the_prompt_again_and_leaves_none_behind(screen) -> None:  # type: ignore[no-untyped-def]
    s = screen(80)
    s.start(tcopy("run", "-e", EIGHT_STEPS, "--pause"))
    first = s.wait_for(r"^── step 1 · →/Space/Enter: next")
    assert "first/last · q: quit" in first, first
    s.tmux("resize-window", "-t", "t", "-x", "50")  # the 77-column prompt wraps onto a second row here
    narrowed = s.wait_for(r"^── step 1 · → ← Home End q$")  # drawn again, in its form for 50 columns
    assert "Space/Enter" not in narrowed and "first/last" not in narrowed, narrowed
    s.keys("Space")
    s.wait_for(r"^── step 2 ")
    lines = s.text().splitlines()
    assert [line for line in lines if line.startswith("── step")] == ["── step 2 · → ← Home End q"], "\n".join(lines)
    assert not any("first/last" in line for line in lines), "\n".join(lines)
    s.keys("q")
    s.wait_for("EXIT=0")


LONG_TITLE = "A rather long title for a demonstration of views, copies and the autograd graph in PyTorch"


@pytest.mark.parametrize("width", [60, 100])
def test_a_long_title_in_an_exported_svg_keeps_clear_of_the_window_buttons(tmp_path: Path, width: int) -> None:
    out = tmp_path / "demo.svg"
    args = ("run", "-e", "a = torch.ones(2)", "--width", str(width), "--export", str(out), "--title", LONG_TITLE)
    done = through_a_pipe(*args, input="")
    assert done.returncode == 0, done.stderr
    svg = out.read_text()
    found = re.search(r'<text class="[^"]*-title"[^>]*\bx="([\d.]+)"[^>]*>([^<]*)</text>', svg)
    assert found is not None, svg[:2000]
    centre, title = float(found[1]), found[2].replace("&#160;", " ")
    buttons = max(float(cx) for cx in re.findall(r'<circle cx="([\d.]+)"', svg)) + 26 + 7  # translate(26,22), r=7
    assert centre - len(title) * 11 / 2 > buttons + 16, (title, centre)  # 18px bold: 11px a character at most
    assert LONG_TITLE.startswith(title.removesuffix("…")), title  # cut after a word, or whole
    if width == 100:
        assert title == LONG_TITLE


def test_a_wrapped_row_of_a_loop_summary_keeps_its_indent_at_80_columns() -> None:
    script = (ROOT / "benchmarks" / "cases" / "mlp_train.py").read_text()
    done = through_a_pipe("run", "-", "--width", "80", input=script)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("  ⟲ loop at line 11"))
    rows = lines[at + 1 : lines.index("", at)]
    assert len(rows) > 3 and all(len(row) <= 80 for row in rows), "\n".join(rows)
    named = [row for row in rows if not row.startswith("     ")]
    assert [row.split()[0] for row in named] == ["model", "model.2.bias", "loss"], "\n".join(rows)
    value = len(named[0]) - len(named[0][len("    model") :].lstrip())  # where the values start
    assert any(row[:value].isspace() for row in rows), "\n".join(rows)  # a row wraps at 80 columns
    for row in rows:  # a row's further lines start under its values, not at the line's start
        assert row.startswith("    ") and (row in named or row[:value].isspace()), "\n".join(rows)


@pytest.mark.parametrize("command", ["", "run", "examples", "compare", "graph", "repl"])
def test_help_reads_in_whole_lines_at_80_columns(command: str) -> None:
    done = through_a_pipe(*[c for c in [command] if c], "--help", input="", COLUMNS="80", TERMINAL_WIDTH="80")
    assert done.returncode == 0, done.stderr
    lines = [line.rstrip() for line in done.stdout.splitlines()]
    assert all(len(line) <= 80 for line in lines), done.stdout
    prose = [line if line and line[0] == " " and line.strip()[:1] not in "│╭╰" else "" for line in lines]
    for line, after in itertools.pairwise(prose):  # a paragraph breaks where its line is full, not mid-phrase
        assert not (line and after) or len(line) > 60, done.stdout
    if command == "run":  # the descriptions have room: the option table's other columns are narrow
        for phrase in ("Run CODE given inline (statements", "Show only tensors that are new or changed"):
            assert any(phrase in line for line in lines), done.stdout
