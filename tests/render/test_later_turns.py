"""Later turns of a loop on a screen: a turn shown for a new note tells its rows in one line, and
folded turns that read alike but for their names share one line."""

from __future__ import annotations

import io
import re

from recorded import run_cli
from render.test_models_screen import SAVED_BUMPED
from rich.console import Console

from tcopy_cli.render.folding import FoldedTurn
from tcopy_cli.render.table import TableRenderer
from tcopy_cli.render.written import by_leaf, module_aliases
from tcopy_cli.trace.records import LoopContext, TensorRecord

CHAINED = """\
import torch
a, b, c = (torch.ones(2, requires_grad=True) for _ in range(3))
for i in range(3):
    a, b, c = a * 2, b * 2, c * 2
g = torch.ones(2, requires_grad=True)
for i in range(3):
    g = torch.cat([g, g])
"""


def _steps(out: str) -> dict[int, str]:
    return {int(m[1]): m[0] for m in re.finditer(r"^Step (\d+) · .*?(?=^Step |\Z)", out, flags=re.M | re.S)}


def _turns(out: str, source: str) -> list[str]:
    return [s for s in _steps(out).values() if s.splitlines()[1:2] == [source]]


def test_a_later_turn_shown_for_a_new_note_names_its_changed_rows_instead_of_drawing_them() -> None:
    out = run_cli(["run", "-e", CHAINED, "--width", "100", "--no-color"]).stdout
    # turn 2 of the second loop: shown for the chained graphs, its rows as turn 1 drew them
    first, second = _turns(out, "a, b, c = a * 2, b * 2, c * 2")
    assert "iteration 2/3" in second and "a's graph now holds the graph a had" in second, out
    index = first.split(" · ")[0].removeprefix("Step ")
    assert f"  changed: a, b, c (shapes as in step {index})\n" in second, second
    assert "  name " not in second, second
    # a table of a shape no table drew stays whole (g, every turn)
    for step in _turns(out, "g = torch.cat([g, g])")[1:]:
        assert "  name " in step and "\n  changed:" not in step, step
    every = run_cli(["run", "-e", CHAINED, "--width", "100", "--no-color", "--all-steps"]).stdout
    second = _turns(every, "a, b, c = a * 2, b * 2, c * 2")[1]
    assert re.search(r"^~ a ", second, flags=re.M) and "\n  changed:" not in second, second


def test_a_later_turn_whose_backward_will_fail_draws_its_table() -> None:
    out = run_cli(["run", "-e", SAVED_BUMPED, "--width", "100", "--no-color"]).stdout
    bumped = [s for s in _steps(out).values() if " · line 6 · " in s.splitlines()[0]]
    assert len(bumped) == 3, out
    for step in bumped:
        assert re.search(r"^~ y ", step, flags=re.M) and "\n  changed:" not in step, step


def _turn(turn: int, scalars: list[tuple[str, float | None, float]], through: int = 0) -> FoldedTurn:
    return FoldedTurn(
        loops=(LoopContext(line=3, iteration=turn, total=12, entry=1),), first_step=turn, last_step=through or turn,
        lines=[4], scalars=scalars, versions=[], grads=[], through=through,
    )  # fmt: skip


def _folded(turns: list[FoldedTurn]) -> list[str]:
    console = Console(file=io.StringIO(), width=100, color_system=None)
    renderer = TableRenderer(console)
    for turn in turns:
        renderer.folded(turn)
    renderer.flush()
    return console.file.getvalue().splitlines()  # type: ignore[attr-defined]


def test_folded_turns_that_read_alike_but_for_their_names_share_one_line() -> None:
    # each turn does to its own tensor what the turn before did to its own: one line
    singles = [_turn(k, [(f"flags[{k - 1}]", 0.0, 1.0)]) for k in range(2, 7)]
    ranged = [_turn(7, [(f"flags[{k}]", 0.0, 1.0) for k in range(6, 10)], 10), _turn(11, [("flags[10]", 0, 1)], 11)]
    assert _folded(singles + ranged) == ["  ↻ iterations 2–11/12 · line 4 · flags[1…10] each 0 → 1"]
    # a value that moves on says something each turn; the same tensor again is another turn's news
    losses = [_turn(2, [("loss", 2.0, 1.9)]), _turn(3, [("loss", 1.9, 1.8)])]
    assert len(_folded(losses)) == 2
    again = [_turn(2, [("flag", 0.0, 1.0)]), _turn(3, [("flag", 0.0, 1.0)])]
    assert len(_folded(again)) == 2
    gap = [_turn(2, [("a", 0.0, 1.0)]), _turn(4, [("b", 0.0, 1.0)])]  # not consecutive
    assert len(_folded(gap)) == 2


def test_names_written_by_their_module_and_once_for_a_module_under_two_names() -> None:
    known = [f"model.blocks.{i}.{j}.num_batches_tracked" for i in range(3) for j in (1, 4)] + ["model.stem.1.weight"]
    assert by_leaf(known[:-1], known) == ["model.*.num_batches_tracked"]
    assert by_leaf(known[:3], known) == known[:3]  # not every one of them: each by its name
    record = TensorRecord(
        shape=[1], dtype="float32", device="cpu", values=[0.0], preview="", data_ptr=1, storage="S1",
        storage_offset=0, shares_memory_with=[], requires_grad=False, is_leaf=True, grad_fn=None, grad=None,
        version=0, version_counter="V1", object_id=7,
    )  # fmt: skip
    names = {"model.blocks.9.0.weight": record, "b.0.weight": record, "x": record, "y": record}
    assert module_aliases(names) == {"b.0.weight": "model.blocks.9.0.weight"}  # x and y: no module's
