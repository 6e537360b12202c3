"""Presenting a run: step ranges, narration, export, the graph command, pause and the REPL
(the interactive parts in a real pseudo-terminal)."""

from __future__ import annotations

import os
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from cli_runs import cli

pytestmark = pytest.mark.e2e  # through the real command line and worker

pexpect = pytest.importorskip("pexpect")

SCRIPT = """\
# Demo
import torch
x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
# narration for y
y = x * 2
z = y.sum()
"""


GRAPH_SCRIPT = """\
a = torch.tensor([1.0, 2.0], requires_grad=True)
w = torch.tensor([3.0, 4.0], requires_grad=True)
b = a.clone()
h = (b * w + a).sigmoid()
v = h[1:]
loss = (v * a[0]).sum()
"""


def test_step_ranges() -> None:
    _, out, _ = cli("run", "-e", SCRIPT, "--step", "3")
    assert re.findall(r"Step (\d+) ·", out) == ["3"]
    _, out, _ = cli("run", "-e", SCRIPT, "--from", "2", "--to", "3")
    assert re.findall(r"Step (\d+) ·", out) == ["2", "3"]
    # change marks still compare with the (hidden) previous step
    assert "~ x" not in out.split("Step 3")[1]
    assert cli("run", "-e", SCRIPT, "--step", "2", "--from", "1")[0] == 2


def test_narration_and_title() -> None:
    _, out, _ = cli("run", "-e", SCRIPT)
    assert out.splitlines()[1] == "Demo"
    assert "narration for y\nStep 3" in out


def test_export_svg_html_txt(tmp_path: Path) -> None:
    svg = tmp_path / "demo.svg"
    code, _out, err = cli("run", "-e", SCRIPT, "--export", str(svg), "--title", "My demo")
    assert code == 0 and "wrote" in err
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg")
    # The visible text, segment by segment in document order (highlighting splits tokens).
    text = "".join(el.text or "" for el in root.iter() if el.tag.endswith("text")).replace("\xa0", " ")
    assert "My demo" in text
    for source in ("x = torch.tensor", "y = x * 2", "z = y.sum()"):
        assert source in text, source
    html = tmp_path / "demo.html"
    assert cli("run", "-e", SCRIPT, "--export", str(html))[0] == 0
    assert "<html" in html.read_text().lower()
    txt = tmp_path / "demo.txt"
    assert cli("run", "-e", SCRIPT, "--export", str(txt))[0] == 0
    assert "y = x * 2" in txt.read_text()
    assert cli("run", "-e", SCRIPT, "--export", str(tmp_path / "demo.png"))[0] == 2


def test_exports_are_slide_ready(tmp_path: Path) -> None:
    html = tmp_path / "demo.html"
    assert cli("run", "-e", SCRIPT, "--export", str(html), "--title", "clone <vs> detach")[0] == 0
    page = html.read_text()
    assert "<title>clone &lt;vs&gt; detach</title>" in page
    assert "background-color: #292929" in page  # the SVG's dark theme
    assert not re.search(r"(src|href)=\"?https?:", page)  # nothing fetched: works offline
    # in a pipe, an export is at least 100 columns wide, so a 3-element row does not wrap
    txt = tmp_path / "demo.txt"
    _, out, _ = cli("run", "-e", SCRIPT, "--export", str(txt))
    row = next(line for line in txt.read_text().splitlines() if line.startswith("+ x "))
    assert "1., 2., 3." in row.replace("1.0", "1.").replace("2.0", "2.").replace("3.0", "3.")
    assert max(len(line) for line in out.splitlines()) > 80
    # the footer counts the steps shown when a range hid some
    _, out, _ = cli("run", "-e", SCRIPT, "--from", "3", "--to", "4")
    assert out.rstrip().splitlines()[-1] == "2 of 4 steps shown, 0 errors"
    _, out, _ = cli("run", "-e", SCRIPT)
    assert out.rstrip().splitlines()[-1] == "4 steps, 0 errors"


