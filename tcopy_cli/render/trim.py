"""A wrapper that drops the spaces Rich pads lines with, so piped output has no trailing blanks."""

from __future__ import annotations

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.segment import Segment


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
            lines = part.segment_lines(console, options) if isinstance(part, StepGrid) else None
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
