"""The command line. The only module that prints to the terminal or exits.

torch is imported only inside commands that run scripts, so --help and --version
stay fast.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn, Optional

import typer
from rich.console import Console
from rich.text import Text

from tcopy_cli import __version__
from tcopy_cli.errors import ScriptRejected, TcopyError, UsageError
from tcopy_cli.limits import Limits
from tcopy_cli.trace.records import RunSummary

if TYPE_CHECKING:
    from tcopy_cli.render import Renderer
    from tcopy_cli.trace.records import Step

app = typer.Typer(
    name="tcopy",
    help="Run a short PyTorch script step by step and see what each statement did to "
    "memory, the autograd graph and the gradients.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode="rich",
)

EXIT_OK, EXIT_SCRIPT, EXIT_USAGE, EXIT_INTERRUPT = 0, 1, 2, 130


class OutputFormat(str, Enum):
    """--format choices."""

    table = "table"
    json = "json"
    markdown = "markdown"


def _version_callback(ctx: typer.Context, value: bool) -> None:
    if value:
        typer.echo(f"tcopy {__version__}")
        if "--verbose" in sys.argv[1:] or "-v" in sys.argv[1:] or ctx.params.get("verbose"):
            from tcopy_cli import confine

            typer.echo(f"python {sys.version.split()[0]} ({sys.executable})")
            typer.echo(f"confinement available here: {confine.available()}")
        raise typer.Exit()


@app.callback()
def _root(
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="With --version: also which protections a run gets here.")
    ] = False,
    version: Annotated[
        bool,
        typer.Option("--version", "-V", help="Show the version and exit.", callback=_version_callback, is_eager=True),
    ] = False,
) -> None:
    """Run a short PyTorch script step by step and see what each statement did to memory,
    the autograd graph and the gradients."""


# Output options shared by every command that renders a run.
FormatOpt = Annotated[
    OutputFormat,
    typer.Option(
        "--format", "-f", help="table (Rich, default), json (JSON Lines, see README) or markdown.", case_sensitive=False
    ),
]
NoColorOpt = Annotated[
    bool, typer.Option("--no-color", help="No colours (also: NO_COLOR=1). FORCE_COLOR=1 forces them.")
]
WidthOpt = Annotated[
    Optional[int],
    typer.Option("--width", min=40, max=1000, help="Terminal width for tables (default: detected; 80 in a pipe)."),
]


def _stderr() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True, no_color=bool(os.environ.get("NO_COLOR")) or None)


def _fail(message: str, code: int) -> NoReturn:
    _stderr().print(Text("tcopy: ", style="bold red") + Text(message))
    raise typer.Exit(code)


def read_source(script: Optional[str], code: Optional[str], limits: Limits) -> tuple[str, str]:
    """(source text, origin label) from -e, a path, '-' or a piped stdin."""
    if code is not None:
        if script is not None:
            raise UsageError("give either a SCRIPT path or -e CODE, not both")
        return code, "<inline>"
    if script is None:
        if sys.stdin is None or sys.stdin.isatty():
            raise UsageError("no script given: pass a path, '-' for stdin, or -e CODE (see tcopy run --help)")
        script = "-"
    if script == "-":
        data = (
            sys.stdin.buffer.read(limits.max_script_bytes + 1)
            if hasattr(sys.stdin, "buffer")
            else sys.stdin.read().encode()
        )
        origin = "-"
    else:
        path = Path(script)
        if path.is_dir():
            raise UsageError(f"'{script}' is a directory, not a script")
        try:
            with path.open("rb") as fh:
                data = fh.read(limits.max_script_bytes + 1)
        except FileNotFoundError:
            raise UsageError(f"no such file: '{script}'") from None
        except OSError as exc:
            raise UsageError(f"can't read '{script}': {exc.strerror or exc}") from None
        origin = script
    if len(data) > limits.max_script_bytes:
        raise ScriptRejected(f"the script is larger than {limits.max_script_bytes:,} bytes (--max-script-bytes)", 1, 1)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ScriptRejected(f"the script is not valid UTF-8 text (byte {exc.start})", line, 1) from None
    return text, origin


def _show_rejection(exc: ScriptRejected, source: str, origin: str) -> None:
    err = _stderr()
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


def _make_console(no_color: bool, width: Optional[int], record: bool = False) -> Console:
    return Console(
        file=sys.stdout,
        no_color=no_color or bool(os.environ.get("NO_COLOR")) or None,
        width=width,
        highlight=False,
        soft_wrap=False,
        record=record,
    )


@app.command()
def run(
    script: Annotated[
        Optional[str],
        typer.Argument(help="Script path, or '-' for stdin (read from stdin when piped).", show_default=False),
    ] = None,
    code: Annotated[
        Optional[str],
        typer.Option(
            "-e", "--exec", help="Run CODE given inline (statements separated by ';' or newlines).", show_default=False
        ),
    ] = None,
    example: Annotated[
        Optional[str],
        typer.Option(
            "--example", "-x", help="Run a shipped example by name (see 'tcopy examples').", show_default=False
        ),
    ] = None,
    device: Annotated[
        str,
        typer.Option(
            "--device",
            "-d",
            help="cpu, cuda, cuda:N, mps or auto (cuda if available, else mps, else cpu). "
            "Default device for tensor creation.",
        ),
    ] = "cpu",
    fmt: FormatOpt = OutputFormat.table,
    keep_going: Annotated[
        bool, typer.Option("--keep-going", "-k", help="After an error step, continue with the next statement.")
    ] = False,
    only_changed: Annotated[
        bool, typer.Option("--only-changed", help="Show only tensors that are new or changed in each step.")
    ] = False,
    watch: Annotated[
        Optional[str],
        typer.Option("--watch", "-w", help="Comma-separated names: show only these tensors (a,b).", show_default=False),
    ] = None,
    max_values: Annotated[
        int,
        typer.Option(
            "--max-values", min=0, help="List values of tensors with at most N elements; summarise larger ones."
        ),
    ] = 100,
    explain: Annotated[
        bool,
        typer.Option(
            "--explain/--no-explain", help="Show plain-language notes under each table (JSON always has them)."
        ),
    ] = True,
    no_color: NoColorOpt = False,
    width: WidthOpt = None,
    pause: Annotated[
        bool,
        typer.Option(
            "--pause",
            help="In a terminal, wait after each step: Enter/Space next, b shows the script so far, q quits.",
            rich_help_panel="Presenting",
        ),
    ] = False,
    delay: Annotated[
        float,
        typer.Option(
            "--delay",
            min=0,
            help="Seconds to wait after each shown step (recorded demos).",
            rich_help_panel="Presenting",
        ),
    ] = 0.0,
    step: Annotated[
        Optional[int],
        typer.Option(
            "--step",
            min=1,
            help="Show only step N (the whole script still runs).",
            show_default=False,
            rich_help_panel="Presenting",
        ),
    ] = None,
    from_step: Annotated[
        Optional[int],
        typer.Option("--from", min=1, help="Show steps from N on.", show_default=False, rich_help_panel="Presenting"),
    ] = None,
    to_step: Annotated[
        Optional[int],
        typer.Option("--to", min=1, help="Show steps up to M.", show_default=False, rich_help_panel="Presenting"),
    ] = None,
    export: Annotated[
        Optional[Path],
        typer.Option(
            "--export",
            help="Also record the table view to FILE (.svg, .html or .txt).",
            show_default=False,
            rich_help_panel="Presenting",
        ),
    ] = None,
    title: Annotated[
        Optional[str],
        typer.Option(
            "--title", help="Title of an exported SVG/HTML.", show_default=False, rich_help_panel="Presenting"
        ),
    ] = None,
    graph: Annotated[
        bool,
        typer.Option(
            "--graph",
            help="After steps that change the autograd graph, draw it as a tree.",
            rich_help_panel="Presenting",
        ),
    ] = False,
    depth: Annotated[
        Optional[int],
        typer.Option(
            "--depth",
            min=0,
            help="Hide steps inside script functions nested deeper than N calls (0: module level only).",
            show_default=False,
            rich_help_panel="Presenting",
        ),
    ] = None,
    memory: Annotated[
        bool,
        typer.Option(
            "--memory",
            help="After each step, draw the storages and the bytes each name covers.",
            rich_help_panel="Presenting",
        ),
    ] = False,
    max_elements: Annotated[
        int, typer.Option("--max-elements", min=1, help="Limit: elements in any one tensor.", rich_help_panel="Limits")
    ] = Limits.max_elements,
    max_bytes: Annotated[
        int,
        typer.Option(
            "--max-bytes", min=1, help="Limit: bytes of all tensor storages after a step.", rich_help_panel="Limits"
        ),
    ] = Limits.max_bytes,
    max_steps: Annotated[
        int, typer.Option("--max-steps", min=1, help="Limit: executed statements.", rich_help_panel="Limits")
    ] = Limits.max_steps,
    max_iterations: Annotated[
        int,
        typer.Option(
            "--max-iterations",
            min=1,
            help="Limit: iterations of one loop; items a builtin may build.",
            rich_help_panel="Limits",
        ),
    ] = Limits.max_iterations,
    max_int_bits: Annotated[
        int,
        typer.Option(
            "--max-int-bits",
            min=64,
            help="Limit: bits of a Python integer made by **, << or *.",
            rich_help_panel="Limits",
        ),
    ] = Limits.max_int_bits,
    max_str_len: Annotated[
        int,
        typer.Option("--max-str-len", min=1, help="Limit: length of a built string or list.", rich_help_panel="Limits"),
    ] = Limits.max_str_len,
    max_output: Annotated[
        int,
        typer.Option("--max-output", min=0, help="Limit: characters the script may print.", rich_help_panel="Limits"),
    ] = Limits.max_output,
    max_depth: Annotated[
        int,
        typer.Option(
            "--max-depth", min=1, help="Limit: nesting depth of expressions and blocks.", rich_help_panel="Limits"
        ),
    ] = Limits.max_depth,
    max_script_bytes: Annotated[
        int, typer.Option("--max-script-bytes", min=1, help="Limit: size of the script.", rich_help_panel="Limits")
    ] = Limits.max_script_bytes,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout", min=0, help="Limit: wall-clock seconds for the run (0 = none).", rich_help_panel="Limits"
        ),
    ] = Limits.timeout,
) -> None:
    """Run a PyTorch script statement by statement and show every tensor after each step.

    Examples:

      tcopy run demo.py

      cat demo.py | tcopy run -

      tcopy run -e "a = torch.ones(2, requires_grad=True); b = a.clone(); (b * 3).sum().backward()"

      tcopy run demo.py --format json | jq 'select(.event=="step") | .tensors.a.grad'
    """
    limits = Limits(
        max_elements=max_elements,
        max_bytes=max_bytes,
        max_steps=max_steps,
        max_iterations=max_iterations,
        max_int_bits=max_int_bits,
        max_str_len=max_str_len,
        max_output=max_output,
        max_depth=max_depth,
        max_script_bytes=max_script_bytes,
        timeout=timeout,
    )
    watch_list = [w.strip() for w in watch.split(",") if w.strip()] if watch else None
    if step is not None and (from_step is not None or to_step is not None):
        _fail("give either --step N or --from/--to, not both", EXIT_USAGE)
    if export is not None and export.suffix.lower() not in (".svg", ".html", ".htm", ".txt"):
        _fail(f"--export needs a .svg, .html or .txt file name, not '{export.name}'", EXIT_USAGE)
    display = Display(
        fmt=fmt,
        only_changed=only_changed,
        watch=watch_list,
        explain=explain,
        no_color=no_color,
        width=width,
        first=step if step is not None else from_step,
        last=step if step is not None else to_step,
        pause=pause,
        delay=delay,
        export=export,
        title=title,
        graph=graph,
        memory=memory,
        depth=depth,
    )
    origin: Optional[str] = None
    if example is not None:
        if script is not None or code is not None:
            _fail("give only one of SCRIPT, -e CODE or --example NAME", EXIT_USAGE)
        code, origin = _example_source(example), f"example:{example}"
    try:
        _run(script, code, origin, device, keep_going, max_values, limits, display)
    except KeyboardInterrupt:
        _quiet_stdout()
        _stderr().print("tcopy: interrupted")
        raise typer.Exit(EXIT_INTERRUPT) from None
    except BrokenPipeError:
        _quiet_stdout()
        raise typer.Exit(EXIT_OK) from None


def _quiet_stdout() -> None:
    """After a closed pipe, point stdout at /dev/null so the final flush can't fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


