"""Presenting a run in a terminal: consoles, pause and delay, export, the closing line."""

from __future__ import annotations

import io
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from rich.cells import cell_len
from rich.console import Console
from rich.terminal_theme import TerminalTheme
from rich.text import Text

from tcopy_cli.cli.app import EXIT_SCRIPT, fail, say, stderr
from tcopy_cli.cli.formats import OutputFormat
from tcopy_cli.cli.keys import BACK, FIRST, KEYS, LAST, NEXT, QUIT, RESIZE, key_source, read_key
from tcopy_cli.errors import ScriptRejected, UsageError
from tcopy_cli.printable import printable

if TYPE_CHECKING:
    from tcopy_cli.render import Renderer
    from tcopy_cli.render.folding import Event
    from tcopy_cli.trace.records import RunSummary, Step

EXPORT_SUFFIXES = (".svg", ".html", ".htm", ".txt", ".cast")
EXPORT_WIDTH = 100
"""The least width of an export recorded with stdout not a terminal (so 3-element values don't wrap)."""


def make_console(no_color: bool, width: Optional[int], record: bool = False, color: str = "auto") -> Console:
    """The stdout console for tables (``record`` keeps what it printed, for export).

    ``color`` is --color: "always" forces colours even in a pipe, "never" is --no-color.
    """
    always = color == "always" and not no_color
    if record and width is None and not sys.stdout.isatty():
        width = max(EXPORT_WIDTH, shutil.get_terminal_size((EXPORT_WIDTH, 24)).columns)  # exports don't wrap
    return Console(
        file=sys.stdout,
        no_color=False if always else (no_color or color == "never" or bool(os.environ.get("NO_COLOR")) or None),
        force_terminal=True if always else None,
        width=width,
        highlight=False,
        soft_wrap=False,
        record=record,
    )


HTML_PAGE = """\
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<title>{title}</title>
<style>
{{stylesheet}}
body {{{{ margin: 0; padding: 24px; background: #1c1c1c; }}}}
.window {{{{ display: inline-block; min-width: 60%; border-radius: 8px; color: {{foreground}};
  background-color: {{background}}; box-shadow: 0 4px 24px rgba(0, 0, 0, 0.6); }}}}
.chrome {{{{ padding: 10px 14px; border-bottom: 1px solid #444; font: 14px sans-serif; color: #aaa; }}}}
.dot {{{{ display: inline-block; width: 12px; height: 12px; border-radius: 50%; margin-right: 6px; }}}}
pre {{{{ margin: 0; padding: 14px 18px; font: 15px/1.35 Menlo, 'DejaVu Sans Mono', Consolas, monospace; }}}}
</style>
</head>
<body>
<div class="window">
<div class="chrome"><span class="dot" style="background:#ff5f57"></span><span class="dot" \
style="background:#febc2e"></span><span class="dot" style="background:#28c840"></span> {title}</div>
<pre><code style="font-family:inherit">{{code}}</code></pre>
</div>
</body>
</html>
"""
"""An HTML export: the SVG's dark theme and window, a title, no outside resources (works offline)."""


BLUE, CYAN = 4, 6
"""Their places among a terminal theme's colours."""


def export_theme() -> TerminalTheme:
    """Rich's SVG theme with its blue and cyan told apart: there they are #608ab1 and #68a0b3, one
    colour to the eye, and tcopy's legends name them ("cyan = independent", "blue = cut")."""
    from rich.terminal_theme import SVG_EXPORT_THEME as SVG

    palette: list[tuple[int, int, int]] = [
        (c.red, c.green, c.blue) for c in map(SVG.ansi_colors.__getitem__, range(16))
    ]
    palette[BLUE], palette[CYAN] = (98, 130, 234), (86, 194, 198)
    background, foreground = SVG.background_color, SVG.foreground_color
    return TerminalTheme(
        (background.red, background.green, background.blue),
        (foreground.red, foreground.green, foreground.blue),
        palette[:8],
        palette[8:],
    )


SVG_CHAR, SVG_TITLE_CHAR, SVG_BUTTONS = 12.2, 11.0, 101
"""An SVG export's geometry (Rich's): a column's width, a title character's at most (18px bold
sans-serif), and the pixels from the window's edge past its three buttons, with room to spare."""


