"""Tensor values for a table cell of a given width: a line, an aligned grid, or a summary.

Everything comes from the record: the listed values of a small tensor, or the preview
of a large one (its first values and the statistics measured on the whole tensor).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from tcopy_cli.render.memo import Memo
from tcopy_cli.trace.records import ArrayRecord, TensorRecord
from tcopy_cli.trace.values import format_number

MAX_GRID_LINES = 8
MAX_WRAPPED_LINES = 2
MAX_NATURAL = 56  # the most columns the values ask for before others get theirs


def _flat(v: Any) -> list[Any]:
    if isinstance(v, list):
        return [x for item in v for x in _flat(item)]
    return [v]


def grid(values: list[Any]) -> list[str]:
    """A nested list, one innermost row per line with its columns aligned, bracketed as torch prints it.

    ``[[1., 10.], [2., 3.]]`` becomes ``[[ 1., 10.],`` over `` [ 2.,  3.]]``.
    """
    width = max((len(format_number(x)) for x in _flat(values)), default=0)

    def block(v: list[Any]) -> list[str]:
        if not v or not isinstance(v[0], list):
            return ["[" + ", ".join(format_number(x).rjust(width) for x in v) + "]"]
        lines: list[str] = []
        for i, item in enumerate(v):
            sub = block(item)
            if i < len(v) - 1:
                sub[-1] += ","
            lines.extend(sub)
        out = ["[" + lines[0]] + [" " + line for line in lines[1:]]
        out[-1] += "]"
        return out

    return block(values)


BARS = " ▁▂▃▄▅▆▇█"
BINS = 8
MIN_BARS = 16
"""Listed values get a histogram from this many on."""


@dataclass(frozen=True)
class Stats:
    """What the one-line summary of a tensor says: its range, mean, spread and a histogram."""

    low: float
    high: float
    mean: float
    std: float | None = None
    bars: str = ""
    """Eight bars, one per equal slice of [low, high], as high as the values in it ('' for none)."""
    integer: bool = False
    sampled: int = 0
    """Measured on this many sampled values (0: on all of them)."""

    def forms(self) -> list[list[str]]:
        """The summary from the most it says to the least, each as its lines: one line
        (``[-2.61 ▁▂▄▆█▆▃▁ 3.93] μ=0.004 σ=0.97``, then without the bars, without σ, the range
        alone), then the same over two lines. Never more than two."""
        lo, hi = self.number(self.low, 3), self.number(self.high, 3)
        mu = f"μ={self.number(self.mean, 2)}"
        sigma = f" σ={self.number(self.std, 2)}" if self.std is not None else ""
        tail = " (sampled)" if self.sampled else ""
        ranged = f"[{lo} {self.bars} {hi}]" if self.bars else f"[{lo}, {hi}]"
        plain = f"[{lo}, {hi}]"
        return [
            [f"{ranged} {mu}{sigma}{tail}"],
            [f"{ranged} {mu}{sigma}"],
            [f"{plain} {mu}{sigma}"],
            [f"{plain} {mu}"],
            [ranged, f"{mu}{sigma}"],
            [plain, f"{mu}{sigma}"],
            [plain, mu],
            [plain],
        ]

    def number(self, x: float | None, digits: int) -> str:
        """``x`` in ``digits`` significant digits, short (``0.004``, ``-2.61``, ``1234``, ``3.5e-05``)."""
        if x is None:
            return "?"
        if not math.isfinite(x):
            return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
        if self.integer and float(x).is_integer():
            return str(int(x))
        if x == 0:
            return "0"
        magnitude = math.floor(math.log10(abs(x)))
        if -3 <= magnitude < 5:
            text = f"{x:.{max(0, digits - 1 - magnitude)}f}"
            return text.rstrip("0").rstrip(".") if "." in text else text
        return f"{x:.{digits - 1}e}".replace("e-0", "e-").replace("e+0", "e+")

    def norm(self, count: int) -> float | None:
        """The 2-norm of ``count`` values with this mean and spread (None without σ)."""
        if self.std is None or count < 1:
            return None
        return math.sqrt(max(0.0, (count - 1) * self.std * self.std + count * self.mean * self.mean))


_STATS = re.compile(
    r"min (\S+) max (\S+) mean (\S+)(?: std (\S+))?(?: hist ([ ▁▂▃▄▅▆▇█]{8}))?(?: \(of ([\d,]+) sampled values\))?$"
)


def preview_stats(preview: str, dtype: str = "") -> Stats | None:
    """The statistics in a large tensor's preview (``[1., 2., …] min … max … mean … std … hist …``)."""
    m = _STATS.search(preview_statistics(preview))
    if m is None:
        return None
    try:
        low, high, mean = float(m[1]), float(m[2]), float(m[3])
        std = float(m[4]) if m[4] is not None else None
    except ValueError:
        return None
    integer = dtype.startswith(("int", "uint")) or (not dtype and "." not in m[1] + m[2] and "e" not in m[1] + m[2])
    return Stats(low, high, mean, std, m[5] or "", integer, int(m[6].replace(",", "")) if m[6] else 0)


