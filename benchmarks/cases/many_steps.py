# Many steps: a 10,000-iteration loop over 5 live tensors
import torch

a = torch.zeros(4)
b = torch.ones(4, requires_grad=True)
c = b * 2
d = a.view(2, 2)
e = torch.arange(4.0)
for i in range(10_000):
    a.add_(i)
