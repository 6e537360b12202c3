# torch.cat and torch.stack make new memory; chunk, split and unbind make views
import torch

a = torch.tensor([1.0, 2.0], requires_grad=True)
b = torch.tensor([3.0, 4.0])
c = torch.cat([a, b])
s = torch.stack([a, b])
s1 = torch.stack((a, b), dim=1)
parts = c.split(3)
rows = s.unbind(0)
(c * torch.arange(4.0)).sum().backward()
print(c.grad_fn, s.grad_fn, a.grad)
