"""Unchanged rows: three or more tensors a step left as the table above showed them fold into one line."""

from __future__ import annotations

import json
import re

import torch
from recorded import run_cli

SCRIPT = """\
import torch
a = torch.zeros(3)
b = torch.ones(2)
c = torch.arange(4.0)
d = torch.full((2, 2), 7.0)
b.mul_(3)
e = torch.zeros(1)
"""


def _steps(out: str) -> dict[int, str]:
    parts = re.split(r"^Step (\d+) · ", out, flags=re.M)[1:]
    return {int(i): body for i, body in zip(parts[::2], parts[1::2])}


def _rows(body: str) -> set[str]:
    # A table row: mark, name, ..., a storage label.
    return set(re.findall(r"^[+~ ] (\S+) .* S\d+", body, flags=re.M))


def _folded(body: str) -> list[str] | None:
    m = re.search(r"^  unchanged: (.*)$", body, flags=re.M)
    return None if m is None else m[1].split(", ")


def _plain_unchanged(script: str, line: int) -> set[str]:
    """Names whose tensor plain python leaves the same object, version and values at ``line`` (1-based)."""
    lines = script.splitlines()
    ns: dict[str, object] = {}
    exec("\n".join(lines[: line - 1]), ns)

    def state() -> dict[str, tuple[int, int, list[float]]]:
        return {k: (id(v), v._version, v.tolist()) for k, v in ns.items() if isinstance(v, torch.Tensor)}

    before = state()
    exec(lines[line - 1], ns)
    after = state()
    return {k for k, v in before.items() if after.get(k) == v}


def _notes_name(script: str, index: int) -> set[str]:
    events = [json.loads(x) for x in run_cli(["run", "-e", script, "-f", "json"]).stdout.splitlines()]
    step = next(e for e in events if e["event"] == "step" and e["index"] == index)
    return {t for n in step["explanations"] for t in n["tensors"]}


def test_unchanged_rows_fold_into_one_line_naming_exactly_what_plain_python_left_alone() -> None:
    steps = _steps(run_cli(["run", "-e", SCRIPT, "--width", "100"]).stdout)
    # Step 6 is `b.mul_(3)` (line 6): a, c and d are untouched and were drawn just above.
    expected = _plain_unchanged(SCRIPT, 6) - _notes_name(SCRIPT, 6)
    assert expected == {"a", "c", "d"}
    assert set(_folded(steps[6]) or []) == expected
    assert _rows(steps[6]) == {"b"}
    # Step 7 (`e = ...`) leaves all four alone: b's row reads as drawn in step 6 too.
    assert set(_folded(steps[7]) or []) == _plain_unchanged(SCRIPT, 7) - _notes_name(SCRIPT, 7) == {"a", "b", "c", "d"}
    assert _rows(steps[7]) == {"e"}


def test_two_unchanged_rows_stay_rows() -> None:
    # Step 4 (c = ...) leaves a and b alone: two rows, not worth a line of their own.
    steps = _steps(run_cli(["run", "-e", SCRIPT, "--width", "100"]).stdout)
    assert _folded(steps[4]) is None
    assert _rows(steps[4]) == {"a", "b", "c"}


def test_all_steps_draws_every_row() -> None:
    steps = _steps(run_cli(["run", "-e", SCRIPT, "--width", "100", "--all-steps"]).stdout)
    assert all(_folded(body) is None for body in steps.values())
    assert _rows(steps[7]) == {"a", "b", "c", "d", "e"}


def test_markdown_names_the_folded_rows() -> None:
    out = run_cli(["run", "-e", SCRIPT, "-f", "markdown"]).stdout
    section = out.split("### Step 7 ")[1]
    assert "*unchanged: a, b, c, d*" in section
    assert not re.search(r"^\| {2}\| a \|", section, flags=re.M)


def test_a_row_a_note_names_or_that_shares_a_drawn_storage_stays() -> None:
    script = """\
import torch
x = torch.zeros(4, requires_grad=True)
d = x.data
p = torch.ones(1)
q = torch.ones(2)
r = torch.ones(3)
x.grad = torch.ones(4)
s = (x * 2).sum()
"""
    steps = _steps(run_cli(["run", "-e", script, "--width", "100"]).stdout)
    # x.grad = ...: x changes; d shares x's storage (S1) and stays beside it.
    assert "d" in _rows(steps[7]) and "x" in _rows(steps[7])
    assert set(_folded(steps[7]) or []) == {"p", "q", "r"}
    # s = (x * 2).sum(): its note names x, which keeps its row (and d with it, for the storage).
    assert {"x"} <= _notes_name(script, 8)
    assert {"s", "x", "d"} <= _rows(steps[8])
    assert set(_folded(steps[8]) or []) == {"p", "q", "r"}


