# A 4,000-step loop over two small tensors
import torch

a = torch.zeros(3)
b = torch.ones(3)
for _ in range(2000):
    a.add_(b)
    b.mul_(1.0001)
