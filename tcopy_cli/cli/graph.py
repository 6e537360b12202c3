"""``tcopy graph``: the autograd graph behind the script's named tensors, as text, DOT, Mermaid or a tree."""

from __future__ import annotations

import sys
from enum import Enum
from typing import Annotated

import typer

from tcopy_cli.cli.app import EXIT_SCRIPT, say
from tcopy_cli.cli.options import CodeOpt, DeviceOpt, ExampleOpt, NoColorOpt, ScriptArg, WidthOpt
from tcopy_cli.cli.present import make_console, show_rejection
from tcopy_cli.cli.source import read_source
from tcopy_cli.errors import ScriptRejected
from tcopy_cli.limits import Limits


class GraphFormat(str, Enum):
    """--format choices for tcopy graph."""

    text = "text"
    dot = "dot"
    mermaid = "mermaid"
    tree = "tree"


def graph_cmd(
    script: ScriptArg = None,
    code: CodeOpt = None,
    example: ExampleOpt = None,
    fmt: Annotated[
        GraphFormat, typer.Option("--format", "-f", help="text, dot (Graphviz), mermaid (Markdown) or tree (Rich).")
    ] = GraphFormat.text,
    device: DeviceOpt = "cpu",
    no_color: NoColorOpt = False,
    width: WidthOpt = None,
    *,
    limits: Limits,
) -> None:
    """Write the autograd graph behind the script's named tensors after its last statement.

    Graphviz DOT needs no Graphviz installed: render it with 'dot -Tsvg' wherever you have it.
    A script that ends in an error still shows the graph as it was then (exit status 1).

    Examples:

      tcopy graph demo.py --format dot > graph.dot

      tcopy graph --example clone --format mermaid
    """
    from tcopy_cli.render import graph as rg

    source = ""
    try:
        source, origin = read_source(script, code, limits, example)
        from tcopy_cli.trace import run_source

        trace = run_source(source, device=device, keep_going=False, limits=limits, origin=origin, graph=True)
    except ScriptRejected as exc:
        show_rejection(exc, source)
        raise typer.Exit(EXIT_SCRIPT) from None
    last = trace.steps[-1] if trace.steps else None
    graph = last.graph if last is not None else None
    if graph is None or not graph.roots:
        say("no named tensor has a grad_fn at the end of the script: the graph is empty")
    elif fmt is GraphFormat.dot:
        sys.stdout.write(rg.to_dot(graph))
    elif fmt is GraphFormat.mermaid:
        sys.stdout.write(rg.to_mermaid(graph))
    elif fmt is GraphFormat.tree:
        console = make_console(no_color, width)
        for tree in rg.graph_tree(graph):
            console.print(tree)
    else:
        sys.stdout.write(rg.to_text(graph))
    if trace.summary is not None and trace.summary.errors:
        raise typer.Exit(EXIT_SCRIPT)
