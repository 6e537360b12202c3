# Holding on to .grad: zero_grad(set_to_none=False) zeroes it in place, the default drops it
import torch

w = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
opt = torch.optim.SGD([w], lr=0.1, momentum=0.9)
(w * 3).sum().backward()
g = w.grad
opt.step()
opt.zero_grad(set_to_none=False)
print(g, w.grad is g)
(w * 5).sum().backward()
g2 = w.grad
opt.step()
opt.zero_grad()
print(g2, w.grad, w)
