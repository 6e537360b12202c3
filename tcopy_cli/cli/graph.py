"""``tcopy graph``: the autograd graph behind the script's named tensors, as text, DOT, Mermaid or a tree."""

from __future__ import annotations

import sys
from enum import Enum
from typing import Annotated

import typer

from tcopy_cli.cli.app import EXIT_SCRIPT, fail, say
from tcopy_cli.cli.options import (
    AllowReadOpt,
    CodeOpt,
    DeviceOpt,
    ExampleOpt,
    NoColorOpt,
    RequireConfinementOpt,
    ScriptArg,
    TrustOpt,
    WidthOpt,
    readable_paths,
)
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
    allow_read: AllowReadOpt = None,
    trust: TrustOpt = False,
    require_confinement: RequireConfinementOpt = False,
    *,
    limits: Limits,
) -> None:
    """Write the autograd graph behind the script's named tensors after its last statement.

    Text and tree draw the first of three or more alike nodes (a loop's turns) and count the rest.

    Graphviz DOT needs no Graphviz installed: render it with 'dot -Tsvg' wherever you have it.
    A script that ends in an error still shows the graph as it was then (exit status 1, or 0
    where the line says '# expect: NAME').

    Examples:

      tcopy graph demo.py --format dot > graph.dot

      tcopy graph --example clone --format mermaid
    """
    from tcopy_cli.pipeline import run_in_worker
    from tcopy_cli.program import parse_program
    from tcopy_cli.render import graph as rg
    from tcopy_cli.supervise import WorkerOptions
    from tcopy_cli.trace.records import Step

    source = ""
    steps: list[Step] = []
    try:
        source, origin = read_source(script, code, limits, example)
        program = parse_program(source, origin, limits)  # pure Python: refuses early, before a worker starts
        options = WorkerOptions(
            device=device,
            limits=limits,
            keep_going=False,
            graph=True,
            trust=trust,
            allow_read=readable_paths(allow_read, origin),
            require_confinement=require_confinement,
            printable=True,
        )
        summary = run_in_worker(program, options, steps.append, lambda info: None)
    except ScriptRejected as exc:
        show_rejection(exc, source)
        raise typer.Exit(EXIT_SCRIPT) from None
    last = steps[-1] if steps else None
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
    if summary.status != "ok":  # an error not marked '# expect: NAME', or a marked one missing
        failed = next((s for s in steps if (s.error is not None and not s.expected) or s.missed), None)
        if failed is None:
            raise typer.Exit(EXIT_SCRIPT)
        what = (
            failed.error.headline if failed.error is not None else f"expected {failed.expect}, but nothing was raised"
        )
        drawn = graph is not None and bool(graph.roots)
        where = "the graph above is as the script left it there" if drawn else "the script stopped there, with no graph"
        fail(f"line {failed.line}: {what} ({where})", EXIT_SCRIPT)
