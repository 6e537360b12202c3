"""Builtins, isinstance, type() and torch spellings. Each runs through tcopy and under plain Python."""

from __future__ import annotations

from script.snippets import (
    assert_error_like_python,
    assert_same_as_python,
    last,
)

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
