"""The interpreter: every supported construct runs and matches plain Python.

Most tests run a snippet twice, once through tcopy (``run_source``) and once with the
real ``exec`` in this test process, and compare what the script printed. The truth
for every fact tcopy reports is what the same statements do under plain Python.
"""

from __future__ import annotations

import contextlib
import gc
import io
import textwrap
import time
import types
from typing import Any

import numpy as np
import pytest
import torch

from tcopy_cli.errors import ScriptRejected
from tcopy_cli.limits import Limits
from tcopy_cli.script.parse import parse_script
from tcopy_cli.trace import Trace, run_source
from tcopy_cli.trace.records import Step
from tcopy_cli.trace.runner import Runner, RunOptions

# --- helpers -----------------------------------------------------------------------


def run(src: str, **kwargs: Any) -> Trace:
    """Run a dedented snippet through tcopy."""
    return run_source(textwrap.dedent(src).strip("\n"), **kwargs)


def stdout_of(trace: Trace) -> str:
    return "".join(step.stdout for step in trace.steps)


def plain_run(src: str) -> tuple[str, dict[str, Any]]:
    """(printed text, namespace) of the snippet under plain Python, torch pre-imported as in tcopy."""
    buf = io.StringIO()
    ns: dict[str, Any] = {"torch": torch, "__name__": "__main__"}
    with contextlib.redirect_stdout(buf):
        exec(textwrap.dedent(src).strip("\n"), ns)
    return buf.getvalue(), ns


def plain(src: str) -> str:
    """What the snippet prints under plain Python."""
    return plain_run(src)[0]


def plain_error(src: str) -> BaseException:
    """The exception the snippet raises under plain Python."""
    try:
        plain(src)
    except Exception as exc:
        return exc
    raise AssertionError("the snippet did not raise under plain Python")


def assert_same_as_python(src: str) -> Trace:
    """Every step is ok and the printed text equals plain Python's."""
    trace = run(src)
    errors = [(s.line, s.source, s.error) for s in trace.steps if s.status != "ok"]
    assert not errors, errors
    assert stdout_of(trace) == plain(src)
    return trace


def last(trace: Trace) -> Step:
    assert trace.steps, "no steps"
    return trace.steps[-1]


def assert_error_like_python(src: str) -> Step:
    """The run ends with an error step whose type and message are plain Python's."""
    trace = run(src)
    step = last(trace)
    expected = plain_error(src)
    assert step.status == "error"
    assert step.error is not None
    assert (step.error.type, step.error.message) == (type(expected).__name__, str(expected))
    return step


# --- imports -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "src",
    [
        "import torch\nprint(torch.ones(2))",
        "import torch as T\nprint(T.zeros(2, dtype=T.int64))",
        "import copy\nprint(copy.deepcopy([1, [2]]), copy.copy((3,)))",
        "import math\nprint(math.sqrt(16), math.pi, math.floor(2.5), math.isclose(0.1 + 0.2, 0.3))",
        "from copy import deepcopy\nprint(deepcopy({'a': [1]}))",
        "from math import sqrt\nprint(sqrt(2.0))",
        "from math import sqrt as root, pi\nprint(root(9), pi)",
        "import torch, math\nprint(torch.tensor(math.e))",
    ],
)
def test_imports(src: str) -> None:
    trace = assert_same_as_python(src)
    assert trace.steps[0].source.startswith(("import", "from"))


def test_deepcopy_of_a_tensor_makes_new_storage() -> None:
    trace = assert_same_as_python(
        """
        from copy import deepcopy
        a = torch.ones(2, requires_grad=True)
        b = deepcopy(a)
        print(b, b.is_leaf, b.data_ptr() == a.data_ptr())
        """
    )
    rec = last(trace).tensors
    assert rec["a"].storage != rec["b"].storage
    assert rec["b"].is_leaf and rec["b"].requires_grad


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


# --- subscripts --------------------------------------------------------------------


def test_subscript_reads() -> None:
    trace = assert_same_as_python(
        """
        x = torch.arange(6).reshape(2, 3)
        print(x[0, 1:], x[..., None].shape, x[:, -1], x[1][::2], x[None].shape, x[x.gt(2)])
        l = [0, 1, 2, 3]
        print(l[1:3], l[-1], l[::-1], (1, 2, 3)[1], "abc"[1:], {"k": 5}["k"])
        """
    )
    assert last(trace).tensors["x"].shape == [2, 3]


