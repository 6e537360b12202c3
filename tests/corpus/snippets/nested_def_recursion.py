# A nested def calls itself (its name is a local of the enclosing call)
import torch


def power_sum(x):
    def fact(k):
        return 1 if k <= 1 else k * fact(k - 1)

    def term(k):
        return x**k / fact(k)

    return sum(term(k) for k in range(4))


print(power_sum(torch.tensor(1.0, requires_grad=True)))