@dataclass
class Display:
    """How a run is shown (shared by every command that renders a run)."""

    fmt: OutputFormat = OutputFormat.table
    only_changed: bool = False
    watch: Optional[list[str]] = None
    explain: bool = True
    no_color: bool = False
    width: Optional[int] = None
    first: Optional[int] = None
    last: Optional[int] = None
    pause: bool = False
    delay: float = 0.0
    export: Optional[Path] = None
    title: Optional[str] = None
    graph: bool = False
    memory: bool = False
    depth: Optional[int] = None

    def shows(self, step: Step) -> bool:
        """Whether a step is in the --step/--from/--to range and within --depth."""
        index = step.index
        in_range = (self.first is None or index >= self.first) and (self.last is None or index <= self.last)
        return in_range and (self.depth is None or step.depth <= self.depth)


class _Quit(Exception):
    """The presenter pressed q."""


def _run(
    script: Optional[str],
    code: Optional[str],
    example_origin: Optional[str],
    device: str,
    keep_going: bool,
    max_values: int,
    limits: Limits,
    display: Display,
) -> None:
    fmt = display.fmt
    source = ""
    origin = script or ("<inline>" if code is not None else "-")
    try:
        source, origin = read_source(script, code, limits)
        origin = example_origin or origin
        from tcopy_cli.script.parse import parse_script

        try:
            program = parse_script(source, origin, limits)  # pure Python: refuses early, without torch
        except ScriptRejected as exc:
            _reject(exc, source, origin, fmt, device)
    except ScriptRejected as exc:
        _reject(exc, source, origin, fmt, device)
    except UsageError as exc:
        _fail(exc.message, EXIT_USAGE)

    interactive = display.pause and fmt is OutputFormat.table and sys.stdin.isatty() and sys.stdout.isatty()
    if display.pause and not interactive:
        _stderr().print("tcopy: --pause needs a terminal (and --format table); running without pausing")
    console = _make_console(display.no_color, display.width, record=display.export is not None)
    renderer = _renderer(display, console)
    from tcopy_cli.supervise import WorkerOptions, run_in_worker

    options = WorkerOptions(
        device=device, limits=limits, keep_going=keep_going, max_values=max_values, graph=display.graph
    )
    errors: list[Step] = []
    lines = program.lines
    seen: list[Step] = []

    def emit(step: Step) -> None:
        seen[:] = [step]
        shown = display.shows(step) or fmt is OutputFormat.json
        renderer.step(step, shown)
        if step.error is not None:
            errors.append(step)
        if shown and fmt is not OutputFormat.json:
            if interactive:
                _wait_for_key(console, lines, step.line)
            elif display.delay:
                time.sleep(display.delay)

    quit_early = False
    try:
        summary = run_in_worker(source, origin, options, emit, renderer.start)
    except _Quit:
        quit_early = True
        summary = RunSummary(steps=seen[0].index if seen else 0, errors=len(errors), stopped_by="quit")
    except ScriptRejected as exc:
        _reject(exc, source, origin, fmt, device)
    except UsageError as exc:
        _fail(exc.message, EXIT_USAGE)
    except TcopyError as exc:  # e.g. a limit hit between statements
        _fail(exc.message, EXIT_SCRIPT)
    except (KeyboardInterrupt, BrokenPipeError):
        raise
    except Exception as exc:  # a bug in tcopy itself: short message, no traceback
        _fail(
            f"internal error ({type(exc).__name__}: {exc}). This is a bug in tcopy; please report it with the script.",
            EXIT_SCRIPT,
        )
    renderer.end(summary)
    if display.export is not None:
        _export(console, display.export, display.title or program.title or origin)
    if quit_early:
        _stderr().print(f"tcopy: stopped after step {summary.steps} (q)")
        return
    if summary.errors:
        first = errors[0]
        assert first.error is not None
        more = f" ({summary.errors} error steps)" if summary.errors > 1 else ""
        _fail(
            f"line {first.line}: {first.error.type}: {_first_line(first.error.message)}{more}",
            EXIT_SCRIPT,
        )