def test_subscript_writes_are_in_place() -> None:
    trace = assert_same_as_python(
        """
        d = torch.ones(2, 3)
        d[:] = 1
        d[0, 1:] = torch.tensor([5.0, 6.0])
        d[..., 0] = 7
        l = [1, 2, 3]
        l[0] = 9
        l[1:] = [8]
        m = {}
        m["a"] = 1
        print(d, l, m)
        """
    )
    versions = [s.tensors["d"].version for s in trace.steps[:4]]
    assert versions == [0, 1, 2, 3]
    storages = {s.tensors["d"].storage for s in trace.steps[:4]}
    assert len(storages) == 1


def test_view_write_shows_in_base() -> None:
    trace = assert_same_as_python("base = torch.zeros(4)\nv = base[2:]\nv[0] = 1\nprint(base)")
    step = last(trace)
    assert step.tensors["base"].values == [0.0, 0.0, 1.0, 0.0]
    assert step.tensors["v"].storage == step.tensors["base"].storage
    assert step.tensors["v"].storage_offset == 2


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


# --- grad mode -----------------------------------------------------------------------


def test_grad_mode_context_managers() -> None:
    trace = assert_same_as_python(
        """
        a = torch.ones(2, requires_grad=True)
        with torch.no_grad():
            b = a * 2
            print(torch.is_grad_enabled())
        with torch.enable_grad():
            c = a * 2
        with torch.inference_mode():
            d = a * 2
            print(torch.is_inference_mode_enabled())
        with torch.set_grad_enabled(False):
            e = a * 2
        with torch.no_grad():
            with torch.enable_grad():
                f = a * 2
        with torch.no_grad(), torch.enable_grad():
            g = a * 2
        print(b.requires_grad, c.requires_grad, d.requires_grad, e.requires_grad, f.requires_grad, g.requires_grad)
        print(torch.is_grad_enabled(), torch.is_inference_mode_enabled())
        """
    )
    tensors = last(trace).tensors
    assert tensors["b"].grad_fn is None and tensors["c"].grad_fn == "MulBackward0"


@pytest.mark.parametrize(
    "src",
    [
        "with torch.no_grad():\n    x = 1 / 0",
        "with torch.inference_mode():\n    x = 1 / 0",
        "with torch.set_grad_enabled(False):\n    x = 1 / 0",
        "torch.set_grad_enabled(False)\nx = 1 / 0",
        "torch.set_grad_enabled(False)",
        "with torch.no_grad():\n    with torch.inference_mode():\n        x = 1 / 0",
    ],
)
@pytest.mark.parametrize("keep_going", [False, True])
def test_grad_mode_restored_after_the_run(src: str, keep_going: bool) -> None:
    assert torch.is_grad_enabled()
    run(src, keep_going=keep_going)
    assert torch.is_grad_enabled()
    assert not torch.is_inference_mode_enabled()


def test_default_dtype_restored_after_the_run() -> None:
    before = torch.get_default_dtype()
    trace = run("torch.set_default_dtype(torch.float64)\na = torch.ones(1)\nx = 1 / 0")
    assert trace.steps[1].tensors["a"].dtype == "float64"
    assert torch.get_default_dtype() == before


# --- types, builtins, torch spellings -----------------------------------------------


def test_isinstance_with_builtin_types() -> None:
    assert_same_as_python(
        'print(isinstance(1, int), isinstance(True, int), isinstance("s", str), isinstance([], dict))'
    )


def test_isinstance_with_torch_classes() -> None:
    assert_same_as_python(
        """
        a = torch.ones(2)
        print(isinstance(a, torch.Tensor), isinstance("s", torch.Tensor), isinstance(a.shape, torch.Size))
        print(isinstance(a.dtype, torch.dtype), isinstance(a.device, torch.device))
        """
    )