def test_cast_export_replays_with_the_delay(tmp_path: Path) -> None:
    import json

    cast = tmp_path / "demo.cast"
    code, _out, err = cli("run", "-e", SCRIPT, "--export", str(cast), "--delay", "0.2", "--title", "Demo")
    assert code == 0 and "wrote" in err
    header, *events = (json.loads(line) for line in cast.read_text().splitlines())
    assert header["version"] == 2 and header["width"] >= 100 and header["title"] == "Demo"
    times = [e[0] for e in events]
    assert all(e[1] == "o" and isinstance(e[2], str) for e in events)
    assert times == sorted(set(times)) and times[1] - times[0] == pytest.approx(0.2)
    assert len(events) == 5  # four steps, then the closing line
    replay = "".join(e[2] for e in events)
    assert all(f"Step {n}" in re.sub(r"\x1b\[[0-9;]*m", "", replay) for n in range(1, 5))
    assert "\n" not in replay.replace("\r\n", "")  # a terminal newline each time


def test_graph_command_and_stale_saved_tensor() -> None:
    code, out, _ = cli("graph", "--example", "inplace_error", "-f", "text")
    assert code == 0  # the example ends in an error step its line marks '# expect: RuntimeError'
    code, _, _ = cli("graph", "-e", "import torch\ntorch.ones(2).view(3)")
    assert code == 1  # an error nobody expected
    assert "SigmoidBackward0" in out and "STALE" in out
    code, out, _ = cli("graph", "-e", GRAPH_SCRIPT, "-f", "dot")
    assert code == 0 and out.startswith("digraph autograd {") and out.rstrip().endswith("}")
    code, out, _ = cli("graph", "-e", GRAPH_SCRIPT, "-f", "mermaid")
    assert code == 0 and out.startswith("flowchart TD")
    code, out, _ = cli("run", "-e", GRAPH_SCRIPT, "--graph")
    assert "autograd graph:" in out and "AccumulateGrad → a" in out and "(view of h)" in out


def test_pause_without_terminal_is_ignored_with_notice() -> None:
    code, out, err = cli("run", "-e", SCRIPT, "--pause")
    assert code == 0 and "needs a terminal" in err and "Step 4" in out


def _spawn(args: list[str], timeout: int = 60):  # type: ignore[no-untyped-def]
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR",)}
    env.update({"NO_COLOR": "1", "COLUMNS": "100", "LINES": "50", "TERM": "xterm"})
    return pexpect.spawn(  # a terminal as wide as COLUMNS says: the pause prompt fits the terminal itself
        sys.executable, ["-m", "tcopy_cli", *args], env=env, timeout=timeout, encoding="utf-8", dimensions=(50, 100)
    )


PROMPT = "Home/End: first/last"
RIGHT, LEFT, UP, DOWN = "\x1b[C", "\x1b[D", "\x1b[A", "\x1b[B"
PAGE_UP, PAGE_DOWN, HOME, END = "\x1b[5~", "\x1b[6~", "\x1b[H", "\x1b[F"


def _step(n: object) -> str:
    """The rule that opens step n (bold codes may sit between the number and the dot)."""
    return rf"Step {n}(\x1b\[[0-9;]*m)* ·"


def _press(child, key: str, step: int) -> None:  # type: ignore[no-untyped-def]
    """Press a key at the prompt and see the step it leads to drawn, then the prompt again."""
    child.send(key)
    child.expect(_step(step))
    child.expect(PROMPT)


def _quit(child, step: int) -> None:  # type: ignore[no-untyped-def]
    """Press q: the run stops cleanly after the step it was at."""
    child.send("q")
    child.expect(f"stopped after step {step}")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


EIGHT_STEPS = "; ".join(["a = torch.ones(2)", *(f"a = a + {i}" for i in range(1, 8))])


def test_pause_next_back_and_quit_keys() -> None:
    child = _spawn(["run", "-e", EIGHT_STEPS, "--pause"])
    child.expect(_step(1))
    child.expect(PROMPT)
    for step, key in enumerate((" ", "\r", RIGHT, DOWN, PAGE_DOWN), start=2):
        _press(child, key, step)  # every next key runs the next step
    for step, key in zip((5, 4, 3, 2), (LEFT, UP, PAGE_UP, "b")):
        _press(child, key, step)  # every back key draws the step before again
    _press(child, "b", 1)
    child.send("b")  # nothing before step 1: the prompt again, no step drawn
    child.expect(PROMPT)
    _press(child, RIGHT, 2)  # forward over steps already shown draws them again ...
    _press(child, END, 6)
    _press(child, HOME, 1)
    _press(child, END, 6)
    _press(child, " ", 7)  # ... and past the last one shown runs the next one
    _quit(child, 7)


