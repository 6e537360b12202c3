# Large tensors: 10 steps on 2e7-element float32 tensors (80 MB each)
import torch

a = torch.rand(20_000_000, requires_grad=True)
b = a.clone()
d = a.detach()
c = b * 2.0
d.add_(1.0)
loss = c.sum()
loss.backward()
g = a.grad.clone()
e = b.sigmoid()
e.mul_(0.5)