def svg_title(title: str, width: int) -> str:
    """``title`` as an SVG export of ``width`` columns can show it: centred between its buttons and
    the right edge as far from it, cut after a word with ``…`` where it is longer."""
    most = max(int((width * SVG_CHAR - 2 * SVG_BUTTONS) / SVG_TITLE_CHAR), 8)
    if cell_len(title) <= most:
        return title
    cut = title[: most - 1]
    cut = cut.rsplit(" ", 1)[0] if " " in cut[most // 2 :] else cut
    return cut.rstrip(" ,.;:·-–—") + "…"


def export(console: Console, path: Path, title: str, clear: bool = True) -> None:
    """Save what ``console`` recorded as SVG, HTML or text, by file type; UsageError if it can't."""
    import html

    suffix = path.suffix.lower()
    title = printable(title)  # the script's title or file name: an SVG or HTML title, a window's too
    try:
        if suffix == ".svg":
            console.save_svg(str(path), title=svg_title(title, console.width), clear=clear, theme=export_theme())
        elif suffix in (".html", ".htm"):
            page = HTML_PAGE.format(title=html.escape(title).replace("{", "{{").replace("}", "}}"))
            console.save_html(str(path), theme=export_theme(), clear=clear, code_format=page)
        else:
            console.save_text(str(path), clear=clear)
    except OSError as exc:
        raise UsageError(f"can't write '{path}': {exc.strerror or exc}") from None


class Cast:
    """An asciinema v2 recording of the table view: one output event per shown step,
    ``pace`` seconds apart (the run's --delay, or one second)."""

    def __init__(self, console: Console, pace: float) -> None:
        self.console = console
        self.pace = pace if pace > 0 else 1.0
        self.events: list[tuple[float, str]] = []

    def take(self) -> None:
        """What the console printed since the last take, as the next event."""
        text = self.console.export_text(clear=True, styles=True)
        if text:
            self.events.append((round(len(self.events) * self.pace, 3), text.replace("\n", "\r\n")))

    def save(self, path: Path, title: str) -> None:
        """Write the header line and the events (JSON lines)."""
        import json

        self.take()
        title = printable(title)
        header = {
            "version": 2,
            "width": self.console.width,
            "height": max(24, self.console.height),
            "timestamp": int(time.time()),
            "title": title,
            "env": {"TERM": "xterm-256color"},
        }
        lines = [json.dumps(header)] + [json.dumps([t, "o", text], ensure_ascii=False) for t, text in self.events]
        try:
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"can't write '{path}': {exc.strerror or exc}") from None


def show_rejection(exc: ScriptRejected, source: str) -> None:
    """The refusal on stderr, with the refused line (made ``printable``) and a caret under the column."""
    err = stderr()
    where = f"line {exc.line}, column {exc.column}" if exc.line else "the script"
    err.print(
        Text("tcopy: ", style="bold red")
        + Text(f"script refused at {where}: ")
        + Text(printable(exc.message), style="bold")
    )
    if exc.line:
        lines = source.replace("\r\n", "\n").split("\n")
        if 0 < exc.line <= len(lines):
            line = lines[exc.line - 1]
            text = printable(line).expandtabs(4)
            gutter = f"{exc.line:>4} | "
            err.print(Text(gutter, style="dim") + Text(text))
            # Under the column as shown: an escape before it takes the room of its text.
            before = printable(line[: max((exc.column or 1) - 1, 0)]).expandtabs(4)
            caret = " " * (len(gutter) - 2) + "| " + " " * cell_len(before) + "^"
            err.print(Text(caret, style="bold red"))


class Quit(Exception):
    """The presenter pressed q."""


PROMPTS = (
    "── {where} · →/Space/Enter: next · ←/b: back · Home/End: first/last · q: quit",
    "── {short} · →/Enter: next · ←/b: back · Home/End: first/last · q: quit",
    "── {short} · →: next · ←: back · Home/End · q: quit",
    "── {short} · → ← Home End q",
)


def prompt_text(at: int, shown: int, width: int, label: str = "") -> str:
    """The --pause prompt at stop ``at`` (from 0) of ``shown``, the longest form narrower than ``width``
    (the last column left free: a line that fills it makes some terminals wrap). ``label``: what the
    stop shows (``step 7``, ``loop at line 4``), as its header says.

    At the newest stop it gives no total: the steps still to come are not known yet, and
    "5 of 5" would read as the last one. Gone back, it says how far back.
    """
    back = at + 1 < shown
    label = label or f"stop {at + 1}"
    where = f"{label} (back: stop {at + 1} of {shown})" if back else label
    short = f"{label} ({at + 1}/{shown})" if back else label
    forms = [p.format(where=where, short=short) for p in PROMPTS]
    for text in forms:
        if cell_len(text) < width:
            return text
    return forms[-1][: max(width - 1, 1)]


