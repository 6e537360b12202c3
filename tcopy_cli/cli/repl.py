"""``tcopy repl``: type statements, see each step's table and notes at once.

Same sandbox, limits and observer as ``tcopy run``; the namespace lives for the session.
"""

from __future__ import annotations

import ast
import contextlib
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.text import Text

from tcopy_cli.cli.app import stop_process
from tcopy_cli.cli.options import MAX_VALUES, DeviceOpt, MaxValuesOpt, NoColorOpt, WidthOpt
from tcopy_cli.cli.present import export, make_console
from tcopy_cli.errors import ScriptRejected, UsageError
from tcopy_cli.limits import Limits

if TYPE_CHECKING:
    from tcopy_cli.script.parse import Program

HELP = """\
Type PyTorch statements; each one runs as a step and its table prints at once.
A line ending in ':' starts a block: finish it with an empty line.
  :vars          the table of every tensor now
  :graph         the autograd graph behind the named tensors
  :reset         forget every name and start over
  :export FILE   save the session so far (.svg, .html or .txt)
  :help          this text
  :quit          leave (also Ctrl-D)"""


def _setup_readline() -> None:
    try:
        import readline  # line editing and history for input()
    except ImportError:  # pragma: no cover - Windows without pyreadline
        pass
    else:
        history = Path.home() / ".tcopy_history"
        with contextlib.suppress(OSError):
            readline.read_history_file(history)
        readline.set_history_length(1000)
        import atexit

        atexit.register(lambda: _save_history(history))


def _save_history(path: Path) -> None:
    import readline

    with contextlib.suppress(OSError):
        readline.write_history_file(path)


def repl_cmd(
    device: DeviceOpt = "cpu",
    max_values: MaxValuesOpt = MAX_VALUES,
    no_color: NoColorOpt = False,
    width: WidthOpt = None,
    *,
    limits: Limits,
) -> None:
    """An interactive prompt: each statement you type is a step, shown at once.

    Commands: :vars, :graph, :reset, :export FILE, :help, :quit. Same sandbox and limits as 'run'
    (--timeout applies to each entered statement).
    """
    from tcopy_cli.trace.runner import resolve_device

    dev = resolve_device(device)
    console = make_console(no_color, width, record=True)
    raise typer.Exit(repl(console, dev, limits, max_values))


def repl(console: Console, device: str, limits: Limits, max_values: int = MAX_VALUES) -> int:
    """Run the interactive loop; returns the exit status."""
    from tcopy_cli.pipeline import explaining
    from tcopy_cli.render import ViewOptions
    from tcopy_cli.render.graph import graph_tree
    from tcopy_cli.render.table import TableRenderer
    from tcopy_cli.script.parse import parse_script
    from tcopy_cli.trace.records import Step
    from tcopy_cli.trace.runner import Runner, RunOptions, torch_session

    _setup_readline()
    options = RunOptions(
        device=device, limits=limits, keep_going=True, max_values=max_values, graph=True, on_stuck=stop_process
    )
    renderer = TableRenderer(console, ViewOptions(graph=False))
    last: list[Step] = []

    def emit(step: Step) -> None:
        renderer.step(step)
        last[:] = [step]

    def fresh() -> Runner:
        return Runner(parse_script("", "<repl>", limits), options, explaining(emit))

    runner = fresh()
    renderer.start(runner.info("<repl>"))
    console.print(Text("Type :help for commands, :quit to leave.", style="dim"))
    line_offset = 0
    with torch_session(device):
        while True:
            try:
                text = _read_statement()
            except EOFError:
                console.print()
                return 0
            except KeyboardInterrupt:
                console.print(Text("\n(interrupted: type :quit to leave)", style="dim"))
                continue
            stripped = text.strip()
            if not stripped:
                continue
            if stripped.startswith(":"):
                cmd, _, arg = stripped.partition(" ")
                if cmd in (":quit", ":q", ":exit"):
                    return 0
                if cmd == ":help":
                    console.print(HELP)
                elif cmd == ":reset":
                    runner = fresh()
                    renderer.forget()
                    last.clear()
                    console.print(Text("All names forgotten.", style="dim"))
                elif cmd == ":vars":
                    if last:
                        console.print(renderer.render_step(last[0], fresh=True))
                    else:
                        console.print(Text("(no steps yet)", style="dim"))
                elif cmd == ":graph":
                    graph = last[0].graph if last else None
                    if graph is None or not graph.roots:
                        console.print(Text("(no named tensor has a grad_fn)", style="dim"))
                    for tree in graph_tree(graph) if graph else []:
                        console.print(tree)
                elif cmd == ":export":
                    _export(console, arg.strip())
                else:
                    console.print(Text(f"unknown command {cmd}; :help lists them", style="red"))
                continue
            try:
                program = parse_script(text, "<repl>", limits)
            except ScriptRejected as exc:
                console.print(Text(f"refused at line {exc.line}, column {exc.column}: {exc.message}", style="red"))
                continue
            # Keep line numbers growing across inputs so steps read like one script.
            program = _shift(program, line_offset)
            line_offset += text.count("\n") + 1
            try:
                runner.run_more(program)
            except KeyboardInterrupt:
                console.print(Text("(interrupted)", style="dim"))


def _shift(program: Program, offset: int) -> Program:
    """Move a parsed input down by ``offset`` lines."""
    if offset:
        ast.increment_lineno(program.tree, offset)
        comments = {n + offset: c for n, c in program.comments.items()}
        return replace(
            program, lines=[""] * offset + program.lines, source="\n" * offset + program.source, comments=comments
        )
    return program


def _read_statement() -> str:
    """One statement, or a block ended by an empty line."""
    first = input(">>> ")
    if not first.rstrip().endswith(":"):
        return first
    lines = [first]
    while True:
        more = input("... ")
        if not more.strip():
            return "\n".join(lines)
        lines.append(more)


def _export(console: Console, name: str) -> None:
    """:export FILE: the session so far, kept for later exports too."""
    if not name:
        console.print(Text("usage: :export FILE (.svg, .html or .txt)", style="red"))
        return
    path = Path(name).expanduser()
    try:
        export(console, path, "tcopy repl", clear=False)
    except UsageError as exc:
        console.print(Text(exc.message, style="red"))
        return
    console.print(Text(f"wrote {path}", style="dim"))
