"""The directly drawn step table gives exactly the segments Rich's Table gives."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from tcopy_cli.render.grid import BOX, HEADER_STYLE, Cell, StepGrid
from tcopy_cli.render.table import TableRenderer
from tcopy_cli.render.trim import Trimmed

STYLES = ["", "bold yellow", "bold green", "green"]
SAFE = "ab xy.,-[]()0123456789…~+"
ODD = SAFE + "é中\t\r\x07\x1b"


def _consoles(width: int) -> list[Console]:
    plain = Console(file=io.StringIO(), width=width, color_system=None)
    colour = Console(file=io.StringIO(), width=width, color_system="truecolor", force_terminal=True)
    return [plain, colour]


def _rich(headers: list[str], widths: list[int], folding: list[bool], rows: list[list[Cell]]) -> Table:
    table = Table(box=BOX, pad_edge=False, show_edge=False, header_style=HEADER_STYLE, padding=(0, 0))
    for h, w, fold in zip(headers, widths, folding):
        table.add_column(h, width=w, no_wrap=not fold, overflow="fold")
    for row in rows:  # the text of each cell as Rich takes it (Text drops some control characters)
        table.add_row(*(Text(c.plain, style=c.style, no_wrap=c.no_wrap, overflow=c.overflow) for c in row))
    return table


def _segments(console: Console, renderable: object) -> list[list[Segment]]:
    """The lines as drawn; neighbouring segments of one style merged (Rich may split a
    cell's text, e.g. at an expanded tab, where the grid keeps it whole: same output)."""
    lines = console.render_lines(Trimmed(renderable), console.options, pad=False)  # type: ignore[arg-type]
    return [list(Segment.simplify(line)) for line in lines]


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[str], list[int], list[bool], list[list[Cell]], int]:
    n = draw(st.integers(1, 6))
    widths = [draw(st.integers(1, 12)) for _ in range(n)]
    headers = [draw(st.text("abcdef_", max_size=w + 1)) for w in widths]
    chars = draw(st.sampled_from([SAFE, SAFE, SAFE, ODD]))
    folding = [draw(st.booleans()) for _ in range(n)]
    rows = []
    for _ in range(draw(st.integers(0, 4))):
        row = []
        for w in widths:
            lines = draw(st.lists(st.text(chars, max_size=w + draw(st.integers(0, 2))), min_size=1, max_size=3))
            wraps = draw(st.booleans())
            row.append(
                Cell("\n".join(lines), draw(st.sampled_from(STYLES)), not wraps, "fold" if wraps else "ellipsis")
            )
        rows.append(row)
    width = draw(st.integers(10, 90))
    return headers, widths, folding, rows, width


@settings(max_examples=400, deadline=None)
@given(tables())
def test_same_segments_as_rich(case: tuple[list[str], list[int], list[bool], list[list[Cell]], int]) -> None:
    headers, widths, folding, rows, width = case
    for console in _consoles(width):
        grid = StepGrid(headers, widths, folding, rows, lambda: _rich(headers, widths, folding, rows))
        assert _segments(console, grid) == _segments(console, _rich(headers, widths, folding, rows))


def test_the_step_table_is_drawn_without_rich_tables_when_it_fits() -> None:
    from tcopy_cli import run_script

    trace = run_script("import torch\na = torch.ones(2, 3, requires_grad=True)\nb = (a * 2).sum()\nb.backward()\n")
    for console in _consoles(120):
        renderer = TableRenderer(console)
        for step in trace.steps:
            group = renderer.render_step(step)
            grids = [p for p in group.inner.renderables if isinstance(p, StepGrid)]  # type: ignore[attr-defined]
            for grid in grids:
                assert grid.segment_lines(console, console.options) is not None  # drawn by the grid itself
                assert _segments(console, grid) == _segments(console, grid.table())