def test_a_tensor_changed_out_of_sight_keeps_its_row() -> None:
    # Loop turns 2-3 fold into one line and change w; the step after the loop leaves w alone,
    # but the reader never saw w as it is now, so w is drawn.
    script = """\
import torch
w = torch.zeros(2)
a = torch.ones(1)
b = torch.ones(2)
c = torch.ones(3)
for i in range(3):
    w.add_(1)
z = torch.zeros(1)
"""
    out = run_cli(["run", "-e", script, "--width", "100"]).stdout
    last = list(_steps(out).values())[-1]
    assert last.startswith("line 8")
    assert "w" in _rows(last)
    assert "[3., 3.]" in last
    assert set(_folded(last) or []) == {"a", "b", "c"}


def test_a_row_a_drawn_tensor_reaches_in_the_graph_stays() -> None:
    script = """\
import torch
x = torch.ones(3, requires_grad=True)
d = x.data
h = x * 2
p = torch.ones(1)
q = torch.ones(2)
r = torch.ones(3)
k = h + 1
"""
    # k's note names k and h; its backward also reaches x (plain torch: k.grad_fn leads to x's
    # AccumulateGrad), and d, which shares x's memory, stays beside x.
    x = torch.ones(3, requires_grad=True)
    k = (x * 2) + 1
    assert k.grad_fn is not None and k.grad_fn.next_functions[0][0].next_functions[0][0].variable is x
    assert not {"x", "d"} & _notes_name(script, 8)
    steps = _steps(run_cli(["run", "-e", script, "--width", "100"]).stdout)
    assert {"k", "h", "x", "d"} <= _rows(steps[8])
    assert set(_folded(steps[8]) or []) == {"p", "q", "r"}


def test_every_folded_row_is_named_however_many() -> None:
    names = [f"t{i}" for i in range(12)]
    script = "import torch\n" + "".join(f"{n} = torch.ones({i + 1})\n" for i, n in enumerate(names)) + "z = t0 * 2\n"
    steps = _steps(run_cli(["run", "-e", script, "--width", "200"]).stdout)
    last = steps[max(steps)]
    assert _rows(last) == {"z"}
    assert sorted(_folded(last) or []) == sorted(names), last


def test_a_change_past_the_cut_down_cell_text_keeps_the_row() -> None:
    # The grad of a 20-element tensor changes at element 15 only in folded loop turns; the
    # row's text cut down for comparison could read the same, the record does not.
    script = """\
import torch
emb = torch.zeros(20, requires_grad=True)
a = torch.zeros(1)
b = torch.zeros(1)
for i in range(4):
    (emb[15] * 2).backward()
z = a + 1
"""
    emb = torch.zeros(20, requires_grad=True)
    for _ in range(4):
        (emb[15] * 2).backward()
    assert emb.grad is not None and emb.grad[15].item() == 8.0
    out = run_cli(["run", "-e", script, "--width", "120"]).stdout
    last = list(_steps(out).values())[-1]
    assert last.startswith("line 7")
    assert "emb" in _rows(last) and "emb" not in (_folded(last) or []), last


def test_a_failing_step_folds_nothing() -> None:
    script = """\
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.BatchNorm1d(3), torch.nn.Linear(4, 2))
x = torch.randn(5, 3)
out = model(x)
"""
    out = run_cli(["run", "-e", script, "--width", "100"]).stdout
    last = list(_steps(out).values())[-1]
    assert "RuntimeError" in last and _folded(last) is None
    assert {"x", "model.0.weight", "model.1.weight", "model.0.running_mean"} <= _rows(last), last


def test_names_with_dots_inside_keys_are_not_split() -> None:
    script = "import torch\nd = {'a.b': torch.ones(1), 'a.c': torch.ones(2), 'x': torch.ones(3)}\nz = torch.ones(1)\n"
    out = run_cli(["run", "-e", script, "--width", "120"]).stdout
    line = next(x for x in out.splitlines() if "unchanged:" in x)
    assert (
        line.strip() == "unchanged: d['a.b'], d['a.c'], d['x']"
        or line.strip() == 'unchanged: d["a.b"], d["a.c"], d["x"]'
    ), line


def test_markdown_escapes_names_in_the_unchanged_line() -> None:
    script = "import torch\nd = {'*a': torch.ones(1), 'b*': torch.ones(1), '`c': torch.ones(1)}\nz = torch.ones(1)\n"
    md = run_cli(["run", "-e", script, "-f", "markdown"]).stdout
    line = next(x for x in md.splitlines() if "unchanged:" in x)
    # Only the outer pair of asterisks is unescaped, and no backtick opens a code span.
    assert re.sub(r"\\.", "", line).count("*") == 2 and "`" not in re.sub(r"\\.", "", line), line
