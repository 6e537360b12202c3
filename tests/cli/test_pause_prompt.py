"""The --pause prompt's text: what it names, and that it never fills the line."""

from __future__ import annotations

import pytest
from rich.cells import cell_len

from tcopy_cli.cli.present import prompt_text


def test_at_the_newest_stop_the_prompt_names_the_step_and_no_total() -> None:
    text = prompt_text(4, 5, 200, "step 9")
    assert text.startswith("── step 9 · →/Space/Enter: next")
    assert "of" not in text.split("·")[0]  # the steps still to come are not known


def test_gone_back_the_prompt_says_how_far() -> None:
    assert prompt_text(1, 5, 200, "step 3").startswith("── step 3 (back: stop 2 of 5) · ")
    assert prompt_text(1, 5, 60, "loop at line 4").startswith("── loop at line 4 (2/5) · ")


@pytest.mark.parametrize("width", [20, 40, 60, 80, 100])
def test_the_prompt_is_narrower_than_the_terminal(width: int) -> None:
    for at, shown in ((0, 1), (2, 9), (8, 9)):
        assert cell_len(prompt_text(at, shown, width, "step 1234")) < width
