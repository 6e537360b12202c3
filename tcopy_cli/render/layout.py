"""Which columns a step table shows and how wide each is, for a given terminal width.

Columns: on wide terminals the table shows every fact, but the hex ``data_ptr`` (the
storage label says the same) is the first column given up for the values' sake, and the
narrow set of columns is used when even that is not enough. The ``ver`` column and the
other short facts are never squeezed out. The set is chosen on the values-first widths
(below): whether the values get all they need there.

Widths: every column starts at its smallest useful width (``SQUEEZE``, and ``LAST_RESORT``
when even that does not fit; a grad_fn name whole and a cell in the form it was drawn in
before where they fit), and the spare width is shared out so that the table takes
the fewest terminal lines: a row is as tall as its tallest cell, and a cell's lines are
counted as they are drawn (a values cell as a line, a grid or a summary, wrapped or cut).
Among the layouts with that fewest number of lines, the one chosen has the fewest lines
in all its cells (the least wrapping), and among those it gives the values the most
width, then ``autograd``, ``grad_fn``, ``name``, ``grad`` and ``shares`` in that order
(``GROW``). The values-first layout (the spare to the columns in ``GROW`` order, each up
to what it needs) is that one whenever nothing but values wraps in it, so a table in which
nothing wraps is drawn as before. A values or grad column is never narrower than in the
values-first layout where that would change what a cell says (a grid does not become a
summary, listed values do not become statistics): narrower, a cell only wraps onto more lines.
"""

from __future__ import annotations

import io
import math
from bisect import bisect_right
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from itertools import product
from typing import NamedTuple

from rich.console import Console, OverflowMethod

from tcopy_cli.render.cells import COLUMNS, Column, Row
from tcopy_cli.render.grid import Cell, cell_height
from tcopy_cli.render.memo import Memo
from tcopy_cli.render.names import shortened, unique_width
from tcopy_cli.render.values import form_width, natural_width, one_line_width, value_form, value_lines, values_key
from tcopy_cli.trace.records import ArrayRecord, TensorRecord

WIDE = 120

# Columns that may be narrower than their longest cell (they wrap or end in "…"), and how narrow.
SQUEEZE = {"values": 14, "name": 10, "grad": 10, "autograd": 12, "grad_fn": 12, "shares": 6}
# Narrower still, in this order, only when the table can't fit otherwise (short facts like ver never shrink).
LAST_RESORT = [("shares", 4), ("grad", 6), ("autograd", 8), ("grad_fn", 8), ("name", 6), ("values", 8)]
# Which columns get the spare width first: in the values-first layout, and among equally short ones.
# The name first: a name never wraps, and written shorter it leaves out its middle.
GROW = ["name", "values", "autograd", "grad_fn", "grad", "shares"]
# The most a column asks for (a longer cell wraps or is cut).
CAP = {"name": 24, "grad": 32, "shares": 20, "autograd": 44, "grad_fn": 44}
# Columns whose text may wrap onto more lines; the rest stay on one line and end in "…" (a name is
# written shorter, the middle of it left out: ``short_names``).
FOLDING = ("values", "grad", "shares")
# The most width combinations tried for one table (more candidate widths are thinned out).
MAX_TRIED = 256


@dataclass(frozen=True)
class Layout:
    """The shown columns and their widths."""

    columns: list[Column]
    widths: dict[str, int]


@dataclass(frozen=True)
class Fit:
    """How ``columns`` fit a width: what they would like, their smallest widths, and the values-first widths."""

    natural: dict[str, int]
    least: dict[str, int]
    spare: int
    """Width left over once every column has its least (negative: the table does not fit)."""
    widths: dict[str, int]
    """The values-first widths: the spare to the columns in ``GROW`` order."""
    quality: int
    """2 when every column got its natural width, 1 when the values did, else 0."""


