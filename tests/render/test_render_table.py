"""The step table: change marks, columns and values at different widths, piped output."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
import torch
from cli_runs import environ, tcopy
from recorded import run_cli

# Each step changes something a narrow table hides, or changes nothing of an existing tensor.
MARKS_SCRIPT = """\
import torch
a = torch.zeros(3, requires_grad=True)
b = a.detach()
w = torch.ones(1000)
w[999] = 5.0
x = torch.ones(2)
x.data = torch.zeros(2)
y = a * 2
y = a + 1
b.add_(1)
"""


def _names_by_step(script: str) -> dict[int, list[str]]:
    result = run_cli(["run", "-e", script, "-f", "json"])
    events = [json.loads(line) for line in result.stdout.splitlines()]
    return {e["index"]: list(e["tensors"]) for e in events if e["event"] == "step"}


def table_marks(text: str, names: dict[int, list[str]]) -> dict[int, dict[str, str]]:
    """{step: {name: mark}} read from the table view."""
    blocks = re.split(r"^Step (\d+) · ", text, flags=re.M)[1:]
    marks: dict[int, dict[str, str]] = {}
    for index, body in zip(blocks[::2], blocks[1::2]):
        step = int(index)
        marks[step] = {}
        for name in names[step]:
            m = re.search(rf"^([+~ ]) {re.escape(name)} ", body, flags=re.M)
            assert m is not None, (step, name, body)
            marks[step][name] = m[1]
    return marks


def markdown_marks(text: str) -> dict[int, dict[str, str]]:
    marks: dict[int, dict[str, str]] = {}
    for index, body in re.findall(r"^### Step (\d+) ·(.*?)(?=^### Step|\Z)", text, flags=re.M | re.S):
        marks[int(index)] = {m[1]: m[0].strip() or " " for m in re.findall(r"^\| ([+~ ]) \| ([^ |]+) \|", body, re.M)}
    return marks


# Top-level statements that call script functions, which change some tensors and not others.
CALLS_SCRIPT = """\
import torch
c = torch.zeros(2)
d = torch.ones(2)
e = torch.ones(2)
def g(t):
    c.add_(1)
    u = t * 2
    return u
def h():
    n = c.numel()
    return n
