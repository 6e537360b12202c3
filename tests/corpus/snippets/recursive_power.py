# Recursive function building a graph: gradient of x**4 by repeated multiplication
import torch


def power(x, n):
    if n == 0:
        return torch.ones_like(x)
    return x * power(x, n - 1)


x = torch.tensor([1.5, -2.0], requires_grad=True)
y = power(x, 4)
y.sum().backward()
print(y, x.grad)
print(torch.allclose(x.grad, 4 * x.detach() ** 3))