def test_isinstance_with_a_tuple_of_types() -> None:
    assert_same_as_python(
        """
        a = torch.ones(2)
        print(isinstance(1.0, (int, float)), isinstance([], (tuple, list)), isinstance("s", (int, float)))
        print(isinstance(a, (int, torch.Tensor)))
        """
    )


def test_type_printing() -> None:
    assert_same_as_python(
        """
        a = torch.ones(2)
        print(type(a), type(1), type("x"), type(None), type([]), type(a.shape), type(a.dtype))
        t = type(a)
        print(t, type(1.5))
        """
    )


def test_type_comparisons() -> None:
    assert_same_as_python(
        """
        a = torch.ones(2)
        print(type(a) == torch.Tensor, type(1) == int, type(a) == type(a), type(1) == type(1.0))
        """
    )


def test_builtins() -> None:
    assert_same_as_python(
        """
        print(len([1, 2]), len("abc"), len({"a": 1}), len(torch.ones(3, 2)))
        print(list(range(5)), list(range(2, 8, 2)), range(3), abs(-3), abs(-2.5))
        print(min(3, 1, 2), max([4, 5]), min("b", "a"), max(1, 2.5), sum([1, 2, 3]), sum([0.5, 0.5], 1))
        print(float("1.5"), float(2), int("7"), int(3.9), int(-3.9), bool(0), bool([1]), str(12), str(None))
        print(list((1, 2)), list("ab"), tuple([1]), dict(a=1), dict([("b", 2)]), dict({"c": 3}, d=4))
        print(round(2.567, 2), round(2.5), round(3.5), round(-0.5), round(7))
        print(list(enumerate(["a", "b"])), list(enumerate(["a", "b"], 1)), list(zip([1, 2], "ab")), list(zip()))
        print(sorted([3, 1, 2]), sorted([3, 1, 2], reverse=True), sorted("cab"), list(reversed([1, 2, 3])))
        print(any([0, 1]), any([]), all([1, 0]), all([]), list(reversed(range(3))))
        for i, c in enumerate("xy"):
            print(i, c)
        for a, b in zip([1, 2, 3], [4, 5]):
            print(a, b)
        for r in reversed([1, 2]):
            print(r)
        """
    )


def test_builtins_on_tensors() -> None:
    assert_same_as_python(
        """
        t = torch.tensor([3.0, -1.0, 2.0])
        print(len(t), sum(t), max(t), min(t), abs(torch.tensor(-1)), float(torch.tensor(2.5)))
        print(int(torch.tensor(3)), bool(torch.tensor(1)), round(t[0].item()), any(t.gt(2)), all(t.gt(2)))
        print(sorted(t), list(torch.arange(3)), list(zip(t, t)), tuple(t), list(reversed(t)), list(enumerate(t)))
        """
    )


def test_builtin_errors_are_pythons() -> None:
    assert_error_like_python("x = min([])")
    assert_error_like_python('x = int("abc")')
    assert_error_like_python("x = len(5)")


def test_tensor_method_through_the_class() -> None:
    trace = assert_same_as_python(
        """
        a = torch.ones(2, requires_grad=True)
        b = torch.Tensor.detach(a)
        c = torch.Tensor.clone(a)
        print(b.requires_grad, b.data_ptr() == a.data_ptr(), c.grad_fn is not None)
        """
    )
    tensors = last(trace).tensors
    assert tensors["b"].storage == tensors["a"].storage
    assert tensors["c"].grad_fn == "CloneBackward0"


def test_dtype_constants_and_keywords() -> None:
    trace = assert_same_as_python(
        """
        a = torch.zeros(2, dtype=torch.float64, device="cpu")
        b = torch.ones(2, dtype=torch.int32)
        c = a.to(torch.float32)
        d = a.to(device=torch.device("cpu"), dtype=torch.float16)
        e = torch.tensor([1, 2], dtype=torch.long)
        f = torch.arange(3, dtype=torch.float)
        print(a.dtype, b.dtype, c.dtype, d.dtype, e.dtype, f.dtype, torch.float32, a.device)
        print(torch.float32 == torch.float, torch.int64 is torch.long, a.dtype.is_floating_point, torch.pi)
        print(a.device.type, torch.device("cpu"), a.is_cpu, b.element_size(), d.itemsize)
        """
    )
    tensors = last(trace).tensors
    assert [tensors[n].dtype for n in "abcdef"] == ["float64", "int32", "float32", "float16", "int64", "float32"]
    assert tensors["a"].device == "cpu"