f = g(d)
k = h()
e.mul_(3)
f = g(e)
"""


def _top_level_marks(script: str) -> dict[int, dict[str, str]]:
    """{line: {name: mark}} by plain python: what each top-level statement changed from before it began."""
    ns: dict[str, object] = {}
    marks: dict[int, dict[str, str]] = {}

    def state() -> dict[str, tuple[int, int, list[float]]]:
        return {k: (id(v), v._version, v.tolist()) for k, v in ns.items() if isinstance(v, torch.Tensor)}

    for node in ast.parse(script).body:
        before = state()
        exec(compile(ast.Module([node], []), "<s>", "exec"), ns)
        marks[node.lineno] = {
            n: "+" if n not in before else "~" if before[n] != facts else " " for n, facts in state().items()
        }
    return marks


@pytest.mark.parametrize("depth", [None, "0"])
def test_a_call_is_marked_with_what_it_changed(depth: str | None) -> None:
    # A statement that ran a script function is marked against the state before it began (not
    # against the function's last statement), drawn or not drawn (--depth 0), table and Markdown.
    expected = _top_level_marks(CALLS_SCRIPT)
    stream = run_cli(["run", "-e", CALLS_SCRIPT, "-f", "json"]).stdout
    events = [json.loads(ln) for ln in stream.splitlines()]
    top = {e["index"]: e["line"] for e in events if e["event"] == "step" and e["depth"] == 0}
    names = {
        e["index"]: list(e["tensors"])
        for e in events
        if e["event"] == "step" and not e["source"].startswith(("import", "def"))
    }
    args = ["run", "-e", CALLS_SCRIPT, "--all-steps", "--width", "120"] + (["--depth", depth] if depth else [])
    out = run_cli(args).stdout
    table = table_marks("".join(re.findall(r"^Step \d+ · line \d+ ─.*?(?=^Step |\Z)", out, re.M | re.S)), names)
    md = markdown_marks(run_cli([*args, "-f", "markdown"]).stdout)
    checked = 0
    for index, line in top.items():
        if index in table and index > 2:  # the first table marks everything new
            assert table[index] == expected[line], (index, line, table[index], expected[line])
            assert md[index] == expected[line], (index, line, md[index])
            checked += 1
    assert checked == 5, (checked, table)  # k = h() changed nothing: one header line


def test_marks_are_the_same_at_40_80_and_160_columns_and_in_markdown() -> None:
    names = _names_by_step(MARKS_SCRIPT)
    # --all-steps: every row drawn, the unchanged ones too (by default they may fold into one line).
    every = ["run", "-e", MARKS_SCRIPT, "--all-steps"]
    narrow = table_marks(run_cli([*every, "--width", "80"]).stdout, names)
    wide = table_marks(run_cli([*every, "--width", "160"]).stdout, names)
    md = markdown_marks(run_cli([*every, "-f", "markdown"]).stdout)
    assert narrow == wide
    # Too narrow for the columns (Rich squeezes them all): the mark starts the row still.
    assert table_marks(run_cli([*every, "--width", "40"]).stdout, names) == wide
    assert {k: v for k, v in md.items() if v} == {k: v for k, v in narrow.items() if v}
    # What plain torch says changed, step by step (0-based lines of MARKS_SCRIPT + 1).
    a = torch.zeros(3, requires_grad=True)
    b = a.detach()
    assert b.data_ptr() == a.data_ptr()
    assert narrow[3] == {"a": " ", "b": "+"}  # only a's sharing changed: not a fact of a itself
    w = torch.ones(1000)
    w[999] = 5.0  # past the listed values, but max and mean change
    assert narrow[5]["w"] == "~"
    assert narrow[7]["x"] == "~"  # x.data = ...: new memory
    assert narrow[9]["y"] == "~"  # a new tensor under the same name: grad_fn changed
    b.add_(1)
    assert a._version == 1  # b shares a's version counter
    assert narrow[10] == {"a": "~", "b": "~", "w": " ", "x": " ", "y": " "}


VALUES_SCRIPT = """\
import torch
torch.manual_seed(0)
m = torch.tensor([[1.0, 25.5, 3.0], [4.0, 2.0, 6.0]], requires_grad=True)
n = (m * m).sum()
n.backward()
big = torch.randn(200, 300)
"""


def _step_block(text: str, index: int) -> str:
    return re.split(r"^Step \d+ · ", text, flags=re.M)[index]


def _header(block: str) -> list[str]:
    line = next(ln for ln in block.splitlines() if ln.startswith("  name "))
    return line.split()


def test_small_matrix_is_an_aligned_grid_and_large_tensor_a_summary() -> None:
    torch.manual_seed(0)
    m = torch.tensor([[1.0, 25.5, 3.0], [4.0, 2.0, 6.0]], requires_grad=True)
    big = torch.randn(200, 300)
    for width in ("80", "100", "160"):
        out = run_cli(["run", "-e", VALUES_SCRIPT, "--width", width]).stdout
        block = _step_block(out, 5)
        # Both rows of m on lines of their own, columns aligned as torch prints them.
        lines = block.splitlines()
        first = next(ln for ln in lines if re.match(r"^[~ ] m ", ln))
        second = lines[lines.index(first) + 1]
        assert "[[  1., 25.5,   3.]," in first, block
        col = first.index("[[")
        assert second[col : col + 20] == " [  4.,   2.,   6.]]", block
        listed = re.findall(r"-?\d+\.\d*", first[col : col + 20] + second[col : col + 20])
        assert [float(x) for x in listed] == m.flatten().tolist()
        # The large tensor: its statistics, measured on the whole tensor, readable in the table.
        block = _step_block(out, 6)
        # [min ▁▂▄█▆▃▁▁ max] μ=mean σ=std (the bars left out where the column is narrow), at most two lines
        big_lines = block.split("+ big ")[1].splitlines()
        cell = " ".join(line.strip().split("  ")[0] for line in big_lines[:2] if not line.startswith("  •"))
        stats = re.search(r"\[(\S+?),? (?:[ ▁▂▃▄▅▆▇█]{8} )?(\S+)\]\s.*?μ=(\S+) σ=(\S+)", cell)
        assert stats is not None, block
        assert float(stats[1]) == pytest.approx(big.min().item(), abs=1e-2)
        assert float(stats[2]) == pytest.approx(big.max().item(), abs=1e-2)
        assert float(stats[3]) == pytest.approx(big.mean().item(), abs=1e-3)
        assert float(stats[4]) == pytest.approx(big.std().item(), abs=1e-2)
        # Every column is there at every width, ver included.
        assert _header(block)[-1] == "ver"


def test_a_numpy_array_has_an_empty_grad_cell() -> None:
    # An array has no .grad: nothing in its grad column (its values were once drawn again there).
    script = "import torch\nimport numpy as np\nn = np.arange(40.0).reshape(5, 8)\nt = torch.from_numpy(n)\n"
    for width in ("80", "100", "160"):
        out = run_cli(["run", "-e", script, "--width", width]).stdout
        block = _step_block(out, 4)
        lines = block.splitlines()
        row = next(i for i, ln in enumerate(lines) if re.match(r"^[~+ ] n ", ln))
        grad_col = next(ln for ln in lines if ln.startswith("  name ")).index(" grad ")
        assert lines[row][grad_col:].strip() == "", block
        # The value lines under the row hold the array's rows, nothing at the grad column.
        wrapped = [ln for ln in lines[row + 1 : row + 6] if ln.startswith("      ")]
        assert len(wrapped) == (4 if width != "80" else 0), block  # the 5x8 grid, or its statistics on one line
        for ln in wrapped:
            assert ln[grad_col:].strip() == "", block


def test_values_get_the_width_before_data_ptr() -> None:
    script = "import torch\na = torch.ones(3)\nb = torch.arange(7.0) / 7\n"
    out = run_cli(["run", "-e", script, "--width", "120"]).stdout
    assert "data_ptr" in _header(_step_block(out, 2))  # room for both
    step3 = _step_block(out, 3)
    assert "data_ptr" not in _header(step3)  # the values need the room: the hex address goes
    expected = (
        "["
        + ", ".join(f"{v:.4g}" + ("." if float(v).is_integer() else "") for v in (torch.arange(7.0) / 7).tolist())
        + "]"
    )
    assert expected in step3  # on one line
    # and once given up, it does not come back in a later step
    out = run_cli(["run", "-e", script + "c = a * 2\n", "--width", "120"]).stdout
    assert "data_ptr" not in _header(_step_block(out, 4))


@pytest.mark.e2e  # a real pipe: the width tcopy takes where nothing gives one
def test_ver_column_kept_at_80_columns_in_a_pipe(tmp_path: Path) -> None:
    script = tmp_path / "norm.py"
    script.write_text(VALUES_SCRIPT.replace("(m * m).sum()", "(m * m).norm()"))  # a long grad_fn
    proc = tcopy("run", str(script), env=environ("COLUMNS", "FORCE_COLOR"), timeout=120)
    assert proc.returncode == 0, proc.stderr
    for index in range(3, 7):
        block = _step_block(proc.stdout, index)
        assert _header(block)[-1] == "ver", block
        assert max(len(line) for line in block.splitlines()) <= 80


MEMORY_SCRIPT = """\
import torch
a = torch.tensor([1.0])
b = torch.arange(6.0)
v = b[2:]
print("nothing changes")
"""


def _memory_maps(text: str) -> dict[int, list[str]]:
    """{step: lines of its storage map} for the steps that drew one."""
    maps: dict[int, list[str]] = {}
    blocks = re.split(r"^Step (\d+) · ", text, flags=re.M)[1:]
    for index, body in zip(blocks[::2], blocks[1::2]):
        if "  memory:" in body:
            lines = body.split("  memory:\n")[1].splitlines()
            maps[int(index)] = [ln for ln in lines if ln.strip()]
    return maps


def test_memory_map_bars_scale_with_bytes_and_are_not_redrawn() -> None:
    out = run_cli(["run", "-e", MEMORY_SCRIPT, "--memory", "--width", "100"]).stdout
    maps = _memory_maps(out)
    assert sorted(maps) == [2, 3, 4]  # step 5 changed nothing in memory: no second copy of the map
    a, b, v = torch.tensor([1.0]), torch.arange(6.0), torch.arange(6.0)[2:]
    sizes = {"S1": a.untyped_storage().nbytes(), "S2": b.untyped_storage().nbytes()}
    assert sizes == {"S1": 4, "S2": 24}
    bars = {ln.split()[0]: ln.split("[")[1].split("]")[0] for ln in maps[4] if ln.strip().startswith("S")}
    # One scale for every bar: the lengths keep the ratio of the byte counts (to within a character).
    assert len(bars["S2"]) == pytest.approx(len(bars["S1"]) * sizes["S2"] / sizes["S1"], abs=1)
    # Byte ranges name the first and the last byte covered.
    start = v.storage_offset() * v.element_size()
    last = start + v.numel() * v.element_size() - 1
    assert f"bytes {start}–{last}" in "\n".join(maps[4]) and "bytes 0–23" in "\n".join(maps[4])
    assert "bytes 0–3" in "\n".join(maps[4])


@pytest.mark.e2e  # a real pipe: the width tcopy takes where nothing gives one
def test_piped_lines_have_no_trailing_spaces(tmp_path: Path) -> None:
    script = tmp_path / "s.py"
    script.write_text(VALUES_SCRIPT + MEMORY_SCRIPT.replace("import torch\n", ""))
    env = environ("COLUMNS", "FORCE_COLOR")
    for extra in ([], ["--width", "160"], ["--memory", "--graph"], ["-f", "markdown"]):
        proc = tcopy("run", str(script), *extra, env=env, timeout=120)
        assert proc.returncode == 0, proc.stderr
        bad = [line for line in proc.stdout.splitlines() if line != line.rstrip()]
        assert not bad, (extra, bad[:3])


def test_markdown_counts_in_the_singular() -> None:
    out = run_cli(["run", "-e", "a = torch.ones(2)\na.backward()", "-f", "markdown"]).stdout
    assert out.rstrip().endswith("2 steps, 1 error")
    out = run_cli(["run", "-e", "a = torch.ones(2)", "-f", "markdown"]).stdout
    assert out.rstrip().endswith("1 step, 0 errors")


QUIET_SCRIPT = """\
import torch
import torch.nn as nn
a = torch.ones(2, requires_grad=True)
print(a * 2)
class Twice(nn.Module):
    def forward(self, x):
        return x * 2
