# a name bound to x.grad sees later accumulation (it is the same tensor)
import torch

x = torch.tensor([1.0, 2.0], requires_grad=True)
(x * 2).sum().backward()
g = x.grad
(x * 3).sum().backward()
print(g, x.grad, g is x.grad)
y = torch.tensor([1.0, 1.0], requires_grad=True)
h = y.clone()
h.sum().backward()
