# x.grad.zero_() keeps the gradient tensor; x.grad = None drops it
import torch

x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
(x * 2).sum().backward()
g = x.grad
x.grad.zero_()
print(g)
(x * x).sum().backward()
print(x.grad, g)
x.grad = None
print(x.grad)
(x * 4).sum().backward()
