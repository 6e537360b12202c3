# An in-place autograd Function: mark_dirty, the same tensor back, its version bumped
import torch
from torch.autograd import Function


class AddOne_(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.mark_dirty(x)
        return x.add_(1)

    @staticmethod
    def backward(ctx, g):
        return g


a = torch.tensor([1.0, 3.0], requires_grad=True)
c = a * 2
d = AddOne_.apply(c)
print(d is c, c._version, d.grad_fn.name())
d.sum().backward()
print(a.grad)
