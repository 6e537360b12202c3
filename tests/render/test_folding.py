"""Folded loops in the table and Markdown views, loop summaries, --watch.

The truth for every number is plain Python: the training loop below is run with ``exec``
in this process, and the losses it computes are what tcopy's loop summary must report.
Regenerate the golden files with ``TCOPY_UPDATE_GOLDEN=1`` and read the diff.
"""

from __future__ import annotations

import json
import re
import textwrap
from typing import Any

import pytest
import torch
from render.test_render import GOLDEN_TORCH, check_golden, normalise
from typer.testing import CliRunner

from tcopy_cli.cli import app
from tcopy_cli.render import ViewOptions
from tcopy_cli.render.folding import FoldedTurn, Show, StepFlow, line_ranges, turn_parts
from tcopy_cli.render.loops import LoopSummary, sparkline
from tcopy_cli.trace import run_source

# A tiny MLP trained for 20 turns. Turn 8 writes through .data (a note about an untracked
# write: shown in full); turn 14 raises an error that the script catches (shown in full).
TRAINING = """\
# A tiny MLP learns to add
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
x = torch.randn(6, 3)
y = x.sum(dim=1, keepdim=True)
fc1 = nn.Linear(3, 4)
fc2 = nn.Linear(4, 1)
opt = torch.optim.SGD(list(fc1.parameters()) + list(fc2.parameters()), lr=0.05)
losses = []
# Train: forward, loss, backward, update
for epoch in range(20):
    opt.zero_grad()
    h = F.relu(fc1(x))
    loss = F.mse_loss(fc2(h), y)
    loss.backward()
    opt.step()
    losses.append(loss.item())
    if epoch == 7:
        fc2.bias.data.add_(0.01)
    if epoch == 13:
        try:
            bad = x @ x
        except RuntimeError:
            pass
# Check without the graph
with torch.no_grad():
    final = F.mse_loss(fc2(F.relu(fc1(x))), y)
"""

NESTED = """\
total = torch.zeros(1)
for i in range(3):
    for j in range(4):
        total += i * j
"""


def _run(args: list[str], script: str = TRAINING) -> Any:
    result = CliRunner().invoke(app, ["run", "-e", script, *args])
    assert result.exit_code == 0, result.output
    return result


def _python_losses() -> list[float]:
    namespace: dict[str, Any] = {}
    exec(TRAINING, namespace)
    return list(namespace["losses"])


@pytest.fixture(scope="module")
def events() -> list[dict[str, Any]]:
    return [json.loads(line) for line in _run(["--format", "json"]).stdout.splitlines()]


@pytest.mark.parametrize("width", [80, 120])
def test_golden_folded_training_loop(width: int) -> None:
    if not torch.__version__.startswith(GOLDEN_TORCH):
        pytest.skip(f"golden files were recorded with torch {GOLDEN_TORCH}x")
    out = _run(["--width", str(width)]).stdout
    check_golden(f"loop-{width}.txt", normalise(out))
    # the first turn in full, the turns with something new in full, the rest one line each
    headers = re.findall(r"^Step \d+ · line \d+ · iteration (\d+)/20", out, re.M)
    full_turns = sorted({int(t) for t in headers})
    folded = [int(t) for t in re.findall(r"↻ iteration (\d+)/20", out)]
    assert 1 in full_turns and 8 in full_turns and 14 in full_turns
    assert sorted(full_turns + folded) == list(range(1, 21))
    assert "Train: forward, loss, backward, update" in out
    assert "Check without the graph" in out
    assert "inside no_grad" in out


def test_golden_markdown() -> None:
    if not torch.__version__.startswith(GOLDEN_TORCH):
        pytest.skip(f"golden files were recorded with torch {GOLDEN_TORCH}x")
    check_golden("loop.md", normalise(_run(["--format", "markdown"]).stdout))


def test_loop_event_values_are_what_python_computes(events: list[dict[str, Any]]) -> None:
    loops = [e for e in events if e["event"] == "loop"]
    main = next(e for e in loops if e["line"] == 14)
    assert main["iterations"] == 20 and main["total"] == 20
    losses = _python_losses()
    loss = main["tensors"]["loss"]
    assert loss["values"] == losses  # float32 .item() and tolist() give the same Python floats
    assert (loss["first"], loss["last"], loss["min"], loss["max"]) == (losses[0], losses[-1], min(losses), max(losses))
    steps = [e for e in events if e["event"] == "step"]
    assert main["first_step"] == min(s["index"] for s in steps if s["loops"] and s["loops"][0]["line"] == 14)
    # each fc1.weight update bumps its version once per turn; the turn that writes through .data adds none
    weight = main["tensors"]["fc1.weight"]
    assert weight["version_after"] - weight["version_before"] == 20
    norms = weight["grad_norms"]
    assert len(norms) == 20 and all(n > 0 for n in norms)