class Forms:
    """The form (``value_form``) each tensor's values and grad were drawn in last, by name and
    shape: a tensor whose shape did not change is drawn in the same form where the width allows
    (a grad drawn as a grid stays a grid, a summary keeps its histogram)."""

    def __init__(self) -> None:
        self._last: dict[tuple[str, str], tuple[tuple[int, ...], tuple[str, int]]] = {}

    def held(self, rows: list[Row]) -> dict[str, list[int]]:
        """The widths the values and grad columns need to draw each of ``rows`` as before."""
        widths: dict[str, list[int]] = {}
        for row in rows:
            for key in ("values", "grad"):
                record, last = _record(row, key), self._last.get((row.cells["name"], key))
                if record is not None and last is not None and last[0] == tuple(record.shape):
                    w = form_width(record, last[1])
                    if w is not None:
                        widths.setdefault(key, []).append(w)
        return widths

    def drawn(self, rows: list[Row], widths: dict[str, int]) -> None:
        """``rows`` were drawn in a table with these column widths."""
        for row in rows:
            for key in ("values", "grad"):
                record = _record(row, key)
                form = value_form(record, widths[key]) if record is not None and key in widths else None
                if record is not None and form is not None:
                    self._last[row.cells["name"], key] = (tuple(record.shape), form)


def cell(row: Row, key: str, width: int, text: str | None = None) -> Cell:
    """One cell: values as a line, a grid or a summary; other facts as their text (``text``: the
    name as the table writes it, see ``short_names``, or a module row's values, ``held_text``)."""
    value = row.cells[key]
    style = ""
    if key in row.changed and not row.new:
        style = "bold yellow"
    elif row.new and key == "name":
        style = "bold green"
    elif value in ("yes", "leaf+grad"):
        style = "green"
    plain, no_wrap, overflow = _content(row, key, width, True)
    if text is not None:
        plain = text
    return Cell(plain, style, no_wrap, overflow)


def _content(row: Row, key: str, width: int, remember: bool) -> tuple[str, bool | None, OverflowMethod]:
    """A cell's text, whether it stays on one line, and how it is cut (``Cell``'s fields but its style)."""
    record = _record(row, key)
    if record is not None:
        lines, wraps = value_lines(record, width, remember)
        return "\n".join(lines), not wraps, "fold" if wraps else "ellipsis"
    if key == "name":
        return shortened(row.cells[key], width)[0], True, "ellipsis"
    text = row.cells[key]
    if key == "values" and row.members and len(text) > width:
        held = held_text(text)  # a module's row too narrow for its whole text: what its tensors hold
        if len(held) <= width:
            return held, True, "ellipsis"
    return text, None, "fold" if key in FOLDING else "ellipsis"


def held_text(values: str) -> str:
    """``47,354 params`` of a module's row's ``65 tensors, 47,354 params``: what its tensors hold,
    where the values column is too narrow for the whole on one line (the storage and ver columns
    span its tensors; the name says which they are). A table writes every module row so once
    one is (``short_module_values``)."""
    return values.partition(", ")[2] or values


def short_module_values(rows: list[Row], width: int) -> bool:
    """Whether a table's module rows are written as ``held_text``: one's whole does not fit ``width``."""
    return any(r.members and len(r.cells["values"]) > width >= len(held_text(r.cells["values"])) for r in rows)


def _record(row: Row, key: str) -> TensorRecord | ArrayRecord | None:
    """The record a values or grad cell is drawn from (None: the cell is its text)."""
    record = row.record
    if key == "grad":  # a NumPy array has no grad: its cell is its (empty) text
        return record.grad if isinstance(record, TensorRecord) else None
    return record if key == "values" else None


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


def fit(
    rows: list[Row], columns: list[Column], width: int, held: dict[str, list[int]] | None = None, whole: bool = True
) -> Fit:
    """How ``columns`` fit in ``width`` terminal columns, values first (see ``Fit``).

    The name column is at least as wide as it takes to tell the names apart when their
    middles are left out (``unique_width``), where the width allows. Where the width
    allows too, a grad_fn name is never cut, and the values and grad columns are at least
    as wide as ``held`` says (what keeps each cell in the form an earlier table drew it
    in: ``value_form``), after the grad_fn names (``whole``: whether they are tried)."""
    natural = natural_widths(rows, columns)
    squeezed = {k: min(w, SQUEEZE.get(k, w)) for k, w in natural.items()}
    # the marker column and one space before every column
    lines = [one_line_width(r.record) if r.record is not None else len(r.cells["values"]) for r in rows]
    least = _least(squeezed, natural, width - 1 - len(columns), held or {}, max(lines, default=0) if whole else -1)
    spare = width - 1 - len(columns) - sum(least.values())
    if "name" in least and least["name"] < natural["name"]:
        apart = unique_width([r.cells["name"] for r in rows], least["name"], natural["name"])
        grow = min(apart - least["name"], max(spare, 0))
        spare -= grow
        least["name"] += grow
    for key, smallest in LAST_RESORT:
        if spare < 0 and key in least and least[key] > smallest:
            cut = min(least[key] - smallest, -spare)
            least[key] -= cut
            spare += cut
    widths = dict(least)
    left = spare
    for key in GROW:
        if key in widths and left > 0:
            extra = min(left, natural[key] - widths[key])
            widths[key] += extra
            left -= extra
    if spare < 0:
        quality = 0
    else:
        quality = 2 if widths == natural else int(widths.get("values", 0) >= natural.get("values", 0))
    return Fit(natural, least, spare, widths, quality)


