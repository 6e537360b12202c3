"""Which columns a step table shows and how wide each is, for a given terminal width.

The values get the width budget first: every column starts at its smallest useful width,
the values then grow to what they need (a whole line, or an aligned grid), and only what
is left goes to the other columns. On wide terminals the table shows every fact, but the
hex ``data_ptr`` (the storage label says the same) is the first column given up for the
values' sake, and the narrow set of columns is used when even that is not enough. The
``ver`` column and the other short facts are never squeezed out.
"""

from __future__ import annotations

from dataclasses import dataclass

from tcopy_cli.render.cells import COLUMNS, Column, Row
from tcopy_cli.render.values import natural_width
from tcopy_cli.trace.records import TensorRecord

WIDE = 120

# Columns that may be narrower than their longest cell (they wrap or end in "…"), and how narrow.
SQUEEZE = {"values": 14, "name": 10, "grad": 10, "autograd": 12, "grad_fn": 12, "shares": 6}
# Narrower still, in this order, only when the table can't fit otherwise (short facts like ver never shrink).
LAST_RESORT = [("shares", 4), ("grad", 6), ("autograd", 8), ("grad_fn", 8), ("name", 6), ("values", 8)]
# What the spare width goes to after the smallest widths, in order.
GROW = ["values", "autograd", "grad_fn", "name", "grad", "shares"]
# The most a column asks for (a longer cell wraps or is cut).
CAP = {"name": 20, "grad": 32, "shares": 20, "autograd": 20, "grad_fn": 20}


@dataclass(frozen=True)
class Layout:
    """The shown columns and their widths."""

    columns: list[Column]
    widths: dict[str, int]


def natural_widths(rows: list[Row], columns: list[Column]) -> dict[str, int]:
    """What each column would take with nothing cut or wrapped (within CAP)."""
    widths: dict[str, int] = {}
    for c in columns:
        if c.key == "values":
            cells = [natural_width(r.record) if r.record is not None else len(r.cells["values"]) for r in rows]
        elif c.key == "grad":
            cells = [
                natural_width(r.record.grad)
                if isinstance(r.record, TensorRecord) and r.record.grad is not None
                else len(r.cells["grad"])
                for r in rows
            ]
        else:
            cells = [len(r.cells[c.key]) for r in rows]
        widths[c.key] = min(CAP.get(c.key, 1000), max([len(c.header), *cells]))
    return widths


def fit(rows: list[Row], columns: list[Column], width: int) -> tuple[dict[str, int], int]:
    """(widths, how well they fit) for ``columns`` in ``width`` terminal columns.

    The fit is 2 when every column got its natural width, 1 when the values did, else 0.
    """
    natural = natural_widths(rows, columns)
    widths = {k: min(w, SQUEEZE.get(k, w)) for k, w in natural.items()}
    # the marker column and one space before every column
    spare = width - 1 - len(columns) - sum(widths.values())
    for key, least in LAST_RESORT:
        if spare < 0 and key in widths and widths[key] > least:
            cut = min(widths[key] - least, -spare)
            widths[key] -= cut
            spare += cut
    for key in GROW:
        if key in widths and spare > 0:
            extra = min(spare, natural[key] - widths[key])
            widths[key] += extra
            spare -= extra
    if spare < 0:
        return widths, 0
    return widths, 2 if widths == natural else int(widths.get("values", 0) >= natural.get("values", 0))


def plan(rows: list[Row], width: int, show_device: bool, level: int = 0) -> tuple[Layout, int]:
    """The columns and widths for a step table ``width`` terminal columns wide, and their level.

    Levels: 0 every fact, 1 every fact but ``data_ptr``, 2 the narrow set. A renderer
    passes back the level it got so that a later step never shows more columns than an
    earlier one: columns do not come and go from step to step.
    """

    def pick(wide: bool, data_ptr: bool = True) -> list[Column]:
        return [
            c
            for c in COLUMNS
            if (c.wide if wide else c.narrow)
            and (c.key != "device" or show_device)
            and (c.key != "data_ptr" or data_ptr)
        ]

    candidates = {0: pick(True), 1: pick(True, data_ptr=False), 2: pick(False)}
    if width < WIDE:
        level = 2
    fits = [(i, columns, *fit(rows, columns, width)) for i, columns in candidates.items() if i >= level]
    for wanted in (2, 1):
        for i, columns, widths, quality in fits:
            if quality >= wanted:
                return Layout(columns, widths), i
    return Layout(fits[-1][1], fits[-1][2]), 2