def test_dunder_name_is_main() -> None:
    assert_same_as_python(
        """
        if __name__ == "__main__":
            print("main", __name__)
        """
    )


def test_script_defined_names_shadow_builtins() -> None:
    assert_same_as_python("sum = 3\nlist = [1]\nprint(sum, list)")


def test_torch_functions_and_autograd() -> None:
    trace = assert_same_as_python(
        """
        w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = (w * w).sum()
        y.backward()
        print(w.grad, y.grad_fn.name(), torch.linalg.norm(w.detach()))
        g = torch.autograd.grad((w ** 3).sum(), w)
        print(g)
        """
    )
    rec = trace.steps[2].tensors["w"]
    assert rec.grad is not None and rec.grad.values == [2.0, 4.0, 6.0]


def test_named_tuple_results_have_their_fields() -> None:
    assert_same_as_python(
        """
        x = torch.tensor([[1.0, 5.0], [3.0, 2.0]])
        m = torch.max(x, 1)
        print(m.values, m.indices, torch.sort(x).indices, x.min(0).values, m[0])
        v, i = torch.topk(x.flatten(), 2)
        print(v, i)
        """
    )


# --- steps: lines, source text, errors -----------------------------------------------


def test_steps_have_line_and_source_text() -> None:
    trace = run(
        """
        a = torch.ones(2); b = a * 2
        # a comment
        c = torch.tensor([1.0,
                          2.0])

        for i in range(2):
            x = i
            y = i * 2
        if c.sum() > 0:
            z = 1
        with torch.no_grad():
            w = a * 3
        for j in range(2): k = j
        """
    )
    got = [(s.index, s.line, s.source, s.status) for s in trace.steps]
    assert got == [
        (1, 1, "a = torch.ones(2)", "ok"),
        (2, 1, "b = a * 2", "ok"),
        (3, 3, "c = torch.tensor([1.0,\n                  2.0])", "ok"),
        (4, 7, "x = i", "ok"),
        (5, 8, "y = i * 2", "ok"),
        (6, 7, "x = i", "ok"),
        (7, 8, "y = i * 2", "ok"),
        (8, 10, "z = 1", "ok"),
        (9, 12, "w = a * 3", "ok"),
        (10, 13, "k = j", "ok"),
        (11, 13, "k = j", "ok"),
    ]
    assert trace.summary is not None
    assert (trace.summary.steps, trace.summary.errors, trace.summary.status) == (11, 0, "ok")


def test_one_step_per_loop_iteration_with_state_after_each() -> None:
    trace = run("acc = torch.zeros(1)\nfor i in range(3):\n    acc += i")
    assert [s.tensors["acc"].values for s in trace.steps] == [[0.0], [0.0], [1.0], [3.0]]
    assert [s.tensors["acc"].version for s in trace.steps] == [0, 1, 2, 3]


def test_error_step_stops_the_run() -> None:
    trace = run("a = torch.ones(2); b = a * 2\nx = 1 / 0\nc = 3")
    assert [s.status for s in trace.steps] == ["ok", "ok", "error"]
    step = last(trace)
    assert (step.line, step.source) == (2, "x = 1 / 0")
    assert step.error is not None
    assert (step.error.type, step.error.message) == ("ZeroDivisionError", "division by zero")
    assert step.error.explanation == ""  # the run records facts; the explain pass adds the why
    assert "a" in step.tensors  # the state after the failed statement is still reported
    assert trace.summary is not None
    assert (trace.summary.steps, trace.summary.errors, trace.summary.status) == (3, 1, "error")


def test_keep_going_runs_the_rest() -> None:
    trace = run("x = 1 / 0\ny = undefined_name\nprint('after')", keep_going=True)
    assert [s.status for s in trace.steps] == ["error", "error", "ok"]
    assert [s.error.type for s in trace.steps if s.error] == ["ZeroDivisionError", "NameError"]
    assert last(trace).stdout == "after\n"
    assert trace.summary is not None and trace.summary.errors == 2


