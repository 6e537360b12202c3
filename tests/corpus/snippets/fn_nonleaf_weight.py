# Why is my gradient None? The weight made inside a function is not a leaf
import torch

torch.manual_seed(0)


def make_weight(n):
    w = torch.randn(n, requires_grad=True) * 0.1
    return w


def loss_fn(w, x):
    return ((w * x).sum() - 1.0) ** 2


w = make_weight(3)
x = torch.ones(3)
loss = loss_fn(w, x)
loss.backward()
print(w.is_leaf, w.grad is None)
w2 = make_weight(3).detach().requires_grad_()
loss2 = loss_fn(w2, x)
loss2.backward()
print(w2.is_leaf, w2.grad)
