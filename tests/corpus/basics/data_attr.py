# .data: shares memory with the tensor but has its own version counter
import torch

a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
d = a.data
print(d.requires_grad, d.is_leaf)
d.mul_(3)
print(a)
va = a._version
vd = d._version
h = a.detach()
h.add_(1)
print(a._version, d._version, h._version)