def test_torch_error_message_is_torchs() -> None:
    src = "a = torch.ones(2)\nb = torch.ones(3)\nc = a + b"
    step = assert_error_like_python(src)
    assert step.error is not None and step.error.type == "RuntimeError"
    assert step.line == 3


def test_output_before_an_error_in_the_same_statement_is_kept() -> None:
    # print's text is written before the error; it belongs to the failing step.
    trace = run("x = [print('hi'), 1 / 0]")
    step = last(trace)
    assert step.status == "error"
    assert step.stdout == "hi\n"


@pytest.mark.parametrize(
    ("src", "line", "source"),
    [
        ("x = 1\nfor i in 5:\n    y = i", 2, "for i in 5:"),
        ("x = torch.ones(2)\nif x:\n    y = 1", 2, "if x:"),
        ("x = 1\nwith x:\n    y = 1", 2, "with x:"),
        ("for i in range(2):\n    for j in i:\n        y = 1", 2, "for j in i:"),
    ],
)
def test_errors_in_block_headers_are_steps(src: str, line: int, source: str) -> None:
    step = last(run(src))
    assert step.status == "error"
    assert (step.line, step.source) == (line, source)


def test_error_inside_a_loop_reports_the_iteration() -> None:
    trace = run("for i in range(3):\n    x = 1 / (1 - i)")
    assert [s.status for s in trace.steps] == ["ok", "error"]
    assert last(trace).line == 2


def test_rejected_scripts_raise_before_running() -> None:
    with pytest.raises(ScriptRejected) as info:
        run_source("x = 1\nglobal y")
    assert (info.value.line, info.value.column) == (2, 1)
    with pytest.raises(ScriptRejected) as info:
        parse_script("x = (1,")
    assert info.value.line == 1 and "syntax" in info.value.message


# --- records hold no live tensor; observation changes nothing -----------------------

_MARK_SHAPE = (3, 5, 7, 11)  # a shape nothing else in the test process uses


def _live_marked_tensors() -> int:
    # type() rather than isinstance(): isinstance reads __class__, which warns on some torch objects.
    return sum(1 for o in gc.get_objects() if issubclass(type(o), torch.Tensor) and tuple(o.shape) == _MARK_SHAPE)


def _wait_until_freed() -> int:
    """Live marked tensors once garbage is collected (the run's watchdog thread may take a moment to end)."""
    deadline = time.monotonic() + 3.0
    while True:
        gc.collect()
        count = _live_marked_tensors()
        if count == 0 or time.monotonic() > deadline:
            return count
        time.sleep(0.02)


def test_step_records_hold_no_live_tensor() -> None:
    assert _wait_until_freed() == 0
    trace = run(
        """
        a = torch.ones(3, 5, 7, 11, requires_grad=True)
        b = a * 2
        v = a[0]
        l = [b, {"k": b}]
        n = v.detach().numpy()
        b.sum().backward()
        """
    )
    assert last(trace).tensors["a"].grad is not None
    # Nothing reachable from the records is a tensor, a storage, an array or a graph node.
    # (Walk data only: types, modules and functions lead to the whole process.)
    seen: set[int] = set()
    stack: list[Any] = [trace]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, (type, types.ModuleType, types.FunctionType)):
            continue
        seen.add(id(obj))
        assert not isinstance(obj, (torch.Tensor, torch.UntypedStorage, torch.autograd.graph.Node, np.ndarray)), obj
        stack.extend(gc.get_referents(obj))
    assert len(seen) > 20  # the walk did reach the records
    assert _wait_until_freed() == 0


def test_a_deleted_tensor_is_freed_during_the_run() -> None:
    src = textwrap.dedent(
        """
        a = torch.ones(3, 5, 7, 11)
        b = a.sum()
        del a
        c = torch.zeros(1)
        """
    ).strip()
    counts: list[int] = []

    def emit(step: Step) -> None:
        counts.append(_live_marked_tensors())

    gc.collect()
    Runner(parse_script(src), RunOptions(), emit).run()
    assert counts == [1, 1, 0, 0]


