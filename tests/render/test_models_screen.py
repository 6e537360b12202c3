"""Real models on a screen: a training CNN in few lines, a tensor drawn in one form from step
to step, grad_fn names whole where the table has room, notes that name a module's parts."""

from __future__ import annotations

import contextlib
import io
import re
import runpy
from pathlib import Path

import pytest
import torch
from recorded import run_cli
from rich.console import Console

from tcopy_cli.limits import DEFAULT_MAX_VALUES
from tcopy_cli.render.modules import module_phrases
from tcopy_cli.render.table import TableRenderer
from tcopy_cli.trace.records import Step, TensorRecord
from tcopy_cli.trace.summary import tensor_values

CASES = Path(__file__).resolve().parents[2] / "benchmarks" / "cases"


def _run_case(name: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The table view at 100 columns of a benchmark case, named as given from its folder (the
    recording's request holds the name, which must not depend on where the checkout lies)."""
    monkeypatch.chdir(CASES)
    return run_cli(["run", name, "--width", "100", "--no-color"]).stdout


def _record(t: torch.Tensor, grad: torch.Tensor | None, grad_fn: str | None, label: int) -> TensorRecord:
    values, preview = tensor_values(t, DEFAULT_MAX_VALUES)
    return TensorRecord(
        shape=list(t.shape), dtype="float32", device="cpu", values=values, preview=preview,
        data_ptr=4096 * label, storage=f"S{label}", storage_offset=0, shares_memory_with=[],
        requires_grad=grad is not None or grad_fn is not None, is_leaf=grad_fn is None, grad_fn=grad_fn,
        grad=None if grad is None else _record(grad, None, None, 1000 + label), version=0,
        version_counter=f"V{label}",
    )  # fmt: skip


def _step(index: int, tensors: dict[str, TensorRecord]) -> Step:
    return Step(
        index=index, line=index, source=f"s{index}", status="ok", error=None, stdout="", warnings=[],
        tensors=tensors, arrays={},
    )  # fmt: skip


def test_a_grad_drawn_as_a_grid_stays_a_grid_while_its_shape_is_the_same() -> None:
    torch.manual_seed(0)
    w, hidden = torch.randn(2, 2), torch.randn(8, 16)
    grad = w * 0.5
    w_rec = _record(w, grad, None, 1)
    hidden_rec = _record(hidden, None, "AddBackward0", 2)
    steps = [
        _step(1, {"w": w_rec}),
        _step(2, {"w": w_rec, "hidden": hidden_rec}),  # a row whose values want the width
        _step(3, {"w": w_rec, "hidden": hidden_rec, "q": _record(hidden[:2], None, "SliceBackward0", 3)}),
    ]
    console = Console(file=io.StringIO(), width=100, color_system=None)
    renderer = TableRenderer(console)
    for step in steps:
        renderer.step(step)
    out = console.file.getvalue()  # type: ignore[attr-defined]
    tables = re.split(r"^Step \d+ · ", out, flags=re.M)[1:]
    assert len(tables) == 3
    for text in tables:
        lines = text.splitlines()
        header = next(line for line in lines if " grad " in line)
        start, end = header.index(" grad ") + 1, header.index(" ver")
        at = next(i for i, line in enumerate(lines) if re.match(r"^[~+ ] w ", line))
        found = [line[start:end].strip() for line in lines[at : at + 2]]  # the grad column: a grid of two rows
        assert found[0].startswith("[[") and found[1].endswith("]]"), text
        numbers = [[float(v) for v in cell.strip("[], ").split(",")] for cell in found]
        assert torch.allclose(torch.tensor(numbers), grad, atol=1e-3), text


P9 = """\
import torch
torch.manual_seed(0)
x = torch.randn(8, 3)
w = torch.randn(3, 4, requires_grad=True)
for i in range(3):
    loss = (x @ w).pow(2).mean()
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
    w.grad.zero_()
"""


def test_grad_fn_names_are_whole_where_the_table_has_room() -> None:
    torch.manual_seed(0)
    x, w = torch.randn(8, 3), torch.randn(3, 4, requires_grad=True)
    name = (x @ w).pow(2).mean().grad_fn.name()  # type: ignore[union-attr]
    for width in (80, 100):
        out = run_cli(["run", "-e", P9, "--width", str(width), "--no-color"]).stdout
        rows = re.findall(r"^[~+ ] loss .*$", out, flags=re.M)
        assert rows and all(f" {name} " in row for row in rows), out
        assert max(len(line) for line in out.splitlines()) <= width


def _python_loss(script: Path) -> str:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        runpy.run_path(str(script), run_name="__main__")
    return printed.getvalue().strip()


def test_a_60_iteration_cnn_with_adam_takes_at_most_150_lines_at_100_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    script = CASES / "cnn_train.py"
    out = _run_case(script.name, monkeypatch)
    lines = out.splitlines()
    assert len(lines) <= 150, out
    assert max(len(line) for line in lines) <= 100
    # the first iteration explained: every statement of the loop body and of forward drawn with its table
    body = re.findall(r"^Step \d+ · line (\d+) · iteration 1/60(?: · in Net\.forward\(\).*)? ─+$", out, flags=re.M)
    source = script.read_text().splitlines()
    forward = [i + 1 for i, line in enumerate(source) if line.startswith("        x = ")]
    assert set(forward) <= {int(n) for n in body}, out
    assert out.count("now refers to a new tensor computed from the old one") == 1  # said once, not per layer
    assert "  unchanged: model, x, y\n" in out  # the model's row folded by its name, not its 8 tensors
    assert "· loss 2.125 → 2.078 · updated: model\n" in out  # a whole model by its name on a folded line
    # iteration 2's zero_grad, shown for its note: a table of one row (the rest unchanged) stays whole
    zeroed = re.search(r"^Step \d+ · line 32 · iteration 2/60 .*?(?=^\s*$)", out, flags=re.M | re.S)
    assert zeroed is not None and re.search(r"^~ model +8 tensors", zeroed[0], flags=re.M), out
    model = re.search(r"^\+ model +8 tensors, ([\d,]+) params", out, flags=re.M)
    namespace = runpy.run_path(str(script), run_name="__main__")
    assert model is not None and int(model[1].replace(",", "")) == sum(
        p.numel() for p in namespace["model"].parameters()
    )
    assert f"│ {_python_loss(script)}" in out


def test_a_note_names_whole_parts_of_a_module_by_their_parts() -> None:
    names = [f"model.{m}.{p}" for m in ("conv1", "conv2", "fc1") for p in ("weight", "bias")] + ["x"]
    four = "model.conv1.weight, model.conv1.bias, model.conv2.weight and model.conv2.bias"
    assert module_phrases(f"sends gradients to {four}.", names) == "sends gradients to model.{conv1,conv2}'s 4 tensors."
    grads = ", ".join(f"{n}.grad" for n in four.replace(" and ", ", ").split(", "))
    assert module_phrases(f"into {grads}.", names) == "into the .grad of model.{conv1,conv2}'s 4 tensors."
    # a part named in half, or a list with "and 2 more", stays as written
    three = "model.conv1.weight, model.conv2.weight and model.conv2.bias"
    assert module_phrases(three, names) == three
    more = "model.conv1.weight, model.conv1.bias, model.conv2.weight and 2 more"
    assert module_phrases(more, names) == more


NESTED = """\
import torch
import torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2)))
x = torch.ones(1, 2)


def outer():
    return inner() * 2


def inner():
    y = model(x)
    return y


out = outer()
"""


def test_depth_counts_calls_only_and_leaves_module_rows_as_they_are() -> None:
    def run(*args: str) -> str:
        result = run_cli(["run", "-e", NESTED, "--width", "100", "--no-color", "--all-steps", *args])
        assert result.exit_code == 0, result.output
        return result.stdout

    def rows(out: str) -> list[str]:
        return re.findall(r"^[~+ ] (model\S*) ", out, flags=re.M)

    def lines(out: str) -> list[int]:
        return [int(n) for n in re.findall(r"^Step \d+ · line (\d+)", out, flags=re.M)]

    # each --depth hides the steps of calls deeper than it, and no --depth changes a module's rows
    folded = run_cli(["run", "-e", NESTED, "--width", "100", "--no-color"]).stdout
    for depth, hidden in ((None, set()), ("1", {13, 14}), ("0", {9, 13, 14})):
        out = run() if depth is None else run("--depth", depth)
        assert hidden.isdisjoint(lines(out)) and ({9, 13, 14} - hidden) <= set(lines(out)), out
        shown = run_cli(["run", "-e", NESTED, "--width", "100", "--no-color", *(("--depth", depth) if depth else ())])
        assert set(rows(shown.stdout)) == set(rows(folded)) == {"model"}, shown.stdout
    assert "model.1.0.weight" in rows(run("--depth", "0"))  # --all-steps: every tensor its own row
    helped = run_cli(["run", "--help"], env={"COLUMNS": "200"}).stdout
    assert "about calls only" in helped


BATCHNORM = """\
import torch
import torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.Linear(4, 4), nn.BatchNorm1d(4))
h = model(torch.randn(8, 4))
"""


def test_module_row_names_keep_their_start_and_braces_at_narrow_widths() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4)
    )
    buffers = sum(1 for name, _ in model.named_buffers() if name.endswith(("running_mean", "running_var")))
    for width in (80, 100):
        out = run_cli(["run", "-e", BATCHNORM, "--width", str(width), "--no-color"]).stdout
        names = re.findall(r"^[~+ ] (\S+) +[\d,]+ (?:tensors|params|values)\b", out, flags=re.M)
        assert names, out
        braced = [name for name in names if "{" in name or "}" in name]
        assert len(braced) >= 2, out
        for name in braced:  # whole, or its start and its braces kept: model.*.{run…}, never 'mode…ng_var}'
            assert name.startswith("model.") and name.count("{") == name.count("}"), (name, out)
        # the count of tensors left out where the values column is too narrow for it (held_text)
        stats = re.search(rf"^\+ \S+ +(?:{buffers} tensors, )?{buffers * 4} values\b", out, flags=re.M)
        assert stats is not None and "{" in stats[0], out


