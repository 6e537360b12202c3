"""del of names and items. Each runs through tcopy and under plain Python."""

from __future__ import annotations

from script.snippets import (
    assert_error_like_python,
    assert_same_as_python,
)

# --- del ---------------------------------------------------------------------------


def test_del() -> None:
    trace = assert_same_as_python(
        """
        a = torch.ones(2)
        b = 1
        l = [1, 2, 3]
        del l[0]
        d = {"x": 1, "y": 2}
        del d["x"]
        del a, b
        print(l, d)
        """
    )
    assert "a" in trace.steps[0].tensors
    assert "a" not in trace.steps[-2].tensors


def test_use_after_del_is_pythons_name_error() -> None:
    step = assert_error_like_python("x = 1\ndel x\nprint(x)")
    assert step.line == 3


def test_del_of_unbound_name_is_pythons_name_error() -> None:
    assert_error_like_python("del nothing_here")
