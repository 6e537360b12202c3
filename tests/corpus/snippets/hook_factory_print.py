# Hooks made by a factory (a closure over the name), and print itself as a hook
import torch

grads = {}


def save_grad(name):
    def hook(grad):
        grads[name] = grad

    return hook


x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x * 3
z = y.pow(2).sum()
h1 = y.register_hook(save_grad("y"))
h2 = y.register_hook(print)
z.backward()
print(sorted(grads), grads["y"], x.grad)
print(sorted([-3, 1, -2], key=abs), max(["a", "abc"], key=len))
