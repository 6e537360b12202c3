"""A wrapper that drops the spaces Rich pads lines with, so piped output has no trailing blanks."""

from __future__ import annotations

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style
from rich.text import Text


class Trimmed:
    """Render ``inner`` line by line without trailing whitespace (styles and colours kept)."""

    def __init__(self, inner: RenderableType) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from tcopy_cli.render.grid import StepGrid

        # A group line by line, part by part (each part ends its last line), so that a step
        # table that has its lines ready skips Rich's splitting and cropping.
        parts = self.inner.renderables if isinstance(self.inner, Group) else [self.inner]
        for part in parts:
            lines = (
                part.segment_lines(console, options)
                if isinstance(part, StepGrid)
                else text_lines(part, console, options)
            )
            if lines is None:
                lines = console.render_lines(part, options, pad=False, new_lines=False)
            for line in lines:
                yield from trim_line(line)
                yield Segment.line()


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
    wrapped = text.wrap(
        console, width, justify=text.justify or options.justify or "default", overflow=overflow, tab_size=tab_size or 8
    )
    margin = [Segment(" " * left, console.get_style("none"))] if left else []  # Padding's own style
    out: list[list[Segment]] = []
    styles = {str(line.style) for line in wrapped}
    if len(styles) == 1 and not any(line.spans for line in wrapped):
        # One style throughout (a note, a warning): each line is one segment, as Rich's
        # render of the joined lines gives it (unstyled text has no style at all).
        (name,) = styles
        style = console.get_style(wrapped[0].style, default=Style.null()) if name else None
        for wrapped_line in wrapped:
            plain = wrapped_line.plain
            if cell_len(plain) > width:
                return None
            out.append([*margin, Segment(plain, style)] if plain else list(margin))
        return out
    for line in Segment.split_lines(Text("\n").join(wrapped).render(console, end=text.end)):
        if sum(cell_len(s.text) for s in line) > width:
            return None
        out.append(margin + line)
    return out
