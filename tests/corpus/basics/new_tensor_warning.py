# new_tensor and torch.tensor(t) copy a tensor and warn about it
import torch

a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
b = a.new_tensor(a)
c = torch.tensor(a)
print(b.requires_grad, c.requires_grad, b.is_leaf)
d = a.new_tensor([4, 5])
e = a.new_zeros(2, 2)
f = a.new_ones(3)
b.add_(1)
print(a)
