"""GitHub-flavoured Markdown: a heading, the statement and a table per step."""

from __future__ import annotations

import re
from typing import TextIO

from tcopy_cli.render import ViewOptions, error_counts, plural, source_label
from tcopy_cli.render.cells import COLUMNS, Before, Quiet, removed_names, step_rows
from tcopy_cli.render.folding import FoldedTurn, SeenRows, StepFlow
from tcopy_cli.render.loops import LoopSummary, evolution_parts, loop_heading, summary_rows, unlisted_rows
from tcopy_cli.render.modules import module_evolutions, module_parts, module_phrases, view_rows
from tcopy_cli.render.names import index_runs, unlisted_text
from tcopy_cli.render.turnline import printed_lines, turn_label, turn_parts
from tcopy_cli.render.where import where_parts
from tcopy_cli.trace.records import TRUSTED_HEADER, RunInfo, RunSummary, Step
from tcopy_cli.trace.values import code_span, longest_backticks


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ") or " "


def _text_cell(text: str) -> str:
    """A table cell of plain text (a name, a label): ``_escaped``, and ``|`` kept from ending the cell."""
    return _escaped(text).replace("|", "\\|").replace("\n", " ") or " "


_MARKS = re.compile(r"[\\`*<>~&]|\](?=\()|(?<!\w)_+")
"""What Markdown would act on: emphasis, code, links, strike, HTML, entities. Left as they are:
an ``_`` after a letter or digit (``loss_fn``, ``a.add_(1)``), which can't start emphasis (so
none can end there either), and brackets (``xs[0]``), which make a link only as
``[text](url)``, so escaping the ``]`` before a ``(`` is enough (a link reference
definition needs a line of its own: tcopy writes none, and what a script prints is in a code
block it can't end)."""


