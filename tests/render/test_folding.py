"""Folded loops in the table and Markdown views, loop summaries, --watch.

The truth for every number is plain Python: the training loop below is run with ``exec``
in this process, and the losses it computes are what tcopy's loop summary must report.
Regenerate the golden files with ``TCOPY_UPDATE_GOLDEN=1`` and read the diff.
"""

from __future__ import annotations

import json
import math
import re
import textwrap
from collections import Counter
from typing import Any

import pytest
import torch
from recorded import run_cli
from render.test_render import GOLDEN_TORCH, check_golden, normalise

from tcopy_cli.engine import run_source
from tcopy_cli.pipeline import run_source as run_explained
from tcopy_cli.render import ViewOptions
from tcopy_cli.render.folding import SINGLE_TURNS, FoldedTurn, LoopEnd, Show, StepFlow, range_end
from tcopy_cli.render.loops import LoopSummary, sparkline
from tcopy_cli.render.names import grouped_names, index_runs
from tcopy_cli.render.turnline import line_ranges, printed_lines, turn_label, turn_parts

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
    result = run_cli(["run", "-e", script, *args])
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
    # the first turn in full; of the turns with something new, the steps that bring it in full
    # and the others in one line; turns 3-7 one line each, later folded turns condensed into
    # ranges cut by the turns shown
    headers = re.findall(r"^Step \d+ · line \d+ · iteration (\d+)/20", out, re.M)
    full_turns = sorted({int(t) for t in headers})
    turn_line = r"↻ iterations? (\d+)(?:–(\d+))?/20 · (?!lines? [\d–, ]+ as before)"
    ranges = [(int(a), int(b or a)) for a, b in re.findall(turn_line, out)]
    assert full_turns == [1, 2, 8, 14]
    assert ranges == [(3, 3), (4, 4), (5, 5), (6, 6), (7, 7), (9, 10), (11, 13), (15, 20)]
    folded = [t for a, b in ranges for t in range(a, b + 1)]
    assert sorted(full_turns + folded) == list(range(1, 21))
    # turns 2, 8 and 14 each show fewer steps than turn 1 (what was as before is one line)
    per_turn = Counter(int(t) for t in headers)
    partial = [int(t) for t in re.findall(r"↻ iteration (\d+)/20 · lines? [\d–, ]+ as before", out)]
    assert all(per_turn[t] < per_turn[1] for t in (2, 8, 14)) and set(partial) <= {2, 8, 14} and partial
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
    assert "↻ iterations 9–10/20" in folded
    only = _run(["--width", "100", "--step", "60"]).stdout
    assert re.findall(r"^Step (\d+) · line \d+ · iteration (\d+)", only, re.M) == [("60", "9")]
    assert "↻" not in only


def test_watch_hides_other_steps_and_their_notes() -> None:
    plain = _run(["--width", "120", "--all-steps"]).stdout
    watched = _run(["--width", "120", "--all-steps", "--watch", "loss"]).stdout
    assert "h is a new tensor" in plain
    assert "h is a new tensor" not in watched and "y is a new tensor" not in watched
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


def test_watch_under_depth_0_shows_a_call_that_changed_the_watched_tensor() -> None:
    # train() changes w only in its own (hidden) steps: the call statement touches w all the same.
    script = (
        "import torch\nw = torch.ones(2, requires_grad=True)\ndef train():\n    (w * 3).sum().backward()\n"
        "train()\ntrain()\n"
    )
    out = _run(["--width", "100", "--depth", "0", "--watch", "w"], script).stdout
    w = torch.ones(2, requires_grad=True)
    grads = []
    for _ in range(2):
        (w * 3).sum().backward()
        assert w.grad is not None
        grads.append(w.grad.tolist())
    calls = [
        (m[1], m[2])
        for block in re.split(r"^Step \d+ · ", out, flags=re.M)[1:]
        if (m := re.match(r"line (\d+) ─.*?^~ w +\[1\., 1\.\] .*?(\[[\d., ]+\])", block, re.M | re.S))
    ]
    assert calls == [("5", "[3., 3.]"), ("6", "[6., 6.]")], out
    assert [[float(x) for x in g.strip("[]").split(",")] for _, g in calls] == grads


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


