# Decorators: a @torch.no_grad() update step, @torch.enable_grad() inside no_grad
import torch


@torch.no_grad()
def sgd_update(w, lr):
    w -= lr * w.grad
    return w.requires_grad, torch.is_grad_enabled()


@torch.enable_grad()
def grad_enabled_inside(x):
    return (x * 2).requires_grad


w = torch.tensor([1.0, -2.0], requires_grad=True)
(w * w).sum().backward()
print(sgd_update(w, 0.1), torch.is_grad_enabled())
with torch.no_grad():
    print(grad_enabled_inside(w), (w * 2).requires_grad)
print(w, w.is_leaf)
