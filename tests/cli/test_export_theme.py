"""Exported pictures keep apart the colours tcopy's legends name."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from tcopy_cli.cli.present import export


@pytest.mark.parametrize("suffix", [".svg", ".html"])
def test_blue_and_cyan_are_two_colours_in_an_export(tmp_path: Path, suffix: str) -> None:
    console = Console(file=io.StringIO(), record=True, force_terminal=True, color_system="truecolor", width=40)
    console.print("[cyan]independent[/] [blue]cut[/] [yellow]tied[/] [green]graph[/]")
    path = tmp_path / f"legend{suffix}"
    export(console, path, "legend")
    text = path.read_text()

    def colour(word: str) -> tuple[int, ...]:
        # the fill (SVG) or colour (HTML) of the class the word is drawn with
        found = re.search(rf'class="([^"]+)"[^>]*>{word}<', text)
        assert found is not None, text
        rule = re.search(rf"\.{re.escape(found[1].split()[-1])}\s*{{[^}}]*?(?:fill|color):\s*#([0-9a-f]{{6}})", text)
        assert rule is not None, text
        return tuple(int(rule[1][i : i + 2], 16) for i in (0, 2, 4))

    blue, cyan = colour("cut"), colour("independent")
    assert sum(abs(a - b) for a, b in zip(blue, cyan)) > 100, (blue, cyan)  # 112 here; 32 in Rich's SVG theme
