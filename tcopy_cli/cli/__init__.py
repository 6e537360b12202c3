"""The command line: the only package that prints to the terminal or exits.

One module per command (run, examples, compare, graph, repl); options.py declares the
options they share, limits included; present.py shows a run (pause, delay, export, the
closing line); app.py holds the Typer app and turns every error into a short message.
torch is imported only inside commands that run scripts, so --help and --version stay fast.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

from tcopy_cli.cli import compare, examples, graph, repl, run
from tcopy_cli.cli.app import app, guarded, main
from tcopy_cli.cli.options import with_limits

# The commands, in the order --help lists them. Each takes ``limits: Limits``: it is
# registered with every limit option (@with_limits) and every error guarded (@guarded).
COMMANDS: dict[str, Callable[..., None]] = {
    "run": run.run,
    "examples": examples.examples_cmd,
    "compare": compare.compare,
    "graph": graph.graph_cmd,
    "repl": repl.repl_cmd,
}


def prose(doc: str) -> str:
    """A command's docstring as --help shows it: each paragraph one line, for the help to wrap
    between words at the terminal's width (Typer keeps a docstring's line breaks, made for the
    source, and wraps each line again); a paragraph of commands (indented) keeps its lines."""
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    return "\n\n".join(p if p.startswith(" ") else " ".join(p.split("\n")) for p in paragraphs)


for _name, _command in COMMANDS.items():
    app.command(_name, help=prose(_command.__doc__ or ""))(guarded(with_limits(_command)))

__all__ = ["COMMANDS", "app", "main"]