def _arrivals(script: str, view: ViewOptions | None = None) -> list[tuple[int, list[Any]]]:
    """Each step's index with the events the flow gave when it arrived (steps with their notes,
    as the command line gets them); last, (0, what close gave)."""
    flow = StepFlow(view or ViewOptions(), fold=True)
    arrived = [(step.index, flow.feed(step)) for step in run_explained(textwrap.dedent(script)).steps]
    return [*arrived, (0, flow.close())]


def _lines(arrived: list[tuple[int, list[Any]]]) -> list[FoldedTurn]:
    return [e for _, batch in arrived for e in batch if isinstance(e, FoldedTurn)]


def _span(turn: FoldedTurn) -> tuple[int, int]:
    return turn.first_turn, turn.last_turn


COUNTING = """\
import torch
t = torch.zeros(1)
for i in range({n}):
    t += 1
done = t * 1
"""


def test_condensed_ranges_double_so_n_turns_take_log_n_lines() -> None:
    assert [range_end(t) for t in range(1, 12)] == [1, 2, 3, 4, 5, 6, 10, 10, 10, 10, 20]
    assert [range_end(t) for t in (20, 21, 40, 41, 80, 81, 160, 161)] == [20, 40, 40, 80, 80, 160, 160, 320]
    for n in (10, 11, 200, 5000, 100_000):
        lines = len({range_end(t) for t in range(2, n + 1)})
        # turns 2..6 one line each, then one line per doubling from 7-10 on
        assert lines == SINGLE_TURNS - 1 + 1 + math.ceil(math.log2(n / 10))
        assert lines <= SINGLE_TURNS + math.log2(n)


def test_a_200_turn_loop_takes_eleven_folded_lines_each_out_as_soon_as_its_range_is_full() -> None:
    arrived = _arrivals(COUNTING.format(n=200))
    lines = _lines(arrived)
    assert [_span(t) for t in lines] == [
        (2, 2), (3, 3), (4, 4), (5, 5), (6, 6), (7, 10), (11, 20), (21, 40), (41, 80), (81, 160), (161, 200)
    ]  # fmt: skip
    assert [turn_label(t) for t in lines[4:7]] == ["iteration 6/200", "iterations 7–10/200", "iterations 11–20/200"]
    assert sum(t.turns for t in lines) == 199 and sum(t.steps for t in lines) == 199  # one step a turn
    # t after turn k, as torch computes it: each range goes from before its first turn to after its last
    t, after = torch.zeros(1), [0.0]
    for _ in range(200):
        t += 1
        after.append(t.item())
    for line in lines:
        assert line.scalars == [("t", after[line.first_turn - 1], after[line.last_turn])]
        assert line.lines == [4] and line.versions == [] and line.printed == ""
    # streaming: a range's line comes with the first step after its last turn (turn k is step k + 2)
    for index, batch in arrived:
        for line in (e for e in batch if isinstance(e, FoldedTurn)):
            assert index == line.last_step + 1 == line.last_turn + 3
    # the last range ends the loop: its line, then the loop's summary, then the step after the loop
    last = [e for index, batch in arrived if index == 203 for e in batch if not isinstance(e, Show) or e.shown]
    assert [type(e) for e in last] == [FoldedTurn, LoopEnd, Show] and last[0] is lines[-1]


CUT = """\
import torch
t = torch.zeros(1)
for i in range(30):
    t += 1
    if i == 14:
        u = t * 2
"""


def test_a_turn_shown_in_full_cuts_the_range_and_comes_after_its_line() -> None:
    arrived = _arrivals(CUT)
    lines = _lines(arrived)
    # turn 15 binds a new name: shown; 11-14 is cut there, and 16-20 fills the rest of its range.
    # Of turn 15, the step that binds u is in full; t += 1, as in every turn, is one line
    spans = [(2, 2), (3, 3), (4, 4), (5, 5), (6, 6), (7, 10), (11, 14), (15, 15), (16, 20), (21, 30)]
    assert [_span(t) for t in lines] == spans
    assert [t.partial for t in lines] == [False] * 7 + [True, False, False]
    events = [e for _, batch in arrived for e in batch if not (isinstance(e, Show) and not e.shown)]
    cut = next(n for n, e in enumerate(events) if isinstance(e, FoldedTurn) and _span(e) == (11, 14))
    assert events[cut + 1] is lines[7] and lines[7].lines == [4] and lines[7].scalars == [("t", 14.0, 15.0)]
    shown = events[cut + 2]
    assert isinstance(shown, Show) and shown.step.loops[0].iteration == 15 and shown.step.source == "u = t * 2"
    assert events[cut + 3] is lines[8]
    assert lines[6].scalars == [("t", 10.0, 14.0)] and lines[8].scalars == [("t", 15.0, 20.0)]
    assert lines[9].scalars == [("t", 20.0, 30.0)]
    assert isinstance(events[-1], LoopEnd) and events[-2] is lines[9]