def _export(console: Console, path: Path, title: str) -> None:
    """Save what the console recorded, by file type."""
    suffix = path.suffix.lower()
    try:
        if suffix == ".svg":
            console.save_svg(str(path), title=title)
        elif suffix in (".html", ".htm"):
            console.save_html(str(path))
        else:
            console.save_text(str(path))
    except OSError as exc:
        _fail(f"can't write '{path}': {exc.strerror or exc}", EXIT_USAGE)
    _stderr().print(f"tcopy: wrote {path}")


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


def _wait_for_key(console: Console, lines: list[str], upto: int) -> None:
    """--pause: Enter/Space next, b shows the script so far, q quits."""
    from rich.syntax import Syntax

    while True:
        console.print(Text("── Enter/Space: next · b: script so far · q: quit", style="dim"), end="")
        console.file.flush()
        key = _read_key()
        console.print()
        if key in ("\n", "\r", " ", ""):
            return
        if key in ("q", "Q", "\x1b"):
            raise _Quit()
        if key in ("b", "B"):
            console.print(
                Syntax(
                    "\n".join(lines[:upto]), "python", theme="ansi_dark", background_color="default", line_numbers=True
                )
            )


def _reject(exc: ScriptRejected, source: str, origin: str, fmt: OutputFormat, device: str) -> NoReturn:
    if fmt is OutputFormat.json:
        import torch

        from tcopy_cli.render.jsonl import JsonRenderer
        from tcopy_cli.trace.records import RunInfo, RunSummary

        r = JsonRenderer(sys.stdout)
        info = getattr(exc, "info", None)  # refused by the worker: it knows torch's version
        r.start(
            info
            or RunInfo(
                tcopy=__version__,
                torch=torch.__version__,
                device=device,
                source=origin,
                confinement="none (refused before running)",
            )
        )
        r.rejected(exc.line or 1, exc.column or 1, exc.message)
        r.end(RunSummary(steps=0, errors=0, rejected=True))
    elif fmt is OutputFormat.markdown:
        from tcopy_cli.render.markdown import MarkdownRenderer

        MarkdownRenderer(sys.stdout).rejected(exc.line or 1, exc.column or 1, exc.message)
    _show_rejection(exc, source, origin)
    raise typer.Exit(EXIT_SCRIPT)


