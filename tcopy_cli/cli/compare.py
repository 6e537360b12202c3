"""``tcopy compare``: compare copy operations by experiment."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from tcopy_cli.cli.app import EXIT_SCRIPT, fail
from tcopy_cli.cli.formats import OutputFormat
from tcopy_cli.cli.options import DeviceOpt, FormatOpt, NoColorOpt, WidthOpt
from tcopy_cli.cli.present import make_console
from tcopy_cli.errors import ScriptRejected, UsageError
from tcopy_cli.limits import Limits


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
    *,
    limits: Limits,
) -> None:
    """Compare copy operations by experiment: which shares memory, keeps the graph, lets gradients through.

    Each expression is run as 'y = EXPRESSION' after the setup, in fresh sandboxed runs, and every
    cell comes from what those runs observed.

    Examples:

      tcopy compare

      tcopy compare --source nonleaf

      tcopy compare "x.clone()" "x.detach()" "x.data" --setup "x = torch.randn(3, requires_grad=True)"
    """
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
    try:
        rows = tc.compare(exprs, setup, dev, limits)
    except ScriptRejected as exc:
        fail(f"the setup or an expression was refused (line {exc.line}): {exc.message}", EXIT_SCRIPT)
    if fmt is OutputFormat.json:
        rc.render_json(sys.stdout, rows)
    elif fmt is OutputFormat.markdown:
        rc.render_markdown(sys.stdout, rows, setup, dev)
    else:
        rc.render_table(make_console(no_color, width), rows, setup, dev)
