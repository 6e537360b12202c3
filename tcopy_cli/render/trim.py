"""A wrapper that drops the spaces Rich pads lines with, so piped output has no trailing blanks."""

from __future__ import annotations

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.segment import Segment


class Trimmed:
    """Render ``inner`` line by line without trailing whitespace (styles and colours kept)."""

    def __init__(self, inner: RenderableType) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in console.render_lines(self.inner, options, pad=False, new_lines=False):
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
