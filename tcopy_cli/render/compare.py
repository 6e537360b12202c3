"""Rendering of ``tcopy compare`` results: a Rich table, JSON Lines or Markdown."""

from __future__ import annotations

from typing import TextIO

from rich import box
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from tcopy_cli.render.jsonl import dumps
from tcopy_cli.trace.compare import Comparison

WIDE = 160

# (header, field, word when true, word when false)
COLUMNS: list[tuple[str, str, str, str]] = [
    ("new object", "new_object", "new", "same"),
    ("memory", "shares_storage", "shared", "new"),
    ("data_ptr", "same_data_ptr", "same", "differs"),
    ("version counter", "shares_version_counter", "shared", "own"),
    ("requires_grad", "requires_grad", "yes", "no"),
    ("leaf", "is_leaf", "leaf", "non-leaf"),
    ("grad_fn", "grad_fn", "", ""),
    ("grad reaches x", "grad_flows_to_source", "flows", "blocked"),
    ("in-place shows in x", "inplace_visible_in_source", "visible", "not visible"),
    ("autograd notices", "autograd_detects_inplace", "detected", "SILENT"),
]


def cell(c: Comparison, key: str, yes: str, no: str) -> tuple[str, str]:
    """(text, style) for one cell."""
    if c.error is not None:
        return ("-", "dim")
    value = getattr(c, key)
    if key == "grad_fn":
        return (value or "-", "")
    if value is None:
        return ("n/a", "dim")
    if key == "autograd_detects_inplace" and value is False:
        return ("✗ " + no, "bold red")
    return ("✓ " + yes, "green") if value else ("✗ " + no, "yellow")


def render_table(console: Console, rows: list[Comparison], setup: str, device: str) -> None:
    """A Rich table with words beside the ticks."""
    console.print(Text.assemble(("Source: ", "bold"), setup.replace("\n", "; "), "  ·  device ", (device, "bold")))
    if console.width < WIDE:
        _render_cards(console, rows)
    else:
        _render_wide(console, rows)
    notes: list[str] = []
    for c in rows:
        if c.error is not None:
            notes.append(f"{c.expression}: {c.error['type']}: {c.error['message'].splitlines()[0]}")
        for w in c.warnings:
            notes.append(f"{c.expression}: warning: {w}")
    for n in notes:
        console.print(Padding(Text(n, style="yellow"), (0, 0, 0, 2)))
    console.print(
        Text(
            "Each cell was measured in a fresh run: 'grad reaches x' runs y.sum().backward(); 'in-place shows in x' "
            "adds 1 to y in place; 'autograd notices' does that after z = (x * x).sum() saved x, then calls "
            "z.backward() (SILENT = gradients computed from changed values without an error).",
            style="dim",
        )
    )


def _render_cards(console: Console, rows: list[Comparison]) -> None:
    """Narrow terminals: one block per expression, facts as 'label: ✓ word'."""
    for c in rows:
        console.print(Text(f"y = {c.expression}", style="bold cyan"))
        if c.error is not None:
            console.print(Padding(Text(f"error: {c.error['type']}", style="bold red"), (0, 0, 0, 4)))
            continue
        line = Text()
        for i, (header, key, yes, no) in enumerate(COLUMNS):
            text, style = cell(c, key, yes, no)
            if i:
                line.append(" · ", style="dim")
            line.append(f"{header}: ", style="bold")
            line.append(text, style=style)
        console.print(Padding(line, (0, 0, 0, 4)))


def _render_wide(console: Console, rows: list[Comparison]) -> None:
    table = Table(box=box.SIMPLE_HEAD, header_style="bold", pad_edge=False)
    table.add_column("y =", no_wrap=True, style="bold cyan")
    for header, *_ in COLUMNS:
        table.add_column(header, overflow="fold")
    for c in rows:
        cells = [Text(*cell(c, key, yes, no)) for _, key, yes, no in COLUMNS]
        if c.error is not None:
            cells[0] = Text(f"error: {c.error['type']}", style="bold red")
        table.add_row(c.expression, *cells)
    console.print(table)


def render_json(out: TextIO, rows: list[Comparison]) -> None:
    """One JSON object per expression."""
    for c in rows:
        out.write(dumps(c.to_json()) + "\n")


def render_markdown(out: TextIO, rows: list[Comparison], setup: str, device: str) -> None:
    """A GitHub table."""
    out.write(f"Source: `{setup.replace(chr(10), '; ')}` · device `{device}`\n\n")
    out.write("| y = | " + " | ".join(h for h, *_ in COLUMNS) + " |\n")
    out.write("|---|" + "|".join("---" for _ in COLUMNS) + "|\n")
    for c in rows:
        cells = [cell(c, key, yes, no)[0] for _, key, yes, no in COLUMNS]
        if c.error is not None:
            cells[0] = f"error: {c.error['type']}"
        out.write(f"| `{c.expression}` | " + " | ".join(cells) + " |\n")
    out.write("\n")
    for c in rows:
        if c.error is not None:
            out.write(f"- `{c.expression}`: **{c.error['type']}**: {c.error['message'].splitlines()[0]}\n")
        for w in c.warnings:
            out.write(f"- `{c.expression}`: warning: {w}\n")
