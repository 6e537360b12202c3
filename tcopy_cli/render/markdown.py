"""GitHub-flavoured Markdown: a heading, the statement and a table per step."""

from __future__ import annotations

from typing import TextIO

from tcopy_cli.render import ViewOptions
from tcopy_cli.render.cells import COLUMNS, removed_names, step_rows
from tcopy_cli.render.where import where_parts
from tcopy_cli.trace.records import RunInfo, RunSummary, Step


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ") or " "


class MarkdownRenderer:
    """Writes Markdown to a text stream."""

    def __init__(self, out: TextIO, options: ViewOptions | None = None) -> None:
        self.out = out
        self.options = options or ViewOptions()
        self.previous: Step | None = None
        self.device = "cpu"

    def start(self, info: RunInfo) -> None:
        """Title and run facts."""
        self.device = info.device
        heading = info.title or f"tcopy: `{info.source}`"
        self.out.write(
            f"# {heading}\n\ntcopy {info.tcopy} · torch {info.torch} · device `{info.device}` · `{info.source}`"
            f" · confinement `{info.confinement}`\n\n"
        )
        for fact in info.degraded:
            self.out.write(f"> degraded: {fact}\n\n")

    def step(self, step: Step, shown: bool = True) -> None:
        """One step section (a hidden step still counts for change marks)."""
        if not shown:
            self.previous = step
            return
        w = self.out.write
        status = " · **error**" if step.status == "error" else ""
        where = "".join(" · " + part for part in where_parts(step))
        w(f"### Step {step.index} · line {step.line}{where}{status}\n\n")
        for line in step.narration:
            w(f"*{line}*\n\n")
        fence = "````" if "```" in step.source else "```"
        w(f"{fence}python\n{step.source}\n{fence}\n\n")
        rows = step_rows(step, self.previous, self.options.watch, self.options.only_changed)
        if rows:
            devices = {r.cells["device"] for r in rows}
            cols = [c for c in COLUMNS if c.wide and (c.key != "device" or devices != {self.device})]
            w("| | " + " | ".join(c.header for c in cols) + " |\n")
            w("|---|" + "|".join("---" for _ in cols) + "|\n")
            for row in rows:
                cells = []
                for c in cols:
                    text = _cell(row.cells[c.key])
                    if c.key == "values" or c.key == "grad":
                        text = f"`{text}`" if text.strip() and text != "-" else text
                    if c.key in row.changed:
                        text = f"**{text}**"
                    cells.append(text)
                w(f"| {row.marker().strip() or ' '} | " + " | ".join(cells) + " |\n")
            w("\n")
        gone = removed_names(step, self.previous)
        if gone:
            w("Removed: " + ", ".join(f"`{n}`" for n in gone) + "\n\n")
        if step.stdout:
            w("Printed:\n\n```\n" + step.stdout.rstrip("\n") + "\n```\n\n")
        for warning in step.warnings:
            w(f"> ⚠ **warning:** {_cell(warning)}\n\n")
        if self.options.explain:
            for note in step.explanations:
                text = f"**{note.line}**" if note.severity == "warning" else note.line
                w(f"- {text}\n")
            if step.explanations:
                w("\n")
        if step.error is not None:
            w(f"> **{step.error.type}:** {_cell(step.error.message)}\n")
            if self.options.explain and step.error.explained:
                w(">\n> " + _cell(step.error.explanation) + "\n")
            w("\n")
        self.previous = step

    def rejected(self, info: RunInfo, line: int, column: int, message: str) -> None:
        """Refusal notice (no heading: nothing ran)."""
        self.out.write(f"**Refused** at line {line}, column {column}: {_cell(message)}\n")

    def end(self, summary: RunSummary) -> None:
        """Closing line."""
        steps = f"{summary.steps} step{'s' if summary.steps != 1 else ''}"
        self.out.write(f"---\n\n{steps}, {summary.errors} error{'s' if summary.errors != 1 else ''}\n")
