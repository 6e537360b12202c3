"""Rendering of ``tcopy compare`` results: a Rich table, JSON Lines or Markdown.

Every answer is a plain word whose colour says what it means for ``x``: tied to x
(shared memory, same object, writes visible), independent of x (new memory, own
counter), in the graph (gradients flow) or cut from it (blocked), and the one that
matters most, SILENT (autograd computes gradients from changed values without an error).

The terminal layout is the widest one that fits without breaking a word: one row per
expression when the questions fit as columns, else the questions as rows and the
expressions as columns (those with the same answers in one), in as few blocks as the width
needs, filled as evenly as fits. A block too wide for the width breaks the header of a long
expression alone in its column before its dots (``torch`` ``.empty_like(x)`` ``.copy_(x)``), no
taller than the block's stacked headers, and then parts its columns by one space instead of two.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import TextIO

from rich import box
from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from tcopy_cli.render import in_colour
from tcopy_cli.render.jsonl import comparison_json, dumps
from tcopy_cli.render.trim import Trimmed
from tcopy_cli.trace.compare import Comparison

# What an answer means, and its colour.
TIED = "yellow"  # y and x are one: memory, object, counter or writes shared
OWN = "cyan"  # y is independent of x
FLOWS = "green"  # in the graph: gradients reach x
CUT = "blue"  # cut from the graph
DETECTED = "green"
SILENT = "bold red"
PLAIN = ""
NOT_APPLICABLE = "dim"


@dataclass(frozen=True)
class Question:
    """One measured fact: its label, the Comparison field, and the word and colour for each answer."""

    label: str
    key: str
    yes: tuple[str, str] = ("", PLAIN)
    no: tuple[str, str] = ("", PLAIN)


QUESTIONS: list[Question] = [
    Question("object", "new_object", ("new", OWN), ("same object", TIED)),
    Question("memory", "shares_storage", ("shared", TIED), ("new", OWN)),
    Question("data_ptr", "same_data_ptr", ("same", TIED), ("different", OWN)),
    Question("version counter", "shares_version_counter", ("shared", TIED), ("own", OWN)),
    Question("requires_grad", "requires_grad", ("yes", FLOWS), ("no", CUT)),
    Question("leaf", "is_leaf", ("leaf", PLAIN), ("non-leaf", PLAIN)),
    Question("grad_fn", "grad_fn"),
    Question("grad reaches x", "grad_flows_to_source", ("flows", FLOWS), ("blocked", CUT)),
    Question("in-place shows in x", "inplace_visible_in_source", ("visible", TIED), ("not visible", OWN)),
    Question("autograd notices", "autograd_detects_inplace", ("detected", DETECTED), ("SILENT", SILENT)),
]

FOOTNOTE = (
    "Each answer comes from a fresh run. 'grad reaches x': y.sum().backward(); 'in-place shows in x': adds 1 to y "
    "in place; 'autograd notices': the same after z = (x * x).sum() saved x, then z.backward() (SILENT: no error, "
    "yet the gradients use the changed values; n/a: the write does not reach x). "
    "Colours: yellow = tied to x, cyan = independent of x, green = in the graph, blue = cut from it."
)


def answer(c: Comparison, q: Question) -> tuple[str, str]:
    """(word, style) for one question about one expression."""
    if c.error is not None:
        return ("error", "bold red") if q is QUESTIONS[0] else ("-", NOT_APPLICABLE)
    value = getattr(c, q.key)
    if q.key == "grad_fn":
        return (value, "magenta") if value else ("-", NOT_APPLICABLE)
    if value is None:
        return ("n/a", NOT_APPLICABLE)
    return q.yes if value else q.no


def render_table(console: Console, rows: list[Comparison], setup: str, device: str) -> None:
    """The comparison in the layout that fits ``console.width``, then warnings, errors and how it was measured."""
    parts: list[RenderableType] = [
        Text.assemble(("Source on ", "bold"), (device, "bold"), (": ", "bold"), setup.replace("\n", "; ")),
        Text(""),
    ]
    wide = _by_expression(console, rows)
    parts.extend([wide, Text("")] if wide is not None else _by_question(console, rows))
    warned: dict[str, list[str]] = {}  # a warning once, after every expression that gave it
    for c in rows:
        if c.error is not None:
            message = c.error["message"].splitlines()[0] if c.error["message"] else ""
            parts.append(Padding(Text(f"{c.expression}: {c.error['type']}: {message}", style="red"), (0, 0, 0, 2)))
        for w in c.warnings:
            warned.setdefault(w, []).append(c.expression)
    for w, expressions in _merged(warned).items():
        parts.append(Padding(Text(f"{', '.join(expressions)}: warning: {w}", style="yellow"), (0, 0, 0, 2)))
    # the colours' key only where there are colours
    parts.append(Text(FOOTNOTE if in_colour(console) else FOOTNOTE.split(" Colours:")[0], style="dim"))
    console.print(Trimmed(Group(*parts)))


def _merged(warned: dict[str, list[str]]) -> dict[str, list[str]]:
    """Warnings that differ in one word only (``... rather than tensor.new_tensor(sourceTensor).``,
    ``... rather than torch.tensor(sourceTensor).``) as one, that word written ``a / b`` in the
    order of the expressions that gave them."""
    out: dict[str, list[str]] = {}
    words: dict[str, list[str]] = {}  # a merged text -> the words of its first warning
    alike: dict[str, list[list[str]]] = {}
    for w, expressions in warned.items():
        mine = w.split(" ")
        for text, first in words.items():
            differ = [i for i, (a, b) in enumerate(zip(first, mine)) if a != b]
            if len(first) == len(mine) and len(differ) == 1:
                alike[text].append(mine)
                out[text] += expressions
                break
        else:
            words[w], alike[w], out[w] = mine, [mine], list(expressions)
    merged: dict[str, list[str]] = {}
    for text, expressions in out.items():
        group = alike[text]
        if len(group) > 1:
            at = next(i for i, ws in enumerate(zip(*group)) if len(set(ws)) > 1)
            ends = [g[at] for g in group]
            tail = ""  # the punctuation they end in alike (``tensor(sourceTensor).``): once, after them
            while all(e[-1:] == ends[0][-1:] and e[-1:] in ".,;:" for e in ends) and ends[0]:
                tail, ends = ends[0][-1] + tail, [e[:-1] for e in ends]
            word = " / ".join(dict.fromkeys(ends)) + tail
            text = " ".join([*group[0][:at], word, *group[0][at + 1 :]])
        merged[text] = expressions
    return merged


def _natural_width(console: Console, table: Table) -> int:
    """Columns the table takes when nothing constrains it."""
    lines = console.render_lines(table, console.options.update_width(10_000), pad=False)
    return max((Segment.get_line_length(line) for line in lines), default=0)


def _longest_word(text: str) -> int:
    return max((len(w) for w in text.split()), default=0)


def _table(first_header: str) -> Table:
    table = Table(box=box.SIMPLE_HEAD, header_style="bold", pad_edge=False, show_edge=False, padding=(0, 1))
    table.add_column(first_header, no_wrap=True, style="bold cyan")
    return table


def _by_expression(console: Console, rows: list[Comparison]) -> Table | None:
    """One row per expression, a column per question, or None if that can't fit the console.

    Headers wrap between words; spare columns go to the headers that need the fewest
    to fit on one line.
    """
    widths = [max(_longest_word(q.label), *(len(answer(c, q)[0]) for c in rows)) for q in QUESTIONS]
    spare = console.width - _natural_width(console, _expression_rows(rows, widths))
    if spare < 0:
        return None
    for i in sorted(range(len(QUESTIONS)), key=lambda i: len(QUESTIONS[i].label) - widths[i]):
        extra = len(QUESTIONS[i].label) - widths[i]
        if 0 < extra <= spare:
            widths[i] += extra
            spare -= extra
    return _expression_rows(rows, widths)


def _expression_rows(rows: list[Comparison], widths: list[int]) -> Table:
    table = _table("y =")
    for q, width in zip(QUESTIONS, widths):
        table.add_column(q.label, width=width)  # every answer fits; a header wraps between its words
    for c in rows:
        table.add_row(c.expression, *(Text(*answer(c, q)) for q in QUESTIONS))
    return table


def _by_question(console: Console, rows: list[Comparison]) -> list[RenderableType]:
    """The questions as rows and the expressions as columns, in as few blocks as fit the console,
    each about as full as the others. Expressions with the same answers share a column (their
    names one under another)."""
    columns: dict[tuple[tuple[str, str], ...], list[Comparison]] = {}
    for c in rows:
        columns.setdefault(tuple(answer(c, q) for q in QUESTIONS), []).append(c)
    groups = list(columns.values())
    fits = [_natural_width(console, _question_rows([g])) <= console.width for g in groups]
    out: list[RenderableType] = []
    for table in _balanced(console, [g for g, ok in zip(groups, fits) if ok]):
        out.extend([table, Text("")])
    for group, ok in zip(groups, fits):
        if not ok:  # one expression too long for a header
            out.append(Text("y = " + ", ".join(c.expression for c in group), style="bold cyan"))
            out.extend([_question_rows([group], headers=False), Text("")])
    return out


def _balanced(console: Console, groups: list[list[Comparison]]) -> list[Table]:
    """``groups`` in order, in the fewest blocks that fit the console, as even as can be; where a
    block is too wide, its one-expression headers first break at their dots (no taller than the
    block's stacked headers), then one space parts the columns instead of two."""
    for count in range(1, len(groups) + 1):
        for sizes in _splits(len(groups), count):
            starts = [sum(sizes[:i]) for i in range(count)]
            tables = [_fitting(console, groups[a : a + n]) for a, n in zip(starts, sizes)]
            if all(t is not None for t in tables):
                return [t for t in tables if t is not None]
    return [_question_rows([g]) for g in groups]


def _splits(total: int, count: int) -> list[list[int]]:
    """The sizes of ``count`` blocks of ``total`` columns in order, the evenest first (the
    even split as ``-(-total // count)`` a block, then the others by their spread)."""
    size = -(-total // count)
    even = [min(size, total - i * size) for i in range(count)]
    if count > 4 or total > 16:  # past a screen's blocks: the even split only
        return [even] if all(n > 0 for n in even) else []
    out = [list(c) for c in itertools.product(range(1, total + 1), repeat=count) if sum(c) == total]
    out.sort(key=lambda sizes: (sizes != even, max(sizes) - min(sizes)))
    return out


def _fitting(console: Console, block: list[list[Comparison]]) -> Table | None:
    """The block's table in the first way that fits the console: as it is, with its headers broken
    at their dots, then with one space between columns; None where none does."""
    for split, tight in ((False, False), (True, False), (True, True)):
        table = _question_rows(block, split=split, tight=tight)
        if _natural_width(console, table) <= console.width:
            return table
    return None


_DOT = re.compile(r"(?<=[\w)\]])\.(?=[A-Za-z_])")


def _tokens(expression: str) -> list[str]:
    """``expression`` cut at the dots outside brackets: ``torch`` ``.`` ``empty_like(x)`` ``.`` ``copy_(x)``."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(expression):
        depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(ch, 0)
        if ch == "." and depth == 0 and _DOT.match(expression, i):
            out += [expression[start:i], "."]
            start = i + 1
    return [t for t in [*out, expression[start:]] if t]


def _broken(expression: str, lines: int) -> str:
    """``expression`` in at most ``lines`` lines, broken at its dots (``copy.`` ``deepcopy(x)``;
    ``torch`` ``.empty_like(x)`` ``.copy_(x)``), as narrow as can be (the dot leading a line
    where that is as narrow); a name is never broken inside."""
    tokens = _tokens(expression)
    best: tuple[int, int, list[str]] = (len(expression), 0, [expression])
    for k in range(1, min(lines, len(tokens))):
        for cuts in itertools.combinations(range(1, len(tokens)), k):
            bounds = [0, *cuts, len(tokens)]
            parts = ["".join(tokens[a:b]) for a, b in itertools.pairwise(bounds)]
            trailing = sum(p.endswith(".") for p in parts)
            if (max(map(len, parts)), trailing) < best[:2]:
                best = (max(map(len, parts)), trailing, parts)
    return "\n".join(best[2])


def _header(group: list[Comparison], lines: int = 1) -> str:
    """A column's expressions, one a line (a name is never broken); one expression alone may
    break before its dots into up to ``lines`` lines."""
    if len(group) == 1:
        return _broken(group[0].expression, lines)
    return "\n".join(c.expression for c in group)


def _question_rows(
    block: list[list[Comparison]], headers: bool = True, split: bool = False, tight: bool = False
) -> Table:
    table = _table("y =")
    table.show_header = headers
    if tight:  # the box still parts columns by one space; the labels keep two after them
        table.padding = (0, 0, 0, 0)
        table.columns[0].min_width = max(len(q.label) for q in QUESTIONS) + 1
    tall = max(len(group) for group in block) if split else 1
    for group in block:
        longest = max(len(answer(group[0], q)[0]) for q in QUESTIONS)
        table.add_column(_header(group, tall if len(group[0].expression) > longest else 1), no_wrap=True)
    for q in QUESTIONS:
        table.add_row(q.label, *(Text(*answer(group[0], q)) for group in block))
    return table


def render_json(out: TextIO, rows: list[Comparison]) -> None:
    """One JSON object per expression."""
    for c in rows:
        out.write(dumps(comparison_json(c)) + "\n")


def render_markdown(out: TextIO, rows: list[Comparison], setup: str, device: str) -> None:
    """A GitHub table, one row per expression; SILENT in bold."""
    out.write(f"Source: `{setup.replace(chr(10), '; ')}` · device `{device}`\n\n")
    out.write("| y = | " + " | ".join(q.label for q in QUESTIONS) + " |\n")
    out.write("|---|" + "|".join("---" for _ in QUESTIONS) + "|\n")
    for c in rows:
        cells = []
        for q in QUESTIONS:
            word, style = answer(c, q)
            cells.append(f"**{word}**" if style in (SILENT, "bold red") else word)
        out.write(f"| `{c.expression}` | " + " | ".join(cells) + " |\n")
    out.write("\n")
    for c in rows:
        if c.error is not None:
            out.write(f"- `{c.expression}`: **{c.error['type']}**: {c.error['message'].splitlines()[0]}\n")
        for w in c.warnings:
            out.write(f"- `{c.expression}`: warning: {w}\n")
    out.write(f"\n{FOOTNOTE.split(' Colours:')[0]}\n")