def _least(
    squeezed: dict[str, int], natural: dict[str, int], room: int, held: dict[str, list[int]], one_line: int
) -> dict[str, int]:
    """The smallest widths ``fit`` starts from: grad_fn names whole where the values still fit on
    one line (``one_line`` wide) beside them, then as many cells in their earlier forms as fit
    (the most cells, then the widest); either only where the names keep their whole width too (a
    negative ``one_line``: grad_fn names as squeezed as the rest). A name cut reads as another
    operation; a summary without its σ still says what it said."""
    named = natural["name"] - squeezed["name"] if "name" in natural else 0
    whole: dict[str, int] = {k: natural[k] for k in ("autograd", "grad_fn") if k in natural}
    nothing: dict[str, int] = {}
    lined = max(squeezed["values"], min(one_line, natural["values"])) - squeezed["values"] if "values" in natural else 0
    if one_line < 0 or sum({**squeezed, **whole}.values()) + named + lined > room:
        whole = {}
    options = {
        k: [*sorted({max(squeezed[k], min(w, natural[k])) for w in ws}, reverse=True), squeezed[k]]
        for k, ws in held.items()
        if k in natural
    }
    for names in (whole, nothing):
        fitting = []
        for values, grad in product(options.get("values", [0]), options.get("grad", [0])):
            least = {**squeezed, **names}
            least.update((k, w) for k, w in (("values", values), ("grad", grad)) if w)
            if sum(least.values()) + named <= room:
                kept = sum(w <= least[k] for k, ws in held.items() if k in least for w in ws)
                fitting.append((kept, values + grad, least))
        if fitting:  # the most cells kept in their forms, then the widest
            return max(fitting, key=lambda f: f[:2])[2]
    return squeezed


def plan(
    rows: list[Row],
    width: int,
    show_device: bool,
    level: int = 0,
    shortest: bool = True,
    held: dict[str, list[int]] | None = None,
) -> tuple[Layout, int]:
    """The columns and widths for a step table ``width`` terminal columns wide, and their level.

    Levels: 0 every fact, 1 every fact but ``data_ptr``, 2 the narrow set. A renderer
    passes back the level it got so that a later step never shows more columns than an
    earlier one: columns do not come and go from step to step. The level is chosen on
    the values-first widths; ``shortest`` then shares the width out for the fewest lines
    (False: the values-first widths themselves). ``held``: the least widths of the values
    and grad columns that keep their cells in the forms drawn before (``fit``).
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
    fits = [(i, columns, fit(rows, columns, width, held)) for i, columns in candidates.items() if i >= level]
    chosen = next(
        ((i, columns, f) for wanted in (2, 1) for i, columns, f in fits if f.quality >= wanted),
        (2, fits[-1][1], fits[-1][2]),
    )
    i, columns, f = chosen
    widths = fewest_lines(rows, columns, f) if shortest else f.widths
    if any(f.least.get(k, 0) > SQUEEZE[k] for k in ("autograd", "grad_fn")):  # a grad_fn name whole: if no taller
        g = fit(rows, columns, width, held, whole=False)
        cut = fewest_lines(rows, columns, g) if shortest else g.widths
        if _height(rows, cut) < _height(rows, widths):
            widths = cut
    return Layout(columns, widths), i


def _height(rows: list[Row], widths: dict[str, int]) -> int:
    """The terminal lines ``rows`` take with these column widths."""
    return sum(max([1, *(_drawn(row, k, widths[k]).lines for k in FOLDING if k in widths)]) for row in rows)


# Counting lines. A cell is known by what its lines are made of (not its style): a values
# or grad cell by its record's values object and preview (as ``value_lines`` remembers
# them), any other by its text.

_COUNTING: list[Console] = []
_DRAWN: Memo[Drawn] = Memo()
_PROFILES: Memo[tuple[list[int], list[int], list[str]]] = Memo(1024)


class Drawn(NamedTuple):
    """A cell drawn at one width."""

    lines: int
    text: str
    """What it says, however it is broken into lines."""


def _console() -> Console:
    """A console to wrap text with as the table's console does (its tab size, no colour)."""
    if not _COUNTING:
        _COUNTING.append(Console(file=io.StringIO(), width=80, color_system=None))
    return _COUNTING[0]


