"""``tcopy compare``: compare copy operations by experiment."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from tcopy_cli.cli.app import EXIT_SCRIPT, EXIT_USAGE, fail
from tcopy_cli.cli.formats import OutputFormat
from tcopy_cli.cli.options import DeviceOpt, FormatOpt, NoColorOpt, WidthOpt
from tcopy_cli.cli.present import export as save_export
from tcopy_cli.cli.present import make_console
from tcopy_cli.errors import ScriptRejected, UsageError
from tcopy_cli.limits import Limits
from tcopy_cli.printable import printable, printable_record


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
    device: DeviceOpt = "cpu",
    fmt: FormatOpt = OutputFormat.table,
    no_color: NoColorOpt = False,
    width: WidthOpt = None,
    export: Annotated[
        Optional[Path],
        typer.Option("--export", help="Also save the table view to FILE (.svg, .html or .txt).", show_default=False),
    ] = None,
    *,
    limits: Limits,
) -> None:
    """Compare copy operations by experiment: which shares memory, keeps the graph, lets gradients through.

    Each expression is run as 'y = EXPRESSION' after the setup, in fresh runs (inside one
    kernel-confined worker process), and every cell comes from what those runs observed.

    --timeout bounds each of those runs as written; an expression takes at most 4 runs, so a
    comparison of N expressions takes at most 4 × N × --timeout (plus the worker's start-up). A run
    that goes over is stopped, and the message names its expression and which run it was.

    Examples:

      tcopy compare

      tcopy compare --source nonleaf

      tcopy compare "x.clone()" "x.detach()" "x.data" --setup "x = torch.randn(3, requires_grad=True)"
    """
    if export is not None and export.suffix.lower() not in (".svg", ".html", ".htm", ".txt"):
        fail(f"--export needs a .svg, .html or .txt file name, not '{export.name}'", EXIT_USAGE)
    from tcopy_cli.engine.session import available_devices, resolve_device
    from tcopy_cli.render import compare as rc
    from tcopy_cli.supervise import compare_in_worker
    from tcopy_cli.trace import compare as tc

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
    try:
        rows = [tc.Comparison(**row) for row in compare_in_worker(exprs, setup, dev, limits)]
    except ScriptRejected as exc:
        fail(f"the setup or an expression was refused (line {exc.line}): {exc.message}", EXIT_SCRIPT)
    if fmt is not OutputFormat.json:  # the setup and the expressions, as the views show them
        rows, setup = printable_record(rows), printable(setup)
    if fmt is OutputFormat.json:
        rc.render_json(sys.stdout, rows)
    elif fmt is OutputFormat.markdown:
        rc.render_markdown(sys.stdout, rows, setup, dev)
    if fmt is OutputFormat.table or export is not None:
        console = make_console(no_color, width, record=export is not None)
        if fmt is not OutputFormat.table:  # the export still shows the table; stdout keeps the chosen format
            console.file = io.StringIO()
        rc.render_table(console, rows, setup, dev)
        if export is not None:
            save_export(console, export, f"tcopy compare · {setup.splitlines()[-1]}")
