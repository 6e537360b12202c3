"""``tcopy repl``: type statements, see each step's table and notes at once.

Same confined worker, engine, limits and observer as ``tcopy run``; the namespace lives for the session in
one kernel-confined worker process (``tcopy_cli.process.session.WorkerSession``).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.text import Text

from tcopy_cli.cli.options import (
    MAX_VALUES,
    AllowReadOpt,
    DeviceOpt,
    MaxValuesOpt,
    NoColorOpt,
    RequireConfinementOpt,
    TrustOpt,
    WidthOpt,
    readable_paths,
)
from tcopy_cli.cli.present import drawn_aside, export, make_console
from tcopy_cli.errors import ScriptRejected, UsageError
from tcopy_cli.limits import Limits
from tcopy_cli.printable import printable

HELP = """\
Type PyTorch statements; each one runs as a step and its table prints at once.
A line ending in ':' starts a block: finish it with an empty line.
  :vars          the table of every tensor now (no change marks)
  :clear         clear the screen (also Ctrl-L)
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
        # Ctrl-L clears the screen and redraws the prompt with the line typed so far
        # (GNU readline's default; libedit, Python's readline on macOS, needs it said).
        if "libedit" in (readline.__doc__ or ""):
            readline.parse_and_bind("bind ^L ed-clear-screen")
        else:
            readline.parse_and_bind(r'"\C-l": clear-screen')
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
    allow_read: AllowReadOpt = None,
    trust: TrustOpt = False,
    require_confinement: RequireConfinementOpt = False,
    *,
    limits: Limits,
) -> None:
    """An interactive prompt: each statement you type is a step, shown at once.

    An expression statement (a * 3, a.is_leaf) also shows its value, as Python's REPL does.
    Commands: :vars, :graph, :reset, :clear (or Ctrl-L), :export FILE, :help, :quit. Same confined
    worker and limits as 'run' (--timeout applies to each entered statement).
    """
    if trust and require_confinement:
        raise UsageError("--trust lifts the wall that --require-confinement asks for: give one of them")
    console = make_console(no_color, width, record=True)
    permissions = {
        "trust": trust,
        "allow_read": readable_paths(allow_read, "-"),
        "require_confinement": require_confinement,
    }
    # the worker resolves --device (a usage error from it ends the command): torch is imported
    # there, not here too
    raise typer.Exit(repl(console, device.strip().lower(), limits, max_values, permissions))


def repl(
    console: Console,
    device: str,
    limits: Limits,
    max_values: int = MAX_VALUES,
    permissions: dict[str, Any] | None = None,
) -> int:
    """Run the interactive loop; returns the exit status."""
    from tcopy_cli.pipeline import worker_session
    from tcopy_cli.program import parse_program
    from tcopy_cli.render import ViewOptions
    from tcopy_cli.render.graph import graph_tree
    from tcopy_cli.render.table import TableRenderer
    from tcopy_cli.supervise import WorkerOptions
    from tcopy_cli.trace.records import RunInfo, Step

    _setup_readline()
    renderer = TableRenderer(console, ViewOptions(graph=False, flags=False))
    last: list[Step] = []
    shown: list[RunInfo] = []

    def started(info: RunInfo) -> None:  # the header once, from the first worker (it names the confinement)
        if not shown:
            shown.append(info)
            renderer.start(info)

    def emit(step: Step) -> None:
        renderer.step(step)
        last[:] = [step]

    options = WorkerOptions(
        device=device,
        limits=limits,
        keep_going=True,
        max_values=max_values,
        graph=True,
        printable=True,
        **(permissions or {}),
    )
    session = worker_session(options, started)

    def forget() -> None:
        renderer.forget()
        last.clear()

    try:
        session.run("", 0, emit)  # start the worker now: the header, and torch imported before the first prompt
        console.print(Text("Type :help for commands, :quit to leave.", style="dim"))
        line_offset = 0
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
            _record_input(console, text)
            if stripped.startswith(":"):
                cmd, _, arg = stripped.partition(" ")
                if cmd in (":quit", ":q", ":exit"):
                    return 0
                if cmd == ":help":
                    console.print(HELP)
                elif cmd == ":clear":
                    console.clear()
                elif cmd == ":reset":
                    session.close()  # a fresh worker starts with the next statement
                    forget()
                    console.print(Text("All names forgotten.", style="dim"))
                elif cmd == ":vars":
                    if last:
                        console.print(renderer.render_state(last[0]))
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
                parse_program(text, "<repl>", limits)  # what Python can't parse is refused here
            except ScriptRejected as exc:
                console.print(
                    Text(f"refused at line {exc.line}, column {exc.column}: {printable(exc.message)}", style="red")
                )
                continue
            try:
                session.run(text, line_offset, emit)
            except KeyboardInterrupt:
                forget()
                console.print(Text("(interrupted: the worker was stopped and every name forgotten)", style="dim"))
            except ScriptRejected as exc:
                console.print(
                    Text(f"refused at line {exc.line}, column {exc.column}: {printable(exc.message)}", style="red")
                )
            # Keep line numbers growing across inputs so steps read like one script.
            line_offset += text.count("\n") + 1
            if session.lost:
                session.lost = False
                forget()
                console.print(Text("The worker process ended: a fresh one starts; every name is forgotten.", "dim"))
    finally:
        session.close()


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


def _record_input(console: Console, text: str) -> None:
    """What was typed, for :export (the terminal shows it already, as typed): each line after the
    prompt it was typed at, recorded by the console and written nowhere."""
    typed = "\n".join(("... " if i else ">>> ") + line for i, line in enumerate(text.split("\n")))
    drawn_aside(console, lambda: console.print(Text(printable(typed))))


def _export(console: Console, name: str) -> None:
    """:export FILE: the session so far, kept for later exports too."""
    if not name:
        console.print(Text("usage: :export FILE (.svg, .html or .txt)", style="red"))
        return
    path = Path(name).expanduser()
    try:
        export(console, path, "tcopy repl", clear=False)
    except UsageError as exc:
        console.print(Text(printable(exc.message), style="red"))
        return
    console.print(Text(f"wrote {path}", style="dim"))