NESTED_LONG = """\
import torch
total = torch.zeros(1)
for i in range(12):
    for j in range(30):
        total += 1
    if i == 1:
        extra = total * 2
"""


def test_nested_loops_condense_at_every_level() -> None:
    lines = _lines(_arrivals(NESTED_LONG))
    labels = [turn_label(t) for t in lines]
    inner = ["iteration {o}/12 › {i}/30".format(o="{o}", i=i) for i in range(2, 7)] + [
        "iterations {o}/12 › 7–10/30",
        "iterations {o}/12 › 11–20/30",
        "iterations {o}/12 › 21–30/30",
    ]
    # outer turn 1 in full: inner turn 1 in full, the rest condensed; outer turn 2 binds a new
    # name, so it is shown in full, and its inner loop, with nothing new in any of its turns, is
    # one line with the turn's steps around it (it does not fold again turn by turn)
    expected = [x.format(o=1) for x in inner]
    expected += ["iteration 2/12"]
    expected += [f"iteration {o}/12" for o in range(3, 7)] + ["iterations 7–10/12", "iterations 11–12/12"]
    assert labels == expected
    # total after each outer turn, as torch computes it
    total, after = torch.zeros(1), [0.0]
    for _ in range(12):
        for _ in range(30):
            total += 1
        after.append(total.item())
    outer = [t for t in lines if len(t.loops) == 1]
    for line in outer:
        assert line.scalars == [("total", after[line.first_turn - 1], after[line.last_turn])]
    assert [t.partial for t in outer] == [True] + [False] * 6
    assert outer[0].steps == 30 and outer[0].lines == [5]
    assert sum(t.turns for t in outer) == 11 and outer[-1].steps == 2 * 30


def test_range_ends_are_what_python_computes_for_the_training_loop() -> None:
    arrived = _arrivals(TRAINING)
    ranges = [t for t in _lines(arrived) if t.turns > 1]
    assert [_span(t) for t in ranges] == [(9, 10), (11, 13), (15, 20)]
    # plain python: the loss and fc2.bias after each turn
    namespace: dict[str, Any] = {}
    exec(
        TRAINING.replace("losses = []\n", "losses = []\nbiases = []\n").replace(
            "# Check without the graph", "    biases.append(fc2.bias.item())\n# Check without the graph"
        ),
        namespace,
    )
    losses, biases = namespace["losses"], namespace["biases"]
    assert len(biases) == 20
    for line in ranges:
        first, last = line.first_turn, line.last_turn
        assert dict((n, (was, now)) for n, was, now in line.scalars) == {
            "fc2.bias": (biases[first - 2], biases[last - 1]),
            "loss": (losses[first - 2], losses[last - 1]),
        }
        assert line.versions == ["fc1.weight", "fc1.bias", "fc2.weight"]
        assert line.grads == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
        assert line.lines == [15, 16, 17, 18, 19, 20]  # (if lines are not steps)


PRINTING = """\
for i in range(40):
    print("turn", i)
"""


def test_a_range_keeps_what_it_printed_and_shows_its_ends() -> None:
    lines = _lines(_arrivals(PRINTING))
    last = lines[-1]
    assert _span(last) == (21, 40)
    assert last.printed == "".join(f"turn {i}\n" for i in range(20, 40))
    assert printed_lines(last) == ["turn 20", "turn 21", "… 16 more lines …", "turn 38", "turn 39"]
    assert printed_lines(lines[0]) == ["turn 1"]
    out = _run(["--width", "100"], PRINTING).stdout
    assert "↻ iterations 21–40/40" in out and "… 16 more lines …" in out
    assert "turn 25" not in out and "turn 39" in out