def first_sentence(headline: str, most: int = 100) -> str:
    """``RuntimeError: Trying to backward through the graph a second time …``: an error's headline cut
    after its first sentence, or at a word within ``most`` characters, ``…`` where something is left out."""
    import re

    end = re.search(r"[.;:](?=\s)", headline[headline.find(": ") + 2 :] if ": " in headline else headline)
    start = headline.find(": ") + 2 if ": " in headline else 0
    cut = headline[: start + end.start()] if end is not None else headline
    if len(cut) > most:
        cut = cut[:most].rsplit(" ", 1)[0]
    return cut if cut == headline else cut.rstrip(" .,;:") + " …"


class _Drawn(io.StringIO):
    """Where ``drawn_aside`` draws: it answers ``isatty`` as the console's own file does, so Rich
    draws for it alike (colours, control codes)."""

    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def drawn_aside(console: Console, render: Callable[[], None]) -> str:
    """What ``render`` draws through ``console``, written nowhere: the console records it as it
    records everything it draws (for --export), and the caller decides what reaches the terminal
    (--pause keeps it to draw again on the way back; the REPL's input is on the screen already)."""
    real = console.file
    drawn = _Drawn(real.isatty())
    console.file = drawn
    try:
        render()
    finally:
        console.file = real
    return drawn.getvalue()


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
            raise UsageError(f"--export needs a .svg, .html, .txt or .cast file name, not '{export_to.name}'")
        self.console = console
        self.fmt = fmt
        self.pause = pause
        self.delay = delay
        self.export_to = export_to
        self.title = title
        self.interactive = False
        self.keys: Optional[int] = None
        """The terminal --pause reads keys from (``key_source``)."""
        self.errors: list[Step] = []
        self.history: list[str] = []
        """Each step shown under --pause, as drawn (to draw it again on the way back)."""
        self.labels: list[str] = []
        """What each stop in ``history`` shows (``step 7``), for the prompt."""
        self.carried = ""
        """Folded loop turns drawn under --pause since the last stop (drawn again with the next)."""
        self.shown = 0
        """How many steps were shown."""
        self.cast = Cast(console, delay) if export_to is not None and export_to.suffix.lower() == ".cast" else None

    def begin(self) -> None:
        """Decide whether --pause can wait for keys (it needs a terminal and tables)."""
        wanted = self.pause and self.fmt is OutputFormat.table and sys.stdout.isatty()
        self.keys = key_source() if wanted else None
        self.interactive = self.keys is not None
        if self.pause and not self.interactive:
            say("--pause needs a terminal (and --format table); running without pausing")
        if self.keys is not None:
            self._quiet_keys(self.keys)

    def _quiet_keys(self, fd: int) -> None:
        """Keys pressed while a step or a folded loop computes are not echoed into the output (they
        wait, unread, for the next prompt); the terminal is set back as it was when tcopy exits."""
        import atexit
        import termios
        import tty

        try:
            old = termios.tcgetattr(fd)
            tty.setcbreak(fd)
        except termios.error:
            return

        def restore() -> None:
            try:
                termios.tcsetattr(fd, termios.TCSADRAIN, old)
            except termios.error:
                pass

        atexit.register(restore)

    def event(self, renderer: Renderer, event: Event) -> None:
        """Draw what the step flow says: a step, a folded loop turn, or a loop's summary.

        --pause stops after each step and loop summary, not after each folded turn: the
        folded lines of a loop go by together and the summary under them waits for a key.
        """
        from tcopy_cli.render.folding import FoldedTurn, Show

        if isinstance(event, Show):
            self.step(renderer, event.step, event.shown)
            return
        if isinstance(event, FoldedTurn):
            if self.interactive:
                drawn = drawn_aside(self.console, lambda: renderer.folded(event))
                self.carried += drawn
                self.console.file.write(drawn)
            else:
                renderer.folded(event)
            return
        if not event.shown and self.fmt is not OutputFormat.json:
            return
        if self.interactive:
            drawn = drawn_aside(self.console, lambda: renderer.loop(event.summary))
            self.history.append(self.carried + drawn)
            self.labels.append(f"loop at line {event.summary.line}")
            self.carried = ""
            self.console.file.write(drawn)
        else:
            renderer.loop(event.summary)
        if self.cast is not None:
            self.cast.take()
        if self.fmt is not OutputFormat.json:
            if self.interactive:
                self._wait_for_key()
            elif self.delay:
                time.sleep(self.delay)

    def step(self, renderer: Renderer, step: Step, shown: bool) -> None:
        """Render a step, then wait (--pause) or sleep (--delay) if it was shown.

        Outside JSON the step arrives with its text made ``printable`` (by the worker's supervisor,
        before folding, so folded lines and loop summaries get it too).
        """
        shown = shown or self.fmt is OutputFormat.json
        stop = shown
        if self.interactive and shown:
            drawn = drawn_aside(self.console, lambda: renderer.step(step, shown))
            if drawn.count("\n") <= 1 and step.error is None:
                # a step drawn as its rule alone (``import torch``, no tensor changed) is no stop:
                # it goes by with the next one, as folded loop turns do
                self.carried += drawn
                self.console.file.write(drawn)
                stop = False
            else:
                self.history.append(self.carried + drawn)  # the lines carried are on the screen already
                self.labels.append(f"step {step.index}")
                self.carried = ""
                self.console.file.write(drawn)
        else:
            renderer.step(step, shown)
        if (step.error is not None and not step.expected) or step.missed:
            self.errors.append(step)  # its headline goes to stderr
        if shown:
            self.shown += 1
            if self.cast is not None:
                self.cast.take()
        if stop and self.fmt is not OutputFormat.json:
            if self.interactive:
                self._wait_for_key()
            elif self.delay:
                time.sleep(self.delay)

    def _prompt(self, at: int) -> None:
        """The key line under a step, not recorded for --export: one line, shorter where the terminal
        is narrow, the cursor left at its start (a terminal narrowed under it may wrap it: erasing
        from its start takes every row)."""
        console = self.console
        console.record = False
        try:
            console.print(
                Text(prompt_text(at, len(self.history), self._columns(), self.labels[at]), style="dim"), end=""
            )
        finally:
            console.record = self.export_to is not None
        console.file.write("\r")
        console.file.flush()

    def _columns(self) -> int:
        """The columns the prompt has: the terminal's own (``--width`` may draw steps wider than it)."""
        try:
            return min(self.console.width, os.get_terminal_size(self.console.file.fileno()).columns)
        except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
            return self.console.width

    def _wait_for_key(self) -> None:
        """--pause: next, back, first, last or quit; other keys are ignored. Returns to run the next step."""
        at = len(self.history) - 1
        assert self.keys is not None
        while True:
            self._prompt(at)
            try:
                key = read_key(self.keys)
            finally:  # Ctrl-C too: "tcopy: interrupted" starts a line of its own
                self.console.file.write("\r\x1b[J")  # erase the prompt, however many rows it takes now
                self.console.file.flush()
            if key == RESIZE:  # drawn again for the new width
                continue
            action = KEYS.get(key)
            if action == QUIT:
                raise Quit()
            if action == NEXT and at + 1 >= len(self.history):
                return
            moved = {NEXT: at + 1, BACK: max(at - 1, 0), FIRST: 0, LAST: len(self.history) - 1}.get(action or "", at)
            if moved != at:
                at = moved  # clear the screen and draw that step as it was rendered then
                self.console.file.write("\x1b[H\x1b[2J" + self.history[at])

    def finish(self, summary: RunSummary, title: str) -> None:
        """Export if asked, then the closing line: exit 1 after error steps."""
        if self.cast is not None and self.export_to is not None:
            self.cast.save(self.export_to, self.title or title)
        elif self.export_to is not None:
            export(self.console, self.export_to, self.title or title)  # UsageError: exit 2
        if self.export_to is not None:
            say(f"wrote {self.export_to}")
        if summary.stopped_by == "quit":
            say(f"stopped after step {summary.steps} (q)")
            return
        failed = summary.unexpected + summary.missing
        if failed and self.errors:  # an error nobody expected, or an expected one that never came
            first = self.errors[0]
            more = f" ({failed} failed steps)" if failed > 1 else ""
            if first.error is None:
                fail(f"line {first.line}: expected {first.expect}, but the statement raised nothing{more}", EXIT_SCRIPT)
            expected = f" (the line expects {first.expect})" if first.expect is not None else ""
            headline = first.error.headline
            if self.fmt is OutputFormat.table and sys.stdout.isatty() and sys.stderr.isatty():
                headline = first_sentence(headline)  # the step above shows it whole, and why
            fail(f"line {first.line}: {headline}{expected}{more}", EXIT_SCRIPT)
