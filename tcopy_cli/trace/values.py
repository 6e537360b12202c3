"""Formatting of tensor values as JSON and text (no torch needed)."""

from __future__ import annotations

import math
import re
from typing import Any


def json_number(x: Any) -> Any:
    """A JSON-safe scalar: non-finite floats as strings, complex as text."""
    if isinstance(x, bool) or x is None:
        return x
    if isinstance(x, float):
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return x
    if isinstance(x, complex):
        return str(x)
    if isinstance(x, (int, str)):
        return x
    # NumPy items JSON has no type for: bytes ('S', 'V'), datetimes and durations ('M', 'm').
    return str(x)


def json_values(v: Any) -> Any:
    """Apply json_number through nested lists (and the tuples of structured arrays)."""
    if type(v) is list and v:
        first = type(v[0])
        # A row of finite floats or of ints is JSON already (the common case, at C speed).
        if first is float and all(type(x) is float for x in v) and all(map(math.isfinite, v)):
            return v
        if first is int and all(type(x) is int for x in v):
            return v
    if isinstance(v, (list, tuple)):
        return [json_values(x) for x in v]
    return json_number(v)


def format_number(x: Any) -> str:
    """Compact rendering of one value, in the spirit of torch's printing."""
    if type(x) is float and math.isfinite(x):
        text = format(x, ".4g")
        if "." not in text and "e" not in text and "n" not in text:
            text += "."
        return text
    if isinstance(x, bool):
        return "True" if x else "False"
    if isinstance(x, float):
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        text = format(x, ".4g")
        if not any(c in text for c in ".en"):
            text += "."
        return text
    if isinstance(x, complex):
        return f"{format_number(x.real)}{'+' if x.imag >= 0 else '-'}{format_number(abs(x.imag))}j"
    return str(x)


def format_nested(v: Any) -> str:
    """``[[1., 2.], [3., 4.]]`` for nested lists of numbers."""
    if isinstance(v, list):
        if v and type(v[0]) is not list:
            return "[" + ", ".join(map(format_nested, v)) + "]"
        return "[" + ", ".join(format_nested(x) for x in v) + "]"
    return format_number(v)


def longest_backticks(text: str) -> int:
    """The length of the longest run of backticks in ``text`` (0 for none)."""
    return max((len(run) for run in re.findall(r"`+", text)), default=0)


_CLOSING = re.compile(r"[)\]}]+,?")


def one_line(source: str) -> str | None:
    """A statement or call in one line: itself; one written over several lines whose last line only
    closes it, its first line and its last with ``…`` for what lies between
    (``return nn.Sequential(…)``); else None."""
    if "\n" not in source:
        return source
    lines = source.split("\n")
    first, last = lines[0].rstrip(), lines[-1].strip()
    if first.endswith(("(", "[", "{")) and _CLOSING.fullmatch(last):
        return f"{first}…{last}"
    return None


def code_span(text: str) -> str:
    """``text`` quoted as code in a note: between backticks, more of them than its longest run of
    backticks (``d["x`y"]`` gets two), padded with a space where it starts or ends with a backtick
    or a space; so the Markdown view reads it as one code span, whatever the script wrote."""
    fence = "`" * (longest_backticks(text) + 1)
    pad = " " if text[:1] in ("`", " ") or text[-1:] in ("`", " ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