@pytest.mark.parametrize("watch", [[], ["--watch", "loss"], ["--watch", "fc2.bias"]])
def test_footer_accounts_for_every_step(watch: list[str]) -> None:
    out = _run(["--width", "120", *watch]).stdout
    total = int(re.search(r"^(\d+) steps, 0 errors", out, re.M)[1])  # type: ignore[index]
    shown = len(re.findall(r"^Step \d+ ", out, re.M))
    folded = re.search(r"^(\d+) steps folded into (\d+) later loop turns", out, re.M)
    in_part = re.search(r"(\d+) steps? with nothing new folded inside turns shown in full", out)
    hidden = re.search(r"^(\d+) steps? hidden by --watch", out, re.M)
    assert folded is not None and in_part is not None
    assert shown + int(folded[1]) + int(in_part[1]) + (int(hidden[1]) if hidden else 0) == total
    ranges = re.findall(r"↻ iterations? (\d+)(?:–(\d+))?/20 · (?!lines? [\d–, ]+ as before)", out)
    assert int(folded[2]) == sum(int(b or a) - int(a) + 1 for a, b in ranges) == 16


@pytest.mark.parametrize("width", [80, 100, 120])
def test_a_loop_summary_line_fits_the_width(width: int) -> None:
    """Each evolution in a loop's summary is one line: the sparkline takes what the longest
    "first → last (min, max)" leaves (at 100 columns a long name and span used to wrap)."""
    script = "import torch\nmodel_2_bias = torch.tensor([-0.0861912])\nloss = torch.tensor(1.4113)\n"
    script += "history = []\n"
    script += "for k in range(200):\n    model_2_bias -= 0.0012345 * (k % 7 - 2)\n    loss *= 0.98765\n"
    script += "    history.append(loss.clone())\n"
    out = _run(["--width", str(width)], script).stdout
    rows = [line for line in out.splitlines() if re.match(r"    \S+\s+[▁▂▃▄▅▆▇█ ]+ \S+ → ", line)]
    assert len(rows) == 3
    for row in rows:
        assert "(min " in row and ", max " in row and row.endswith((")", "· 200 added")) and len(row) <= width
    assert rows[-1].lstrip().startswith("history[0…199]")  # the items' row too, "· 200 added" included


COLLECT = """\
import torch
w = torch.ones(2, requires_grad=True)
losses = []
xs = []
for i in range(25):
    loss = (w * (i + 1)).sum() / 3
    losses.append(loss)
    xs.append(torch.full((3 if i != 10 else 4,), float(i)))
"""


def _expand(names: str) -> set[str]:
    """``losses[6…9], xs[6]`` as the names it stands for."""
    out: set[str] = set()
    for part in names.split(", "):
        m = re.fullmatch(r"(.*)\[(\d+)…(\d+)\]", part)
        out |= {f"{m.group(1)}[{i}]" for i in range(int(m.group(2)), int(m.group(3)) + 1)} if m else {part}
    return out


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_a_loop_that_appends_to_lists_folds_and_says_what_it_added(fmt: str) -> None:
    namespace: dict[str, Any] = {}
    exec(COLLECT, namespace)
    losses = [t.item() for t in namespace["losses"]]
    n = len(namespace["xs"])
    out = _run(["--width", "100"] + (["--format", "markdown"] if fmt == "markdown" else []), COLLECT).stdout
    if fmt == "markdown":  # names and notes are escaped where Markdown would act (\*); read them as rendered
        out = re.sub(r"\\([\[\]_*`<>~&])", r"\1", out)
    # Appending another item like the ones before is nothing new: only the first turn, the turn
    # whose item has another shape, and turn 2's append to losses (the first turn that shows
    # losses keeping a graph per turn: a note of a new kind) are shown in full.
    turns = {int(t) for t in re.findall(r"Step \d+ · line \d+ · iteration (\d+)/25", out)}
    assert turns == {1, 2, 11}, out
    assert "losses gained such tensors in an earlier turn too" in " ".join(out.split())
    added: set[str] = set()
    for names in re.findall(r"added: (.*?)(?: \||$)", out, re.M):
        added |= _expand(names.strip())
    assert added == {f"{b}[{i}]" for b in ("losses", "xs") for i in range(1, n)} - {"xs[10]", "losses[1]"}
    # The summary: one row per list, the items' values in order (the loss curve).
    row = next(line for line in out.splitlines() if "losses[0…24]" in line)
    lo, hi = min(losses), max(losses)
    assert f"{losses[0]:.4g} → {losses[-1]:.4g} (min {lo:.4g}, max {hi:.4g})" in row and "25 added" in row
    spark = re.search(r"[▁▂▃▄▅▆▇█]+", row)
    assert spark is not None and spark.group() == sparkline(losses, len(spark.group()))
    assert re.search(rf"xs\[0…{n - 1}\]`? *\|? *{n} added, in {n} storages", out)
    summary = out.split("⟲ loop")[1]
    assert not re.search(r"(losses|xs)\[\d+\]", summary)  # no row per item


