"""Expression statements and print. Each runs through tcopy and under plain Python."""

from __future__ import annotations

from script.snippets import (
    assert_same_as_python,
)

# --- expression statements and print -----------------------------------------------


def test_expression_statements_run_for_their_effect() -> None:
    trace = assert_same_as_python(
        """
        a = torch.zeros(2)
        a.add_(1)
        a.mul_(3)
        l = []
        l.append(a.sum().item())
        a
        1 + 1
        print(a, l)
        """
    )
    assert trace.steps[2].tensors["a"].values == [3.0, 3.0]
    assert trace.steps[2].tensors["a"].version == 2


def test_print_capture_per_step() -> None:
    trace = assert_same_as_python(
        """
        print(1, 2, sep="-", end="!")
        print("a", "b", sep="")
        print()
        print("x", "y", sep=None, end=None)
        print(torch.tensor([1.5]), [1, 2], None)
        x = 3
        """
    )
    assert [s.stdout for s in trace.steps] == [
        "1-2!",
        "ab\n",
        "\n",
        "x y\n",
        "tensor([1.5000]) [1, 2] None\n",
        "",
    ]


def test_print_accepts_flush() -> None:
    assert_same_as_python('print("x", flush=True)')
