"""Escape sequences a script prints, raises or writes reach the terminal views as visible text.

A script's own text could otherwise clear the screen, forge tcopy's closing line or set the
window title. The table and Markdown views (and the stderr line) show each control character
as ``\\xNN``; JSON keeps the exact text, which its encoder escapes.
"""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from cli_runs import invoke

from tcopy_cli.printable import printable as visible

pytestmark = pytest.mark.e2e  # through the real command line and worker


SCRIPT = (
    "import torch\n"
    'print("\\x1b[2J\\x1b[H\\x1b[32m3 steps, 0 errors\\x1b[0m\\x1b]0;tcopy: ok\\x07")\n'
    "for i in range(3):\n"
    '    print("\\x9b31m", i)\n'
    "    x = torch.ones(1) * i\n"
    'raise ValueError("\\x1b]0;title\\x07")\n'
)


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_no_control_character_reaches_the_terminal(fmt: str) -> None:
    r = invoke("run", "-e", SCRIPT, "--format", fmt, "--no-color")
    assert r.exit_code == 1
    for text in (r.stdout, r.stderr):
        assert not any((ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F for c in text), repr(text)
    assert "\\x1b[2J\\x1b[H\\x1b[32m3 steps, 0 errors" in r.stdout  # shown, not obeyed
    assert "\\x9b31m 2" in r.stdout  # a folded loop turn's printed line too
    assert "ValueError: \\x1b]0;title\\x07" in r.stderr


def test_json_keeps_the_exact_text() -> None:
    r = invoke("run", "-e", SCRIPT, "--format", "json")
    printed = "".join(e.get("stdout", "") for e in map(json.loads, r.stdout.splitlines()) if e["event"] == "step")
    plain = io.StringIO()
    # what plain Python prints for the same statements
    with contextlib.redirect_stdout(plain), contextlib.suppress(ValueError):
        exec(SCRIPT, {})
    assert printed == plain.getvalue()


def test_visible_keeps_tabs_newlines_and_unicode() -> None:
    assert visible("a\tb\nc · ✓ שלום") == "a\tb\nc · ✓ שלום"
    assert visible("\x00\x07\r\x1b\x7f\x9b") == "\\x00\\x07\\x0d\\x1b\\x7f\\x9b"
    assert visible("a\u202eb\u2066c\u200f") == "a\\u202eb\\u2066c\\u200f"


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_a_bidirectional_control_does_not_reorder_a_line(fmt: str) -> None:
    # A right-to-left override in a string literal would flip the rest of the step's header line.
    script = 'import torch\nx = torch.ones(2)\nn = x.numel() + len("\u202e)(dekcah")\nprint("\u2067ok\u2069")\n'
    r = invoke("run", "-e", script, "--format", fmt, "--no-color", "--width", "120")
    assert r.exit_code == 0, r.output
    assert not any(c in r.stdout for c in "\u202e\u2067\u2069"), r.stdout
    assert "\\u202e)(dekcah" in r.stdout and "\\u2067ok\\u2069" in r.stdout
