"""Markdown output read as a Markdown reader reads it: names and messages arrive as written.

The reader is markdown-it-py (CommonMark with GFM tables and strikethrough), which Rich
itself depends on. Each name and message is checked against what python says for the same
statements.
"""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
import torch
from markdown_it import MarkdownIt
from recorded import run_cli

SCRIPT = """\
d = {"a*b*": torch.ones(2, requires_grad=True), "x|y_": torch.zeros(1), "_k": torch.ones(1)}
d["<b>"] = torch.ones(1)
d["~~s~~"] = torch.ones(1)
d["![i](x)"] = torch.ones(1)
loss_fn = torch.ones(1)
e = {"[l](u)": d["a*b*"] * 2}
n = int("<class 'int'> & *x*")
"""


def _rendered(markdown: str) -> str:
    return MarkdownIt("commonmark").enable("table").enable("strikethrough").render(markdown)


def _cells(page: str) -> list[str]:
    return [html.unescape(c) for c in re.findall(r"<td>(.*?)</td>", page)]


@pytest.fixture(scope="module")
def page() -> str:
    result = run_cli(["run", "-e", SCRIPT, "--format", "markdown"])
    assert result.exit_code == 1, result.output  # the last line raises, as in python
    return _rendered(result.stdout)


def _python() -> tuple[dict[str, Any], str]:
    namespace: dict[str, Any] = {"torch": torch}
    *body, last = SCRIPT.splitlines()
    exec("\n".join(body), namespace)
    try:
        exec(last, namespace)
    except ValueError as exc:
        return namespace, str(exc)
    raise AssertionError("the last line raises in python")


def test_names_arrive_as_python_names_them(page: str) -> None:
    namespace, _ = _python()
    names = [f"d[{k!r}]".replace("'", '"') for k in namespace["d"]] + ['e["[l](u)"]', "loss_fn"]
    cells = _cells(page)
    for name in names:
        assert name in cells, name
    # Nothing in a name became emphasis, a strike, a link or an HTML tag.
    for tag in ("<em>", "<strong>", "<del>", "<a ", "<img", "<b>"):
        assert all(tag not in c for c in re.findall(r"<td>(.*?)</td>", page)), tag


def test_notes_and_errors_keep_their_code_and_their_text(page: str) -> None:
    _, message = _python()
    text = html.unescape(re.sub(r"<(?!/?code)[^>]*>", "", page))
    assert message in text  # the error message word for word: no tag swallowed, no emphasis
    # The note quotes the statement as code and names the dict items as written.
    assert '<code>d["a*b*"] * 2</code>' in html.unescape(page)
    assert 'e["[l](u)"] is a new tensor in the graph' in text
    assert 'sends gradients to d["a*b*"]' in text


FENCES = """\
import numpy as np
d = {"a`<b>B</b>`": torch.zeros(1)}
for i in range(3):
    d["a`<b>B</b>`"] += 1
print("```\\n<img src=x alt=INJECTED>\\n[k]: http://evil.example\\n```")
g = {"x`<i>I</i>`": torch.ones(1)}
del g["x`<i>I</i>`"]
xs = {"k": torch.ones(1)}
a = np.array(["`<b>B</b>`"])
n = int("``x` <i>")
"""


def test_backticks_in_names_values_and_output_end_no_code() -> None:
    result = run_cli(["run", "-e", FENCES, "--format", "markdown"])
    assert result.exit_code == 1, result.output
    page = _rendered(result.stdout)
    # No HTML, link or emphasis came from the script: what it printed stays in its code block...
    assert "<img" not in page and "<a " not in page and "<b>" not in page and "<i>" not in page, page
    blocks = [html.unescape(b) for b in re.findall(r"<pre><code>(.*?)</code></pre>", page, re.S)]
    assert "```\n<img src=x alt=INJECTED>\n[k]: http://evil.example\n```\n" in blocks, blocks
    # ...and names, values and messages read back as written, as code where they are code.
    codes = [html.unescape(c) for c in re.findall(r"<code>(.*?)</code>", page)]
    assert 'd["a`<b>B</b>`"]' in codes  # the loop summary's row
    assert 'g["x`<i>I</i>`"]' in codes  # Removed:
    assert "['`<b>B</b>`']" in codes or any("`<b>B</b>`" in c for c in codes), codes  # the array's values
    text = html.unescape(re.sub(r"<(?!/?code)[^>]*>", "", page))
    assert "invalid literal for int() with base 10: '``x` <i>'" in text, text


def test_a_title_ending_in_hashes_keeps_them() -> None:
    script = "# Title with C# and #hash ##\na = torch.ones(1)\n"
    result = run_cli(["run", "-e", script, "--format", "markdown"])
    assert result.exit_code == 0, result.output
    assert "<h1>Title with C# and #hash ##</h1>" in _rendered(result.stdout), result.stdout[:300]


def test_code_holding_a_backtick_is_one_code_span_in_a_note() -> None:
    script = 'd = {"x`y": torch.ones(2, requires_grad=True)}\nq = d["x`y"] * 2\n'
    result = run_cli(["run", "-e", script, "--format", "markdown"])
    assert result.exit_code == 0, result.output
    items = [line for line in _rendered(result.stdout).splitlines() if line.startswith("<li>")]
    assert items and html.unescape(items[-1]).startswith('<li><code>d["x`y"] * 2</code>: q is a new tensor'), items
