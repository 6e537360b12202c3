"""One escaping for everything tcopy prints: text a script or the worker made, shown as escapes.

What a script prints, raises, names or writes in its source, and anything the worker sends
(a script running there can write any frame), reaches the table and Markdown views, the
header, the SVG/HTML/cast exports and stderr as text. A control character in it would act on
the terminal: ``ESC [2J`` clears the screen, an OSC sequence (``ESC ]0;...BEL``) retitles the
window, writes the clipboard (OSC 52) or hides a link (OSC 8), an 8-bit CSI (U+009B) does
what ``ESC [`` does, a carriage return overwrites a line, and a bidirectional control
(U+202E ...) shows what follows it in another order than it runs.

``printable`` shows each such character as an escape, the way Python's ``repr`` does:
C0 controls but tab and newline, DEL and the C1 controls as ``\\xNN``; the bidirectional
controls (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069), the line and paragraph
separators (U+2028, U+2029) and lone surrogates as ``\\uNNNN``. Nothing else changes, and
text without them comes back as the same object. ``printable_record`` applies it to every
string in a record (a dataclass, and the lists, tuples, sets and dicts in it, keys
included), whatever its fields: the command line hands every view but JSON Lines records
made so, and prints every message through ``printable``. JSON Lines keeps the exact text:
its encoder escapes what JSON must, and ``render.jsonl`` escapes these characters as
``\\uNNNN`` too (the same text to a JSON reader).
"""

from __future__ import annotations

import copy
import dataclasses
import re
from typing import Any, TypeVar

UNPRINTABLE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
"""The characters ``printable`` escapes."""


def _escaped(m: re.Match[str]) -> str:
    code = ord(m[0])
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with each character of ``UNPRINTABLE`` as an escape (itself when it has none)."""
    if UNPRINTABLE.search(text) is None:
        return text
    return UNPRINTABLE.sub(_escaped, text)


T = TypeVar("T")
_SCALARS = (type(None), bool, int, float, complex)


def printable_record(obj: T) -> T:
    """``obj`` with every string in it made ``printable`` (the same object where none changes).

    Walks dataclass instances field by field (not a list of fields: a field added to a record
    is covered without changes here), and lists, tuples, sets, frozensets and dicts (keys
    too); anything else is kept as it is.
    """
    result: T = _walk(obj, 0)
    return result


_MAX_DEPTH = 400
"""Records from the wire nest less deeply (decoders.MAX_VALUE_DEPTH); deeper is left as it is."""


def _walk(v: Any, depth: int) -> Any:
    t = type(v)
    if t is str:
        return printable(v)
    if t in _SCALARS or depth > _MAX_DEPTH:
        return v
    if t is list or t is tuple or t is set or t is frozenset:
        items = [_walk(x, depth + 1) for x in v]
        if all(a is b for a, b in zip(items, v)):
            return v
        return items if t is list else t(items)
    if t is dict:
        pairs = [(_walk(k, depth + 1), _walk(x, depth + 1)) for k, x in v.items()]
        if all(k is a and x is b for (k, x), (a, b) in zip(pairs, v.items())):
            return v
        return dict(pairs)
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        changed = {}
        for f in dataclasses.fields(v):
            old = getattr(v, f.name)
            new = _walk(old, depth + 1)
            if new is not old:
                changed[f.name] = new
        if not changed:
            return v
        out = copy.copy(v)
        for name, value in changed.items():
            object.__setattr__(out, name, value)  # frozen records too: a fresh copy, not the original
        return out
    return v


__all__ = ["UNPRINTABLE", "printable", "printable_record"]