def _identity(row: Row, key: str) -> tuple[Hashable, object]:
    """(key, owner) naming what a cell's lines are made of, for ``Memo``."""
    record = _record(row, key)
    if record is None:
        return (key in FOLDING, row.cells[key]), None
    return values_key(record), record.values


def _drawn(row: Row, key: str, width: int, identity: tuple[Hashable, object] | None = None) -> Drawn:
    """The cell of ``row`` in column ``key`` drawn ``width`` wide."""
    name, owner = identity or _identity(row, key)

    def work_out() -> Drawn:
        plain, no_wrap, overflow = _content(row, key, width, False)
        lines = cell_height(_console(), Cell(plain, "", no_wrap, overflow), width, key in FOLDING)
        return Drawn(lines, plain.replace("\n", " "))

    return _DRAWN.get((name, width), work_out, owner=owner)


def _profile(
    row: Row, key: str, lo: int, hi: int, identity: tuple[Hashable, object] | None = None
) -> tuple[list[int], list[int], list[str]]:
    """A cell's lines at every width from ``lo`` to ``hi``: (first widths, lines, texts) of each stretch.

    Found by halving: between two widths where the cell takes as many lines and says the
    same thing, it is taken to do so throughout (more width never adds lines to the same
    text, and a cell says more, not less, as it widens).
    """
    identity = identity or _identity(row, key)

    def work_out() -> tuple[list[int], list[int], list[str]]:
        first = _drawn(row, key, lo, identity)
        starts, heights, texts = [lo], [first.lines], [first.text]

        def walk(a: int, at_a: Drawn, b: int, at_b: Drawn) -> None:
            if at_a == at_b:
                return
            if b - a == 1:
                starts.append(b)
                heights.append(at_b.lines)
                texts.append(at_b.text)
                return
            m = (a + b) // 2
            at_m = _drawn(row, key, m, identity)
            walk(a, at_a, m, at_m)
            walk(m, at_m, b, at_b)

        walk(lo, first, hi, _drawn(row, key, hi, identity))
        return starts, heights, texts

    return _PROFILES.get((identity[0], lo, hi), work_out, owner=identity[1])


