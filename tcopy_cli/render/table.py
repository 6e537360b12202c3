"""Rich tables: a header, the statement, a row per tensor, then prints, warnings, notes."""

from __future__ import annotations

from dataclasses import dataclass

from rich import box
from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.rule import Rule
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from tcopy_cli.explain.errors import UNKNOWN
from tcopy_cli.render.cells import COLUMNS, Row, removed_names, step_rows
from tcopy_cli.render.graph import graph_tree
from tcopy_cli.render.memory import memory_map
from tcopy_cli.trace.records import RunInfo, RunSummary, Step

WIDE = 120


@dataclass
class TableOptions:
    """What the table view shows."""

    explain: bool = True
    only_changed: bool = False
    watch: list[str] | None = None
    graph: bool = False
    memory: bool = False


class TableRenderer:
    """Writes each step to a Rich console as it arrives."""

    def __init__(self, console: Console, options: TableOptions | None = None) -> None:
        self.console = console
        self.options = options or TableOptions()
        self.previous: Step | None = None
        self.device = "cpu"
        self.graph_signature: tuple[object, ...] | None = None

    def start(self, info: RunInfo) -> None:
        """The line above the first step."""
        self.device = info.device
        self.console.print(
            Text.assemble(
                ("tcopy ", "bold"),
                (info.tcopy, ""),
                " · torch ",
                info.torch,
                " · device ",
                (info.device, "bold"),
                " · ",
                (info.source, "italic"),
            )
        )
        if info.title:
            self.console.print(Text(info.title, style="bold"))
        confined = not info.confinement.startswith("none")
        self.console.print(
            Text.assemble(("confinement ", "dim"), (info.confinement, "dim" if confined else "bold yellow"))
        )

    def step(self, step: Step, shown: bool = True) -> None:
        """Render one step (a hidden step still counts for change marks)."""
        if shown:
            self.console.print(self.render_step(step))
        self.previous = step

    def render_step(self, step: Step) -> RenderableType:
        """The renderable for a step (used by export and tests too)."""
        parts: list[RenderableType] = []
        for line in step.narration:
            parts.append(Text(line, style="italic cyan"))
        status = Text(" error", style="bold red") if step.status == "error" else Text("")
        where = Text(f" · in {step.function} (depth {step.depth})", style="magenta") if step.function else Text("")
        parts.append(
            Rule(
                Text.assemble((f"Step {step.index}", "bold"), f" · line {step.line}", where, status),
                align="left",
                style="dim",
            )
        )
        if self.console.color_system is not None or self.console.record:
            parts.append(Syntax(step.source, "python", theme="ansi_dark", background_color="default", word_wrap=True))
        else:  # no colour to show: skip building the highlighter
            parts.append(Text(step.source))
        rows = step_rows(step, self.previous, self.options.watch, self.options.only_changed)
        if rows:
            parts.append(self._table(rows))
        elif not step.tensors and not step.arrays:
            parts.append(Text("  (no tensors yet)", style="dim"))
        elif self.options.only_changed:
            parts.append(Text("  (no tensor changed)", style="dim"))
        gone = removed_names(step, self.previous)
        if gone:
            parts.append(Text("  removed: " + ", ".join(gone), style="dim"))
        if step.stdout:
            parts.append(Text("  printed:", style="bold"))
            for line in step.stdout.rstrip("\n").split("\n"):
                parts.append(Text("  │ " + line))
        for w in step.warnings:
            parts.append(Padding(Text("⚠ warning: " + w, style="yellow"), (0, 0, 0, 2)))
        if self.options.explain:
            for note in step.notes:
                style = "bold yellow" if note.startswith("⚠") else "cyan"
                parts.append(Padding(Text("• " + note, style=style), (0, 0, 0, 2)))
        if self.options.memory:
            parts.append(memory_map(step, self.console.width))
        if self.options.graph and step.graph is not None and step.graph.roots:
            sig = step.graph.signature()
            if sig != self.graph_signature:
                parts.append(Text("  autograd graph:", style="bold"))
                for tree in graph_tree(step.graph):
                    parts.append(Padding(tree, (0, 0, 0, 2)))
            self.graph_signature = sig
        if step.error is not None:
            err = step.error
            parts.append(
                Padding(Text.assemble(("✗ " + err.type + ": ", "bold red"), (err.message, "red")), (0, 0, 0, 2))
            )
            if self.options.explain and err.explanation != UNKNOWN:
                parts.append(Padding(Text("why: " + err.explanation, style="magenta"), (0, 0, 0, 4)))
        parts.append(Text(""))
        return Group(*parts)

    def _table(self, rows: list[Row]) -> Table:
        wide = self.console.width >= WIDE
        devices = {r.cells["device"] for r in rows}
        show_device = devices != {self.device}
        cols = [c for c in COLUMNS if (c.wide if wide else c.narrow) and (c.key != "device" or show_device)]
        shown = {c.key for c in cols}
        table = Table(
            box=box.SIMPLE_HEAD,
            pad_edge=False,
            show_edge=False,
            header_style="bold",
            padding=(0, 0),
        )
        table.add_column("", width=1, no_wrap=True)
        for c in cols:
            folding = c.key in ("values", "grad", "shares", "name")
            table.add_column(
                c.header,
                no_wrap=not folding,
                overflow="fold",
                min_width={"values": 14, "version": 3, "grad": 8}.get(c.key),
                max_width=30 if c.key == "values" else (20 if c.key == "grad" else None),
            )
        for row in rows:
            mark = row.marker(shown)
            cells: list[Text] = [Text(mark, style="bold green" if mark == "+" else "bold yellow")]
            for c in cols:
                value = row.cells[c.key]
                style = ""
                if c.key in row.changed and not row.new:
                    style = "bold yellow"
                elif row.new and c.key == "name":
                    style = "bold green"
                elif value in ("yes", "leaf+grad"):
                    style = "green"
                cells.append(Text(value, style=style))
            table.add_row(*cells)
        return table

    def end(self, summary: RunSummary) -> None:
        """The closing line."""
        style = "green" if summary.errors == 0 else "red"
        self.console.print(
            Text(
                f"{summary.steps} step{'s' if summary.steps != 1 else ''}, "
                f"{summary.errors} error{'s' if summary.errors != 1 else ''}",
                style=style,
            )
        )