def _renderer(display: Display, console: Console) -> Renderer:
    if display.fmt is OutputFormat.json:
        from tcopy_cli.render.jsonl import JsonRenderer

        return JsonRenderer(sys.stdout, graph=display.graph)
    if display.fmt is OutputFormat.markdown:
        from tcopy_cli.render.markdown import MarkdownRenderer

        return MarkdownRenderer(
            sys.stdout, explain=display.explain, only_changed=display.only_changed, watch=display.watch
        )
    from tcopy_cli.render.table import TableOptions, TableRenderer

    return TableRenderer(
        console,
        TableOptions(
            explain=display.explain,
            only_changed=display.only_changed,
            watch=display.watch,
            graph=display.graph,
            memory=display.memory,
        ),
    )


def _example_source(name: str) -> str:
    from tcopy_cli import examples

    try:
        return examples.source(name)
    except KeyError:
        _fail(f"no example named '{name}'; available: {', '.join(examples.names())}", EXIT_USAGE)


class ListFormat(str, Enum):
    """--format choices for listings."""

    table = "table"
    json = "json"


@app.command("examples")
def examples_cmd(
    name: Annotated[Optional[str], typer.Argument(help="Show this example's script.", show_default=False)] = None,
    fmt: Annotated[
        ListFormat, typer.Option("--format", "-f", help="table or json (one object per line).")
    ] = ListFormat.table,
    run_it: Annotated[bool, typer.Option("--run", help="Run the example (same as tcopy run --example NAME).")] = False,
    no_color: NoColorOpt = False,
    width: WidthOpt = None,
) -> None:
    """List the shipped examples, show one, or run one."""
    from tcopy_cli import examples
    from tcopy_cli.render.jsonl import dumps

    console = _make_console(no_color, width)
    if name is None:
        if fmt is ListFormat.json:
            for ex_name, ex_title in examples.catalogue():
                sys.stdout.write(dumps({"name": ex_name, "title": ex_title}) + "\n")
            return
        from rich.table import Table

        table = Table(box=None, show_header=True, header_style="bold", pad_edge=False)
        table.add_column("name", style="bold cyan", no_wrap=True)
        table.add_column("what it shows")
        for ex_name, ex_title in examples.catalogue():
            table.add_row(ex_name, ex_title)
        console.print(table)
        console.print(Text("Run one with: tcopy run --example NAME", style="dim"))
        return
    text = _example_source(name)
    if run_it:
        limits = Limits()
        try:
            _run(None, text, f"example:{name}", "cpu", False, 100, limits, Display(no_color=no_color, width=width))
        except KeyboardInterrupt:
            _quiet_stdout()
            raise typer.Exit(EXIT_INTERRUPT) from None
        return
    if fmt is ListFormat.json:
        sys.stdout.write(dumps({"name": name, "title": examples.title(text), "source": text}) + "\n")
        return
    from rich.syntax import Syntax

    console.print(Syntax(text, "python", theme="ansi_dark", background_color="default"))