RUNNING_TOTAL = """\
import torch
torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
x = torch.randn(8, 3)
total = 0
for i in range(60):
    loss = (x @ w).pow(2).mean()
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
    w.grad.zero_()
    total = total + loss
"""


def _python_nodes(script: str) -> dict[str, int]:
    """How many autograd nodes of each class are behind the script's total, walked in plain torch."""
    namespace: dict[str, object] = {}
    exec(script, namespace)
    seen: set[object] = set()
    counts: dict[str, int] = {}
    stack = [namespace["total"].grad_fn]  # type: ignore[attr-defined]
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        name = fn.name().rpartition("::")[2]  # torch::autograd::AccumulateGrad
        counts[name] = counts.get(name, 0) + 1
        stack.extend(f for f, _ in fn.next_functions)
    return counts


def test_graph_of_a_loop_draws_a_turn_and_names_the_alike_nodes_it_folds() -> None:
    counts = _python_nodes(RUNNING_TOTAL)
    assert counts["AddBackward0"] == 60
    text = run_cli(["graph", "-e", RUNNING_TOTAL, "--no-color"]).stdout
    dot = run_cli(["graph", "-e", RUNNING_TOTAL, "--format", "dot"]).stdout
    assert len(text.splitlines()) <= 30, text  # 604 lines with every node
    # DOT keeps every node; the text draws some and counts the rest, and together they are torch's
    assert len(re.findall(r'label="AddBackward0', dot)) == counts["AddBackward0"]
    drawn = re.findall(r"^N\d+ (\w+).*?(?: \((\d+) more alike folded\))?$", text, flags=re.M)
    assert {op: sum(1 + int(k or 0) for name, k in drawn if name == op) for op in counts} == counts, text
    tree = run_cli(["graph", "-e", RUNNING_TOTAL, "--format", "tree", "--no-color"]).stdout
    assert len(tree.splitlines()) <= 30 and "(like N3, one of 57 folded)" in tree, tree


