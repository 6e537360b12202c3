# torch.autograd.grad with create_graph=True gives a gradient that is itself differentiable
import torch

x = torch.tensor([1.0, 2.0], requires_grad=True)
y = (x**3).sum()
(g,) = torch.autograd.grad(y, x, create_graph=True)
print(g, g.requires_grad, g.grad_fn is not None)
g.sum().backward()
print(x.grad)