def bars_of(numbers: list[float], low: float, high: float) -> str:
    """Eight bars for ``numbers`` over [low, high] (the ends at least the lowest bar: they hold low and high)."""
    if not numbers or not high > low:
        return ""
    counts = [0] * BINS
    scale = BINS / (high - low)
    for x in numbers:
        counts[min(BINS - 1, max(0, int((x - low) * scale)))] += 1
    top = max(counts)
    levels = [math.ceil(c / top * 8) for c in counts]
    levels[0], levels[-1] = max(levels[0], 1), max(levels[-1], 1)
    return "".join(BARS[v] for v in levels)


def values_stats(values: Any) -> Stats | str | None:
    """The statistics of listed real values; a sentence for booleans and NaN (None for other kinds)."""
    flat = _flat(values)
    if not flat:
        return None
    if all(isinstance(x, bool) for x in flat):
        return f"{sum(flat):,} True of {len(flat):,}"
    numbers: list[float] = []
    for x in flat:
        if isinstance(x, bool) or not isinstance(x, (int, float, str)):
            return None
        try:
            numbers.append(float(x))  # 'nan', 'inf' and '-inf' arrive as strings
        except ValueError:
            return None
    if any(math.isnan(x) for x in numbers):
        return "contains nan"
    n = len(numbers)
    mean = sum(numbers) / n
    finite = all(map(math.isfinite, numbers))
    std = math.sqrt(sum((x - mean) ** 2 for x in numbers) / (n - 1)) if n > 1 and finite else None
    low, high = min(numbers), max(numbers)
    integer = all(isinstance(x, int) for x in flat)
    few = n < MIN_BARS  # a histogram of a handful of values says nothing their range doesn't
    bars = bars_of(numbers, low, high) if math.isfinite(low) and math.isfinite(high) and not few else ""
    return Stats(low, high, mean, std, bars, integer)


def preview_statistics(preview: str) -> str:
    """The statistics of a large tensor's preview ``[1., 2., …] min … max … mean …`` ('' if none)."""
    return preview.partition("…] ")[2]


def record_stats(r: TensorRecord | ArrayRecord) -> Stats | str | None:
    """What a record's one-line summary says: from the preview of a large tensor (measured on its
    device), from the listed values of a small one (a sentence for booleans, NaN or the like)."""
    if r.values is None:
        found = preview_stats(r.preview, r.dtype)
        return found if found is not None else (preview_statistics(r.preview) or None)
    return _STATISTICS.get(id(r.values), values_stats, r.values, owner=r.values)


def summary_line(r: TensorRecord | ArrayRecord) -> str:
    """The one-line summary of a record (its preview where there is none)."""
    stats = record_stats(r)
    if isinstance(stats, Stats):
        return stats.forms()[0][0]
    return stats or r.preview


def tensor_norm(r: TensorRecord) -> float | None:
    """The 2-norm of a tensor: from its listed values, or from a large tensor's measured mean and spread."""
    values = r.values
    if values is not None:
        flat = _flat(values)
        total = 0.0
        for x in flat:
            if isinstance(x, bool) or not isinstance(x, (int, float)):
                if x in ("nan", "inf", "-inf"):
                    return float(x) if x == "nan" else math.inf
                return None
            total += x * x
        return math.sqrt(total)
    stats = preview_stats(r.preview, r.dtype)
    return stats.norm(math.prod(r.shape)) if stats is not None else None


_GRIDS: Memo[list[str]] = Memo()


def _grid_of(r: TensorRecord | ArrayRecord) -> list[str]:
    """``grid(r.values)``, remembered for real tensors by preview and shape.

    The preview is the same numbers formatted the same way and nested the same way, so
    for real dtypes it determines the grid. (Complex values are listed as text in
    ``values`` but formatted in the preview, and NumPy arrays may hold records.)
    """
    if not isinstance(r, TensorRecord) or r.dtype.startswith("complex"):
        return grid(r.values)
    return _GRIDS.get((r.preview, tuple(r.shape)), grid, r.values)


