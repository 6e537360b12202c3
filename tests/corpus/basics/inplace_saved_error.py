# an in-place change to a tensor saved for backward makes backward fail
# expect-error: RuntimeError
import torch

x = torch.tensor([1.0, 2.0], requires_grad=True)
a = x * 1
b = a * a
a.mul_(2)
print(a._version)
b.sum().backward()
