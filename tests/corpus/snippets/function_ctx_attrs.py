# autograd Function with setup_context, a ctx attribute and a None gradient
import torch
from torch.autograd.function import Function


class Scale(Function):
    @staticmethod
    def forward(x, k):
        return x * k

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.k = inputs[1]

    @staticmethod
    def backward(ctx, g):
        return g * ctx.k, None


a = torch.tensor([1.0, 3.0], requires_grad=True)
b = Scale.apply(a, 3.0)
b.sum().backward()
print(a.grad, b.grad_fn.name())
