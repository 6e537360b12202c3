"""The command line. The only module that prints to the terminal or exits.

torch is imported only inside commands that run scripts, so --help and --version
stay fast.
"""

from __future__ import annotations

import os
import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn, Optional

import typer
from rich.console import Console
from rich.text import Text

from tcopy_cli import __version__
from tcopy_cli.errors import ScriptRejected, TcopyError, UsageError
from tcopy_cli.limits import Limits

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


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"tcopy {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
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
    return Console(stderr=True, highlight=False, no_color=bool(os.environ.get("NO_COLOR")) or None)


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
    origin: Optional[str] = None
    if example is not None:
        if script is not None or code is not None:
            _fail("give only one of SCRIPT, -e CODE or --example NAME", EXIT_USAGE)
        code, origin = _example_source(example), f"example:{example}"
    try:
        _run(
            script,
            code,
            origin,
            device,
            fmt,
            keep_going,
            only_changed,
            watch_list,
            max_values,
            explain,
            no_color,
            width,
            limits,
        )
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


def _run(
    script: Optional[str],
    code: Optional[str],
    example_origin: Optional[str],
    device: str,
    fmt: OutputFormat,
    keep_going: bool,
    only_changed: bool,
    watch: Optional[list[str]],
    max_values: int,
    explain: bool,
    no_color: bool,
    width: Optional[int],
    limits: Limits,
) -> None:
    source = ""
    origin = script or ("<inline>" if code is not None else "-")
    try:
        source, origin = read_source(script, code, limits)
        origin = example_origin or origin
        from tcopy_cli.script.parse import parse_script

        try:
            program = parse_script(source, origin, limits)
        except ScriptRejected as exc:
            _reject(exc, source, origin, fmt, device)
        from tcopy_cli.trace.runner import Runner, RunOptions, resolve_device

        dev = resolve_device(device)
    except ScriptRejected as exc:
        _reject(exc, source, origin, fmt, device)
    except UsageError as exc:
        _fail(exc.message, EXIT_USAGE)

    renderer = _renderer(fmt, no_color, width, explain, only_changed, watch)
    options = RunOptions(device=dev, limits=limits, keep_going=keep_going, max_values=max_values)
    steps: list[Step] = []

    def emit(step: Step) -> None:
        renderer.step(step)
        if step.error is not None:
            steps.append(step)

    try:
        runner = Runner(program, options, emit)
        renderer.start(runner.info(origin))
        summary = runner.run()
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
    if summary.errors:
        first = steps[0]
        assert first.error is not None
        more = f" ({summary.errors} error steps)" if summary.errors > 1 else ""
        _fail(
            f"line {first.line}: {first.error.type}: {_first_line(first.error.message)}{more}",
            EXIT_SCRIPT,
        )


def _reject(exc: ScriptRejected, source: str, origin: str, fmt: OutputFormat, device: str) -> NoReturn:
    if fmt is OutputFormat.json:
        import torch

        from tcopy_cli.render.jsonl import JsonRenderer
        from tcopy_cli.trace.records import RunInfo, RunSummary

        r = JsonRenderer(sys.stdout)
        r.start(RunInfo(tcopy=__version__, torch=torch.__version__, device=device, source=origin))
        r.rejected(exc.line or 1, exc.column or 1, exc.message)
        r.end(RunSummary(steps=0, errors=0, rejected=True))
    elif fmt is OutputFormat.markdown:
        from tcopy_cli.render.markdown import MarkdownRenderer

        MarkdownRenderer(sys.stdout).rejected(exc.line or 1, exc.column or 1, exc.message)
    _show_rejection(exc, source, origin)
    raise typer.Exit(EXIT_SCRIPT)


def _renderer(
    fmt: OutputFormat,
    no_color: bool,
    width: Optional[int],
    explain: bool,
    only_changed: bool,
    watch: Optional[list[str]],
) -> Renderer:
    if fmt is OutputFormat.json:
        from tcopy_cli.render.jsonl import JsonRenderer

        return JsonRenderer(sys.stdout)
    if fmt is OutputFormat.markdown:
        from tcopy_cli.render.markdown import MarkdownRenderer

        return MarkdownRenderer(sys.stdout, explain=explain, only_changed=only_changed, watch=watch)
    from tcopy_cli.render.table import TableOptions, TableRenderer

    return TableRenderer(
        _make_console(no_color, width), TableOptions(explain=explain, only_changed=only_changed, watch=watch)
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
            _run(
                None,
                text,
                f"example:{name}",
                "cpu",
                OutputFormat.table,
                False,
                False,
                None,
                100,
                True,
                no_color,
                width,
                limits,
            )
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


def _first_line(text: str) -> str:
    return text.splitlines()[0] if text else ""


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except KeyboardInterrupt:
        _quiet_stdout()
        sys.exit(EXIT_INTERRUPT)
