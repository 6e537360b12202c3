# A custom autograd Function, as in PyTorch's tutorial: ReLU with save_for_backward
import torch


class MyReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        print("backward, needs_input_grad:", ctx.needs_input_grad)
        grad_input = grad_output.clone()
        grad_input[input < 0] = 0
        return grad_input


x = torch.tensor([-1.0, 2.0, -3.0, 4.0], requires_grad=True)
relu = MyReLU.apply
y = relu(x)
loss = (y * y).sum()
loss.backward()
print(y.grad_fn.name(), x.grad)
