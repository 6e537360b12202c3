# torch.empty_like(a).copy_(a): a non-leaf copy with CopyBackwards
import torch

a = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
b = torch.empty_like(a).copy_(a)
print(b.is_leaf, b.grad_fn, b.requires_grad)
c = (b * torch.tensor([[1.0, 2.0], [3.0, 4.0]])).sum()
c.backward()
print(a.grad)
