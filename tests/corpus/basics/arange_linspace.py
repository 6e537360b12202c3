# torch.arange and torch.linspace
import torch

a = torch.arange(5)
b = torch.arange(1, 2, 0.25)
c = torch.linspace(0, 1, 5)
d = torch.linspace(-1, 1, steps=4, dtype=torch.float64)
e = torch.logspace(0, 2, 3)
f = torch.arange(10).reshape(2, 5)
print(a.dtype, b.dtype, c)