def test_list_items_in_a_row_are_written_as_one_name() -> None:
    assert index_runs(["xs[0]", "xs[1]", "a", "xs[2]", "xs[3]"]) == ["xs[0…3]", "a"]
    assert index_runs(["a[0]", "b[0]", "a[1]", "b[1]", "a[2]", "b[2]"]) == ["a[0…2]", "b[0…2]"]
    assert index_runs(["xs[0]", "xs[1]", "xs[3]", "xs[4]", "xs[5]"]) == ["xs[0]", "xs[1]", "xs[3…5]"]
    assert index_runs(['d["k"]', "d[0][1]", "d[0][2]", "d[0][3]", "xs[01]"]) == ['d["k"]', "d[0][1…3]", "xs[01]"]
    assert grouped_names(["m.w", "m.b", "xs[0]", "xs[1]", "xs[2]"]) == "m.{w,b}, xs[0…2]"


def test_layers_that_differ_only_in_their_number_are_written_as_one_name() -> None:
    names = ["model.0.weight", "model.0.bias", "model.2.weight", "model.2.bias"]
    assert grouped_names(names) == "model.{0,2}.{weight,bias}"
    blocks = [f"b.{i}.attn.q.weight" for i in range(12)] + [f"b.{i}.ln.bias" for i in (0, 1, 2, 3, 5, 7)]
    assert grouped_names(blocks) == "b.{0…11}.attn.q.weight, b.{0…3,5,7}.ln.bias"
    # Only names alike but for the number join; items, dict keys and leading zeros stay apart.
    assert (
        grouped_names(["model.0.weight", "model.2.weight", "model.2.bias"]) == "model.0.weight, model.2.{weight,bias}"
    )
    assert grouped_names(['d["a.1.b"]', 'd["a.2.b"]', "a.1.w", "a.01.w"]) == 'd["a.1.b"], d["a.2.b"], a.1.w, a.01.w'


def test_a_loop_summary_tells_storages_made_in_the_loop_from_those_it_only_held() -> None:
    script = "data = [torch.ones(2) * i for i in range(5)]\nfor x in data:\n    y = x * 2\n"
    ns: dict[str, Any] = {"torch": torch}
    exec(script, ns)
    before = {t.untyped_storage().data_ptr() for t in ns["data"]}
    assert ns["x"].untyped_storage().data_ptr() in before  # x only held the items made before the loop
    assert ns["y"].untyped_storage().data_ptr() not in before
    events = [json.loads(line) for line in _run(["--format", "json"], script).stdout.splitlines()]
    loop = next(e for e in events if e["event"] == "loop")
    assert (loop["tensors"]["x"]["storages_made"], loop["tensors"]["x"]["storages_new"]) == (5, 0)
    assert (loop["tensors"]["y"]["storages_made"], loop["tensors"]["y"]["storages_new"]) == (5, 5)
    out = _run(["--width", "100"], script).stdout
    assert re.search(r"^ +x +held 5 storages made before the loop, 0 freed$", out, re.M), out
    assert re.search(r"^ +y +5 storages made, 4 freed$", out, re.M), out


def test_items_in_a_row_that_differ_in_their_first_index_are_written_as_one_name() -> None:
    pairs = [f"data[{i}][{j}]" for i in range(10) for j in range(2)]
    assert grouped_names([*pairs, "x"], most=99) == "data[0…9][0], data[0…9][1], x"
    assert grouped_names([f"xs[{i}][{j}]" for i in range(4) for j in range(5)]) == "xs[0…3][0…4]"
    assert grouped_names([f"mods[{i}].{k}" for i in range(5) for k in ("weight", "bias")]) == "mods[0…4].{weight,bias}"
    # Fewer than three in a row, and keys that are not numbers, stay as they are.
    gaps = ["d[0][1]", "d[1][1]", "d[3][1]", "d[4][1]", "d[5][1]"]
    assert grouped_names(gaps, most=99) == "d[0][1], d[1][1], d[3…5][1]"
    assert grouped_names(['d["k"][0]', 'd["k"][1]']) == 'd["k"][0], d["k"][1]'