def natural_width(r: TensorRecord | ArrayRecord) -> int:
    """Columns the values would like: a whole line, or the width of the grid."""
    if r.values is not None and isinstance(r.values, list) and len(r.shape) >= 2:
        lines = _grid_of(r)
        if len(lines) <= MAX_GRID_LINES:
            return min(MAX_NATURAL, max(len(line) for line in lines))
    if r.values is None and preview_statistics(r.preview):
        return min(MAX_NATURAL, len(summary_line(r)))  # the summary
    return min(MAX_NATURAL, len(r.preview))


_LINES: Memo[tuple[list[str], bool]] = Memo()
_STATISTICS: Memo[Stats | str | None] = Memo()  # of a values list, which is the same at every width


def values_key(r: TensorRecord | ArrayRecord) -> tuple[Any, ...]:
    """What a record's drawn values are made of (its ``values`` object by identity): the key
    under which their lines are remembered, here and by the layout."""
    return (type(r), id(r.values), r.preview, tuple(r.shape), r.dtype)


def value_lines(r: TensorRecord | ArrayRecord, width: int, remember: bool = True) -> tuple[list[str], bool]:
    """(lines, may wrap) for the values of ``r`` in ``width`` columns.

    Remembered for the same ``values`` object (a tensor that did not change keeps its
    record, or at least its values list, from step to step), preview, shape and width;
    ``remember=False`` works them out without keeping them (the layout tries many widths).
    """
    if not remember:
        return _value_lines(r, width)
    key = (*values_key(r), width)
    return _LINES.get(key, _value_lines, r, width, owner=r.values)


def _value_lines(r: TensorRecord | ArrayRecord, width: int) -> tuple[list[str], bool]:
    """``value_lines``, worked out.

    A line that fits is shown as it is; a matrix whose aligned grid fits is drawn as the
    grid; a list that would take more than a few lines, and any large tensor, become a
    one-line summary (the statistics, with the first values when they fit too).
    """
    one_line = r.preview
    if isinstance(r.values, list) and len(r.shape) >= 2:
        lines = _grid_of(r)
        if len(lines) <= MAX_GRID_LINES and max(len(line) for line in lines) <= width:
            return lines, False
    if len(one_line) <= width and (r.values is not None or not preview_statistics(one_line)):
        return [one_line], False
    one_row = len(r.shape) < 2 or all(d == 1 for d in r.shape[:-1])  # a list, or a matrix of one row
    if r.values is not None and one_row and -(-len(one_line) // max(width, 1)) <= MAX_WRAPPED_LINES:
        return [one_line], True
    stats = record_stats(r)
    if not isinstance(stats, Stats):
        summary = stats or one_line
        return [summary], len(summary) > width
    forms = stats.forms()
    for lines in forms:
        if max(map(len, lines)) <= width:
            return list(lines), False
    return list(forms[-1]), True


def value_form(r: TensorRecord | ArrayRecord, width: int) -> tuple[str, int] | None:
    """How the values of ``r`` are drawn ``width`` wide: ``("grid", 0)``, ``("line", 0)`` or
    ``("stats", i)`` (the i-th of ``Stats.forms``); None for a line that wraps or a sentence."""
    lines, wraps = value_lines(r, width)
    if wraps:
        return None
    if isinstance(r.values, list) and len(r.shape) >= 2 and lines == _grid_of(r):
        return ("grid", 0)
    if lines == [r.preview]:
        return ("line", 0)
    stats = record_stats(r)
    forms = stats.forms() if isinstance(stats, Stats) else []
    return ("stats", forms.index(lines)) if lines in forms else None


def form_width(r: TensorRecord | ArrayRecord, form: tuple[str, int]) -> int | None:
    """The width in which the values of ``r`` are drawn in ``form`` or a form that says more
    (None: ``r`` has no such form, a grid now too tall, say)."""
    kind, i = form
    if kind == "grid" and isinstance(r.values, list) and len(r.shape) >= 2:
        lines = _grid_of(r)
        return max(map(len, lines)) if len(lines) <= MAX_GRID_LINES else None
    if kind == "line":
        return len(r.preview) if r.values is not None or not preview_statistics(r.preview) else None
    stats = record_stats(r) if kind == "stats" else None
    return max(map(len, stats.forms()[i])) if isinstance(stats, Stats) else None


def one_line_width(r: TensorRecord | ArrayRecord) -> int:
    """The narrowest width in which the values of ``r`` are drawn on one line (their preview,
    or the shortest one-line summary)."""
    stats = record_stats(r)
    if isinstance(stats, Stats):
        return min(len(r.preview), *(len(lines[0]) for lines in stats.forms() if len(lines) == 1))
    return len(stats or r.preview)
