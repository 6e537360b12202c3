# tuple unpacking binds several tensors at once
import torch

a, b = torch.ones(2), torch.zeros(2)
m = torch.tensor([[1.0, 5.0], [7.0, 2.0]])
vals, idx = torch.max(m, 0)
lo, hi = torch.arange(6.0).chunk(2)
(g,) = torch.autograd.grad((torch.ones(2, requires_grad=True) * 5).sum(), [a.requires_grad_()], allow_unused=True)
pair = (a, b)
first, second = pair
print(vals, idx, lo, hi, g)
