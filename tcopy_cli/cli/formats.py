"""The --format choices for a run and the renderer each one makes.

Adding an output format: a renderer module in tcopy_cli/render/ (the ``Renderer``
protocol), then one member and one branch here.
"""

from __future__ import annotations

import sys
from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from tcopy_cli.render import Renderer, ViewOptions


class OutputFormat(str, Enum):
    """--format choices for a run."""

    table = "table"
    json = "json"
    markdown = "markdown"


def make_renderer(fmt: OutputFormat, view: ViewOptions, console: Console) -> Renderer:
    """The renderer for ``fmt`` (tables draw on ``console``; the others write stdout)."""
    if fmt is OutputFormat.json:
        from tcopy_cli.render.jsonl import JsonRenderer

        return JsonRenderer(sys.stdout, view)
    if fmt is OutputFormat.markdown:
        from tcopy_cli.render.markdown import MarkdownRenderer

        return MarkdownRenderer(sys.stdout, view)
    from tcopy_cli.render.table import TableRenderer

    return TableRenderer(console, view)
