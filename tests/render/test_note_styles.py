"""Renderers style notes by their severity and show an error's 'why' only when tcopy knows one."""

from __future__ import annotations

import io
from dataclasses import replace

from rich.console import Console, Group
from rich.padding import Padding
from rich.text import Text

from tcopy_cli.pipeline import run_source
from tcopy_cli.render.markdown import MarkdownRenderer
from tcopy_cli.render.table import TableRenderer
from tcopy_cli.trace.records import Note, Step

LEAF = "a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\n"
NOTES = [
    Note("test.warning", "warning", "gradients will be wrong", ("a",)),
    Note("test.info", "info", "⚠ looks like a warning but is not", ("a",)),
]


def _step(src: str) -> Step:
    return run_source(src).steps[-1]


def _note_texts(step: Step) -> list[Text]:
    trimmed = TableRenderer(Console(width=100, record=True)).render_step(step)
    group = trimmed.inner
    assert isinstance(group, Group)
    return [
        p.renderable
        for p in group.renderables
        if isinstance(p, Padding) and isinstance(p.renderable, Text) and p.renderable.plain.startswith("• ")
    ]


def test_table_styles_notes_by_severity_not_by_text() -> None:
    step = replace(_step(LEAF + "b = a"), explanations=NOTES)
    warning, info = _note_texts(step)
    assert warning.plain == "• ⚠ gradients will be wrong" and warning.style == "bold yellow"
    assert info.plain == "• ⚠ looks like a warning but is not" and info.style == "cyan"


def test_markdown_marks_warnings() -> None:
    out = io.StringIO()
    MarkdownRenderer(out).step(replace(_step(LEAF + "b = a"), explanations=NOTES))
    assert "- **⚠ gradients will be wrong**\n" in out.getvalue()
    assert "- ⚠ looks like a warning but is not\n" in out.getvalue()


def _why(step: Step) -> tuple[str, str]:
    out = io.StringIO()
    MarkdownRenderer(out).step(step)
    console = Console(width=200, record=True)
    console.print(TableRenderer(console).render_step(step))
    return out.getvalue(), console.export_text()


def test_unknown_errors_get_no_why() -> None:
    step = _step("a = torch.ones(2)\nb = torch.linalg.inv(a)")
    assert step.error is not None and not step.error.explained
    markdown, table = _why(step)
    assert "at least 2 dimensions" in markdown and "at least 2 dimensions" in table
    assert "no further explanation" not in markdown and "no further explanation" not in table
    assert "why:" not in table


def test_known_errors_get_their_why() -> None:
    step = _step(LEAF + "a.add_(1)")
    assert step.error is not None and step.error.explained
    markdown, table = _why(step)
    assert "> a.add_(1) on line 2 writes into a, a leaf" in markdown
    assert "why: a.add_(1) on line 2 writes into a, a leaf" in table
