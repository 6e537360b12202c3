"""``tcopy compare`` in the terminal: golden files at 80, 100 and 160 columns, no word broken.

The rows are measured once (real sandboxed runs) and rendered at every width.
Regenerate the golden files with ``TCOPY_UPDATE_GOLDEN=1`` and read the diff.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
import torch
from cli_runs import invoke
from rich.console import Console
from test_render import GOLDEN_TORCH, check_golden, normalise

from tcopy_cli.render.compare import QUESTIONS, SILENT, answer, render_table
from tcopy_cli.trace.compare import SETUPS, STANDARD, Comparison, compare

TEACHER = ["x.clone()", "x.detach()", "x.data"]


@pytest.fixture(scope="module")
def rows() -> list[Comparison]:
    return compare(STANDARD, SETUPS["leaf"])


def rendered(rows: list[Comparison], width: int, color: bool = False) -> str:
    out = io.StringIO()
    console = Console(file=out, width=width, no_color=not color, color_system="truecolor" if color else None)
    render_table(console, rows, SETUPS["leaf"], "cpu")
    return out.getvalue()


def words(text: str) -> set[str]:
    """Whitespace-separated tokens, box-drawing rules left out."""
    return {w for w in re.split(r"[\s─]+", text) if w}


@pytest.mark.parametrize("width", [80, 100, 160])
def test_compare_golden(rows: list[Comparison], width: int) -> None:
    if not torch.__version__.startswith(GOLDEN_TORCH):
        pytest.skip(f"golden files were recorded with torch {GOLDEN_TORCH}x")
    check_golden(f"compare-{width}.txt", normalise(rendered(rows, width)))


def test_compare_golden_three_expressions_at_80(rows: list[Comparison]) -> None:
    if not torch.__version__.startswith(GOLDEN_TORCH):
        pytest.skip(f"golden files were recorded with torch {GOLDEN_TORCH}x")
    check_golden("compare-3-80.txt", normalise(rendered([r for r in rows if r.expression in TEACHER], 80)))


@pytest.mark.parametrize("width", [60, 80, 100, 120, 140, 160, 200])
def test_compare_breaks_no_word_and_fits(rows: list[Comparison], width: int) -> None:
    # At 1000 columns nothing wraps: every word there is whole. A word cut across
    # lines at a narrower width shows up as a fragment that is not among them.
    # The one break allowed: a long expression alone in its column's header, before a dot
    # (torch / .empty_like(x) / .copy_(x)), one piece a line.
    whole = words(rendered(rows, 1000))
    pieces = {
        "".join(tokens[a:b]): c.expression
        for c in rows
        for tokens in [re.split(r"(?<=[\w)\]])(\.)(?=[A-Za-z_])", c.expression)]
        for a in range(len(tokens))
        for b in range(a + 1, len(tokens) + 1)
        if tokens[a:b] != tokens
    }
    for subset in (rows, [r for r in rows if r.expression in TEACHER]):
        text = rendered(subset, width)
        assert words(text) <= whole | set(pieces), sorted(words(text) - whole)
        for line in text.splitlines():
            assert len(line) <= width, line
            assert line == line.rstrip(), f"trailing spaces: {line!r}"
        for c in subset:
            names = [t for t in re.split(r"(?<=[\w)\]])\.(?=[A-Za-z_])", c.expression) if t]
            assert c.expression in text or all(any(n in w for w in words(text) if w in pieces) for n in names)
            for q in QUESTIONS:
                assert answer(c, q)[0] in text


def test_compare_words_not_ticks(rows: list[Comparison]) -> None:
    text = rendered(rows, 160, color=True)
    assert "✓" not in text and "✗" not in text
    by_expr = {c.expression: c for c in rows}
    notices = next(q for q in QUESTIONS if q.key == "autograd_detects_inplace")
    # Measured, not assumed: .data escapes the version counter; detach() shares it.
    assert answer(by_expr["x.data"], notices) == ("SILENT", SILENT)
    assert answer(by_expr["x.detach()"], notices)[0] == "detected"
    assert answer(by_expr["x"], QUESTIONS[0])[0] == "same object"
    # SILENT is drawn in bold red (SGR 1 and the red of the truecolor palette).
    assert re.search(r"\x1b\[1;[^m]*mSILENT", text)


def test_compare_export(tmp_path: Path) -> None:
    out = tmp_path / "cmp.txt"
    result = invoke("compare", *TEACHER, "--export", str(out), "-f", "json")
    assert result.exit_code == 0, result.output
    # stdout keeps the chosen format; the file has the table.
    assert [json.loads(line)["expression"] for line in result.stdout.splitlines()] == TEACHER
    saved = out.read_text()
    assert "SILENT" in saved and "version counter" in saved and "x.detach()" in saved
    result = invoke("compare", "x.clone()", "--export", str(tmp_path / "c.png"))
    assert result.exit_code == 2 and "--export needs" in result.stderr
