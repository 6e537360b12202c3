"""def, lambda, return, recursion, classes and super(): each call runs in its own frame."""

from __future__ import annotations

import pytest

from script.snippets import assert_same_as_python, run


def test_print_after_a_call_whose_body_has_a_loop_is_kept() -> None:
    # The loop header inside f once left the step's output buffer switched, losing the print.
    trace = assert_same_as_python(
        """
        def f():
            for i in range(2):
                pass
            return 1
        print(f())
        """
    )
    assert trace.steps[-1].stdout == "1\n"


def test_finally_runs_when_return_break_or_continue_leaves_the_try() -> None:
    assert_same_as_python(
        """
        def first_even(xs):
            for x in xs:
                while True:
                    try:
                        if x % 2 == 0:
                            return x
                    finally:
                        print("checked", x)
                    break
            return None
        print(first_even([1, 3, 4, 6]), first_even([1]))
        """
    )


@pytest.mark.parametrize("leave", ["break", "continue"])
def test_finally_runs_when_a_loop_is_left_from_inside_try(leave: str) -> None:
    assert_same_as_python(
        f"""
        for i in range(3):
            try:
                print("body", i)
                {leave}
            finally:
                print("finally", i)
        print("after")
        """
    )


def test_recursion_and_frames_in_steps() -> None:
    trace = assert_same_as_python(
        """
        def fact(n):
            if n <= 1:
                return 1
            return n * fact(n - 1)
        print(fact(5))
        """
    )
    depths = {s.depth for s in trace.steps}
    assert depths == {0, 1, 2, 3, 4, 5}
    assert {s.function for s in trace.steps if s.depth} == {"fact"}


def test_locals_of_running_calls_are_shown_and_dropped_after() -> None:
    trace = run(
        """
        import torch
        def scale(t, k=2.0):
            out = t * k
            return out
        a = torch.ones(2)
        b = scale(a)
        """
    )
    inside = [s for s in trace.steps if s.function == "scale"]
    assert inside and "scale:out" in inside[-1].tensors and "scale:t" in inside[-1].tensors
    assert not any(name.startswith("scale:") for name in trace.steps[-1].tensors)


def test_lambdas_see_enclosing_scopes_and_defaults_bind_at_definition() -> None:
    assert_same_as_python(
        """
        k = 3
        def make(n, base=k):
            add = lambda x: x + n + base  # noqa: E731
            return [add(i) for i in range(3)]
        k = 100
        print(make(1), list(map(lambda v: v * 2, [1, 2])), sorted([3, 1, 2], key=lambda v: -v))
        """
    )


def test_hooks_run_silently_and_print_in_the_step_that_triggered_them() -> None:
    trace = assert_same_as_python(
        """
        import torch
        a = torch.ones(2, requires_grad=True)
        def hook(g):
            print("grad", g.tolist())
            return g * 2
        h = a.register_hook(hook)
        (a * 3).sum().backward()
        print(a.grad.tolist())
        """
    )
    backward = next(s for s in trace.steps if "backward" in s.source)
    assert backward.stdout == "grad [3.0, 3.0]\n"
    assert not any(s.function == "hook" for s in trace.steps)


def test_script_class_with_super_and_methods() -> None:
    assert_same_as_python(
        """
        import torch
        from torch import nn
        class Net(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.fc = nn.Linear(n, 1)
                self.n = n
            def forward(self, x):
                return self.fc(x).sum() * self.width()
            def width(self):
                return self.n
        torch.manual_seed(0)
        net = Net(3)
        print(round(net(torch.ones(3)).item(), 4), isinstance(net, nn.Module))
        """
    )


@pytest.mark.parametrize(
    "src",
    [
        "def f(a, b):\n    return a\nf(1)",
        "def f(a):\n    return a\nf(1, 2)",
        "def f(*, k):\n    return k\nf(k=1, j=2)",
    ],
)
def test_argument_errors_are_pythons_type_errors(src: str) -> None:
    step = run(src).steps[-1]
    assert step.error is not None and step.error.type == "TypeError" and step.error.message.startswith("f() ")
