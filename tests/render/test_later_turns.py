"""Later turns of a loop on a screen: a turn shown for a new note tells its rows in one line."""

from __future__ import annotations

import re

from recorded import run_cli
from render.test_models_screen import SAVED_BUMPED

CHAINED = """\
import torch
h = torch.ones(2, requires_grad=True)
for i in range(3):
    h = h * 2
g = torch.ones(2, requires_grad=True)
for i in range(3):
    g = torch.cat([g, g])
"""


def _steps(out: str) -> dict[int, str]:
    return {int(m[1]): m[0] for m in re.finditer(r"^Step (\d+) · .*?(?=^Step |\Z)", out, flags=re.M | re.S)}


def test_a_later_turn_shown_for_a_new_note_names_its_changed_rows_instead_of_drawing_them() -> None:
    out = run_cli(["run", "-e", CHAINED, "--width", "100", "--no-color"]).stdout
    steps = _steps(out)
    # turn 2 of the first loop: shown for the chained graph, its row as turn 1 drew it
    assert "iteration 2/3" in steps[4] and "h's graph now holds the graph h had" in steps[4], out
    assert "  changed: h (rows as in step 3)\n" in steps[4], steps[4]
    assert "  name " not in steps[4], steps[4]
    # g in a shape no table drew it in: drawn, every turn
    for index in (8, 9):
        assert re.search(r"^~ g ", steps[index], flags=re.M), steps[index]
    every = _steps(run_cli(["run", "-e", CHAINED, "--width", "100", "--no-color", "--all-steps"]).stdout)
    assert re.search(r"^~ h ", every[4], flags=re.M) and "changed:" not in every[4], every[4]


def test_a_later_turn_whose_backward_will_fail_draws_its_table() -> None:
    out = run_cli(["run", "-e", SAVED_BUMPED, "--width", "100", "--no-color"]).stdout
    bumped = [s for s in _steps(out).values() if " · line 6 · " in s.splitlines()[0]]
    assert len(bumped) == 3, out
    for step in bumped:
        assert re.search(r"^~ y ", step, flags=re.M) and "changed:" not in step, step
