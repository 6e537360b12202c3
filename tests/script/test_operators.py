"""Arithmetic, bitwise, comparison and boolean operators. Each runs through tcopy and under plain Python."""

from __future__ import annotations

from script.snippets import (
    assert_error_like_python,
    assert_same_as_python,
    last,
)

# --- operators ---------------------------------------------------------------------


def test_arithmetic_and_bitwise_operators_on_numbers() -> None:
    assert_same_as_python(
        """
        print(7 + 2, 7 - 2, 7 * 2, 7 / 2, 7 // 2, -7 // 2, 7 % 3, -7 % 3, 2 ** 10, 2 ** -1, 2.0 ** 0.5)
        print(1 << 4, 255 >> 2, 6 & 3, 6 | 3, 6 ^ 3, ~5, -3, +3, -(-3), 1 + 2 * 3 - 4 / 2)
        print(1 + 2.5, True + 1, 1j * 1j, "ab" + "cd", "ab" * 3, [1] * 3, (1,) + (2,))
        """
    )


def test_comparison_and_boolean_operators() -> None:
    assert_same_as_python(
        """
        print(1 < 2, 2 <= 1, 1 == 1.0, 1 != 2, 3 >= 3, 4 > 5)
        print(1 < 2 < 3, 1 < 3 < 2, 3 > 2 > 1 > 0, 1 == 1 != 2, 0 < 1 <= 1 < 2)
        one = 1
        print(None is None, one is not None, 2 in [1, 2], 3 not in (1, 2), "a" in "abc", "k" in {"k": 1})
        print(True and 0, 0 or "x", 1 and 2, None or 0, not 0, not [1], [] or [2], 0 and 1 / 0)
        print(1 if 0 else 2, "y" if [1] else "n")
        """
    )


def test_chained_comparison_short_circuits() -> None:
    # The right-hand side of a failed link is never evaluated.
    assert_same_as_python("print(2 < 1 < 1 / 0)\nprint(1 > 2 and 1 / 0)")


def test_is_compares_identity_of_tensors() -> None:
    assert_same_as_python(
        """
        a = torch.ones(2)
        b = a
        c = a.clone()
        d = a.detach()
        print(a is b, a is c, a is not c, a is d, a.grad is None)
        """
    )


def test_tensor_operators() -> None:
    trace = assert_same_as_python(
        """
        x = torch.tensor([1.0, 2.0])
        m = torch.eye(2)
        print(x @ x, m @ x, x * 2, 2 * x, x - 1, 1 - x, x / 2, x // 1, x % 2, -x, +x, x ** 2, 2 ** x, abs(-x))
        i = torch.tensor([6, 3])
        print(i & 3, i | 1, i ^ 5, ~i, i << 1, i >> 1)
        """
    )
    assert last(trace).tensors["x"].version == 0


def test_tensor_comparisons_give_tensors() -> None:
    # One comparison on a tensor is a tensor, not a truth test.
    trace = assert_same_as_python(
        """
        x = torch.tensor([1.0, 2.0, 3.0])
        gt = x > 1
        eq = x == x
        ne = x != 2
        both = (x > 1) & (x < 3)
        sel = x[x >= 2]
        print(gt, eq, ne, both, sel, x < 2, x <= 2)
        """
    )
    step = last(trace)
    assert step.tensors["gt"].dtype == "bool"
    assert step.tensors["sel"].values == [2.0, 3.0]


def test_chained_comparison_on_a_tensor_is_pythons_error() -> None:
    # Python tests the truth of the first link's result: ambiguous for a tensor.
    step = assert_error_like_python("x = torch.tensor([1.0, 2.0])\ny = 0 < x < 3")
    assert step.line == 2


def test_truth_of_a_tensor_in_if() -> None:
    assert_same_as_python(
        """
        x = torch.tensor([1.0, 2.0])
        if x.sum() > 2:
            print("big")
        if x.gt(0).all():
            print("positive")
        if not x.gt(5).any():
            print("none above 5")
        """
    )
