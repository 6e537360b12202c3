"""A step table drawn directly, segment for segment as Rich's ``Table`` draws it.

Rich's table layout measures, wraps and pads every cell through several layers, which
costs milliseconds per step. The step table's columns already have fixed widths
(``layout.plan``), so when every line of every cell fits its column there is nothing to
lay out: each line is the cell's text padded to the width, in the cell's style. This
class writes exactly those segments (tests compare them with Rich's, with and without
colour) and hands anything else (a cell that must wrap or be cut, a table wider than
the space it gets, unusual characters) to Rich's ``Table``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, OverflowMethod, RenderResult
from rich.segment import Segment
from rich.style import Style
from rich.table import Table
from rich.text import Text

from tcopy_cli.render.memo import Memo
from tcopy_cli.render.trim import line_count, plain_lines, trim_line

HEADER_STYLE = "bold"
BOX = box.SIMPLE_HEAD


def _wrapped(console: Console, text: Text, width: int, folding: bool) -> list[str] | None:
    """The lines of a one-style cell as Rich wraps them in a table column (None if not one style a line).

    This is what ``Text.__rich_console__`` does inside a table cell (justify "left" pads
    each line); the lines are remembered (``plain_lines``).
    """
    justify = text.justify or "left"
    overflow = text.overflow or "fold"
    tab_size = (console.tab_size if text.tab_size is None else text.tab_size) or 8
    no_wrap = text.no_wrap if text.no_wrap is not None else not folding
    lines = plain_lines(console, text, width, justify, overflow, tab_size, no_wrap)
    return None if lines is None or any(cell_len(line) != width for line in lines) else lines


def _cell_lines(console: Console, cell: Cell, width: int, folding: bool) -> list[str] | None:
    """The lines of a cell padded to its column; None if they are not in one style."""
    plain = cell.plain
    if len(plain) <= width and plain.isascii() and plain.isprintable():  # one line that fits
        return [plain.ljust(width)]
    lines = plain.split("\n")
    if all(len(line) <= width and line.isascii() and line.isprintable() for line in lines):
        return [line.ljust(width) for line in lines]
    return _wrapped(console, cell.text(), width, folding)


def cell_height(console: Console, cell: Cell, width: int, folding: bool) -> int:
    """How many lines ``cell`` takes in a column ``width`` wide, as ``StepGrid`` draws it.

    Counted on the string where ``_cell_lines`` would wrap it there (``line_count``); else
    the lines ``_cell_lines`` gives, or where it gives none, those Rich's Table wraps it into.
    """
    no_wrap = cell.no_wrap if cell.no_wrap is not None else not folding
    count = line_count(cell.plain, width, cell.overflow or "fold", no_wrap)
    if count is not None:
        return count
    lines = _cell_lines(console, cell, width, folding)
    if lines is not None:
        return len(lines)
    return len(cell.text().wrap(console, width, justify="left", overflow=cell.overflow or "fold", no_wrap=no_wrap))


_SEGMENTS: Memo[list[Segment] | None] = Memo()


def _cell_segments(
    console: Console, cell: Cell, width: int, folding: bool, style: Style | None
) -> list[Segment] | None:
    """A segment for each line of a cell (see ``_cell_lines``); remembered by ``StepGrid.segment_lines``."""
    lines = _cell_lines(console, cell, width, folding)
    return None if lines is None else [Segment(line, style) for line in lines]


class Cell(NamedTuple):
    """A table cell: text in one style, and how it is cut (as the ``Text`` that ``text()`` makes)."""

    plain: str
    style: str = ""
    no_wrap: bool | None = None
    overflow: OverflowMethod | None = None

    def text(self) -> Text:
        """The cell as Rich's Table takes it."""
        return Text(self.plain, style=self.style, no_wrap=self.no_wrap, overflow=self.overflow)


class StepGrid:
    """Header, rule and rows of fixed-width columns; ``rows[i][j]`` is row i's cell in column j.

    Column j has width ``widths[j]``; its cells wrap (``folding[j]``) or stay on one line,
    and cut text folds, as in ``table.add_column(header, width=w, no_wrap=not folding, overflow="fold")``.
    """

    def __init__(
        self,
        headers: Sequence[str],
        widths: Sequence[int],
        folding: Sequence[bool],
        rows: list[list[Cell]],
        table: Callable[[], Table],
    ) -> None:
        self.headers = list(headers)
        self.widths = list(widths)
        self.folding = list(folding)
        self.rows = rows
        self.table = table  # the same table built by Rich, for what this class doesn't draw

    def fits(self, max_width: int) -> bool:
        """Whether the columns, one space apart, fit in ``max_width`` cells."""
        return sum(self.widths) + len(self.widths) - 1 <= max_width

    def segment_lines(
        self, console: Console, options: ConsoleOptions, trim: bool = False
    ) -> list[list[Segment]] | None:
        """The table's lines of segments, or None where Rich's Table must draw it.

        ``trim``: each line without trailing spaces (``trim_line``), as ``Trimmed`` writes it.
        """
        widths = self.widths
        if not self.fits(options.max_width) or not all(
            len(h) <= w and h.isascii() for h, w in zip(self.headers, widths)
        ):
            return None
        get_style = console.get_style
        null = Style()
        divider = Segment(" ", null)
        header = get_style(HEADER_STYLE)
        head: list[Segment] = []
        for name, width in zip(self.headers, widths):
            head += (Segment(name.ljust(width), header), divider)
        rule = BOX.substitute(options, safe=console.safe_box).get_row(widths, "head", edge=False)
        out = [head[:-1], [Segment(rule, null)]]
        if trim:
            out = [trim_line(line) for line in out]
        styles: dict[str, Style | None] = {"": None}
        tab_size = console.tab_size
        template = [divider] * (2 * len(widths) - 1)  # a line: cells at even places, dividers between
        blanks = [Segment(" " * width, null) for width in widths]  # where a cell has fewer lines than its row
        remembered = _SEGMENTS.entries  # looked at directly first: a step has dozens of cells, most seen before
        for row in self.rows:
            cells: list[list[Segment]] = []
            for cell, width, folding in zip(row, widths, self.folding):
                name = cell[1]
                style = styles[name] if name in styles else styles.setdefault(name, get_style(name))
                key = (cell, width, folding, style, tab_size)
                found = remembered.get(key)
                if found is not None:
                    segments = found[1]
                else:
                    segments = _SEGMENTS.get(key, _cell_segments, console, cell, width, folding, style)
                if segments is None:
                    return None
                cells.append(segments)
            heights = [len(c) for c in cells]
            for k in range(max(heights)):
                end = len(cells)  # the cells drawn: all, or when trimmed up to the last with a k-th line
                if trim:
                    while heights[end - 1] <= k:
                        end -= 1
                line = template[: 2 * end - 1]
                line[::2] = [c[k] if k < len(c) else b for c, b in zip(cells[:end], blanks)]
                out.append(trim_line(line) if trim else line)
        return out

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        lines = self.segment_lines(console, options)
        if lines is None:
            yield self.table()
            return
        new_line = Segment.line()
        for line in lines:
            yield from line
            yield new_line