def test_pause_ignores_other_keys_and_erases_its_prompt() -> None:
    child = _spawn(["run", "--example", "data", "--pause"])
    child.expect(_step(1))  # import torch, drawn as its rule alone: no stop
    child.expect(_step(2))
    child.expect(PROMPT)
    for key in ("x", "\x1b", "\x1b[Z", "\x1b[15~", "7"):  # a letter, Esc, unknown sequences, a digit
        child.send(key)
        child.expect(PROMPT)  # still waiting: the key neither quit nor moved nor leaked
    child.send(" ")
    index = child.expect([_step(3), _step(r"\d+"), "stopped"])
    assert index == 0
    prompt_erased = child.before
    child.expect(PROMPT)
    child.send("q")
    child.expect("stopped after step 3")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    # the prompt was erased (carriage return + erase to the end of the screen: every row it takes)
    # before the next step was drawn
    assert "\r\x1b[J" in prompt_erased


def test_repl_in_a_real_terminal(tmp_path: Path) -> None:
    child = _spawn(["repl"])
    child.expect(">>> ")
    child.sendline("a = torch.ones(2, requires_grad=True)")
    child.expect("leaf\\+grad")
    child.expect(">>> ")
    child.sendline("b = a * 3")
    child.expect("MulBackward0")
    child.expect(">>> ")
    child.sendline("for i in range(2):")
    child.expect(r"\.\.\. ")
    child.sendline("    b.sum().backward(retain_graph=True)")
    child.expect(r"\.\.\. ")
    child.sendline("")
    child.expect("backward #2")
    child.expect(">>> ")
    child.sendline("return 1")
    child.expect("refused")
    child.expect(">>> ")
    child.sendline(":graph")
    child.expect(r"AccumulateGrad.{0,12}→ a")
    child.expect(">>> ")
    child.sendline(":vars")
    child.expect("MulBackward0")
    child.expect(">>> ")
    out = tmp_path / "session.svg"
    child.sendline(f":export {out}")
    child.expect("wrote")
    child.expect(">>> ")
    child.sendline(":reset")
    child.expect("forgotten")
    child.expect(">>> ")
    child.sendline("print(a)")
    child.expect("NameError")
    child.expect(">>> ")
    child.sendline(":quit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    root = ET.parse(out).getroot()
    text = "".join(el.text or "" for el in root.iter() if el.tag.endswith("text")).replace("\xa0", " ")
    assert "b.sum().backward" in text


def test_step_past_the_end_is_a_usage_error_after_the_run() -> None:
    code, out, err = cli("run", "-e", EIGHT_STEPS, "--step", "99")
    assert code == 2
    assert "--step 99" in err and "ran only 8 steps" in err
    assert "0 of 8 steps shown, 0 errors" in out  # the run finished before the range could be judged
    code, _out, err = cli("run", "-e", EIGHT_STEPS, "--from", "9")
    assert code == 2 and "--from 9" in err
    assert cli("run", "-e", EIGHT_STEPS, "--step", "8")[0] == 0


def test_color_always_never_auto() -> None:
    ansi = "\x1b["
    assert ansi in cli("run", "-e", SCRIPT, "--color", "always")[1]  # a pipe, coloured anyway
    assert ansi not in cli("run", "-e", SCRIPT, "--color", "never")[1]
    assert ansi not in cli("run", "-e", SCRIPT, "--color", "auto")[1]  # auto: no colour in a pipe
    assert ansi not in cli("run", "-e", SCRIPT, "--color", "always", "--no-color")[1]
    assert cli("run", "-e", SCRIPT, "--color", "sometimes")[0] == 2


@pytest.mark.skipif(
    not any(__import__("shutil").which(b) for b in ("chromium", "chromium-browser")), reason="needs chromium"
)
def test_export_png_script_renders_the_svg(tmp_path: Path) -> None:
    import struct
    import subprocess

    svg = tmp_path / "demo.svg"
    assert cli("run", "-e", SCRIPT, "--export", str(svg))[0] == 0
    script = Path(__file__).resolve().parents[2] / "scripts" / "export-png.sh"
    subprocess.run([str(script), str(svg)], check=True, timeout=120, capture_output=True)
    png = (tmp_path / "demo.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    view_box = ET.parse(svg).getroot().attrib["viewBox"].split()
    assert (width, height) == (round(float(view_box[2])), round(float(view_box[3])))  # the SVG's own size


def test_repl_answers_expressions_shows_vars_unmarked_and_clears_on_ctrl_l() -> None:
    import torch

    a = torch.ones(3, requires_grad=True)
    child = _spawn(["repl"])
    child.expect(">>> ")
    child.sendline("a = torch.ones(3, requires_grad=True)")
    child.expect(">>> ")
    child.sendline("a * 3")
    child.expect(re.escape(repr(a * 3)))  # the value, as plain Python's repr gives it
    child.expect(">>> ")
    child.sendline("a.is_leaf")
    child.expect(r"a\.is_leaf\r\n")  # the statement, then its value on the next line
    child.expect(rf"{a.is_leaf}\r\n")
    child.expect(">>> ")
    child.sendline("b = a * 2")  # an assignment answers nothing, as in Python
    child.expect(">>> ")
    assert "tensor(" not in child.before
    child.sendline("print(b.sum())")  # print's own output, and no echo of its None
    child.expect(">>> ")
    assert str((a * 2).sum()) in child.before and "\r\nNone\r\n" not in child.before
    child.sendline(":vars")
    child.expect(">>> ")
    plain = re.sub(r"\x1b\[[0-9;]*m", "", child.before)
    rows = [line for line in plain.splitlines() if re.match(r"^. [ab] ", line)]
    assert [r[2] for r in rows] == ["a", "b"] and all(r[0] == " " for r in rows), rows  # no row marked new
    child.sendline(":clear")
    child.expect(r"\x1b\[H\x1b\[2J|\x1b\[2J")
    child.expect(">>> ")
    child.send("c = 1")
    child.sendcontrol("l")  # Ctrl-L: the screen is cleared and the prompt drawn again with the line
    child.expect(r"\x1b\[H\x1b\[2J|\x1b\[2J|\x1b\[H\x1b\[J")
    child.expect(">>> c = 1")
    child.sendline("")
    child.expect(">>> ")
    child.sendline(":quit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


LOOP = "a = torch.zeros(1)\nfor i in range(5):\n    a = a + i\nb = a * 2"


def test_pause_lets_folded_turns_go_by_and_stops_at_the_loop_summary() -> None:
    child = _spawn(["run", "-e", LOOP, "--pause"])
    child.expect(_step(1))
    child.expect(PROMPT)
    _press(child, " ", 2)  # the loop's first turn, in full
    child.send(" ")
    for turn in (2, 3, 4, 5):  # the later turns, one line each, without a stop between them
        child.expect(rf"↻ (\x1b\[[0-9;]*m)*iteration {turn}/5")
    child.expect("loop at line 2: 5 iterations")
    child.expect(PROMPT)
    _press(child, " ", 7)
    child.send("b")  # back: the summary is drawn again with the folded turns above it
    child.expect(r"↻ (\x1b\[[0-9;]*m)*iteration 2/5")
    child.expect("loop at line 2")
    child.expect(PROMPT)
    _quit(child, 7)


def test_pause_with_export_records_every_step_once(tmp_path: Path) -> None:
    # import torch and manual_seed are drawn as their rules alone: they go by with step 3
    script = tmp_path / "demo.py"
    script.write_text("import torch\ntorch.manual_seed(0)\nx = torch.ones(3)\nfor i in range(3):\n    x = x + i\n")
    out = tmp_path / "demo.txt"
    child = _spawn(["run", str(script), "--pause", "--export", str(out)])
    child.expect(PROMPT)  # at step 3
    screen = child.before
    while True:
        child.send(" ")
        if child.expect([PROMPT, pexpect.EOF]) == 1:
            break
        screen += child.before
    child.close()
    assert child.exitstatus == 0
    screen = re.sub(r"\x1b\[[0-9;]*m", "", screen)
    for rule in ("Step 1 · line 1 · import torch", "Step 2 · line 2 · torch.manual_seed(0)", "↻ iteration 2/3"):
        assert screen.count(rule) == 1, screen  # drawn once, not again with the stop they went by with
    exported = out.read_text()
    assert re.findall(r"Step (\d+) ·", exported) == ["1", "2", "3", "4"], exported  # 5 and 6: folded turns
    assert exported.count("↻ iteration 2/3") == 1
    assert "Home/End" not in exported  # the prompt is not part of the picture