def test_a_deep_sequential_is_one_name_in_the_unchanged_line() -> None:
    script = (
        "import torch.nn as nn\ntorch.manual_seed(0)\nm = nn.Sequential(*[nn.Linear(2, 2) for _ in range(300)])\n"
        "x = torch.ones(2)\n"
    )
    namespace: dict[str, Any] = {}
    exec("import torch\n" + script, namespace)
    assert len(namespace["m"]) == 300
    out = _run(["--width", "100"], script).stdout
    # the module's row drew it as m: folded, it is written as m (not as its 600 tensors)
    assert re.search(r"^\+ m +600 tensors", out, flags=re.M) and "\n  unchanged: m\n" in out, out[-2000:]


LONG = """\
import torch
xs = []
for i in range(1040):
    xs.append(torch.zeros(2))
    if i == 1020:
        extra = torch.ones(1)
"""


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_a_list_longer_than_tcopy_lists_says_so_in_tables_fold_lines_and_the_summary(fmt: str) -> None:
    namespace: dict[str, Any] = {}
    exec(LONG, namespace)
    past = len(namespace["xs"]) - 1000
    out = _run(["--width", "120"] + (["--format", "markdown"] if fmt == "markdown" else []), LONG).stdout
    # turn 1021 binds a new name: shown in full, with what its table does not list
    assert re.search(r"iteration 1021/1040", out)
    assert "not listed: xs (21 more items); tcopy lists the first 1,000 items of a list, tuple or dict, and" in out
    # the items folded turns added are named in one line, not drawn a row each
    assert re.search(r"unchanged: xs\\?\[0…999\\?\]", out)
    assert len(re.findall(r"^\W*xs\[\d+\]", out, re.M)) == 1  # the row of xs[0] in turn 1
    counts = [int(n) for n in re.findall(r"xs: (\d+) more items? not listed", out)]
    assert sum(counts) == past  # each item past the first 1,000 is in one fold line
    summary = out.split("⟲ loop")[1]
    assert re.search(rf"xs`?\s*\|?\s*{past} more items not listed", summary)
    assert "xs[0…999]" in summary


def test_the_loop_event_counts_the_items_not_listed() -> None:
    events = [json.loads(line) for line in _run(["--format", "json"], LONG).stdout.splitlines()]
    loop = next(e for e in events if e["event"] == "loop")
    assert loop["unlisted"] == {"xs": [0, 40]}
    steps = [e for e in events if e["event"] == "step"]
    assert [s.get("unlisted", {}).get("xs", 0) for s in steps][-3:] == [38, 39, 40]


