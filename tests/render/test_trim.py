"""Text parts of a step (notes, warnings, printed lines) are drawn line by line as Rich draws them."""

from __future__ import annotations

import io

from hypothesis import example, given, settings
from hypothesis import strategies as st
from rich.align import AlignMethod
from rich.console import Console, JustifyMethod, OverflowMethod
from rich.padding import Padding
from rich.rule import Rule
from rich.segment import Segment
from rich.text import Text

from tcopy_cli.render.trim import plain_lines, rule_lines, text_lines, trim_line

STYLES = ["", "bold yellow", "dim", "italic cyan"]
CHARS = "ab xy.,-[]()0123456789…~+→ é中\t\n"
PRINTABLE = "ab xyz  .,-[]()0123456789~+\n"  # one cell a character


def _consoles(width: int) -> list[Console]:
    plain = Console(file=io.StringIO(), width=width, color_system=None)
    colour = Console(file=io.StringIO(), width=width, color_system="truecolor", force_terminal=True)
    return [plain, colour]


def _lines(lines: list[list[Segment]]) -> list[list[Segment]]:
    """As Trimmed writes them: trailing blanks dropped, neighbouring segments of one style merged."""
    return [list(Segment.simplify(trim_line(line))) for line in lines]


@st.composite
def parts(draw: st.DrawFn) -> tuple[Text | Padding, int]:
    text = Text(draw(st.text(CHARS, max_size=200)), style=draw(st.sampled_from(STYLES)))
    for _ in range(draw(st.integers(0, 2))):
        a = draw(st.integers(0, len(text)))
        text.stylize(draw(st.sampled_from(STYLES[1:])), a, draw(st.integers(a, len(text))))
    if draw(st.booleans()):
        text.overflow = draw(st.sampled_from(["fold", "crop", "ellipsis"]))
    if draw(st.booleans()):
        return Padding(text, (0, 0, 0, draw(st.integers(1, 6)))), draw(st.integers(8, 100))
    return text, draw(st.integers(1, 100))


@settings(max_examples=400, deadline=None)
@given(parts())
def test_same_lines_as_rich(case: tuple[Text | Padding, int]) -> None:
    part, width = case
    for console in _consoles(width):
        ours = text_lines(part, console, console.options)
        assert ours is not None
        theirs = console.render_lines(part, console.options, pad=False, new_lines=False)
        assert _lines(ours) == _lines(theirs)


def test_other_parts_are_left_to_rich() -> None:
    console = _consoles(40)[0]
    assert text_lines(Text("x", no_wrap=True), console, console.options) is None
    assert text_lines(Padding(Text("x"), (1, 0, 0, 2)), console, console.options) is None
    assert text_lines(Padding(Text("x"), (0, 0, 0, 2), style="red"), console, console.options) is None


@settings(max_examples=400, deadline=None)
@example("abcdefg hi", 5, "default", "fold", False, "")  # a word folded, then one that fills the line
@example("abcdefghijk lm n", 5, "left", "fold", False, "")
@example("abcdefg hi  ", 5, "default", "crop", False, "")
@given(
    st.one_of(st.text(CHARS, max_size=120), st.text(PRINTABLE, max_size=160)),
    st.integers(1, 100),
    st.sampled_from(["default", "left", "center", "full"]),
    st.sampled_from(["fold", "crop", "ellipsis"]),
    st.booleans(),
    st.sampled_from(STYLES),
)
def test_plain_lines_are_richs_wrapped_lines(
    plain: str, width: int, justify: JustifyMethod, overflow: OverflowMethod, no_wrap: bool, style: str
) -> None:
    console = _consoles(width)[0]
    text = Text(plain, style=style)
    theirs = text.wrap(console, width, justify=justify, overflow=overflow, tab_size=8, no_wrap=no_wrap)
    for _ in range(2):  # worked out, then remembered
        ours = plain_lines(console, text, width, justify, overflow, 8, no_wrap)
        if any(line.spans for line in theirs):
            assert ours is None
        else:
            assert ours == [line.plain for line in theirs]


@settings(max_examples=300, deadline=None)
@given(parts(), st.sampled_from(["left", "center", "right"]), st.sampled_from(STYLES), st.booleans())
def test_rule_lines_are_richs(case: tuple[Text | Padding, int], align: AlignMethod, style: str, titled: bool) -> None:
    title, width = case
    if isinstance(title, Padding):
        title = title.renderable  # type: ignore[assignment]
    for console in _consoles(width):
        rule = Rule(title.copy() if titled else "", align=align, style=style)  # type: ignore[union-attr]
        ours = rule_lines(rule, console, console.options)
        assert ours is not None
        theirs = console.render_lines(rule, console.options, pad=False, new_lines=False)
        assert _lines(ours) == _lines(theirs)
