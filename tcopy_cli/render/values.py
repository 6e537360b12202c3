"""Tensor values for a table cell of a given width: a line, an aligned grid, or a summary.

Everything comes from the record: the listed values of a small tensor, or the preview
of a large one (its first values and the statistics measured on the whole tensor).
"""

from __future__ import annotations

import math
import re
from typing import Any

from tcopy_cli.render.memo import Memo
from tcopy_cli.trace.records import ArrayRecord, TensorRecord
from tcopy_cli.trace.values import format_number

MAX_GRID_LINES = 8
MAX_WRAPPED_LINES = 3
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


def statistics(values: Any) -> str | None:
    """``min … max … mean …`` of listed real values (None for other kinds)."""
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
    is_int = all(isinstance(x, int) for x in flat)
    if any(math.isnan(x) for x in numbers):
        return "contains nan"
    mean = sum(numbers) / len(numbers)

    def fmt(x: float) -> str:
        return str(int(x)) if is_int and x.is_integer() else format_number(float(x))

    return f"min {fmt(min(numbers))} max {fmt(max(numbers))} mean {format_number(mean)}"


def preview_statistics(preview: str) -> str:
    """The statistics of a large tensor's preview ``[1., 2., …] min … max … mean …`` ('' if none)."""
    return preview.partition("…] ")[2]


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
        return min(MAX_NATURAL, len(preview_statistics(r.preview)))  # the summary; the first values if room
    return min(MAX_NATURAL, len(r.preview))


_LINES: Memo[tuple[list[str], bool]] = Memo()
_STATISTICS: Memo[str | None] = Memo()  # of a values list, which is the same at every width


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
    if len(one_line) <= width:
        return [one_line], False
    if r.values is None:  # too large to list: the preview has the statistics of the whole tensor
        summary: str | None = preview_statistics(r.preview) or None
    elif len(r.shape) < 2 and -(-len(one_line) // max(width, 1)) <= MAX_WRAPPED_LINES:
        return [one_line], True
    else:
        summary = _STATISTICS.get(id(r.values), statistics, r.values, owner=r.values)
    if summary is None:
        return [one_line], True
    if len(summary) <= width:
        return [summary], False
    # One statistic a line, each kept whole.
    return [part.strip() for part in re.split(r" (?=max |mean |\(of )", summary)], True
