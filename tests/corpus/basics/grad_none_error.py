# x.grad is None until a backward pass reaches x: calling zero_() on it fails
# expect-error: AttributeError
import torch

x = torch.ones(2, requires_grad=True)
print(x.grad)
x.grad.zero_()
