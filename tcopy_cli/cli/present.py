"""Presenting a run in a terminal: consoles, pause and delay, export, the closing line."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from rich.console import Console
from rich.text import Text

from tcopy_cli.cli.app import EXIT_SCRIPT, fail, say, stderr
from tcopy_cli.cli.formats import OutputFormat
from tcopy_cli.errors import ScriptRejected, UsageError

if TYPE_CHECKING:
    from tcopy_cli.render import Renderer
    from tcopy_cli.trace.records import RunSummary, Step

EXPORT_SUFFIXES = (".svg", ".html", ".htm", ".txt")


def make_console(no_color: bool, width: Optional[int], record: bool = False) -> Console:
    """The stdout console for tables (``record`` keeps what it printed, for export)."""
    return Console(
        file=sys.stdout,
        no_color=no_color or bool(os.environ.get("NO_COLOR")) or None,
        width=width,
        highlight=False,
        soft_wrap=False,
        record=record,
    )


def export(console: Console, path: Path, title: str, clear: bool = True) -> None:
    """Save what ``console`` recorded as SVG, HTML or text, by file type; UsageError if it can't."""
    suffix = path.suffix.lower()
    try:
        if suffix == ".svg":
            console.save_svg(str(path), title=title, clear=clear)
        elif suffix in (".html", ".htm"):
            console.save_html(str(path), clear=clear)
        else:
            console.save_text(str(path), clear=clear)
    except OSError as exc:
        raise UsageError(f"can't write '{path}': {exc.strerror or exc}") from None


def show_rejection(exc: ScriptRejected, source: str) -> None:
    """The refusal on stderr, with the refused line and a caret under the column."""
    err = stderr()
    where = f"line {exc.line}, column {exc.column}" if exc.line else "the script"
    err.print(
        Text("tcopy: ", style="bold red") + Text(f"script refused at {where}: ") + Text(exc.message, style="bold")
    )
    if exc.line:
        lines = source.replace("\r\n", "\n").split("\n")
        if 0 < exc.line <= len(lines):
            text = lines[exc.line - 1].expandtabs(4)
            gutter = f"{exc.line:>4} | "
            err.print(Text(gutter, style="dim") + Text(text))
            caret = " " * (len(gutter) - 2) + "| " + " " * max((exc.column or 1) - 1, 0) + "^"
            err.print(Text(caret, style="bold red"))


class Quit(Exception):
    """The presenter pressed q."""


def _read_key() -> str:
    """One key press from the terminal, without echo."""
    import termios
    import tty

    fd = sys.stdin.fileno()
    old = termios.tcgetattr(fd)
    try:
        tty.setcbreak(fd)
        return sys.stdin.read(1)
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, old)


class Presenter:
    """Owns how a run meets the person watching: pause or delay after each shown step,
    export of the recorded view, and the closing line on stderr."""

    def __init__(
        self,
        console: Console,
        fmt: OutputFormat,
        pause: bool = False,
        delay: float = 0.0,
        export_to: Optional[Path] = None,
        title: Optional[str] = None,
    ) -> None:
        if export_to is not None and export_to.suffix.lower() not in EXPORT_SUFFIXES:
            raise UsageError(f"--export needs a .svg, .html or .txt file name, not '{export_to.name}'")
        self.console = console
        self.fmt = fmt
        self.pause = pause
        self.delay = delay
        self.export_to = export_to
        self.title = title
        self.interactive = False
        self.errors: list[Step] = []

    def begin(self) -> None:
        """Decide whether --pause can wait for keys (it needs a terminal and tables)."""
        self.interactive = self.pause and self.fmt is OutputFormat.table and sys.stdin.isatty() and sys.stdout.isatty()
        if self.pause and not self.interactive:
            say("--pause needs a terminal (and --format table); running without pausing")

    def step(self, renderer: Renderer, step: Step, shown: bool, lines: list[str]) -> None:
        """Render a step, then wait (--pause) or sleep (--delay) if it was shown."""
        shown = shown or self.fmt is OutputFormat.json
        renderer.step(step, shown)
        if step.error is not None:
            self.errors.append(step)
        if shown and self.fmt is not OutputFormat.json:
            if self.interactive:
                self._wait_for_key(lines, step.line)
            elif self.delay:
                time.sleep(self.delay)

    def _wait_for_key(self, lines: list[str], upto: int) -> None:
        """--pause: Enter/Space next, b shows the script so far, q quits."""
        from rich.syntax import Syntax

        console = self.console
        while True:
            console.print(Text("── Enter/Space: next · b: script so far · q: quit", style="dim"), end="")
            console.file.flush()
            key = _read_key()
            console.print()
            if key in ("\n", "\r", " ", ""):
                return
            if key in ("q", "Q", "\x1b"):
                raise Quit()
            if key in ("b", "B"):
                console.print(
                    Syntax(
                        "\n".join(lines[:upto]),
                        "python",
                        theme="ansi_dark",
                        background_color="default",
                        line_numbers=True,
                    )
                )

    def finish(self, summary: RunSummary, title: str) -> None:
        """Export if asked, then the closing line: exit 1 after error steps."""
        if self.export_to is not None:
            export(self.console, self.export_to, self.title or title)  # UsageError: exit 2
            say(f"wrote {self.export_to}")
        if summary.stopped_by == "quit":
            say(f"stopped after step {summary.steps} (q)")
            return
        if summary.errors:
            first = self.errors[0]
            assert first.error is not None
            more = f" ({summary.errors} error steps)" if summary.errors > 1 else ""
            fail(f"line {first.line}: {first.error.headline}{more}", EXIT_SCRIPT)
