"""Literals and f-strings. Each runs through tcopy and under plain Python."""

from __future__ import annotations

from script.snippets import (
    assert_same_as_python,
)

# --- literals and f-strings --------------------------------------------------------


def test_literals() -> None:
    assert_same_as_python(
        """
        print(None, True, False, 0, -1, 1_000, 0x1F, 0o17, 0b101, 1.5, 1e3, 1.5e-3, 2j, -0.0)
        print("s", 'q', "a" "b", r"\\n", '''tri''', b"x")
        print([1, (2,), {3: 4}], (1,), (), [], {}, {1, 2}, [*(1, 2), 3], {**{"a": 1}, "b": 2})
        """
    )


def test_f_strings_with_format_specs() -> None:
    assert_same_as_python(
        """
        x = 3.14159
        s = "hi"
        t = torch.tensor([1.0, 2.0])
        n = 255
        print(f"{x:.3f}|{x:>10.2f}|{x:e}|{0.5:%}|{s!r}|{t!r}|{s:>5}|{s:^6}|{42:05d}|{x!s}")
        print(f"{n:x}|{n:#b}|{1234567:,}|{-3:+d}|{[1, 2]!a}|{None}|{True}|{s!r:>6}|{x = }")
        print(f"{t}|{t.sum():.2f}|{t[0]:.1f}|{t.shape}|{t.dtype}|{t.sum().item():8.3f}")
        print(f"{'nested'}{1 + 1}{n // 10}{'{literal}'}")
        print(f"{{braces}}")
        """
    )


def test_percent_formatting_of_numbers_and_strings() -> None:
    assert_same_as_python('print("%s=%d (%.2f) %r" % ("x", 3, 2.5, "q"), "%5s|" % "a", "%%")')
