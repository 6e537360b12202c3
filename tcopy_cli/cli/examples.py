"""``tcopy examples``: list the shipped examples, show one, or run one."""

from __future__ import annotations

import sys
from enum import Enum
from typing import Annotated, Optional

import typer
from rich.text import Text

from tcopy_cli.cli.formats import OutputFormat
from tcopy_cli.cli.options import MAX_VALUES, DeviceOpt, MaxValuesOpt, NoColorOpt, WidthOpt
from tcopy_cli.cli.present import Presenter, make_console
from tcopy_cli.cli.run import RunRequest, execute
from tcopy_cli.cli.source import example_source
from tcopy_cli.limits import Limits
from tcopy_cli.render import ViewOptions


class ListFormat(str, Enum):
    """--format choices for listings."""

    table = "table"
    json = "json"


def examples_cmd(
    name: Annotated[Optional[str], typer.Argument(help="Show this example's script.", show_default=False)] = None,
    fmt: Annotated[
        ListFormat, typer.Option("--format", "-f", help="table or json (one object per line).")
    ] = ListFormat.table,
    no_color: NoColorOpt = False,
    width: WidthOpt = None,
    run_it: Annotated[bool, typer.Option("--run", help="Run the example (same as tcopy run --example NAME).")] = False,
    device: DeviceOpt = "cpu",
    max_values: MaxValuesOpt = MAX_VALUES,
    *,
    limits: Limits,
) -> None:
    """List the shipped examples, show one, or run one."""
    from tcopy_cli import examples
    from tcopy_cli.render.jsonl import dumps

    console = make_console(no_color, width)
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
    text = example_source(name)
    if run_it:
        request = RunRequest(example=name, device=device, max_values=max_values, limits=limits)
        execute(request, OutputFormat.table, ViewOptions(), Presenter(console, OutputFormat.table))
        return
    if fmt is ListFormat.json:
        sys.stdout.write(dumps({"name": name, "title": examples.title(text), "source": text}) + "\n")
        return
    from rich.syntax import Syntax

    console.print(Syntax(text, "python", theme="ansi_dark", background_color="default"))
