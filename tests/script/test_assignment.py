"""Assignment, unpacking, augmented and attribute assignment. Each runs through tcopy and under plain Python."""

from __future__ import annotations

import pytest

from script.snippets import (
    assert_error_like_python,
    assert_same_as_python,
    last,
    run,
)

# --- assignment --------------------------------------------------------------------


def test_assignment_and_unpacking() -> None:
    assert_same_as_python(
        """
        a = 1
        b = c = 2
        x, y = 3, 4
        [p, q] = (5, 6)
        x, y = y, x
        (m, n), o = (7, 8), 9
        first, second = torch.tensor([1.0, 2.0])
        h, w = torch.ones(2, 3).shape
        s, t = "st"
        print(a, b, c, x, y, p, q, m, n, o, first, second, h, w, s, t)
        """
    )


def test_annotated_assignment() -> None:
    assert_same_as_python("n: int = 3\nprint(n)")


@pytest.mark.parametrize(
    "src",
    [
        "a, b = 1, 2, 3",
        "a, b, c = 1, 2",
        "a, b = [1]",
        "a, b = torch.ones(3)",
        "(a, b), c = (1, 2, 3), 4",
    ],
)
def test_unpacking_wrong_count_is_pythons_value_error(src: str) -> None:
    step = assert_error_like_python(src)
    assert step.error is not None and step.error.type == "ValueError"


def test_unpacking_a_non_iterable_is_pythons_type_error() -> None:
    assert_error_like_python("a, b = 5")


# --- augmented assignment ----------------------------------------------------------


def test_augmented_assignment_on_a_tensor_is_in_place() -> None:
    trace = assert_same_as_python(
        """
        a = torch.ones(2)
        b = a
        a += 1
        print(a is b, b, a._version)
        """
    )
    before, after = trace.steps[1].tensors, trace.steps[2].tensors
    assert after["a"].storage == before["a"].storage
    assert after["a"].data_ptr == before["a"].data_ptr
    assert (before["a"].version, after["a"].version) == (0, 1)
    assert after["a"].values == [2.0, 2.0]
    assert after["b"].values == [2.0, 2.0]  # the alias saw the write
    assert "b" in after["a"].shares_memory_with


def test_plain_addition_rebinds_to_new_memory() -> None:
    trace = run("a = torch.ones(2)\nb = a\na = a + 1")
    step = last(trace)
    assert step.tensors["a"].storage != step.tensors["b"].storage
    assert step.tensors["b"].values == [1.0, 1.0]
    assert step.tensors["b"].version == 0


def test_augmented_assignment_on_an_int_rebinds() -> None:
    assert_same_as_python(
        """
        n = 1
        m = n
        n += 1
        n *= 10
        n -= 1
        n //= 2
        n **= 2
        n %= 7
        n <<= 2
        n |= 1
        f = 1.5
        f /= 2
        s = "a"
        s += "b"
        xs = [1]
        ys = xs
        xs += [2]
        print(n, m, f, s, xs, ys, xs is ys)
        """
    )


def test_augmented_assignment_to_subscript_and_attribute() -> None:
    trace = assert_same_as_python(
        """
        x = torch.zeros(2, 2)
        x[0, 0] += 5
        x[1] -= 1
        d = {"k": 1}
        d["k"] += 1
        w = torch.ones(2, requires_grad=True)
        w.sum().backward()
        w.grad += 1
        print(x, d, w.grad)
        """
    )
    assert last(trace).tensors["w"].grad is not None
    assert last(trace).tensors["w"].grad.values == [2.0, 2.0]


# --- attribute assignment ----------------------------------------------------------


def test_attribute_assignment() -> None:
    src = """
        w = torch.ones(2)
        w.requires_grad = True
        a = torch.ones(2, requires_grad=True)
        a.sum().backward()
        g = a.grad
        a.grad = None
        b = torch.zeros(3)
        a.data = b
        print(w.requires_grad, g, a.grad, a, a.shape)
        """
    trace = assert_same_as_python(src)
    steps = trace.steps
    assert steps[0].tensors["w"].requires_grad is False
    assert steps[1].tensors["w"].requires_grad is True
    assert steps[3].tensors["a"].grad is not None
    assert steps[5].tensors["a"].grad is None
    after = steps[7].tensors
    assert after["a"].shape == [3]
    assert after["a"].storage == after["b"].storage
    assert after["a"].requires_grad is True


def test_attribute_assignment_outside_the_settable_list_is_an_error() -> None:
    step = last(run("a = torch.ones(2)\na.shape = (1, 2)"))
    assert step.status == "error"
    assert step.tensors["a"].shape == [2]
