# an in-place op on a leaf that requires grad is an error
# expect-error: RuntimeError
import torch

x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x + 1
y.add_(1)
x.add_(1)