_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`).*?(?<!`)\1(?!`)")


def _prose(text: str) -> str:
    """A line of tcopy's own text (a note, a warning, an error): its `code` spans as they are,
    the rest ``_escaped`` (messages quote names and reprs such as ``<class 'int'>``)."""
    out, at = [], 0
    for m in _CODE_SPAN.finditer(text):
        out += [_escaped(text[at : m.start()]), m[0]]
        at = m.end()
    out.append(_escaped(text[at:]))
    return "".join(out).replace("\n", " ")


def _code_cell(text: str) -> str:
    """``code_span`` in a table cell: a ``|`` escaped (GFM reads ``\\|`` as ``|`` inside code too)."""
    return code_span(text.replace("\n", " ")).replace("|", "\\|")


def _fence(text: str) -> str:
    """A code block fence that ``text`` can't close: longer than any run of backticks in it."""
    return "`" * max(3, longest_backticks(text) + 1)


def _escaped(text: str) -> str:
    """``text`` with every mark Markdown would act on escaped (emphasis, code, links, strike, entities),
    for running text and inside ``*...*`` (names can hold ``*``, ``_`` or a backtick in a key)."""
    return _MARKS.sub(lambda m: "".join("\\" + ch for ch in m[0]), text)


class MarkdownRenderer:
    """Writes Markdown to a text stream."""

    def __init__(self, out: TextIO, options: ViewOptions | None = None) -> None:
        self.out = out
        self.options = options or ViewOptions()
        self.before: Before[Step] = Before()
        self.device = "cpu"
        self.list_open = False  # folded turns are list items: a blank line ends the list
        self.last_folded: FoldedTurn | None = None
        self.tables = 0  # step tables written
        self.seen = SeenRows()

    def start(self, info: RunInfo) -> None:
        """Title and run facts."""
        self.device = info.device
        # A heading's trailing #s would be read as its closing sequence: escaped.
        first, _, rest = info.title.partition("\n")
        rest = rest.lstrip("\n")
        # (Counted, not matched: a pattern for it backtracks over a long run of #s.)
        prose = _prose(first)
        kept = prose.rstrip()
        marks = len(kept) - len(kept.rstrip("#"))
        title = kept[: len(kept) - marks] + "\\#" * marks + prose[len(kept) :]
        heading = title if info.title else f"tcopy: {code_span(source_label(info.source))}"
        # the title's further lines under the heading, each a line of its own (a hard break after each)
        # (an empty line between paragraphs stays one)
        more = "".join(f"{_prose(line)}  \n" if line else "\n" for line in rest.split("\n")) + "\n" if rest else ""
        self.out.write(
            f"# {heading}\n\n{more}tcopy {info.tcopy} · torch {info.torch} · device {code_span(info.device)}"
            f" · {code_span(source_label(info.source))} · confinement {code_span(info.confinement)}"
            f"{' · reads ' + ', '.join(code_span(p) for p in info.allow_read) if info.reads else ''}\n\n"
        )
        if info.trusted:
            self.out.write(f"> {TRUSTED_HEADER}\n\n")
        for fact in info.degraded:
            self.out.write(f"> degraded: {fact}\n\n")

    def step(self, step: Step, shown: bool = True) -> None:
        """One step section (a hidden step still counts for change marks)."""
        if not shown:
            self.before.add(step.depth, step)
            return
        w = self.out.write
        if self.list_open:
            w("\n")
            self.list_open = False
        self.last_folded = None
        status = " · **error**" if step.status == "error" else ""
        if step.expected:
            status = " · expected error"
        where = "".join(" · " + part for part in where_parts(step))
        previous = self.before.of(step.depth)
        rows = view_rows(step_rows(step, previous, self.options.watch, self.options.only_changed), self.options, step)
        gone = removed_names(step, previous)
        quiet = self.seen.quiet(step, rows, gone, self.tables > 0)
        if quiet.statement and "`" in (quiet.one_line or ""):  # no inline code for it: told in full
            quiet = Quiet(None, quiet.told)
        told = f" · `{quiet.one_line}`" if quiet.one_line is not None else ""
        after = f" · {self.options.unchanged_text}" if quiet.one_line is not None and quiet.says_unchanged else ""
        w(f"### Step {step.index} · line {step.line}{told}{where}{after}{status}\n\n")
        for line in step.narration:
            w(f"*{_prose(line)}*\n\n")
        if quiet.one_line is not None:  # class/def/import: a heading, no table (JSON keeps the whole step)
            self._notes(step)
            self.before.add(step.depth, step)
            return
        fence = _fence(step.source)
        w(f"{fence}python\n{step.source}\n{fence}\n\n")
        if rows and quiet.told:
            w(f"*({self.options.unchanged_text})*\n\n")
        elif rows:
            self.tables += 1
            rows, under = self.seen.fold(rows, step, self.options)
            devices = {r.cells["device"] for r in rows}
            cols = [c for c in COLUMNS if c.wide and (c.key != "device" or devices != {self.device})]
            w("| | " + " | ".join(c.header for c in cols) + " |\n")
            w("|---|" + "|".join("---" for _ in cols) + "|\n")
            for row in rows:
                cells = []
                for c in cols:
                    if c.key == "values" or c.key == "grad":  # code spans, fenced so that nothing ends them
                        raw = row.cells[c.key]
                        text = _code_cell(raw) if raw.strip() and raw != "-" else _cell(raw)
                    else:
                        text = _text_cell(row.cells[c.key])
                    if c.key in row.changed:
                        text = f"**{text}**"
                    cells.append(text)
                w(f"| {row.marker().strip() or ' '} | " + " | ".join(cells) + " |\n")
            w("\n")
            for line in under:
                w(f"*{_escaped(line)}*\n\n")
        if gone:
            w("Removed: " + ", ".join(code_span(n) for n in index_runs(gone)) + "\n\n")
        if unlisted := self.options.watched_only(step.unlisted):
            w(f"*{_escaped(unlisted_text(unlisted))}*\n\n")
        if step.hooks:
            w("Torch called back: " + ", ".join(code_span(h) for h in step.hooks) + "\n\n")
        if step.stdout:
            fence = _fence(step.stdout)  # what the script printed can't end the block
            w(f"Printed:\n\n{fence}\n" + step.stdout.rstrip("\n") + f"\n{fence}\n\n")
        for warning in step.warnings:
            w(f"> ⚠ **warning:** {_prose(warning)}\n\n")
        self._notes(step)
        if step.error is not None:
            label = f"expected {step.error.type}" if step.expected else step.error.type
            w(f"> **{label}:** {_prose(step.error.message)}\n")
            if self.options.explain and step.error.explained:
                w(">\n> " + _prose(step.error.explanation) + "\n")
            w("\n")
        self.before.add(step.depth, step)

    def _notes(self, step: Step) -> None:
        """The step's notes as a list (warnings in bold)."""
        if not self.options.explain:
            return
        notes = self.options.shown_notes(step)
        for note in notes:
            line = _prose(module_phrases(note.line, step.tensors) if self.options.fold else note.line)
            text = f"**{line}**" if note.severity == "warning" else line
            self.out.write(f"- {text}\n")
        if notes:
            self.out.write("\n")

    def folded(self, turn: FoldedTurn) -> None:
        """A later turn of a loop, or a range of them, as one list item (what they printed in a block under it)."""
        # names can hold Markdown's own marks (a dict key "a*b*", "[x](y)"): they are escaped
        parts = _escaped(" · ".join(turn_parts(turn, self.last_folded))).replace("\n", " ")
        self.out.write(f"- ↻ *{turn_label(turn)}* · {parts}\n")
        if turn.printed:
            lines = printed_lines(turn)
            fence = _fence("\n".join(lines))
            self.out.write(f"\n  {fence}\n" + "".join("  " + ln + "\n" for ln in lines))
            self.out.write(f"  {fence}\n")
        self.list_open = True
        self.last_folded = turn

    def loop(self, summary: LoopSummary) -> None:
        """When a loop ends: its turns and a row per tensor it changed."""
        w = self.out.write
        self.last_folded = None
        if self.list_open:
            w("\n")
            self.list_open = False
        w(f"**⟲ {loop_heading(summary)}**\n\n")
        changed = module_evolutions(summary_rows(self.options.watched_only(summary.changed())), self.options)
        rows = [(name, module_parts(evolution_parts(ev, 40), count)) for name, ev, count in changed]
        rows = [(name, parts) for name, parts in rows if parts] + [
            (n, [w]) for n, w in unlisted_rows(self.options.watched_only(summary.unlisted))
        ]
        if rows:
            w("| tensor | how it evolved |\n|---|---|\n")
            for name, parts in rows:
                w(f"| {_code_cell(name)} | " + _cell(" · ".join(parts)) + " |\n")
            w("\n")
        for finding in summary.findings.values():
            if not self.options.watch or any(self.options.watches(t) for t in finding.tensors):
                w(f"⚠ {_prose(finding.text(summary.iterations))}\n\n")

    def rejected(self, info: RunInfo, line: int, column: int, message: str) -> None:
        """Refusal notice (no heading: nothing ran)."""
        self.out.write(f"**Refused** at line {line}, column {column}: {_prose(message)}\n")

    def end(self, summary: RunSummary, flow: StepFlow | None = None) -> None:
        """Closing line, and what folding and --watch left out."""
        steps = plural(summary.steps, "step")
        self.out.write(("\n" if self.list_open else "") + "---\n\n")
        self.out.write(f"{steps}, {error_counts(summary)}\n")
        for line in flow.footnotes() if flow is not None else ():
            self.out.write(f"\n{line}\n")
