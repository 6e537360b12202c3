# Closures: a nested def reads the enclosing call's locals; nonlocal rebinds them
import torch


def make_accumulator():
    total = torch.zeros(2)
    calls = 0

    def add(t):
        nonlocal total, calls
        total = total + t
        calls += 1
        return calls

    return add, lambda: total


add, read = make_accumulator()
add(torch.ones(2))
n = add(torch.tensor([2.0, 3.0]))
print(n, read())
