# += on a tensor is in place (aliases see it); on an int it rebinds
import torch

a = torch.zeros(3)
alias = a
a += 1
print(alias, a._version)
a = a + 1
print(alias, a)
n = 0
n += 5
n *= 2
t = torch.ones(2, dtype=torch.int64)
t *= 3
t -= 1
w = torch.ones(2, requires_grad=True)
h = w * 2
h += 1
h.sum().backward()
print(n, t, w.grad, h.grad_fn)