def test_sparkline_matches_python_values() -> None:
    losses = _python_losses()
    lo, hi = min(losses), max(losses)
    expected = "".join("▁▂▃▄▅▆▇█"[round((v - lo) / (hi - lo) * 7)] for v in losses)
    assert sparkline(losses) == expected
    assert sparkline(losses, 5) == "".join(expected[round(i * 19 / 4)] for i in range(5))
    assert sparkline([1.0, 1.0]) == "▅▅"
    assert sparkline([0.0, float("nan"), 1.0]) == "▁ █"
    out = _run(["--width", "120"]).stdout
    row = next(line for line in out.splitlines() if re.match(r"\s+loss\s+[▁▂▃▄▅▆▇█]", line))
    spark = row.split()[1]
    assert spark == sparkline(losses, len(spark))
    assert f"{losses[0]:.4g} → {losses[-1]:.4g} (min {min(losses):.4g}, max {max(losses):.4g})" in row


def test_all_steps_and_step_show_every_step_in_full() -> None:
    folded = _run(["--width", "100"]).stdout
    every = _run(["--width", "100", "--all-steps"]).stdout
    steps = int(re.search(r"^(\d+) steps, 0 errors", every, re.M)[1])  # type: ignore[index]
    assert len(re.findall(r"^Step \d+ ", every, re.M)) == steps
    assert "↻" not in every
    assert len(re.findall(r"^Step \d+ ", folded, re.M)) < steps / 3
    # a step inside a folded turn, asked for by number, is shown in full
    assert "↻ iteration 9/20" in folded
    only = _run(["--width", "100", "--step", "60"]).stdout
    assert re.findall(r"^Step (\d+) · line \d+ · iteration (\d+)", only, re.M) == [("60", "9")]
    assert "↻" not in only


def test_watch_hides_other_steps_and_their_notes() -> None:
    plain = _run(["--width", "120", "--all-steps"]).stdout
    watched = _run(["--width", "120", "--all-steps", "--watch", "loss"]).stdout
    assert "The name h now refers to a new tensor" in plain
    assert "The name h now" not in watched and "y is a new tensor" not in watched
    shown = re.findall(r"^Step \d+ · line (\d+)", watched, re.M)
    lines = TRAINING.splitlines()
    for line in shown:
        # a shown step either names loss or (the step that binds it) changes it
        assert re.search(r"\bloss\b", lines[int(line) - 1])
    total = int(re.search(r"^(\d+) steps, 0 errors", watched, re.M)[1])  # type: ignore[index]
    hidden = int(re.search(r"^(\d+) steps hidden by --watch", watched, re.M)[1])  # type: ignore[index]
    assert hidden == total - len(shown)
    expected_shown = [n for n, text in enumerate(lines, 1) if re.search(r"\bloss\b", text) and "#" not in text]
    assert sorted({int(s) for s in shown}) == expected_shown


def test_nested_loops_fold_at_every_level() -> None:
    out = _run(["--width", "100"], NESTED).stdout
    folded = re.findall(r"↻ iteration ([\d/ ›]+)", out)
    # outer turn 1 in full with inner turn 1 in full and inner turns 2-4 folded; outer turns 2-3 folded
    assert [f.strip() for f in folded] == ["1/3 › 2/4", "1/3 › 3/4", "1/3 › 4/4", "2/3", "3/3"]
    assert len(re.findall(r"^Step \d+ ", out, re.M)) == 2
    assert "loop at line 2: 3 iterations" in out and "loop at line 3: 4 iterations" in out


def test_nested_loop_events_in_json() -> None:
    events = [json.loads(x) for x in _run(["--format", "json"], NESTED).stdout.splitlines()]
    loops = [e for e in events if e["event"] == "loop"]
    assert [(e["line"], e["iterations"]) for e in loops] == [(3, 4), (3, 4), (3, 4), (2, 3)]
    assert [e["enclosing"] for e in loops[:3]] == [[{"line": 2, "iteration": i, "total": 3}] for i in (1, 2, 3)]
    # total after each outer turn, as Python computes it
    python = []
    total = 0
    for i in range(3):
        for j in range(4):
            total += i * j
        python.append(float(total))
    assert loops[-1]["tensors"]["total"]["values"] == python
    # every loop event comes after the last step of its loop and before the next step
    positions = {e.get("index"): n for n, e in enumerate(events) if e["event"] == "step"}
    for n, e in enumerate(events):
        if e["event"] == "loop":
            assert positions[e["last_step"]] < n
            assert positions.get(e["last_step"] + 1, len(events)) > n


def test_folder_holds_a_turn_until_it_ends() -> None:
    steps = run_source(textwrap.dedent(NESTED)).steps
    flow = StepFlow(ViewOptions(), fold=True)
    arrived: list[tuple[int, list[Any]]] = []
    for step in steps:
        arrived.append((step.index, flow.feed(step)))
    arrived.append((0, flow.close()))
    shown = [e.step.index for _, batch in arrived for e in batch if isinstance(e, Show) and e.shown]
    assert shown == [1, 2]
    turns = [e for _, batch in arrived for e in batch if isinstance(e, FoldedTurn)]
    assert [t.steps for t in turns] == [1, 1, 1, 4, 4]
    assert turn_parts(turns[-1])[0] == "line 4"
    assert turns[-1].scalars == [("total", 6.0, 18.0)]
    summaries = [e for _, batch in arrived for e in batch if isinstance(getattr(e, "summary", None), LoopSummary)]
    assert [(s.summary.line, s.summary.iterations) for s in summaries] == [(3, 4), (2, 3)]  # the others were folded
    assert line_ranges([20, 14, 15, 21, 22, 9]) == "9, 14–15, 20–22"
