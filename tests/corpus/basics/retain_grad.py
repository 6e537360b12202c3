# retain_grad() keeps the gradient of a non-leaf tensor
import torch

x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x * 3
y.retain_grad()
z = y * 2
out = (y * z).sum()
out.backward()
print(y.grad, y.retains_grad, z.retains_grad)