@app.command()
def compare(
    expressions: Annotated[
        Optional[list[str]],
        typer.Argument(help="Expressions of x to compare (default: the standard set).", show_default=False),
    ] = None,
    source: Annotated[
        str, typer.Option("--source", help="leaf (x = torch.randn(3, requires_grad=True)) or nonleaf (x = leaf * 2).")
    ] = "leaf",
    setup: Annotated[
        Optional[str],
        typer.Option("--setup", help="Your own statements that define x (overrides --source).", show_default=False),
    ] = None,
    device: Annotated[str, typer.Option("--device", "-d", help="cpu, cuda, cuda:N, mps or auto.")] = "cpu",
    fmt: FormatOpt = OutputFormat.table,
    no_color: NoColorOpt = False,
    width: WidthOpt = None,
) -> None:
    """Compare copy operations by experiment: which shares memory, keeps the graph, lets gradients through.

    Each expression is run as 'y = EXPRESSION' after the setup, in fresh sandboxed runs, and every
    cell comes from what those runs observed.

    Examples:

      tcopy compare

      tcopy compare --source nonleaf

      tcopy compare "x.clone()" "x.detach()" "x.data" --setup "x = torch.randn(3, requires_grad=True)"
    """
    try:
        from tcopy_cli.render import compare as rc
        from tcopy_cli.trace import compare as tc
        from tcopy_cli.trace.runner import available_devices, resolve_device

        if setup is None:
            if source not in tc.SETUPS:
                raise UsageError(f"--source must be one of: {', '.join(tc.SETUPS)}")
            setup = tc.SETUPS[source]
        dev = resolve_device(device)
        exprs = list(expressions) if expressions else list(tc.STANDARD)
        if not expressions:
            others = [d for d in available_devices() if d != dev and d.split(":")[0] != dev.split(":")[0]]
            if others:
                exprs.append(f'x.to("{others[0]}")')
        rows = tc.compare(exprs, setup, dev)
    except ScriptRejected as exc:
        _fail(f"the setup or an expression was refused (line {exc.line}): {exc.message}", EXIT_SCRIPT)
    except UsageError as exc:
        _fail(exc.message, EXIT_USAGE)
    except KeyboardInterrupt:
        raise typer.Exit(EXIT_INTERRUPT) from None
    if fmt is OutputFormat.json:
        rc.render_json(sys.stdout, rows)
    elif fmt is OutputFormat.markdown:
        rc.render_markdown(sys.stdout, rows, setup, dev)
    else:
        rc.render_table(_make_console(no_color, width), rows, setup, dev)


