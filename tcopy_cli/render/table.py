"""Rich tables: a header, the statement, a row per tensor, then prints, warnings, notes."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.rule import Rule
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from tcopy_cli.render import ViewOptions, error_counts, in_colour, plural, source_label
from tcopy_cli.render.alike import alike, joined
from tcopy_cli.render.cells import Before, Quiet, Row, removed_names, step_rows
from tcopy_cli.render.folding import ALWAYS_NEW, UNCHANGED_FOLD, FoldedTurn, SeenRows, StepFlow, alias_clauses
from tcopy_cli.render.graph import graph_tree
from tcopy_cli.render.grid import BOX, HEADER_STYLE, Cell, StepGrid
from tcopy_cli.render.layout import FOLDING, Forms, cell, held_text, plan, short_module_values
from tcopy_cli.render.loops import LoopSummary, evolution_parts, hanging, loop_heading, summary_rows, unlisted_rows
from tcopy_cli.render.memory import memory_map, memory_signature
from tcopy_cli.render.modules import module_evolutions, module_parts, module_phrases, view_rows, whole_modules
from tcopy_cli.render.names import grouped_names, index_runs, short_names, unlisted_text
from tcopy_cli.render.notegroups import template
from tcopy_cli.render.trim import Trimmed
from tcopy_cli.render.turnline import printed_lines, turn_label, turn_parts
from tcopy_cli.render.where import where_parts
from tcopy_cli.render.written import module_aliases, written
from tcopy_cli.trace.records import TRUSTED_HEADER, Note, RunInfo, RunSummary, Step, TensorRecord

NOTE_STYLES = {"info": "cyan", "warning": "bold yellow"}


class TableRenderer:
    """Writes each step to a Rich console as it arrives."""

    def __init__(self, console: Console, options: ViewOptions | None = None) -> None:
        self.console = console
        self.options = options or ViewOptions()
        self.before: Before[Step] = Before()
        self.device = "cpu"
        self.graph_signature: tuple[object, ...] | None = None
        self.level = 0  # columns given up so far (see layout.plan)
        self.memory_signature: tuple[object, ...] | None = None
        self.shown = 0  # steps drawn (fewer than run under --step/--from/--to/--depth)
        self.tables = 0  # step tables drawn
        self.seen = SeenRows()
        self.forms = Forms()  # the form each tensor's values and grad were drawn in last
        self.last_folded: FoldedTurn | None = None  # the folded turn drawn last, if nothing came after it
        self.latest: Step | None = None  # the step taken in last, shown or not (what modules there are)
        self.one_line: tuple[tuple[object, ...], Text] | None = None  # the last step drawn in one line: what it says
        self.repeat: tuple[tuple[object, ...], Text, list[int]] | None = None  # and the steps that said it again
        self.held: FoldedTurn | None = None  # a folded turn's line not drawn yet: the next may read alike
        self.told: dict[tuple[object, ...], int] = {}  # (line, loops' lines, note kind) -> the step that told it
        self.lines: dict[tuple[int, tuple[int, ...]], tuple[int, bool]] = {}  # (line, loops' lines) -> (step, a table?)
        self.forms_seen: dict[str, tuple[tuple[int, ...], str]] = {}  # name -> (shape, dtype) a table drew it with

    def start(self, info: RunInfo) -> None:
        """The line above the first step."""
        self.device = info.device
        self.console.print(
            Trimmed(
                Text.assemble(
                    ("tcopy ", "bold"),
                    (info.tcopy, ""),
                    " · torch ",
                    info.torch,
                    " · device ",
                    (info.device, "bold"),
                    " · ",
                    (source_label(info.source), "italic"),
                )
            )
        )
        if info.title:
            self.console.print(Trimmed(Text(info.title, style="bold")))
        if info.trusted:
            self.console.print(Trimmed(Text(TRUSTED_HEADER, style="bold yellow")))
        confined = not info.confinement.startswith("none")
        self.console.print(
            Trimmed(
                Text.assemble(
                    ("confinement ", "dim"),
                    (info.confinement, "dim" if confined else "bold yellow"),
                    (info.reads, "dim"),
                )
            )
        )
        for fact in info.degraded:
            self.console.print(Trimmed(Text(f"degraded: {fact}", style="yellow")))

    def step(self, step: Step, shown: bool = True) -> None:
        """Render one step (a hidden step still counts for change marks).

        A step told in one line that says what the one line before it said (the same statement at
        the same place, nothing changed: ``block()`` called ten times) is not drawn again; one line
        under the first says how many times it came again (``Steps 7–15 · ... · 9 more times``)."""
        if shown:
            drawn = self.render_step(step)
            again = self.one_line is not None and self.repeat is not None and self.one_line[0] == self.repeat[0]
            if again and self.options.fold and self.repeat is not None:
                self.repeat[2].append(step.index)
            else:
                self.flush()
                self.console.print(drawn, crop=False)
                self.repeat = (self.one_line[0], self.one_line[1], []) if self.one_line is not None else None
            self.shown += 1
            self.last_folded = None
        self.before.add(step.depth, step)
        self.latest = step

    def flush(self) -> None:
        """The folded turn's line held back, and the line for the one-line steps that said again
        what the one before them said."""
        if self.held is not None:
            held, self.held = self.held, None
            self._folded(held)
        if self.repeat is None or not self.repeat[2]:
            self.repeat = None
            return
        _, title, again = self.repeat
        self.repeat = None
        first, last = again[0], again[-1]
        span = f"Steps {first}–{last}" if last > first else f"Step {first}"
        times = f" · {len(again)} more time{'s' if len(again) > 1 else ''}"
        for words in (title.plain, title.plain.partition(" · in ")[0]):
            text = Text.assemble((span, "bold"), " · ", words, (" again", "dim"), (times, "dim"))
            if text.cell_len + 4 <= self.console.width:
                break
        self.console.print(Trimmed(Rule(text, **RULE)), crop=False)

    def forget(self) -> None:
        """Start over: the next step compares with nothing, so every tensor in it is new."""
        self.before.clear()

    def render_step(self, step: Step, fresh: bool = False) -> RenderableType:
        """The renderable for a step (used by export and tests too).

        ``fresh`` shows every tensor as it is, without change marks against the step before.
        """
        previous = None if fresh else self.before.of(step.depth)
        parts: list[RenderableType] = []
        for line in step.narration:
            parts.append(Text(line, style="italic cyan"))
        status = Text(" error", style="bold red") if step.status == "error" else Text("")
        if step.expected:
            status = Text(" expected error", style="bold bright_blue")
        where = Text("".join(" · " + part for part in where_parts(step)), style="magenta")
        rows = view_rows(step_rows(step, previous, self.options.watch, self.options.only_changed), self.options, step)
        gone = removed_names(step, previous)
        quiet = self.seen.quiet(step, rows, gone, self.tables > 0)
        if quiet.one_line is not None:
            # The statement's line in full; where it is too long, the calls without the lines they
            # were called from (``in CNN.__init__()``), then without "· no tensor changed".
            brief = Text("".join(" · " + part for part in where_parts(step, brief=True)), style="magenta")
            unchanged = f" · {self.options.unchanged_text}" if quiet.says_unchanged else ""
            for place, tail in ((where, unchanged), (brief, unchanged), (brief, "")):
                title = Text.assemble(
                    (f"Step {step.index}", "bold"), f" · line {step.line} · ", quiet.one_line, place, (tail, "dim")
                )
                title.expand_tabs()  # as Rule will: a tab is up to 8 cells, not 0
                if title.cell_len + 4 <= self.console.width:
                    break
            graph_moved = (
                self.options.graph
                and step.graph is not None
                and step.graph.roots
                and step.graph.signature() != self.graph_signature
            )
            if quiet.statement and (title.cell_len + 4 > self.console.width or graph_moved):
                quiet = Quiet(None, quiet.told)  # too long for one line, or the graph it changed is shown
        self.one_line = None
        if quiet.one_line is not None:  # class/def/import, a quiet statement: one line (JSON keeps the whole step)
            self.lines.setdefault((step.line, tuple(loop.line for loop in step.loops)), (step.index, False))
            parts.append(Rule(title, **RULE))
            self._notes(parts, step)
            if len(parts) == 1 and step.error is None:
                words = title.plain.partition(" · ")[2]  # the title after "Step N"
                self.one_line = ((step.line, step.depth, words), Text(words))
            return Trimmed(Group(*parts))
        parts.append(Rule(Text.assemble((f"Step {step.index}", "bold"), f" · line {step.line}", where, status), **RULE))
        if in_colour(self.console):
            parts.append(Syntax(step.source, "python", theme="ansi_dark", background_color="default", word_wrap=True))
        else:  # no colour to show: skip building the highlighter
            parts.append(Text(step.source))
        if step.value is not None:  # tcopy repl: the expression's value, under it as Python's REPL shows it
            parts.append(Text(step.value))
        like = None if fresh or not rows or quiet.told else self._as_before(step, rows)
        if like is not None:
            cells = self.seen.cells
            drawn, under = self.seen.fold(rows, step, self.options, fresh)
            if len(drawn) >= UNCHANGED_FOLD:  # a small table stays whole, as with unchanged rows
                self.seen.cells = cells  # not drawn: later tables are held against the one drawn last
                parts.append(Padding(Text(like, style="dim"), (0, 0, 0, 2)))
            else:
                parts.append(self._table(drawn))
                parts += [Padding(Text(line, style="dim"), (0, 0, 0, 2)) for line in under]
                self._drew(step, rows)
        elif rows and not quiet.told:
            drawn, under = self.seen.fold(rows, step, self.options, fresh)
            parts.append(self._table(drawn))
            parts += [Padding(Text(line, style="dim"), (0, 0, 0, 2)) for line in under]
            self._drew(step, rows)
        elif (self.options.only_changed or quiet.told) and (step.tensors or step.arrays):
            parts.append(Text(f"  ({self.options.unchanged_text})", style="dim"))
        if gone:
            parts.append(Text("  removed: " + ", ".join(index_runs(gone)), style="dim"))
        if unlisted := self.options.watched_only(step.unlisted):
            parts.append(Padding(Text(unlisted_text(unlisted), style="dim"), (0, 0, 0, 2)))
        if step.hooks:
            parts.append(Text("  torch called back: " + ", ".join(step.hooks), style="dim"))
        if step.stdout:
            parts.append(Text("  printed:", style="bold"))
            for line in step.stdout.rstrip("\n").split("\n"):
                parts.append(Text("  │ " + line))
        self._notes(parts, step)
        if self.options.memory:
            memory = memory_signature(step)
            if memory != self.memory_signature:  # drawn again only when something in it changed
                parts.append(memory_map(step, self.console.width))
            self.memory_signature = memory
        if self.options.graph and step.graph is not None and step.graph.roots:
            sig = step.graph.signature()
            if sig != self.graph_signature:
                parts.append(Text("  autograd graph:", style="bold"))
                for tree in graph_tree(step.graph):
                    parts.append(Padding(tree, (0, 0, 0, 2)))
            self.graph_signature = sig
        if step.error is not None:
            err = step.error
            # An error the line's "# expect: NAME" named is the intended outcome, not a failure.
            head, color = ("expected ", "bright_blue") if step.expected else ("✗ ", "red")
            parts.append(
                Padding(Text.assemble((head + err.type + ": ", "bold " + color), (err.message, color)), (0, 0, 0, 2))
            )
            if self.options.explain and err.explained:
                parts.append(Padding(Text("why: " + err.explanation, style="magenta"), (0, 0, 0, 4)))
        parts.append(Text(""))
        return Trimmed(Group(*parts))

    def _drew(self, step: Step, rows: list[Row]) -> None:
        """A table was drawn for ``step``: its line, and the shape and dtype of each tensor of its rows."""
        self.lines[step.line, tuple(loop.line for loop in step.loops)] = (step.index, True)
        for row in rows:
            for name in row.names:
                record = step.tensors.get(name)
                if record is not None:
                    self.forms_seen[name] = (tuple(record.shape), record.dtype)

    def _as_before(self, step: Step, rows: list[Row]) -> str | None:
        """The line told instead of the table of a later turn's step that only its notes make new:
        ``changed: model.blocks.1.{1,4}.{running_mean,running_var,num_batches_tracked}, h, b (shapes
        as in step 21)``, where the width allows the step; None where the table is drawn.

        A step of a loop whose line ran in an earlier turn (and was drawn there) is shown in full
        for a note that turn did not tell (``h's graph now holds the graph h had ...``); its
        rows read as that turn's did: the same names in the same shapes and dtypes, no name new.
        The notes tell what is new. A table is drawn as ever for a failing step, a warning, a
        note of the kinds told in full every time (``folding.ALWAYS_NEW``), a name new or one
        in a shape or dtype no table drew it in, a step with no note new to its line, a table of
        fewer than ``UNCHANGED_FOLD`` rows once its unchanged rows fold (a small table stays whole:
        ``w``'s grad accumulating, drawn), and with --all-steps, --no-explain or --step/--from/--to."""
        o = self.options
        if not o.fold or not o.explain or o.first is not None or o.last is not None:
            return None
        loops = tuple(loop.line for loop in step.loops)
        earlier = self.lines.get((step.line, loops))
        if earlier is None or not step.loops or step.error is not None or step.warnings:
            return None
        if any(n.severity != "info" or n.kind.startswith(ALWAYS_NEW) for n in step.explanations):
            return None
        if all((step.line, loops, n.kind, _words(n)) in self.told for n in o.shown_notes(step)):
            return None  # no note new to the line: nothing tells what changed
        changed: list[str] = []
        for row in rows:
            if row.new:
                return None
            for name in row.names:
                record = step.tensors.get(name)
                if record is None or self.forms_seen.get(name) != (tuple(record.shape), record.dtype):
                    return None
            if row.changed:
                changed += row.names
        if not changed:
            return None
        index, table = earlier
        told = written(changed, step.tensors)
        line = f"changed: {grouped_names(told)}"
        where = f" (shapes as in step {index})" if table else ""
        return line + where if len(line + where) + 2 <= self.console.width else line

    def _notes(self, parts: list[RenderableType], step: Step) -> None:
        """Warnings, then the notes (unless --no-explain)."""
        for w in step.warnings:
            parts.append(Padding(Text("⚠ warning: " + w, style="yellow"), (0, 0, 0, 2)))
        if self.options.explain:
            notes = self.options.shown_notes(step)
            again = self._told_again(step, notes)
            for note in notes:
                if id(note) in again:
                    continue
                style = NOTE_STYLES[note.severity]
                line = module_phrases(note.line, step.tensors) if self.options.fold else note.line
                parts.append(Padding(Text("• " + line, style=style), (0, 0, 0, 2)))
            if again:
                parts.append(
                    Padding(Text("• " + again_line(step, notes, again, self.options.flags), style="dim"), (0, 0, 0, 2))
                )

    def _told_again(self, step: Step, notes: list[Note]) -> dict[int, int]:
        """The notes of a later turn of a loop that a step of an earlier turn told for the same
        line (a note of the same kind: the same words about this turn's tensors), by id, with
        that step's index: said in one line (``again_line``). Warnings and notes of the kinds that
        show a turn in full every time (``folding.ALWAYS_NEW``) are always told in full;
        nothing is left out with --all-steps."""
        again: dict[int, int] = {}
        loops = tuple(loop.line for loop in step.loops)
        for note in notes:
            key = (step.line, loops, note.kind, _words(note))
            told = self.told.setdefault(key, step.index)
            always = note.severity != "info" or note.kind.startswith(ALWAYS_NEW)  # wrong or failing gradients
            if self.options.fold and loops and told != step.index and not always:
                again[id(note)] = told
        return again

    def render_state(self, step: Step) -> RenderableType:
        """Every tensor as ``step`` left it, with no change marks (the REPL's ``:vars``)."""
        rows = view_rows(step_rows(step, step, self.options.watch), self.options, step)
        if not rows:
            return Text("(no tensors)", style="dim")
        return Trimmed(Group(Text(f"after step {step.index} · line {step.line}", style="dim"), self._table(rows)))

    def folded(self, turn: FoldedTurn) -> None:
        """A later turn of a loop, or a range of them, in one line (what they printed under it);
        held back until the next comes, which goes on the same line where it reads alike
        (``alike``: ``model.blocks.{2…9}.{1,4}.num_batches_tracked each 0 → 1``)."""
        if self.held is not None and self.options.fold and alike(self.held, turn):
            self.held = joined(self.held, turn)
            return
        self.flush()
        self.held = turn

    def _known(self) -> tuple[dict[str, TensorRecord], dict[str, str]]:
        """The last step's tensors, by which folded lines and loop summaries name whole modules, and
        their module tensors under a second module's names (``module_aliases``; none with --watch)."""
        known = self.latest.tensors if self.latest is not None and self.options.fold else {}
        return known, module_aliases(known) if not self.options.watch else {}

    def _folded(self, turn: FoldedTurn) -> None:
        text = Text.assemble(("↻ ", "dim"), (turn_label(turn), "magenta"))
        known, aliases = self._known()
        if aliases:  # a module's tensors under a second module's names: by the first names only
            turn = replace(
                turn,
                scalars=[s for s in turn.scalars if s[0] not in aliases],
                versions=[n for n in turn.versions if n not in aliases],
                grads=[n for n in turn.grads if n not in aliases],
            )
        for part in turn_parts(turn, self.last_folded, lambda names: written(names, known)):
            text.append(" · ", style="dim")
            text.append(part)
        self.last_folded = turn
        self.console.print(Trimmed(Padding(text, (0, 0, 0, 2))))
        for line in printed_lines(turn):
            self.console.print(Trimmed(Text("    │ " + line, style="dim")))

    def loop(self, summary: LoopSummary) -> None:
        """When a loop ends: its turns, and how each tensor it changed evolved."""
        self.flush()
        self.last_folded = None
        rows = summary_rows(self.options.watched_only(summary.changed()))
        known, aliases = self._known()
        also = [(name, aliases[name]) for name, _ in rows if name in aliases]  # told on one line
        changed = module_evolutions([(n, ev) for n, ev in rows if n not in aliases], self.options)
        out: list[RenderableType] = [Text.assemble(("  ⟲ ", "dim"), (loop_heading(summary), "bold"))]
        width = max((len(n) for n, _, _ in changed), default=0)
        # The sparkline takes what the longest "first → last (min, max)" (and "· 30 added") leaves of the line.
        after = max((len(" · ".join(evolution_parts(ev, 0)[1:])) + 1 for _, ev, _ in changed if ev.scalar), default=0)
        spark = max(8, min(50, self.console.width - 4 - width - 2 - after))
        for name, ev, count in changed:
            parts = module_parts(evolution_parts(ev, spark), count)
            if parts:
                rest = [(" " if ev.scalar and i == 1 else " · ") + p for i, p in enumerate(parts) if i]
                out.append(hanging(Text(f"    {name:<{width}}  "), Text.assemble((parts[0], "cyan"), *rest)))
        for name, words in unlisted_rows(self.options.watched_only(summary.unlisted)):
            out.append(hanging(Text(f"    {name:<{width}}  "), Text(words, "dim")))
        if also:
            clauses = alias_clauses(also, {"tensors": set(known)})
            out.append(Text("    also named: " + "; ".join(clauses), style="dim"))
        for finding in summary.findings.values():
            if not self.options.watch or any(self.options.watches(t) for t in finding.tensors):
                out.append(hanging(Text("    ⚠ ", "bold yellow"), Text(finding.text(summary.iterations))))
        out.append(Text(""))
        self.console.print(Trimmed(Group(*out)))

    def _table(self, rows: list[Row]) -> StepGrid:
        show_device = {r.cells["device"] for r in rows} != {self.device}
        layout, self.level = plan(rows, self.console.width, show_device, self.level, held=self.forms.held(rows))
        self.forms.drawn(rows, layout.widths)
        self.tables += 1
        headers = ["", *(c.header for c in layout.columns)]
        widths = [1, *(layout.widths[c.key] for c in layout.columns)]
        body: list[list[Cell]] = []
        named, room = [r.cells["name"] for r in rows], layout.widths["name"]
        names = short_names(named, room, chars=False) or short_names(named, room) or {}
        held = short_module_values(rows, layout.widths.get("values", 0))  # every module row alike
        for row in rows:
            mark = row.marker()
            cells: list[Cell] = [Cell(mark, "bold green" if mark == "+" else "bold yellow")]
            for c in layout.columns:
                text = names.get(row.cells["name"]) if c.key == "name" else None
                if c.key == "values" and held and row.members:
                    text = held_text(row.cells["values"])
                cells.append(cell(row, c.key, layout.widths[c.key], text))
            body.append(cells)

        def rich_table() -> Table:
            table = Table(
                box=BOX,
                pad_edge=False,
                show_edge=False,
                header_style=HEADER_STYLE,
                padding=(0, 0),
            )
            # Too narrow for the columns (under about 60): Rich squeezes every column, a 1-wide
            # one to nothing, so the mark starts the first column's cells instead.
            squeezed = not grid.fits(self.console.width)
            if not squeezed:
                table.add_column("", width=1, no_wrap=True)
            for i, c in enumerate(layout.columns):
                width = layout.widths[c.key] + (2 if squeezed and i == 0 else 0)
                table.add_column(c.header, width=width, no_wrap=c.key not in FOLDING, overflow="fold")
            for mark, *cells in body:
                texts = [cell.text() for cell in cells]
                if squeezed:
                    texts[0] = Text.assemble(mark.text(), " ", texts[0])
                else:
                    texts.insert(0, mark.text())
                table.add_row(*texts)
            return table

        folding = [False, *(c.key in FOLDING for c in layout.columns)]
        grid = StepGrid(headers, widths, folding, body, rich_table)
        return grid

    def rejected(self, info: RunInfo, line: int, column: int, message: str) -> None:
        """Nothing on stdout: the command line shows the refused line with a caret on stderr."""

    def end(self, summary: RunSummary, flow: StepFlow | None = None) -> None:
        """The closing line, and what folding and --watch left out."""
        self.flush()
        style = "green" if summary.status == "ok" else "red"
        o = self.options
        hidden = self.shown < summary.steps and (o.first, o.last, o.depth) != (None, None, None)
        shown = f"{self.shown} of " if hidden else ""
        self.console.print(
            Text(
                f"{shown}{plural(summary.steps, 'step')}{' shown' if hidden else ''}, {error_counts(summary)}",
                style=style,
            )
        )
        for line in flow.footnotes() if flow is not None else ():
            self.console.print(Text(line, style="dim"))


_NUMBER = re.compile(r"-?\d[\d.,]*(?:e[+-]?\d+)?")


def _words(note: Note) -> tuple[str, ...]:
    """A note's words with its tensors' names (and labels) and its numbers left out (its
    ``notegroups.template`` pieces): two notes that read so alike say the same of other tensors
    or other values (``zeroed in place`` and ``zeroed in place again: its values were 0 already``
    do not)."""
    return tuple(_NUMBER.sub("#", piece) for piece in template(note)[0][2])


def again_line(step: Step, notes: list[Note], again: dict[int, int], flags: bool = True) -> str:
    """``5 notes like step 21's, now about h, model.blocks.1, b (--all-steps shows them)``: the
    notes a later turn's step leaves out (``TableRenderer._told_again``)."""
    left = [n for n in notes if id(n) in again]
    named = whole_modules(list(dict.fromkeys(t for n in left for t in n.tensors)), step.tensors)
    steps = sorted(set(again.values()))
    like = f"step {steps[0]}'s" if len(steps) == 1 else "those of steps " + ", ".join(map(str, steps))
    about = f", now about {grouped_names(named)}" if named else ""
    told = "a note" if len(left) == 1 else f"{len(left)} notes"
    hint = f" (--all-steps shows {'it' if len(left) == 1 else 'them'})" if flags else ""
    return f"{told} like {like}{about}{hint}"


RULE: dict[str, Any] = {"align": "left", "style": "dim"}
"""How the line that opens a step is drawn."""