def fewest_lines(rows: list[Row], columns: list[Column], f: Fit) -> dict[str, int]:
    """The widths for which ``columns`` take the fewest lines (see the module's docstring).

    The widths tried for ``name``, ``grad`` and ``shares`` are those where one of their
    cells changes its lines (``_profile``); the values get what those leave. A combination
    is drawn (its values counted) only if it could beat the best so far with values as
    short as they are at their values-first width, which no narrower width beats.
    """
    chosen = f.widths
    if f.spare <= 0 or f.quality == 2 or not rows:
        return chosen
    folding = [c.key for c in columns if c.key in FOLDING]
    ids = {k: [_identity(row, k) for row in rows] for k in folding}
    heights = [[_drawn(row, k, chosen[k], ids[k][r]).lines for k in folding] for r, row in enumerate(rows)]
    if all(h == 1 for row in heights for k, h in zip(folding, row) if k != "values"):
        return chosen  # only values wrap, and they have all the width they can get
    others = [k for k in folding if k != "values" and f.least[k] < f.natural[k]]
    profiles = {k: [_profile(row, k, f.least[k], f.natural[k], i) for row, i in zip(rows, ids[k])] for k in others}
    known: dict[tuple[str, int], list[int]] = {}

    def lines_at(k: str, w: int) -> list[int]:
        """The lines of each row's cell in column ``k`` (one of ``others``) at width ``w``."""
        found = known.get((k, w))
        if found is None:
            found = known[k, w] = [p[1][bisect_right(p[0], w) - 1] for p in profiles[k]]
        return found

    # Each column is only as narrow as its values-first width where it says the same there.
    least = {k: max(_same_from(p, chosen[k]) for p in profiles[k]) for k in others}
    at = folding.index("values")
    today = [h[at] for h in heights]  # the values' lines at their widest, the fewest they take
    fixed = [i for i, k in enumerate(folding) if k not in others and i != at]
    base = [max([1, *(h[i] for i in fixed)]) for h in heights]
    base_cells = sum(h[i] for h in heights for i in fixed)
    # The widths tried: where a cell of the column changes its lines (breakpoints).
    tried = {k: sorted({w for p in profiles[k] for w in p[0] if w >= least[k]} | {least[k]}) for k in others}
    while math.prod(len(ws) for ws in tried.values()) > MAX_TRIED:  # every other one, first and last kept
        ws = max(tried.values(), key=len)
        ws[:] = ws[:-1:2] + ws[-1:]
    best = (sum(max([1, *h]) for h in heights), sum(map(sum, heights)), _order(chosen))
    least_cells = base_cells + sum(today)
    hopeful = []  # (the fewest lines and cell lines it could take, the widths of name, grad, shares, the rest)
    # The name keeps its values-first width: it never wraps, and narrower it only says less.
    named = chosen.get("name", 0) - f.least.get("name", 0)
    for combo in product(*(tried[k] for k in others)):
        left = f.spare - named - sum(w - f.least[k] for k, w in zip(others, combo))
        if left >= 0:
            lines = [lines_at(k, w) for k, w in zip(others, combo)]
            hopeful.append(((sum(map(max, base, today, *lines)), least_cells + sum(map(sum, lines))), combo, left))
    hopeful.sort(key=lambda h: h[0])
    says = [_drawn(row, "values", chosen["values"], i).text for row, i in zip(rows, ids["values"])]
    for could, combo, left in hopeful:
        if could > best[:2]:
            break  # nor can the rest, even with the values at their fewest lines
        widths = dict(f.least)
        if "name" in chosen:
            widths["name"] = chosen["name"]
        widths.update(zip(others, combo))
        values = min(left, chosen["values"] - f.least["values"])
        widths["values"] = f.least["values"] + values
        if left > values:
            _spend(widths, left - values, f, others, lines_at)
        lines = [lines_at(k, widths[k]) for k in others]
        cells = base_cells + sum(map(sum, lines))
        if (sum(map(max, base, today, *lines)), cells + sum(today), _order(widths)) >= best:
            continue
        drawn = [_drawn(row, "values", widths["values"], i) for row, i in zip(rows, ids["values"])]
        if any(d.text != text for d, text in zip(drawn, says)):
            continue  # the values would say less
        shown = [d.lines for d in drawn]
        key = (sum(map(max, base, shown, *lines)), cells + sum(shown), _order(widths))
        if key < best:
            best = key
            chosen = widths
    return chosen


def _same_from(profile: tuple[list[int], list[int], list[str]], width: int) -> int:
    """The narrowest width from which a cell says, up to ``width``, what it says at ``width``."""
    starts, _, texts = profile
    i = bisect_right(starts, width) - 1
    while i > 0 and texts[i - 1] == texts[i]:
        i -= 1
    return starts[i]


def _order(widths: dict[str, int]) -> tuple[int, ...]:
    """Smaller for the widths preferred among equally short layouts (values widest, then ``GROW``)."""
    return tuple(-widths[k] for k in GROW if k in widths)


def _spend(
    widths: dict[str, int], left: int, f: Fit, others: list[str], lines_at: Callable[[str, int], list[int]]
) -> None:
    """Give what no column needs for fewer lines to the columns in ``GROW`` order, no cell taking more lines."""
    for key in GROW:
        if left <= 0:
            return
        if key not in widths or key == "values":
            continue
        w = widths[key]
        most = min(f.natural[key], w + left)
        if key in others:
            now = lines_at(key, w)
            while most > w and any(h > n for h, n in zip(lines_at(key, most), now)):
                most -= 1
        elif key in FOLDING:
            most = w  # a folding column not in ``others`` is at its natural width already
        left -= most - w
        widths[key] = most
