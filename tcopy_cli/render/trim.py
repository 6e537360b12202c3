"""A wrapper that drops the spaces Rich pads lines with, so piped output has no trailing blanks."""

from __future__ import annotations

import re
from itertools import pairwise

from rich.cells import cell_len, get_character_cell_size, set_cell_size
from rich.console import Console, ConsoleOptions, Group, JustifyMethod, OverflowMethod, RenderableType, RenderResult
from rich.containers import Lines
from rich.padding import Padding
from rich.rule import Rule
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

from tcopy_cli.render.memo import Memo

try:  # Rich's own word breaks (a private module: without it, text goes through Text.wrap)
    from rich._wrap import divide_line
except ImportError:  # pragma: no cover - every Rich tcopy allows has it
    divide_line = None  # type: ignore[assignment]


class Trimmed:
    """Render ``inner`` line by line without trailing whitespace (styles and colours kept)."""

    def __init__(self, inner: RenderableType) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from tcopy_cli.render.grid import StepGrid

        # A group line by line, part by part (each part ends its last line), so that a step
        # table that has its lines ready skips Rich's splitting and cropping. The segments
        # come as one list (a step has hundreds; a generator would hand them over one by one).
        parts = self.inner.renderables if isinstance(self.inner, Group) else [self.inner]
        new_line = Segment.line()
        out: list[Segment] = []
        for part in parts:
            if isinstance(part, StepGrid):
                lines = part.segment_lines(console, options, trim=True)
                if lines is not None:  # trimmed already
                    for line in lines:
                        out += line
                        out.append(new_line)
                    continue
            elif isinstance(part, Rule) and options.max_width >= 1:
                lines = rule_lines(part, console, options)
            else:
                lines = text_lines(part, console, options)
            if lines is None:
                lines = console.render_lines(part, options, pad=False, new_lines=False)
            for line in lines:
                out += trim_line(line)
                out.append(new_line)
        return out


def trim_line(line: list[Segment]) -> list[Segment]:
    """The segments of one line with trailing spaces removed."""
    segments = list(line)
    while segments:
        last = segments[-1]
        if last.control:
            break
        text = last.text.rstrip(" ")
        if text:
            segments[-1] = Segment(text, last.style, last.control)
            break
        segments.pop()
    return segments


_PLAIN_LINES: Memo[list[str] | None] = Memo()
_BREAKS = re.compile("[\n\t]")
_TRAILING = re.compile(r"\s+$")
_WORD = re.compile(r"\s*\S+\s*")


def _fits(plain: str, width: int) -> bool:
    """Whether ``plain`` is one line of at most ``width`` cells (which ``Text.wrap`` leaves as it is)."""
    return len(plain) <= width and not _BREAKS.search(plain) and (_narrow(plain) or cell_len(plain) <= width)


_NARROW_CHARS: set[str] = set()  # characters seen to take one cell
_NARROW_KEPT = 4096


def _narrow(text: str) -> bool:
    """Whether every character of ``text`` takes one cell, so that the cells of any part are its length."""
    if text.isascii():
        return text.isprintable()
    unknown = set(text).difference(_NARROW_CHARS)
    if all(get_character_cell_size(c) == 1 for c in unknown):
        if len(_NARROW_CHARS) < _NARROW_KEPT:  # bounded: a script's text could hold any character
            _NARROW_CHARS.update(unknown)
        return True
    return False


def _divide_narrow(text: str, width: int, fold: bool = True) -> list[int]:
    """Rich's ``divide_line`` for text of one cell a character (``_narrow``): lengths are cells."""
    breaks: list[int] = []
    offset = 0
    for word_match in _WORD.finditer(text):
        start, word = word_match.start(), word_match.group()
        word_length = len(word.rstrip())
        if width - offset >= word_length:
            offset += len(word)
        elif word_length > width:
            if fold:  # the word in pieces of the width, each on its own line
                pieces = [word[i : i + width] for i in range(0, len(word), width)]
                for piece in pieces[:-1]:
                    if start:
                        breaks.append(start)
                    start += len(piece)
                if start:
                    breaks.append(start)
                offset = len(pieces[-1])
            else:
                if start:
                    breaks.append(start)
                offset = len(word)
        elif offset and start:
            breaks.append(start)
            offset = len(word)
    return breaks


def _wrap_line(plain: str, width: int, justify: JustifyMethod, overflow: OverflowMethod, no_wrap: bool) -> list[str]:
    """What ``Text.wrap`` gives for one line without tabs, justified "default" or "left", as strings.

    The same steps on the string: Rich's own word breaks (``divide_line``), then each piece
    as ``Text.rstrip_end``, ``Lines.justify`` and ``Text.truncate`` leave it.
    """
    narrow = width > 0 and _narrow(plain)
    measure = len if narrow else cell_len
    if no_wrap:
        bounds = [0, len(plain)]
    else:
        breaks = (_divide_narrow if narrow else divide_line)(plain, width, fold=overflow == "fold")
        bounds = [0, *breaks, len(plain)]
    out: list[str] = []
    for start, end in pairwise(bounds):
        line = plain[start:end]
        if len(line) > width and not no_wrap:  # trailing whitespace beyond the width goes
            spaces = _TRAILING.search(line)
            if spaces is not None:
                line = line[: len(line) - min(len(spaces.group(0)), len(line) - width)]
        cells = measure(line)
        if cells > width:
            line = set_cell_size(line, width - 1) + "…" if overflow == "ellipsis" else set_cell_size(line, width)
        elif justify == "left" and cells < width:
            line += " " * (width - cells)
        out.append(line)
    return out


