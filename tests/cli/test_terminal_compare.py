"""``tcopy compare`` through a real pipe (80 columns there): expressions with the same answers
share a column, blocks are filled evenly, and the teacher's comparison fits a 40-row screen."""

from __future__ import annotations

import io

import pytest
from cli_runs import environ, tcopy
from rich.console import Console

from tcopy_cli.render.compare import QUESTIONS, answer, render_table
from tcopy_cli.trace.compare import SETUPS, STANDARD, compare

pytestmark = pytest.mark.e2e  # through the real command line and worker

TEACHER = ["x.clone()", "x.detach()", "x.data"]


def _piped(*args: str) -> str:
    done = tcopy("compare", *args, env=environ("COLUMNS", "FORCE_COLOR", NO_COLOR="1"), timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _blocks(text: str) -> list[list[str]]:
    """Each block's expressions (the header lines above its rule, a column's names one under another)."""
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        if line.startswith("─"):
            j = i - 1
            while j > 0 and lines[j - 1].strip() and not lines[j - 1].startswith(("Source", "autograd")):
                j -= 1
            heads = [h.removeprefix("y =") for h in lines[j:i]]
            out.append([name for h in heads for name in h.split()])
    return out


def test_the_teachers_comparison_fits_a_40_row_screen_at_80_columns() -> None:
    out = _piped(*TEACHER, "--setup", SETUPS["leaf"])
    lines = out.splitlines()
    assert len(lines) <= 40 and max(map(len, lines)) <= 80, out
    assert all(e in out for e in TEACHER) and "SILENT" in out


def test_expressions_with_the_same_answers_share_a_column_and_blocks_are_even() -> None:
    rows = compare(STANDARD, SETUPS["leaf"])
    answers = {c.expression: tuple(answer(c, q) for q in QUESTIONS) for c in rows}
    alike = [e for e in answers if list(answers.values()).count(answers[e]) > 1]
    assert "x.clone().detach()" in alike and "x.data" not in alike  # measured: .data has its own answers
    out = _piped()  # the default comparison, piped: 80 columns
    assert max(map(len, out.splitlines())) <= 80
    blocks = _blocks(out)
    shared = next(b for b in blocks if "x.clone().detach()" in b)
    assert set(alike) <= set(shared), blocks  # one column: their names one under another
    assert len(out.splitlines()) < 69  # four blocks of one expression a column took 69 lines
    for width in (120, 160):
        text = io.StringIO()
        render_table(Console(file=text, width=width, color_system=None), rows, SETUPS["leaf"], "cpu")
        columns = [len({answers[e] for e in block if e in answers}) for block in _blocks(text.getvalue())]
        assert max(columns) - min(columns) <= 1, (columns, text.getvalue())  # no block of one column at 120