def test_batch_norm_running_statistics_are_told_as_batch_norm_writes_them() -> None:
    torch.manual_seed(0)
    bn = torch.nn.BatchNorm1d(4)
    before = (bn.running_mean.clone(), bn.running_mean._version)
    bn(torch.randn(8, 4))
    # measured in plain torch: the values move, the version counter does not
    assert not torch.equal(bn.running_mean, before[0]) and bn.running_mean._version == before[1]
    out = run_cli(["run", "-e", BATCHNORM, "--width", "100", "--no-color"]).stdout
    step = re.split(r"^(?=Step \d+ · )", out, flags=re.M)[-1]
    assert "model.1.running_mean moved toward this batch's statistics" in step, step
    assert "(.data, or a NumPy array" not in out  # no alias wrote them


def test_the_resnet_case_is_told_in_far_fewer_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    out = _run_case("resnet_blocks.py", monkeypatch)
    assert max(len(line) for line in out.splitlines()) <= 100
    # 1,951 with every inner turn drawn, 594 before; 288, then 227 (rows that read as drawn fold,
    # the blocks' loop in iteration 2 in one line, notes told in the loop's turn 1 not again), then
    # 197 (a later turn shown for a note names its rows; folded turns alike but for names in one line)
    assert len(out.splitlines()) <= 181, len(out.splitlines())
    assert f"│ {_python_loss(CASES / 'resnet_blocks.py')}" in out
    # the ten block() calls: one line, then one for the nine that said it again
    assert re.search(r"^Step 6 · line 10 · return nn\.Sequential\(…\) · in block\(\)", out, flags=re.M), out
    assert re.search(r"^Steps 7–15 · line 10 · return nn\.Sequential\(…\) .*9 more times", out, flags=re.M), out
    # a model with buffers: its parameters told as such, every one of them (the call's record lists 16)
    assert "model's 65 parameters start at version 1, not 0: `nn.ModuleDict(…)` created them" in out
    assert "backward put gradients into the .grad of model's 65 parameters." in out
    assert "model's 59 parameters outside model.blocks.9 were changed in place" in out
    # the loop summaries: a module's buffers of one name in one row
    assert re.search(r"^    model\.\*\.num_batches_tracked +21 tensors, each ▁▅█ 1 → 3", out, flags=re.M), out
    # the blocks' loop's folded turns, each doing to its block what the one before did to its own: one line
    assert "  ↻ iterations 1/3 › 3–10 · line 32 · model.blocks.{2…9}.{1,4}.num_batches_tracked each 0 → 1\n" in out
    # rows that read as drawn last fold: a module's row whose tensors' values it never draws moved
    # (running statistics), or which another name (b) stopped being; with b a block's tensors under
    # other names (drawn rows, their storages in a module's span), and with b named as the same
    # tensors as rows on the unchanged line
    steps = {int(m[1]): m[0] for m in re.finditer(r"^Step (\d+) · .*?(?=^Step |\Z)", out, flags=re.M | re.S)}
    assert "  unchanged: model.*.{{bias,weight},{running_mean,running_var}}, x\n" in steps[31], steps[31]
    # iteration 2's zero_grad is shown for its note; the rows it changed named in one line
    assert "  changed: model's 65 parameters and b's 6 parameters\n" in steps[47], steps[47]
    assert "were reset to None at once" in steps[47] and "  name " not in steps[47], steps[47]
    # the blocks' loop's turn 2 is shown for its new note (the turns' graphs chained), its rows as turn 1
    # drew them named in one line; the notes of kinds turn 1 told for the line in one line
    assert "h's graph now holds the graph h had when this turn of the loop began" in steps[22], steps[22]
    assert "  changed: model.blocks.1.{1,4}.{running_mean,running_var,num_batches_tracked}, h, b\n" in steps[22]
    assert "  name " not in steps[22], steps[22]
    assert "  • 5 notes like step 21's, now about h, model.blocks.1, b (--all-steps shows them)\n" in steps[22]
    assert "moved toward this batch's statistics" not in steps[22]
    # b is model.blocks.9 under another name: every tensor (or parameter) of it told as a module's
    assert "  also named: b's 12 tensors (the same tensors as model.blocks.9's of the same names)\n" in steps[31]
    assert "  also named: b's 6 parameters (the same tensors as model.blocks.9's of the same names)\n" in steps[33]
    # a folded turn's line tells every parameter of a model updated as the notes do
    assert out.count("updated: model's 65 parameters\n") == 2, out
    # folded lines and loop summaries: b's tensors (model.blocks.9's under other names) told once, by
    # model's names; a module's one-element tensors of one name together, as the summary's row names them
    assert not re.search(r"^  ↻ .*b's|^    b\.", out, flags=re.M), out
    assert out.count("    also named: b's 12 tensors (the same tensors as model.blocks.9's of the same names)\n") == 2
    assert " · model.*.num_batches_tracked each 1 → 2 · loss 3.069" in out
    # a module's row in a squeezed values column: what its tensors hold, on one line; whole where it fits
    assert re.search(r"^  model\.\*\.\{bias,weight\} +47,354 params +- ", steps[21], flags=re.M), steps[21]
    assert re.search(r"^~ model\.\*\.\{bias,weight\} +65 tensors, 47,354 params +- ", steps[33], flags=re.M)
    # iteration 2 is shown for its zero_grad; the blocks' loop before it, nothing new in it, folds
    # with the turn's steps around it in one line
    assert "  ↻ iteration 2/3 · lines 30, 32–33 as before · " in out and "↻ iteration 2/3 › " not in out