def line_count(plain: str, width: int, overflow: OverflowMethod, no_wrap: bool) -> int | None:
    """How many lines ``plain_lines`` gives for unstyled text justified "left", without making them.

    None where the lines are not worked out on the string (tabs, characters wider than a cell).
    """
    lines = plain.split("\n")
    if width <= 0 or overflow == "ignore" or not all(_narrow(line) for line in lines):
        return None
    if no_wrap:
        return len(lines)
    fold = overflow == "fold"
    return sum(1 if len(line) <= width else len(_divide_narrow(line, width, fold)) + 1 for line in lines)


def plain_lines(
    console: Console,
    text: Text,
    width: int,
    justify: JustifyMethod,
    overflow: OverflowMethod,
    tab_size: int,
    no_wrap: bool,
) -> list[str] | None:
    """The plain lines of ``text.wrap(...)`` with these arguments; None if some line has spans (not one style).

    Text without tabs is worked out on the string, line by line (``_wrap_line``); other
    text without spans of its own has lines that depend only on the key, so they are remembered.
    """
    if text.spans:
        return None
    plain = text.plain
    breakable = divide_line is not None or (width > 0 and _narrow(plain))
    if justify in ("default", "left") and overflow != "ignore" and breakable:
        if _fits(plain, width):
            return [plain if justify == "default" else plain + " " * (width - cell_len(plain))]
        if "\t" not in plain:
            lines = plain.split("\n")  # as Text.split gives them
            return [piece for line in lines for piece in _wrap_line(line, width, justify, overflow, no_wrap)]

    def wrap() -> list[str] | None:
        lines = text.wrap(console, width, justify=justify, overflow=overflow, tab_size=tab_size, no_wrap=no_wrap)
        return None if any(line.spans for line in lines) else [line.plain for line in lines]

    return _PLAIN_LINES.get((plain, text.style, width, justify, overflow, tab_size, no_wrap), wrap)


def rule_lines(rule: Rule, console: Console, options: ConsoleOptions) -> list[list[Segment]] | None:
    """The lines of a rule (the line that opens a step): Rich's rule draws one ``Text``, whose lines these are."""
    drawn = list(rule.__rich_console__(console, options))
    return text_lines(drawn[0], console, options) if len(drawn) == 1 and isinstance(drawn[0], Text) else None


def text_lines(part: RenderableType, console: Console, options: ConsoleOptions) -> list[list[Segment]] | None:
    """The lines of a ``Text``, or of a ``Text`` padded on the left only, as Rich draws them; None for anything else.

    A step's notes, warnings and printed lines are such parts. Rich would wrap the text,
    join the lines, render them and split them again, cropping and padding each (through
    ``Padding`` twice); here the split lines are used as they are. Where a line would need
    cropping (text that must not wrap), Rich draws the part instead.
    """
    left = 0
    text = part
    if isinstance(part, Padding):
        if (part.top, part.right, part.bottom) != (0, 0, 0) or not part.expand or part.style != "none":
            return None
        left, text = part.left, part.renderable
    if type(text) is not Text or options.height is not None or text.no_wrap or options.no_wrap:
        return None
    overflow = text.overflow or options.overflow or "fold"
    if overflow == "ignore":
        return None
    width = options.max_width - left
    tab_size = console.tab_size if text.tab_size is None else text.tab_size
    justify = text.justify or options.justify or "default"
    margin = [Segment(" " * left, console.get_style("none"))] if left else []  # Padding's own style
    out: list[list[Segment]] = []
    plains = plain_lines(console, text, width, justify, overflow, tab_size or 8, no_wrap=False)
    if plains is not None:
        # One style throughout (a note, a warning): each line is one segment, as Rich's
        # render of the joined lines gives it (unstyled text has no style at all).
        style = console.get_style(text.style, default=Style.null()) if str(text.style) else None
        measure = len if _narrow(text.plain) else cell_len  # wrapping adds only spaces and '…' (one cell)
        for plain in plains:
            if measure(plain) > width:
                return None
            out.append([*margin, Segment(plain, style)] if plain else list(margin))
        return out
    if justify == "default" and _fits(text.plain, width):  # one line (the rule that opens a step)
        wrapped = Lines([text])
    else:
        wrapped = text.wrap(console, width, justify=justify, overflow=overflow, tab_size=tab_size or 8)
    for line in Segment.split_lines(Text("\n").join(wrapped).render(console, end=text.end)):
        if sum(cell_len(s.text) for s in line) > width:
            return None
        out.append(margin + line)
    return out