def _python_items(script: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    exec(script, namespace)
    return namespace


ITEM_CHANGES = """\
import torch
w = torch.ones(2, requires_grad=True)
acts = [torch.zeros(4), torch.zeros(8)]
hist = []
for i in range(9):
    acts[0] = torch.ones(8 if i == 7 else 4) * i
    loss = (w * i).sum()
    hist.append(loss.detach() if i < 5 else loss)
"""


def test_a_turn_whose_list_item_is_of_a_new_kind_is_shown_in_full() -> None:
    ns = _python_items(ITEM_CHANGES)
    assert [tuple(a.shape) for a in ns["acts"]] == [(4,), (8,)]
    assert [h.requires_grad for h in ns["hist"]] == [False] * 5 + [True] * 4
    out = _run(["--width", "100"], ITEM_CHANGES).stdout
    turns = {int(t) for t in re.findall(r"Step \d+ · line \d+ · iteration (\d+)/9", out)}
    # turn 6 appends the first item that holds a graph (SumBackward0), turn 7 another (hist keeps a
    # graph per turn: a note of a new kind), turn 8 gives acts[0] a shape no turn gave it before
    # (acts[1] had it: another item's shape does not count)
    assert turns == {1, 6, 7, 8}, out
    assert re.search(r"^\+ hist\[5\] .*SumBackward0", out, re.M)
    assert re.search(r"^~ acts\[0\] .*\(8,\)", out, re.M)


INSERTS = """\
import torch
base = torch.arange(16.).reshape(8, 2)
xs = []
views = []
for i in range(8):
    xs.insert(0, torch.full((2,), float(i)))
    views.append(base[i])
"""


def test_added_names_the_item_a_turn_put_in_and_the_summary_counts_storages_it_measured() -> None:
    ns = _python_items(INSERTS)
    assert [x[0].item() for x in ns["xs"]] == [7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0, 0.0]  # each turn's item went first
    assert {v.untyped_storage().data_ptr() for v in ns["views"]} == {ns["base"].untyped_storage().data_ptr()}
    out = _run(["--width", "100"], INSERTS).stdout
    # a turn's line adds xs[0]; a range's line adds one item per turn, the first ones of the list
    lines = re.findall(r"iterations? (\d+(?:–\d+)?)/8 .*added: (.*)$", out, re.M)
    assert [t for t, _ in lines] == ["2", "3", "4", "5", "6", "7–8"]
    for turns, names in lines:
        first, _, last = turns.partition("–")
        count = int(last or first) - int(first) + 1
        xs = sorted(_expand(", ".join(n for n in names.split(", ") if n.startswith("xs"))))
        assert xs == sorted(f"xs[{i}]" for i in range(count)), (turns, names)
    assert re.search(r"views\[0…7\] +8 added, in 1 storage$", out, re.M)


def test_watch_narrows_what_fold_lines_say_was_added_or_not_listed() -> None:
    script = (
        "import torch\nys = []\nxs = [torch.zeros(1)] * 1003\n"
        "for i in range(4):\n    ys.append(torch.ones(1))\n    xs.append(torch.zeros(1))\n"
    )
    out = _run(["--width", "100", "--watch", "ys"], script).stdout
    assert "added: ys[1]" in out and "xs" not in out.split("Step 3")[-1], out
    out = _run(["--width", "100", "--watch", "xs"], script).stdout
    assert "xs: 1 more item not listed" in out and "ys[" not in out, out


TWICE = """\
import torch
w = torch.ones(2, requires_grad=True)
def twice():
    p = w * 1
    (p * 3).sum().backward()
    (w * 3).sum().backward()
twice()
"""


def test_depth_hides_steps_but_their_notes_go_under_the_call() -> None:
    """--depth 0: the backwards inside ``twice()`` are told under the line that called it, with
    the line they ran at; notes about the function's own locals (``twice:p``) are not."""
    ns: dict[str, Any] = {"torch": torch}
    exec(TWICE, ns)
    assert ns["w"].grad.tolist() == [6.0, 6.0]  # plain python: two backwards of 3 each
    shown = [
        e.step for _, batch in _arrivals(TWICE, ViewOptions(depth=0)) for e in batch if isinstance(e, Show) and e.shown
    ]
    call = shown[-1]
    assert call.source == "twice()"
    assert [n.text for n in call.explanations] == [
        "line 5, in twice(): backward put a gradient into w.grad: [3., 3.].",
        "line 6, in twice(): backward added into w.grad: [3., 3.] → [6., 6.] (+[3., 3.]). Gradients accumulate: "
        "this is backward #2 into w.grad since it was last reset.",
    ]
    # without --depth, or for JSON (which keeps every step), the steps keep their own notes
    for flow in (StepFlow(ViewOptions(), fold=True), StepFlow(ViewOptions(depth=0), fold=False, carry_notes=False)):
        steps = run_explained(TWICE).steps
        for step in steps:
            for event in flow.feed(step):
                if isinstance(event, Show) and event.step.source == "twice()":
                    assert event.step.explanations == []


TRAIN = """\
import torch
w = torch.zeros(3, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
def train(n):
    for i in range(n):
        loss = ((w - 1) ** 2).sum()
        loss.backward()
        opt.step()
train(5)
"""


def test_depth_tells_a_hidden_loops_notes_once_per_kind_and_line() -> None:
    """A loop inside a hidden call: its notes of one kind from one line are the last of them, counted."""
    ns: dict[str, Any] = {"torch": torch}
    exec(TRAIN, ns)
    version = ns["w"]._version
    shown = [
        e.step for _, batch in _arrivals(TRAIN, ViewOptions(depth=0)) for e in batch if isinstance(e, Show) and e.shown
    ]
    texts = [n.text for n in shown[-1].explanations]
    assert len(texts) == 4, texts
    assert texts[0].startswith("line 7, in train(): backward put a gradient into w.grad")
    assert (
        texts[1]
        == f"line 8, in train(), the last of 5 like it: w was changed in place (version {version - 1} → {version})."
    )
    assert texts[2].startswith("line 7, in train(), the last of 4 like it: backward added into w.grad")
    assert texts[2].endswith("this is backward #5 into w.grad since it was last reset.")
    # the loop never resets w.grad: the warning of turn 2 is kept over the reminders of later turns
    assert texts[3].startswith("line 7, in train(), the first of 4 like it: w.grad was not reset since the backward")
    assert [n.severity for n in shown[-1].explanations][3] == "warning"
    assert version == 5


ALTERNATING = """\
import torch
a = torch.ones(3)
def f():
    tmp = torch.zeros(3)
    for i in range(2):
        (a if i == 0 else tmp).add_(1)
    return 0
f()
"""

STEP_IN_LOOP = """\
import torch
w = torch.ones(3, requires_grad=True)
total = torch.zeros(())
losses = []
def step(i):
    global total
    loss = (w * i).sum()
    total = total + loss
    losses.append(loss)
    return i
for i in range(4):
    step(i)
"""


def test_depth_keeps_notes_about_other_tensors_from_one_line_apart() -> None:
    """One line wrote ``a`` in one turn and the function's ``tmp`` in the next: the note about ``a``
    is carried (the one about ``tmp``, a local, is not), not merged away into the other."""
    shown = [
        e.step
        for _, batch in _arrivals(ALTERNATING, ViewOptions(depth=0))
        for e in batch
        if isinstance(e, Show) and e.shown
    ]
    assert [n.text for n in shown[-1].explanations] == ["line 6, in f(): a was changed in place (version 0 → 1)."]


def test_depth_and_folding_keep_the_notes_a_hidden_call_made() -> None:
    """The hidden steps' notes make the call's step new (so it is shown, not folded away)."""
    arrived = _arrivals(STEP_IN_LOOP, ViewOptions(depth=0))
    texts = [
        n.text for _, batch in arrived for e in batch if isinstance(e, Show) and e.shown for n in e.step.explanations
    ]
    assert any(t.startswith("line 8, in step(): total's graph now holds") for t in texts), texts
    assert any(t.startswith("line 9, in step(): losses[1] is a tensor in the graph") for t in texts), texts


def _key_counter(key: str) -> str:
    """A loop adding 1 to the tensor under the dict key ``key``, four times (plain python ends at 4)."""
    script = f'import torch\nd = {{"{key}": torch.zeros(1)}}\nfor i in range(4):\n    d["{key}"] += 1\n'
    ns: dict[str, Any] = {"torch": torch}
    exec(script, ns)
    assert ns["d"][key].item() == 4.0
    return script


def test_markdown_fold_lines_escape_emphasis_in_names() -> None:
    out = _run(["--format", "markdown"], _key_counter("a*b*")).stdout
    folds = [line for line in out.splitlines() if line.startswith("- ↻")]
    assert folds[-1] == '- ↻ *iteration 4/4* · d["a\\*b\\*"] 3 → 4', folds


def test_depth_does_not_call_hidden_steps_nothing_new() -> None:
    """The steps --depth hides are not "nothing new" in a turn shown in full: their notes are shown
    under the call; no partial fold line names their lines."""
    arrived = _arrivals(STEP_IN_LOOP, ViewOptions(depth=0))
    partial = [e for _, batch in arrived for e in batch if isinstance(e, FoldedTurn) and e.partial]
    assert all(set(p.lines) <= {12} for p in partial), [p.lines for p in partial]


def test_a_dict_key_with_a_colon_is_not_taken_for_a_functions_local() -> None:
    out = _run(["--width", "100"], _key_counter("a:b")).stdout
    assert '↻ iteration 4/4 · d["a:b"] 3 → 4' in out
    assert re.search(r'^ +d\["a:b"\] +▁▃▆█ 1 → 4 \(min 1, max 4\)$', out, re.M), out


WATCHED_UNCHANGED = """\
import torch
w = torch.ones(2, requires_grad=True)
x = torch.ones(2)
for i in range(6):
    loss = (w * x).sum()
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
    w.grad = None
"""


@pytest.mark.parametrize("watch", [("x",), ("w",), None])
def test_a_folded_turn_is_never_an_empty_line(watch: tuple[str, ...] | None) -> None:
    # under --watch x nothing the line tells changes from turn to turn: it says the lines again
    steps = run_explained(WATCHED_UNCHANGED).steps
    flow = StepFlow(ViewOptions(watch=watch), fold=True)
    events = [e for step in steps for e in flow.feed(step)] + flow.close()
    turns = [e for e in events if isinstance(e, FoldedTurn)]
    assert len(turns) == 5
    previous = None
    for turn in turns:
        parts = turn_parts(turn, previous)
        assert parts, turn
        previous = turn
    if watch == ("x",):
        assert turn_parts(turns[-1], turns[-2]) == ["lines 5–6, 8–9"]
