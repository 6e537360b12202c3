# Derivatives of script functions: jacobian, hessian and gradcheck
import torch
from torch.autograd.functional import hessian, jacobian


def cube_sum(a):
    return (a ** 3).sum()


def square(a):
    return a ** 2


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a * a

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return 2 * a * g


x = torch.tensor([1.0, 2.0])
print(jacobian(square, x), hessian(cube_sum, x))
xd = torch.tensor([1.0, 2.0], dtype=torch.double, requires_grad=True)
print(torch.autograd.gradcheck(Square.apply, (xd,)), torch.autograd.gradcheck(square, (xd,)))