def half(x):
    return x / 2
b = a * 3
print(b.sum())
"""


def test_steps_that_change_no_tensor_draw_no_table() -> None:
    """A print, a class or function definition, an import: no table; JSON keeps every step."""
    result = run_cli(["run", "-e", QUIET_SCRIPT, "--no-color", "--width", "80"])
    assert result.exit_code == 0, result.stderr
    blocks = dict(zip(*[iter(re.split(r"^Step (\d+) · ", result.stdout, flags=re.M)[1:])] * 2))
    a = torch.ones(2, requires_grad=True)
    b = a * 3
    assert blocks["1"].startswith("line 1 · import torch ─") and blocks["1"].count("\n") == 1
    assert blocks["2"].startswith("line 2 · import torch.nn as nn ─") and blocks["2"].count("\n") == 1
    assert "name" in blocks["3"]  # a new tensor: the table
    assert "name" not in blocks["4"] and "(no tensor changed)" in blocks["4"] and "│ " + str(a * 2) in blocks["4"]
    assert blocks["5"].startswith("line 5 · defines class Twice ─") and blocks["5"].count("\n") == 1
    assert blocks["6"].startswith("line 8 · defines function half ─") and blocks["6"].count("\n") == 1
    assert "name" in blocks["7"] and re.search(r"^\+ b ", blocks["7"], re.M)  # b is new; a unmarked
    assert re.search(r"^  a ", blocks["7"], re.M)
    assert "(no tensor changed)" in blocks["8"] and "│ " + str(b.sum()) in blocks["8"]
    out = run_cli(["run", "-e", QUIET_SCRIPT, "-f", "json"]).stdout
    steps = [e for e in map(json.loads, out.splitlines()) if e["event"] == "step"]
    assert [s["line"] for s in steps] == [1, 2, 3, 4, 5, 8, 10, 11]
    assert all(list(s["tensors"]) == ["a"] for s in steps[2:6])


SILENT_SCRIPT = """\
import torch
a = torch.ones(2)
n = a.numel()
b = a * 2
c = a.sum().item()
"""


def test_a_silent_step_that_changes_no_tensor_draws_no_table_once_one_was_drawn() -> None:
    """`n = a.numel()` changes no tensor and prints nothing: after a drawn table, one line says so.
    The first step a --from selection shows draws its table even so."""
    for fmt, table in (("table", re.compile(r"^  name ", re.M)), ("markdown", re.compile(r"^\| \| name ", re.M))):
        out = run_cli(["run", "-e", SILENT_SCRIPT, "--no-color", "--width", "80", "-f", fmt]).stdout
        blocks = re.split(r"^#* ?Step \d+ · ", out, flags=re.M)[1:]
        assert [bool(table.search(b)) for b in blocks] == [False, True, False, True, False], fmt
        # One line: the step's header names the statement and says so.
        assert re.match(r"line 3 · `?n = a\.numel\(\)`? · no tensor changed", blocks[2]), (fmt, blocks[2])
        assert "no tensor changed" in blocks[4].splitlines()[0], fmt
        out = run_cli(["run", "-e", SILENT_SCRIPT, "--no-color", "--from", "3", "-f", fmt]).stdout
        blocks = re.split(r"^#* ?Step \d+ · ", out, flags=re.M)[1:]
        assert [bool(table.search(b)) for b in blocks] == [True, True, False], fmt
    a = torch.ones(2)
    out = run_cli(["run", "-e", SILENT_SCRIPT, "-f", "json"]).stdout
    steps = [e for e in map(json.loads, out.splitlines()) if e["event"] == "step"]
    assert steps[2]["tensors"]["a"]["values"] == a.tolist() and len(steps) == 5


def test_a_quiet_statement_too_long_for_one_line_or_with_a_backtick_is_told_in_full() -> None:
    script = 'import torch\na = torch.ones(2)\nn = a.numel() + len("' + "x" * 60 + '")\nm = len("`")\n'
    out = run_cli(["run", "-e", script, "--width", "80"]).stdout
    blocks = re.split(r"^Step \d+ · ", out, flags=re.M)[1:]
    # 80 columns: the long statement gets its own line and "(no tensor changed)" under it.
    assert blocks[2].startswith("line 3 ─") and "(no tensor changed)" in blocks[2], blocks[2]
    assert blocks[3].startswith('line 4 · m = len("`") · no tensor changed'), blocks[3]
    out = run_cli(["run", "-e", script, "--width", "200"]).stdout
    assert re.search(r"^Step 3 · line 3 · n = a\.numel\(\) \+ len\(\"x{60}\"\) · no tensor changed", out, re.M), out
    md = run_cli(["run", "-e", script, "-f", "markdown"]).stdout
    # Markdown has no width, but an inline code span can't hold a backtick: that step is told in full.
    assert re.search(r"^### Step 3 · line 3 · `n = a\.numel\(\) \+ len\(\"x{60}\"\)` · no tensor changed$", md, re.M)
    assert re.search(r"^### Step 4 · line 4$", md, re.M) and "*(no tensor changed)*" in md.split("### Step 4")[1]


def test_a_quiet_step_with_a_note_or_before_any_tensor_keeps_its_form() -> None:
    script = "import torch\ntorch.manual_seed(0)\na = torch.ones(2)\ntorch.tensor(a)\n"
    out = run_cli(["run", "-e", script, "--width", "100"]).stdout
    # No tensor yet: the statement alone, with nothing to say about tensors.
    assert re.search(r"^Step 2 · line 2 · torch\.manual_seed\(0\) ─", out, re.M), out
    # `torch.tensor(a)` changes nothing but torch warns: drawn in full, with the warning under it.
    assert re.search(r"^Step 4 · line 4 ─", out, re.M), out
    step4 = out.split("Step 4 · ")[1]
    assert "(no tensor changed)" in step4 and "warning: To copy construct" in step4, step4


def test_a_quiet_statement_keeps_its_full_form_where_it_must() -> None:
    # A tab counts as the cells it takes, so the header is never cut.
    out = run_cli(["run", "-e", 'import torch\na = torch.zeros(3)\ns = "\t\t\t\t\t"\n', "--width", "60"]).stdout
    assert re.search(r"^Step 3 · line 3 ─", out, re.M) and "(no tensor changed)" in out, out
    # --graph: a step that changed the graph (autograd.grad freed its saved tensors) shows it.
    script = (
        "import torch\nw = torch.ones(2, requires_grad=True)\nloss = (w * w).sum()\ntorch.autograd.grad(loss, [w])\n"
    )
    out = run_cli(["run", "-e", script, "--graph", "--width", "100"]).stdout
    assert re.search(r"^Step 4 · line 4 ─", out, re.M), out
    # --depth 0: the call changed c inside a hidden step, so its table is drawn with c as it is now.
    script = "import torch\nc = torch.zeros(2)\ndef g():\n    c.add_(1)\ng()\n"
    out = run_cli(["run", "-e", script, "--depth", "0", "--width", "100"]).stdout
    step = out.split("Step 5 · ")[1]
    assert step.startswith("line 5 ─") and re.search(r"^~ c +\[1\., 1\.\]", step, re.M), out
    md = run_cli(["run", "-e", script, "--depth", "0", "-f", "markdown"]).stdout
    assert re.search(r"^### Step 5 · line 5$", md, re.M), md


def test_markdown_orders_the_one_line_header_as_the_table_does() -> None:
    script = "import torch\na = torch.zeros(2)\nfor i in range(2):\n    n = a.numel()\n"
    md = run_cli(["run", "-e", script, "-f", "markdown", "--all-steps"]).stdout
    assert re.search(r"^### Step \d+ · line 4 · `n = a\.numel\(\)` · iteration 1/2 · no tensor changed$", md, re.M), md


def test_under_watch_a_quiet_step_says_no_watched_tensor_changed() -> None:
    # `c = a * 2` makes a new tensor, which --watch a does not show: the words say what was looked at.
    script = "import torch\na = torch.ones(2)\nc = a * 2\nprint(a.sum().item())\n"
    out = run_cli(["run", "-e", script, "--watch", "a", "--width", "100"]).stdout
    assert re.search(r"^Step 3 · line 3 · c = a \* 2 · no watched tensor changed ─", out, re.M), out
    assert "(no watched tensor changed)" in out.split("Step 4 · ")[1]
    assert "no tensor changed" not in out
    md = run_cli(["run", "-e", script, "--watch", "a", "-f", "markdown"]).stdout
    assert "### Step 3 · line 3 · `c = a * 2` · no watched tensor changed" in md
    plain = run_cli(["run", "-e", script, "--width", "100"]).stdout
    assert "watched" not in plain