class GraphFormat(str, Enum):
    """--format choices for tcopy graph."""

    text = "text"
    dot = "dot"
    mermaid = "mermaid"
    tree = "tree"


@app.command("graph")
def graph_cmd(
    script: Annotated[Optional[str], typer.Argument(help="Script path, or '-' for stdin.", show_default=False)] = None,
    code: Annotated[Optional[str], typer.Option("-e", "--exec", help="Inline code.", show_default=False)] = None,
    example: Annotated[
        Optional[str], typer.Option("--example", "-x", help="A shipped example.", show_default=False)
    ] = None,
    fmt: Annotated[
        GraphFormat, typer.Option("--format", "-f", help="text, dot (Graphviz), mermaid (Markdown) or tree (Rich).")
    ] = GraphFormat.text,
    device: Annotated[str, typer.Option("--device", "-d", help="cpu, cuda, cuda:N, mps or auto.")] = "cpu",
    no_color: NoColorOpt = False,
    width: WidthOpt = None,
) -> None:
    """Write the autograd graph behind the script's named tensors after its last statement.

    Graphviz DOT needs no Graphviz installed: render it with 'dot -Tsvg' wherever you have it.
    A script that ends in an error still shows the graph as it was then (exit status 1).

    Examples:

      tcopy graph demo.py --format dot > graph.dot

      tcopy graph --example clone --format mermaid
    """
    from tcopy_cli.render import graph as rg

    limits = Limits()
    try:
        if example is not None:
            if script is not None or code is not None:
                raise UsageError("give only one of SCRIPT, -e CODE or --example NAME")
            source, origin = _example_source(example), f"example:{example}"
        else:
            source, origin = read_source(script, code, limits)
        from tcopy_cli.trace import run_source

        trace = run_source(source, device=device, keep_going=False, limits=limits, origin=origin, graph=True)
    except ScriptRejected as exc:
        _show_rejection(exc, source if "source" in locals() else "", "")
        raise typer.Exit(EXIT_SCRIPT) from None
    except UsageError as exc:
        _fail(exc.message, EXIT_USAGE)
    except KeyboardInterrupt:
        raise typer.Exit(EXIT_INTERRUPT) from None
    last = trace.steps[-1] if trace.steps else None
    graph = last.graph if last is not None else None
    if graph is None or not graph.roots:
        _stderr().print("tcopy: no named tensor has a grad_fn at the end of the script: the graph is empty")
    elif fmt is GraphFormat.dot:
        sys.stdout.write(rg.to_dot(graph))
    elif fmt is GraphFormat.mermaid:
        sys.stdout.write(rg.to_mermaid(graph))
    elif fmt is GraphFormat.tree:
        console = _make_console(no_color, width)
        for tree in rg.graph_tree(graph):
            console.print(tree)
    else:
        sys.stdout.write(rg.to_text(graph))
    if trace.summary is not None and trace.summary.errors:
        raise typer.Exit(EXIT_SCRIPT)


@app.command("repl")
def repl_cmd(
    device: Annotated[str, typer.Option("--device", "-d", help="cpu, cuda, cuda:N, mps or auto.")] = "cpu",
    max_values: Annotated[
        int, typer.Option("--max-values", min=0, help="List values of tensors up to N elements.")
    ] = 100,
    no_color: NoColorOpt = False,
    width: WidthOpt = None,
    timeout: Annotated[float, typer.Option("--timeout", min=0, help="Limit: seconds per entered statement.")] = 120.0,
) -> None:
    """An interactive prompt: each statement you type is a step, shown at once.

    Commands: :vars, :graph, :reset, :export FILE, :help, :quit. Same sandbox and limits as 'run'.
    """
    from tcopy_cli.repl import repl
    from tcopy_cli.trace.runner import resolve_device

    try:
        dev = resolve_device(device)
    except UsageError as exc:
        _fail(exc.message, EXIT_USAGE)
    console = _make_console(no_color, width, record=True)
    raise typer.Exit(repl(console, dev, Limits(timeout=timeout), max_values))


def _first_line(text: str) -> str:
    return text.splitlines()[0] if text else ""


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except KeyboardInterrupt:
        _quiet_stdout()
        sys.exit(EXIT_INTERRUPT)