def test_storage_label_of_a_freed_tensor_is_not_reused() -> None:
    trace = run("a = torch.ones(4)\ndel a\nb = torch.ones(4)\nc = b")
    labels = [s.tensors[n].storage for s, n in ((trace.steps[0], "a"), (trace.steps[2], "b"))]
    assert labels[0] != labels[1]


def test_observation_never_reads_grad_of_a_non_leaf() -> None:
    trace = run(
        """
        a = torch.ones(2, requires_grad=True)
        b = a * 2
        c = b.sum()
        c.backward()
        l = [b, c]
        z = 1
        """
    )
    assert all(step.warnings == [] for step in trace.steps)
    assert last(trace).tensors["b"].grad is None
    assert last(trace).tensors["a"].grad is not None


def test_the_script_reading_grad_of_a_non_leaf_does_warn() -> None:
    trace = run("a = torch.ones(2, requires_grad=True)\nb = a * 2\nb.sum().backward()\ng = b.grad")
    assert [bool(s.warnings) for s in trace.steps] == [False, False, False, True]
    assert "leaf" in last(trace).warnings[0]


def test_retain_grad_is_observed() -> None:
    trace = run("a = torch.ones(2, requires_grad=True)\nb = a * 2\nb.retain_grad()\nb.sum().backward()")
    rec = last(trace).tensors["b"]
    assert rec.grad is not None and rec.grad.values == [1.0, 1.0]
    assert all(step.warnings == [] for step in trace.steps)


def test_observation_does_not_bump_versions_or_change_the_graph() -> None:
    src = """
        a = torch.tensor([1.0, 2.0], requires_grad=True)
        b = a.sigmoid()
        c = b * a
        d = c.sum()
        x = 1
        y = 2
        d.backward()
        print(a._version, b._version, c._version, a.grad, b.grad_fn.name(), c.requires_grad)
        """
    trace = assert_same_as_python(src)
    assert [s.tensors["a"].version for s in trace.steps] == [0] * len(trace.steps)
    _, ns = plain_run(src)
    rec = last(trace).tensors
    assert rec["a"].grad is not None
    assert rec["a"].grad.values == pytest.approx(ns["a"].grad.tolist())
    assert rec["b"].grad_fn == type(ns["b"].grad_fn).__name__
    assert rec["c"].is_leaf is ns["c"].is_leaf is False


def test_observation_does_not_break_saved_tensor_checks() -> None:
    # An in-place write to a tensor autograd saved fails at backward, as in Python.
    src = """
        a = torch.ones(2, requires_grad=True)
        b = a.exp()
        b.add_(1)
        b.sum().backward()
        """
    assert_error_like_python(src)


def test_in_place_on_a_leaf_that_requires_grad_is_pythons_error() -> None:
    assert_error_like_python("a = torch.ones(2, requires_grad=True)\na.add_(1)")


def test_records_match_plain_torch() -> None:
    src = """
        a = torch.arange(6.0).reshape(2, 3)
        t = a.t()
        v = a.view(3, 2)
        c = a.clone()
        d = a.detach()
        """
    trace = run(src)
    _, ns = plain_run(src)
    rec = last(trace).tensors
    for name in ("a", "t", "v", "c", "d"):
        t = ns[name]
        assert rec[name].shape == list(t.shape)
        assert rec[name].stride == list(t.stride())
        assert rec[name].values == t.tolist()
        assert rec[name].storage_offset == t.storage_offset()
    assert rec["a"].storage == rec["t"].storage == rec["v"].storage == rec["d"].storage
    assert rec["c"].storage != rec["a"].storage
    assert rec["a"].data_ptr == rec["d"].data_ptr


def test_math_and_copy_modules_match_python() -> None:
    assert_same_as_python(
        """
        import math
        import copy
        print(math.sqrt(2), math.exp(1), math.log(10), math.floor(-1.5), math.ceil(1.2), math.inf, math.isnan(math.nan))
        l = [[1], 2]
        s = copy.copy(l)
        d = copy.deepcopy(l)
        l[0].append(3)
        print(s, d)
        """
    )


def test_limits_object_is_honoured_by_run_source() -> None:
    trace = run("for i in range(100):\n    x = i", limits=Limits(max_steps=5))
    assert len(trace.steps) == 6
    assert last(trace).error is not None and last(trace).error.type == "LimitExceeded"
