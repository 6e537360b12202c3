"""for and while loops, break, continue, else; if/elif/else. Each runs through tcopy and under plain Python."""

from __future__ import annotations

from script.snippets import (
    assert_same_as_python,
)

# --- loops -------------------------------------------------------------------------


def test_for_over_range_list_tuple_dict_string() -> None:
    assert_same_as_python(
        """
        for i in range(3):
            print(i)
        for i in range(10, 0, -4):
            print(i)
        for x in [5, 6]:
            print(x)
        for x in (7,):
            print(x)
        for k in {"a": 1, "b": 2}:
            print(k)
        for c in "ab":
            print(c)
        for i in range(0):
            print("never")
        print(i)
        """
    )


def test_for_over_tensor_and_tuple_targets() -> None:
    trace = assert_same_as_python(
        """
        for row in torch.arange(4).reshape(2, 2):
            print(row)
        for a, b in [(1, 2), (3, 4)]:
            print(a + b)
        for i, (a, b) in enumerate(zip([1, 2], [3, 4])):
            print(i, a, b)
        for k, v in {"x": 1}.items():
            print(k, v)
        for a, b in torch.ones(2, 2):
            print(a + b)
        for [p, q] in [[1, 2]]:
            print(p, q)
        """
    )
    # The loop variable is a tensor the observer can show.
    assert "row" in trace.steps[0].tensors
    assert trace.steps[0].tensors["row"].values == [0, 1]


def test_underscore_as_a_throwaway_loop_variable() -> None:
    assert_same_as_python("for _ in range(2):\n    print('tick')\nfor _, v in [(1, 2)]:\n    print(v)")


def test_break_continue_and_for_else() -> None:
    assert_same_as_python(
        """
        for i in range(5):
            if i == 1:
                continue
            if i == 3:
                break
            print(i)
        else:
            print("not reached")
        for i in range(2):
            pass
        else:
            print("done", i)
        for i in range(3):
            for j in range(3):
                if j == 1:
                    break
                print(i, j)
            else:
                print("inner else")
            if i == 1:
                continue
            print("after", i)
        """
    )


def test_if_elif_else() -> None:
    assert_same_as_python(
        """
        for x in [1, 5, 20]:
            if x > 10:
                print("big")
            elif x > 3:
                print("mid")
            else:
                print("small")
        if []:
            print("no")
        elif None:
            print("no")
        if 0:
            print("no")
        """
    )