def test_a_list_of_a_models_parameters_reads_as_its_parameters() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.BatchNorm1d(2), torch.nn.Linear(2, 2))
    records = {f"model.{n}": _record(t.detach(), None, None, i) for i, (n, t) in enumerate(model.state_dict().items())}
    params = {f"model.{n}" for n, _ in model.named_parameters()}
    for name in params:  # parameters require grad; the buffers do not
        records[name] = _record(torch.zeros(1), torch.zeros(1), None, 1)
    ordered = [n for n in records if n in params]
    text = ", ".join(ordered[:-1]) + " and " + ordered[-1]
    assert module_phrases(f"{text} were changed.", records) == "model's 6 parameters were changed."
    but_last = [n for n in ordered if not n.startswith("model.2.")]
    text = ", ".join(but_last[:-1]) + " and " + but_last[-1]
    assert module_phrases(text, records) == "model's 4 parameters outside model.2"
    assert module_phrases(text, list(records)) == text  # names alone: which are parameters is not known


SAVED_BUMPED = """\
import torch
w = torch.ones(3, requires_grad=True)
for i in range(3):
    y = w * 2
    z = y.sin()
    y.add_(1)
"""


def test_a_later_turn_tells_again_only_what_it_adds_but_a_coming_failure_every_time() -> None:
    out = run_cli(["run", "-e", SAVED_BUMPED, "--width", "100", "--no-color"]).stdout
    steps = re.split(r"^(?=Step \d+ · )", out, flags=re.M)
    bumped = [s for s in steps if s.startswith("Step ") and " · line 6 · " in s.splitlines()[0]]
    assert len(bumped) == 3, out  # each turn shown in full: a backward through it will fail
    for step in bumped:  # the failing backward told in every turn, in full
        assert "y was saved by SinBackward0 for backward at version 0" in " ".join(step.split()), step
    first = bumped[0].splitlines()[0].split(" · ")[0]  # "Step 5"
    for step in bumped[1:]:  # the other notes of the line once, then as like the first turn's
        assert re.search(rf"• \d notes like {first.lower()}'s, now about y \(--all-steps shows them\)", step), step
    every = run_cli(["run", "-e", SAVED_BUMPED, "--width", "100", "--no-color", "--all-steps"]).stdout
    assert "notes like" not in every
