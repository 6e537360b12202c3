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

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
from rich.style import Style
from rich.table import Table
from rich.text import Text

HEADER_STYLE = "bold"
BOX = box.SIMPLE_HEAD


class StepGrid:
    """Header, rule and rows of fixed-width columns; ``rows[i][j]`` is row i's Text in column j.

    Column j has width ``widths[j]``; its cells wrap (``folding[j]``) or stay on one line,
    and cut text folds, as in ``table.add_column(header, width=w, no_wrap=not folding, overflow="fold")``.
    """

    def __init__(
        self,
        headers: Sequence[str],
        widths: Sequence[int],
        folding: Sequence[bool],
        rows: list[list[Text]],
        table: Callable[[], Table],
    ) -> None:
        self.headers = list(headers)
        self.widths = list(widths)
        self.folding = list(folding)
        self.rows = rows
        self.table = table  # the same table built by Rich, for what this class doesn't draw

    def lines(self, console: Console) -> list[list[str]] | None:
        """Each cell's lines padded to its column, row by row; None if a cell has more than one style."""
        out: list[list[str]] = []
        for row in self.rows:
            for text, width, folding in zip(row, self.widths, self.folding):
                if text.spans or not isinstance(text.style, str):
                    return None
                lines = text.plain.split("\n")
                if all(len(line) <= width and line.isascii() and "\t" not in line for line in lines):
                    out.append([line.ljust(width) for line in lines])
                    continue
                # What Text.__rich_console__ does inside a table cell (justify "left" pads each line).
                wrapped = text.wrap(
                    console,
                    width,
                    justify=text.justify or "left",
                    overflow=text.overflow or "fold",
                    tab_size=(console.tab_size if text.tab_size is None else text.tab_size) or 8,
                    no_wrap=text.no_wrap if text.no_wrap is not None else not folding,
                )
                if any(line.spans or cell_len(line.plain) != width for line in wrapped):
                    return None
                out.append([line.plain for line in wrapped])
        return out

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        widths = self.widths
        total = sum(widths) + len(widths) - 1
        cells = None
        if total <= options.max_width and all(len(h) <= w and h.isascii() for h, w in zip(self.headers, widths)):
            cells = self.lines(console)
        if cells is None:
            yield self.table()
            return
        get_style = console.get_style
        null = Style()
        divider = Segment(" ", null)
        new_line = Segment.line()
        header = get_style(HEADER_STYLE)
        last = len(widths) - 1
        for i, (name, width) in enumerate(zip(self.headers, widths)):
            yield Segment(name.ljust(width), header)
            if i < last:
                yield divider
        yield new_line
        rule = BOX.substitute(options, safe=console.safe_box).get_row(widths, "head", edge=False)
        yield Segment(rule, null)
        yield new_line
        styles: dict[str, Style | None] = {"": None}
        n = len(widths)
        for r, texts in enumerate(self.rows):
            row = cells[r * n : (r + 1) * n]
            height = max(len(c) for c in row)
            for k in range(height):
                for i, (cell, text, width) in enumerate(zip(row, texts, widths)):
                    if k < len(cell):
                        style = str(text.style)
                        if style not in styles:
                            styles[style] = get_style(style)
                        yield Segment(cell[k], styles[style])
                    else:
                        yield Segment(" " * width, null)
                    if i < last:
                        yield divider
                yield new_line
